"""Turns: pure logic between the button, the provider, the skills and the mixer.

It talks to them through small interfaces (``ports.py``), never to sockets
or devices directly.

- ``coordinator``   the turn state machine, whole: how a turn begins, moves and ends
- ``inputs``        the user's side: the button, the wake word, the mute, the mic path
- ``parts``         what the coordinator is built from: a few named parts
- ``barrier``       a reply's end: what arrived plays out, then the turn ends once
- ``replies``       what the provider sends back: speech, tool calls, follow-ups
- ``reply_tracker`` which response is the reply; asking again, the reader (no timer)
- ``effects``       tool calls and side effects, each applied at its moment
- ``outputs``       LED activity, earcons, the per-turn journal line
- ``speech``        model audio to the speaker (a bounded queue), and what of it was heard
- ``capture``       the mic capture switch: its one owner and its rule
- ``media``         AudioStream playback under ``focus`` (DIALOG/COMMS/ALERT/CONTENT)
- ``proactive``     ``inject_turn`` (``injects``) and input claims (``claims``)
- ``supervisor``    skills' background tasks, restarted within a budget
- ``watchdog``      the reply's silent/stale timer: one deadline that moves
"""
