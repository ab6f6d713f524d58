"""The image's mDNS echo rule (``image/rootfs/usr/lib/huxleyd-image/mdns-own-echo.nft``)
on this machine's kernel: two network namespaces on a veth link, the rule loaded
by ``nft`` into the device's, and real multicast sockets in each.

resolved 257.13 renames itself when it hears its own answer looped back while
it probes its name (the rule file says why). What must hold: the device never
receives the packets it sent itself, and still receives every other host's,
over IPv6 (ff02::fb) and IPv4 (224.0.0.251). Without the rule the same rig
sees the device's own packet come back, so the test can see the echo it names.
Root (network namespaces) and ``nft`` are needed: ``make test`` installs
nftables (scripts/ensure-system-deps.sh) and CI runs as root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "image/rootfs/usr/lib/huxleyd-image/mdns-own-echo.nft"

# Runs inside a namespace: binds 5353 as an mDNS responder does, joins the
# group, sends ``own`` (if given), says "ready", then reads until ``stop``
# comes (another host's packet, sent after ours: our echo, if any, came first)
# and prints every payload it read as JSON.
LISTENER = r"""
import json, select, socket, struct, sys, time
family, group, iface, addr, own, stop = sys.argv[1:7]
if family == "6":
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", 5353))
    idx = socket.if_nametoindex(iface)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
                 socket.inet_pton(socket.AF_INET6, group) + struct.pack("@I", idx))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
    to = (group, 5353, 0, idx)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", 5353))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 socket.inet_aton(group) + socket.inet_aton(addr))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(addr))
    to = (group, 5353)
if own:
    s.sendto(own.encode(), to)
print("ready", flush=True)
got = []
deadline = time.monotonic() + 20
while stop not in got and time.monotonic() < deadline:
    if select.select([s], [], [], 0.5)[0]:
        got.append(s.recv(512).decode(errors="replace"))
print(json.dumps(got), flush=True)
"""

SENDER = r"""
import socket, struct, sys
family, group, iface, addr, payload = sys.argv[1:6]
if family == "6":
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    idx = socket.if_nametoindex(iface)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
    s.sendto(payload.encode(), (group, 5353, 0, idx))
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(addr))
    s.sendto(payload.encode(), (group, 5353))
"""


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


@pytest.fixture
def link() -> Iterator[tuple[str, str]]:
    """Two namespaces ("device", "lan") joined by a veth pair, both ends up, DAD off
    (a link-local address is usable at once), IPv4 addresses 10.77.0.1 and .2."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (CI runs as root)")
    if shutil.which("nft") is None or shutil.which("ip") is None:
        pytest.skip("nft or ip missing: scripts/ensure-system-deps.sh installs nftables")
    tag = f"hx{os.getpid()}"
    device, lan = f"{tag}d", f"{tag}l"
    made = subprocess.run(["ip", "netns", "add", device], capture_output=True, text=True)
    if made.returncode != 0:  # a container without CAP_NET_ADMIN
        pytest.skip(f"this machine makes no network namespace: {made.stderr.strip()}")
    _run("ip", "netns", "add", lan)
    try:
        veth = ["type", "veth", "peer", "vlan", "netns", lan]
        _run("ip", "link", "add", "vdev", "netns", device, *veth)
        for ns, end in ((device, "vdev"), (lan, "vlan")):
            # before the link is up: its link-local address is made valid, not tentative
            _run("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{end}.accept_dad=0")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", device, "addr", "add", "10.77.0.1/24", "dev", "vdev")
        _run("ip", "-n", lan, "addr", "add", "10.77.0.2/24", "dev", "vlan")
        _run("ip", "-n", device, "link", "set", "vdev", "up")
        _run("ip", "-n", lan, "link", "set", "vlan", "up")
        for ns, end in ((device, "vdev"), (lan, "vlan")):
            _wait_for_link_local(ns, end)
        yield device, lan
    finally:
        for ns in (device, lan):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _wait_for_link_local(ns: str, end: str) -> None:
    """The kernel gives a link its fe80:: address once it sees the carrier (the link
    watch, up to a second after both ends are up); a multicast send needs it."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        shown = subprocess.run(
            ["ip", "-n", ns, "-6", "-o", "addr", "show", "dev", end, "scope", "link"],
            capture_output=True, text=True,
        ).stdout  # fmt: skip
        if "fe80" in shown:
            return
        time.sleep(0.05)
    raise AssertionError(f"{end} in {ns} got no link-local address in 20 s")


def _heard(device: str, lan: str, family: str) -> list[str]:
    """What the device's responder socket read: after sending "own", until the LAN
    host's "other" came."""
    group = "ff02::fb" if family == "6" else "224.0.0.251"
    listener = subprocess.Popen(
        ["ip", "netns", "exec", device, sys.executable, "-c", LISTENER,
         family, group, "vdev", "10.77.0.1", "own", "other"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert listener.stdout is not None
        assert listener.stdout.readline().strip() == "ready"
        _run("ip", "netns", "exec", lan, sys.executable, "-c", SENDER,
             family, group, "vlan", "10.77.0.2", "other")  # fmt: skip
        out, _ = listener.communicate(timeout=30)
    finally:
        listener.kill()
    heard: list[str] = json.loads(out.strip().splitlines()[-1])
    return heard


@pytest.mark.parametrize("family", ["6", "4"])
def test_the_device_never_hears_its_own_mdns_but_hears_the_lan(
    link: tuple[str, str], family: str
) -> None:
    device, lan = link
    assert _heard(device, lan, family) == ["own", "other"]  # the echo, without the rule
    _run("ip", "netns", "exec", device, "nft", "-f", str(RULES))
    _run("ip", "netns", "exec", device, "nft", "-f", str(RULES))  # loading twice is safe
    assert _heard(device, lan, family) == ["other"]
    counters = subprocess.run(
        ["ip", "netns", "exec", device, "nft", "list", "table", "inet", "huxleyd_mdns_echo"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert "packets 1 " in counters  # our one echo, and only it


def test_the_image_loads_the_rule_before_resolved_starts() -> None:
    """The rule is only worth its file if the image loads it before resolved can
    hear anything, at every boot, with the nft the image installs."""
    from tests.image.test_appliance import unit_values

    unit = REPO / "image/rootfs/etc/systemd/system/huxleyd-mdns-echo.service"
    assert "systemd-resolved.service" in unit_values(unit, "Unit", "Before")
    # Debian's own nftables.service flushes the whole rule set: ours comes after it
    assert "nftables.service" in unit_values(unit, "Unit", "After")
    assert unit_values(unit, "Service", "ExecStart") == [
        "/usr/sbin/nft", "-f", "/usr/lib/huxleyd-image/mdns-own-echo.nft"
    ]  # fmt: skip
    assert unit_values(unit, "Install", "WantedBy") == ["sysinit.target"]
    customize = (REPO / "image/customize.sh").read_text()
    enabled = customize.split("systemctl enable systemd-networkd")[1]
    assert "huxleyd-mdns-echo.service" in enabled.split("\n\n")[0]
    packages = (REPO / "image/packages.txt").read_text().split()
    assert "nftables" in packages
