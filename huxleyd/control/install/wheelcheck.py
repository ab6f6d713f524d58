"""A planned wheel, read file by file before anything of it is written.

pip installs whatever a wheel holds: a ``.pth`` file (code run by every
interpreter of the environment), ``<name>.data/scripts`` (commands),
``.data/data`` (files anywhere under the environment's prefix), a file of
another distribution (``websockets/__init__.py``), console scripts named
like any command. A skill needs none of these, so :func:`refusal` refuses
them, each in one line naming the path and who ships it and who owns it:

- every member of the zip is listed in its RECORD, with the hash it has;
- no path leaves site-packages (absolute, ``..``); no ``*.pth``; nothing
  under ``.data/`` but ``purelib``/``platlib``; no ``.dist-info`` folder
  but its own;
- no path another installed distribution owns, and nothing inside a
  package or module another one provides (a namespace folder such as
  ``google/`` may be shared), nor one another planned wheel writes;
- nothing named like the daemon's own packages (``huxleyd``, ``huxley_sdk``);
- with a ``top_level.txt``, nothing outside the names it lists;
- no ``console_scripts``/``gui_scripts`` entry point (a script named
  ``python`` or ``huxleyctl`` would replace that command);
- no ``huxley.skills`` name a first-party skill has, unless the admin
  allowed that name.
"""

from __future__ import annotations

import base64
import configparser
import csv
import hashlib
import io
import posixpath
import zipfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

from huxleyd.control.install.envfiles import Owners, top_name
from huxleyd.skillhost.sources import ENTRY_POINT_GROUP, SOURCE_KEY

DAEMON_PACKAGES = frozenset({"huxleyd", "huxley_sdk"})
"""Import names that are the daemon's: no skill wheel may ship a file under them."""

SCRIPT_GROUPS = ("console_scripts", "gui_scripts")
ALLOWED_DATA = ("purelib", "platlib")


@dataclass(frozen=True, slots=True)
class WheelFacts:
    """What a wheel would write, read from its RECORD (paths relative to site-packages)."""

    wheel: str
    """The wheel's file name."""
    name: str
    version: str
    files: tuple[str, ...]
    """Every RECORD path, ``.data/purelib|platlib/`` mapped to where it lands."""
    raw: tuple[str, ...]
    """The same paths as the wheel spells them (for the message)."""
    entry_points: Mapping[str, Mapping[str, str]]
    top_level: tuple[str, ...] | None

    @property
    def owner(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def skills(self) -> list[str]:
        return sorted(self.entry_points.get(ENTRY_POINT_GROUP, {}))


class WheelRefused(Exception):
    """One line: the path, who ships it, why it is refused."""


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def record_line(name: str, data: bytes) -> str:
    """A RECORD row for a file holding ``data``."""
    return f"{name},{_digest(data)},{len(data)}"


def _dist_info(zf: zipfile.ZipFile, wheel: str) -> str:
    folders = sorted({n.split("/", 1)[0] for n in zf.namelist() if "/" in n})
    infos = [f for f in folders if f.endswith(".dist-info")]
    if len(infos) != 1:
        raise WheelRefused(f"{wheel}: expected one .dist-info folder, found {infos or 'none'}")
    return infos[0]


def _entry_points(text: str | None) -> dict[str, dict[str, str]]:
    if not text:
        return {}
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return {group: dict(parser.items(group)) for group in parser.sections()}


def _read_record(zf: zipfile.ZipFile, info: str, wheel: str) -> list[str]:
    """RECORD's paths, after checking every member against it."""
    try:
        record = zf.read(f"{info}/RECORD").decode()
    except KeyError:
        raise WheelRefused(f"{wheel}: no {info}/RECORD") from None
    rows = {row[0]: row for row in csv.reader(io.StringIO(record)) if row}
    for member in zf.namelist():
        if member.endswith("/"):
            continue
        row = rows.get(member)
        if row is None:
            raise WheelRefused(f"{member} in {wheel} is not in its RECORD")
        if member == f"{info}/RECORD" or member.startswith(f"{info}/RECORD."):
            continue
        if len(row) < 2 or row[1] != _digest(zf.read(member)):
            raise WheelRefused(f"{member} in {wheel} does not have the hash its RECORD says")
    return list(rows)


def read_wheel(path: Path) -> WheelFacts:
    """Open ``path`` and read what it would install. Raises :class:`WheelRefused`."""
    wheel = path.name
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise WheelRefused(f"{wheel}: not a wheel ({exc})") from None
    with zf:
        info = _dist_info(zf, wheel)
        paths = _read_record(zf, info, wheel)
        meta = HeaderParser().parsestr(zf.read(f"{info}/METADATA").decode())

        def text(name: str) -> str | None:
            try:
                return zf.read(f"{info}/{name}").decode()
            except KeyError:
                return None

        tops = text("top_level.txt")
        data_prefix = info.removesuffix(".dist-info") + ".data/"
        files = []
        for raw in paths:
            files.append(_landing(raw, data_prefix))
        return WheelFacts(
            wheel=wheel,
            name=str(meta["Name"]),
            version=str(meta["Version"]),
            files=tuple(files),
            raw=tuple(paths),
            entry_points=_entry_points(text("entry_points.txt")),
            top_level=tuple(t for t in tops.split() if t) if tops is not None else None,
        )


def _landing(raw: str, data_prefix: str) -> str:
    """Where a RECORD path lands, relative to site-packages (``.data/purelib/x`` → ``x``)."""
    if raw.startswith(data_prefix):
        kind, _, rest = raw[len(data_prefix) :].partition("/")
        if kind in ALLOWED_DATA:
            return rest
    return raw


def _path_refusal(facts: WheelFacts, raw: str, path: str, data_prefix: str) -> str | None:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or posixpath.normpath(path) != path:
        return "it would be written outside site-packages"
    if raw.startswith(data_prefix):
        kind = raw[len(data_prefix) :].split("/", 1)[0]
        if kind not in ALLOWED_DATA:  # purelib/platlib land in site-packages (``path``)
            return f"a skill installs nothing outside site-packages (.data/{kind})"
    if path.endswith(".pth"):
        return "a .pth file runs code in every interpreter of the environment"
    first = pure.parts[0]
    own_info = f"{data_prefix.removesuffix('.data/')}.dist-info"
    if first.endswith((".dist-info", ".egg-info", ".data")) and first != own_info:
        return "it is another distribution's metadata"
    if top_name(path) in DAEMON_PACKAGES:
        return f"{top_name(path)} is the daemon's own package"
    if facts.top_level is not None and first != own_info and top_name(path) not in facts.top_level:
        listed = ", ".join(facts.top_level) or "nothing"
        return f"it is outside the wheel's own top-level names (top_level.txt: {listed})"
    return None


def refusal(
    facts: WheelFacts,
    owners: Owners,
    *,
    first_party: Mapping[str, str],
    allowed_names: Collection[str] = (),
) -> str | None:
    """One line when ``facts`` may not be installed beside ``owners``, else None.

    ``first_party``: skill name → the daemon's distribution that has it."""
    info = next(p for p in facts.raw if p.endswith("/RECORD")).split("/", 1)[0]
    data_prefix = info.removesuffix(".dist-info") + ".data/"
    for raw, path in zip(facts.raw, facts.files, strict=True):
        why = _path_refusal(facts, raw, path, data_prefix)
        if why is None:
            why = _owned(path, facts, owners)
        if why is not None:
            return f"refused: {raw} in {facts.wheel} ({facts.owner}): {why}"
    for group in SCRIPT_GROUPS:
        for script, target in facts.entry_points.get(group, {}).items():
            return (
                f"refused: {info}/entry_points.txt in {facts.wheel} ({facts.owner}): "
                f'{group} "{script} = {target}": a skill installs no commands'
                + (" (that one is the daemon's)" if script in ("huxleyctl", "huxleyd") else "")
            )
    for skill in facts.skills:
        if skill in first_party and skill not in allowed_names:
            return (
                f'refused: {facts.name} registers skill "{skill}", which is also '
                f"{first_party[skill]}'s own; a persona would choose this one with "
                f'[skills.{skill}] {SOURCE_KEY} = "{facts.name}" '
                f"(install it anyway with --allow-name {skill})"
            )
    return None


def _owned(path: str, facts: WheelFacts, owners: Owners) -> str | None:
    other = owners.paths.get(path)
    if other is not None and other != facts.name:
        return f"{path} belongs to {other}"
    top = top_name(path)
    provider = owners.tops.get(top)
    if provider is not None and provider != facts.name and top in owners.packages:
        return f"it is inside {top}, which {provider} provides"
    return None


def check_all(
    wheels: list[WheelFacts],
    owners: Owners,
    *,
    first_party: Mapping[str, str],
    allowed_names: Collection[str] = (),
) -> None:
    """Refuse the first wheel of a plan that may not go in; each one checked beside
    what is installed and the wheels before it. Raises :class:`WheelRefused`."""
    for facts in wheels:
        why = refusal(facts, owners, first_party=first_party, allowed_names=allowed_names)
        if why is not None:
            raise WheelRefused(why)
        owners = owners.adding(facts.name, facts.files)
