"""One Multicast DNS question, asked on one link as any LAN host asks it, and
the answers printed: what `make image-test` uses to find the speaker from a
second network namespace (the image has no avahi-resolve, and resolvectl
would ask the speaker's own resolver, not the link).

    python3 mdns-query.py NAME TYPE INTERFACE [SECONDS]

TYPE is A, AAAA or PTR. It binds port 5353, joins the mDNS group of
INTERFACE (IPv6 ff02::fb, and IPv4 224.0.0.251 when the interface has an
IPv4 address), sends the question, and prints each answer for NAME as
"NAME TYPE VALUE" until SECONDS (default 5) pass. Exit 0 if any came, 1 if
none. Standard library only: it runs on the image's own Python.
"""

from __future__ import annotations

import ipaddress
import select
import socket
import struct
import sys
import time

TYPES = {"A": 1, "PTR": 12, "AAAA": 28}
GROUP6 = "ff02::fb"
GROUP4 = "224.0.0.251"
PORT = 5353


def encode_name(name: str) -> bytes:
    out = b""
    for label in name.rstrip(".").split("."):
        raw = label.encode()
        out += bytes([len(raw)]) + raw
    return out + b"\0"


def question(name: str, qtype: int) -> bytes:
    return struct.pack("!6H", 0, 0, 1, 0, 0, 0) + encode_name(name) + struct.pack("!2H", qtype, 1)


def read_name(msg: bytes, at: int) -> tuple[str, int]:
    """The (possibly compressed) name at ``at``; the offset after it."""
    labels: list[str] = []
    end = None
    for _ in range(128):
        length = msg[at]
        if length & 0xC0 == 0xC0:
            if end is None:
                end = at + 2
            at = ((length & 0x3F) << 8) | msg[at + 1]
            continue
        if length == 0:
            return ".".join(labels), (end if end is not None else at + 1)
        labels.append(msg[at + 1 : at + 1 + length].decode(errors="replace"))
        at += 1 + length
    raise ValueError("a name loop")


def answers(msg: bytes) -> list[tuple[str, str, str]]:
    """Every answer and additional record: (name, type, value)."""
    _, flags, qd, an, ns, ar = struct.unpack("!6H", msg[:12])
    if not flags & 0x8000:
        return []  # a question (ours, looped back, or another host's)
    at = 12
    for _ in range(qd):
        _, at = read_name(msg, at)
        at += 4
    out = []
    for _ in range(an + ns + ar):
        name, at = read_name(msg, at)
        rtype, _, _, length = struct.unpack("!HHIH", msg[at : at + 10])
        data = at + 10
        at = data + length
        if rtype == 1 and length == 4:
            out.append((name, "A", str(ipaddress.IPv4Address(msg[data:at]))))
        elif rtype == 28 and length == 16:
            out.append((name, "AAAA", str(ipaddress.IPv6Address(msg[data:at]))))
        elif rtype in (12, 33):
            target_at = data + (6 if rtype == 33 else 0)  # SRV: priority, weight, port
            target, _ = read_name(msg, target_at)
            value = target
            if rtype == 33:
                value = f"{struct.unpack('!H', msg[data + 4 : data + 6])[0]} {target}"
            out.append((name, "PTR" if rtype == 12 else "SRV", value))
    return out


def ipv4_of(interface: str) -> str | None:
    import fcntl

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        req = struct.pack("256s", interface.encode()[:15])
        return socket.inet_ntoa(fcntl.ioctl(probe.fileno(), 0x8915, req)[20:24])  # SIOCGIFADDR
    except OSError:
        return None
    finally:
        probe.close()


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5) or argv[2] not in TYPES:
        print(__doc__, file=sys.stderr)
        return 2
    name, qtype, interface = argv[1], TYPES[argv[2]], argv[3]
    seconds = float(argv[4]) if len(argv) == 5 else 5.0
    index = socket.if_nametoindex(interface)
    socks = []
    s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s6.bind(("::", PORT))
    s6.setsockopt(
        socket.IPPROTO_IPV6,
        socket.IPV6_JOIN_GROUP,
        socket.inet_pton(socket.AF_INET6, GROUP6) + struct.pack("@I", index),
    )
    s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
    s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
    s6.sendto(question(name, qtype), (GROUP6, PORT, 0, index))
    socks.append(s6)
    address = ipv4_of(interface)
    if address is not None:
        s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s4.bind(("", PORT))
        mreq = socket.inet_aton(GROUP4) + socket.inet_aton(address)
        s4.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
        s4.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(address))
        s4.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
        s4.sendto(question(name, qtype), (GROUP4, PORT))
        socks.append(s4)
    found = 0
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select(socks, [], [], left)
        for sock in ready:
            msg, sender = sock.recvfrom(9000)
            try:
                records = answers(msg)
            except (ValueError, IndexError, struct.error):
                continue
            for rname, rtype, value in records:
                if rname.lower() == name.lower().rstrip("."):
                    print(f"{rname} {rtype} {value} (from {sender[0]})", flush=True)
                    found += 1
        if found:
            break
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
