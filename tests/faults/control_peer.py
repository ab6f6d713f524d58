"""A control-socket client run as another local user (``setpriv``), for
tests/faults/test_control_reserve.py. Standard library only.

    control_peer.py PATH burst N     open N connections as fast as it can
    control_peer.py PATH watch N     open N connections, each asking ``watch``
    control_peer.py PATH status      one ``status``; prints the seconds it took

``burst`` and ``watch`` print one JSON line of counts, then hold every
connection until standard input closes (or 120 s, a bound), and exit.
"""

from __future__ import annotations

import json
import resource
import select
import socket
import sys
import time

HOLD_LIMIT_S = 120.0


def connect(path: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    deadline = time.monotonic() + 10
    while True:
        try:
            sock.connect(path)
            return sock
        except BlockingIOError:  # the listen queue is full: the burst outruns accept
            if time.monotonic() > deadline:
                sock.close()
                return None
            time.sleep(0.001)
        except OSError:
            sock.close()
            return None


def first_line(sock: socket.socket, timeout_s: float) -> str:
    poller = select.poll()  # select() stops at descriptor 1024; a burst goes past it
    poller.register(sock, select.POLLIN)
    if not poller.poll(timeout_s * 1000):
        return ""
    try:
        data = sock.recv(4096)
    except OSError:
        return "EOF"
    return data.decode(errors="replace") if data else "EOF"


def late(socks: list[socket.socket], answers: list[str], seconds: float) -> None:
    """Fill in the answers still empty that come within ``seconds`` (all together)."""
    waiting = {s.fileno(): i for i, s in enumerate(socks) if not answers[i]}
    poller = select.poll()
    for fd in waiting:
        poller.register(fd, select.POLLIN)
    deadline = time.monotonic() + seconds
    while waiting and (left := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(left * 1000):
            i = waiting.pop(fd)
            poller.unregister(fd)
            answers[i] = first_line(socks[i], 0)


def burst(path: str, count: int) -> tuple[dict[str, int], list[socket.socket]]:
    socks = [s for s in (connect(path) for _ in range(count)) if s is not None]
    answers = [first_line(s, 0.2) for s in socks]
    # A loaded server may still be working through the burst's backlog: the
    # ones not yet answered get one shared second more, so "held" means held.
    late(socks, answers, 1.0)
    refused = sum(1 for a in answers if "too many" in a)
    closed = sum(1 for a in answers if a == "EOF")
    held = len(socks) - refused - closed
    return {"connected": len(socks), "refused": refused, "closed": closed, "held": held}, socks


def watch(path: str, count: int) -> tuple[dict[str, int], list[socket.socket]]:
    socks = [s for s in (connect(path) for _ in range(count)) if s is not None]
    watching = refused = 0
    for rid, sock in enumerate(socks, 1):
        try:
            sock.sendall(json.dumps({"id": rid, "cmd": "watch", "args": {}}).encode() + b"\n")
        except OSError:  # closed to make room before it asked
            continue
        line = first_line(sock, 5.0)
        if '"ok": true' in line or '"ok":true' in line:
            watching += 1
        elif "too many" in line:
            refused += 1
    return {"watching": watching, "refused": refused}, socks


def status(path: str) -> None:
    started = time.monotonic()
    sock = connect(path)
    assert sock is not None, "cannot connect"
    sock.sendall(b'{"id": 1, "cmd": "status", "args": {}}\n')
    line = first_line(sock, 10.0)
    took = time.monotonic() - started
    print(json.dumps({"ok": '"ok": true' in line or '"ok":true' in line, "s": took}))


def main() -> None:
    path, mode = sys.argv[1], sys.argv[2]
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    if mode == "status":
        status(path)
        return
    counts, socks = (burst if mode == "burst" else watch)(path, int(sys.argv[3]))
    print(json.dumps(counts), flush=True)
    select.select([sys.stdin], [], [], HOLD_LIMIT_S)
    for sock in socks:
        sock.close()


if __name__ == "__main__":
    main()
