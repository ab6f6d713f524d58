"""``huxleyctl skills install|remove|repair``: third-party skills into their own environment.

What an install asks for and what pip plans (:mod:`.requests`), each
wheel's files checked against its RECORD before anything is written
(:mod:`.wheelcheck`), every file of the skills environment hashed before
and after (:mod:`.envfiles`), the base the environment is made from
(:mod:`.skillsbase`, :mod:`.pins`), sdists built unprivileged
(:mod:`.skillbuild`), and the commands themselves (:mod:`.skillpkgs`).
Nothing here imports the rest of :mod:`huxleyd.control`: the socket and
the CLI call in, never the other way.
"""
