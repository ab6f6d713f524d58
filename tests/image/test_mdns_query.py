"""image/mdns-query.py, the LAN host's side of the image test's mDNS check:
its question is a well-formed mDNS query, and it reads answers the way a
responder writes them (name compression, A/AAAA/PTR/SRV, answers in the
additional section as systemd-resolved sends them). The real answers come
from the image's systemd-resolved in `make image-test`."""

from __future__ import annotations

import importlib.util
import socket
import struct
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mdns_query", REPO / "image/mdns-query.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mdns = load()


def record(name: bytes, rtype: int, data: bytes) -> bytes:
    return name + struct.pack("!HHIH", rtype, 0x8001, 120, len(data)) + data


def test_the_question() -> None:
    q = mdns.question("huxley-test.local", 28)
    assert q[:12] == struct.pack("!6H", 0, 0, 1, 0, 0, 0)
    assert q[12:] == b"\x0bhuxley-test\x05local\x00" + struct.pack("!2H", 28, 1)


def test_a_response_with_compressed_names() -> None:
    host = b"\x0bhuxley-test\x05local\x00"  # at offset 12
    header = struct.pack("!6H", 0, 0x8400, 0, 2, 0, 2)
    six = socket.inet_pton(socket.AF_INET6, "fe80::1")
    first = record(host, 28, six)
    ptr_name = b"\x04_ssh\x04_tcp\xc0\x18"  # "_ssh._tcp" + a pointer to "local" (24)
    msg = header + first
    ptr_at = len(msg)
    msg += record(ptr_name, 12, b"\x0bhuxley-test" + b"\xc0" + bytes([ptr_at]))
    msg += record(b"\xc0\x0c", 1, socket.inet_aton("192.168.77.10"))
    msg += record(
        b"\x0bhuxley-test" + b"\xc0" + bytes([ptr_at]),
        33,
        struct.pack("!3H", 0, 0, 22) + b"\xc0\x0c",
    )
    assert mdns.answers(msg) == [
        ("huxley-test.local", "AAAA", "fe80::1"),
        ("_ssh._tcp.local", "PTR", "huxley-test._ssh._tcp.local"),
        ("huxley-test.local", "A", "192.168.77.10"),
        ("huxley-test._ssh._tcp.local", "SRV", "22 huxley-test.local"),
    ]


def test_a_question_is_not_an_answer() -> None:
    assert mdns.answers(mdns.question("huxley-test.local", 1)) == []
