"""Every file of an image's root, one line each, for comparing two builds.

    python3 image/files-manifest.py ROOT > huxleyd-<version>-arm64.files

Tab-separated, sorted by path: path, type (f file, d directory, l link,
c/b device, p fifo, s socket), mode (octal, with setuid/setgid/sticky),
numeric owner and group, mtime (seconds since the epoch), and for a file
its size and sha256, for a link its target. Two builds of one commit give
the same lines (image/compare-builds.sh A.files B.files says what differs);
docs/image.md, "Reproducible builds", lists what still may.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

KINDS = {
    stat.S_IFREG: "f",
    stat.S_IFDIR: "d",
    stat.S_IFLNK: "l",
    stat.S_IFCHR: "c",
    stat.S_IFBLK: "b",
    stat.S_IFIFO: "p",
    stat.S_IFSOCK: "s",
}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def line(root: Path, path: Path) -> str:
    st = path.lstat()
    kind = KINDS.get(stat.S_IFMT(st.st_mode), "?")
    rel = "/" + str(path.relative_to(root)) if path != root else "/"
    fields = [rel, kind, f"{stat.S_IMODE(st.st_mode):04o}", str(st.st_uid), str(st.st_gid)]
    fields.append(str(int(st.st_mtime)))
    if kind == "f":
        fields += [str(st.st_size), sha256(path)]
    elif kind == "l":
        fields.append(os.readlink(path))
    elif kind in "cb":
        fields.append(f"{os.major(st.st_rdev)},{os.minor(st.st_rdev)}")
    return "\t".join(fields)


def walk(root: Path) -> list[str]:
    lines = [line(root, root)]
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            lines.append(line(root, Path(top) / name))
    return sorted(lines, key=lambda text: text.split("\t", 1)[0])


def main() -> int:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("usage: files-manifest.py ROOT_DIRECTORY", file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    print("# path\ttype\tmode\tuid\tgid\tmtime\tsize sha256 | link target | device")
    for text in walk(root):
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
