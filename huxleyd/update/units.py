"""The unit files of a release, where systemd looks for them: links through
``current``, so that the switch of :mod:`huxleyd.update` moves them too.

Why links and not copies: ``scripts/install.sh`` copied the units into
``/lib/systemd/system``, so an update (and a rollback) kept the units of
whichever release was installed last. A link in the search path whose
target is outside it is what systemd calls a "linked unit file": it keeps
the link's name and reads the file through it at every ``daemon-reload``,
so ``/lib/systemd/system/huxleyd.service`` ->
``/opt/huxleyd/share/systemd/huxleyd.service`` (``share`` -> ``current/share``)
is the running release's unit once systemd is reloaded. In the vendor
directory, not ``/etc/systemd/system``: ``systemctl disable`` removes a
linked unit from ``/etc`` (the unit would be gone, not just disabled), and
``/etc`` stays the admin's (``systemctl edit`` drop-ins still apply).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["INSTALLED_UNITS", "UNIT_SUFFIXES", "Places", "link_units", "replace_link"]


class Places(Protocol):
    """Where things are (:class:`huxleyd.update.Layout`; a protocol, so that
    this module does not import the update that imports it)."""

    @property
    def root(self) -> Path: ...
    @property
    def prefix(self) -> str: ...
    @property
    def unit_dir(self) -> str: ...
    @property
    def admin_unit_dir(self) -> str: ...
    @property
    def current(self) -> Path: ...


def replace_link(link: Path, target: str) -> None:
    """``link`` -> ``target`` in one rename: never missing, never half-made."""
    tmp = link.with_name(f".{link.name}.new")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, link)


UNIT_SUFFIXES = (".service", ".socket", ".timer")
INSTALLED_UNITS = ("huxleyd.service", "huxleyd-skillhost.socket", "huxleyd-skillhost@.service")
"""The units ``scripts/install.sh`` installs (a plain install's, adopted)."""


def link_units(layout: Places) -> list[str]:
    """The units of the release ``current`` names, in systemd's search path; their names.

    Each is a link ``/lib/systemd/system/<unit>`` ->
    ``/opt/huxleyd/share/systemd/<unit>``, a "linked unit file" (its target
    is outside the search path, so systemd loads the link's own name and
    reads the file through it at every ``daemon-reload``): moving
    ``current`` moves the units too. The links are made here, not only by
    ``install.sh``, for the units a release adds (and those of a release it
    lacks are removed), and because ``systemctl enable`` of a linked unit
    writes the path it resolved, ``releases/<v>/...``, into
    ``/etc/systemd/system``: that pins one release (:func:`_unpin_units`)."""
    shipped = layout.current / "share/systemd"
    names = sorted(p.name for p in shipped.glob("*") if p.suffix in UNIT_SUFFIXES)
    if not names:  # a release without its units (adopted, none found): leave them
        return []
    vendor = layout.root / layout.unit_dir
    vendor.mkdir(parents=True, exist_ok=True)
    through = f"/{layout.prefix}/share/systemd/"
    for name in names:
        replace_link(vendor / name, through + name)
    for link in sorted(vendor.iterdir()):
        if link.name not in names and link.is_symlink() and os.readlink(link).startswith(through):
            link.unlink()  # another release's unit: not this one's
    _unpin_units(layout, names)
    return names


def _unpin_units(layout: Places, names: Sequence[str]) -> None:
    """Links ``systemctl enable`` made to one release's unit file
    (``/etc/systemd/system/<unit>``, ``*.wants/<unit>``) name our fixed
    link instead, or go when the fixed link is the unit itself."""
    admin = layout.root / layout.admin_unit_dir
    pinned = f"/{layout.prefix}/releases/"
    # Each link by its name, not by glob(): on a root not mounted at / (the
    # tests, an image) an absolute link dangles, and glob() skips those.
    dirs = [admin, *sorted(admin.glob("*.wants")), *sorted(admin.glob("*.requires"))]
    for name in names:
        for link in (d / name for d in dirs):
            if not link.is_symlink() or not os.readlink(link).startswith(pinned):
                continue
            if link.parent == admin:
                link.unlink()  # /lib/systemd/system/<unit> is the unit
            else:
                replace_link(link, f"/{layout.unit_dir}/{name}")
