"""The image's system configuration, read from the recipe (the boot test
checks the same on a booted image): clock, journal, exposed services,
security updates, and what first boot's failure report is wired to."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTFS = REPO / "image/rootfs"


def unit_values(path: Path, section: str, key: str) -> list[str]:
    """Every value of ``key`` in ``[section]`` of a systemd unit file, split on spaces."""
    return [word for value in unit_lines(path, section, key) for word in value.split()]


def unit_lines(path: Path, section: str, key: str) -> list[str]:
    """Every assignment of ``key`` in ``[section]``, whole (an empty one resets a list)."""
    values: list[str] = []
    current = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("["):
            current = line.strip("[]")
        elif current == section and line.startswith(f"{key}="):
            values.append(line.split("=", 1)[1])
    return values


def test_the_daemon_waits_for_the_clock_but_an_offline_boot_fails_no_unit() -> None:
    """A Pi has no RTC: TLS and time of day need the NTP time. Offline, the
    waits end without a failed unit (the system is not "degraded") and the
    daemon starts within the network wait it already has (30 s)."""
    unit = REPO / "systemd/huxleyd.service"
    assert "time-sync.target" in unit_values(unit, "Unit", "After")
    assert "time-sync.target" in unit_values(unit, "Unit", "Wants")
    customize = (REPO / "image/customize.sh").read_text()
    assert "systemd-time-wait-sync.service" in customize  # makes time-sync.target wait
    wait = ROOTFS / "etc/systemd/system/systemd-time-wait-sync.service.d/huxleyd.conf"
    online = ROOTFS / "etc/systemd/system/systemd-networkd-wait-online.service.d/huxleyd.conf"
    budgets = []
    for dropin in (wait, online):
        reset, command = unit_lines(dropin, "Service", "ExecStart")
        assert reset == ""  # replaces Debian's command
        assert command.startswith("-/usr/"), command  # "-": a timeout is not a failure
        assert "/usr/lib/systemd/systemd-" in command
        (timeout,) = re.findall(r"(?:timeout |--timeout=)(\d+)s?\b", command)
        budgets.append(int(timeout))
        assert not unit_lines(dropin, "Service", "TimeoutStartSec")  # that one fails the unit
    assert budgets[0] <= budgets[1] == 30  # the clock adds no wait to the network's


def test_the_speaker_answers_mdns_and_nothing_else_it_need_not() -> None:
    """<hostname>.local: systemd-resolved's Multicast DNS on every link the image
    configures (wired, and the Wi-Fi link first boot writes), SSH announced by
    DNS-SD; LLMNR stays off."""
    conf = ROOTFS / "etc/systemd/resolved.conf.d/huxleyd.conf"
    assert unit_values(conf, "Resolve", "LLMNR") == ["no"]
    assert unit_values(conf, "Resolve", "MulticastDNS") == ["yes"]
    assert unit_values(
        ROOTFS / "etc/systemd/network/10-wired.network", "Network", "MulticastDNS"
    ) == ["yes"]
    apply = (REPO / "huxleyd/firstboot/apply.py").read_text()
    assert "[Network]\\nDHCP=yes\\nMulticastDNS=yes\\n" in apply
    ssh = ROOTFS / "etc/systemd/dnssd/ssh.dnssd"
    assert unit_values(ssh, "Service", "Type") == ["_ssh._tcp"]
    assert unit_values(ssh, "Service", "Port") == ["22"]
    assert unit_values(ssh, "Service", "Name") == ["%H"]  # the hostname first boot set
    assert re.search(
        r"^systemctl mask wpa_supplicant\.service", (REPO / "image/customize.sh").read_text(), re.M
    )


def test_ssh_takes_keys_only() -> None:
    conf = (ROOTFS / "etc/ssh/sshd_config.d/huxleyd.conf").read_text().splitlines()
    settings = dict(line.split(None, 1) for line in conf if line and not line.startswith("#"))
    assert settings["PasswordAuthentication"] == "no"
    assert settings["KbdInteractiveAuthentication"] == "no"
    assert settings["PermitRootLogin"] == "prohibit-password"


def test_the_initrd_is_compressed_as_configured() -> None:
    """initramfs-tools' default COMPRESS=zstd needs the zstd program in the image."""
    packages = (REPO / "image/packages.txt").read_text().split()
    assert "zstd" in packages and "initramfs-tools" in packages


def test_security_updates_only_and_unattended_upgrades_never_reboots() -> None:
    packages = (REPO / "image/packages.txt").read_text().split()
    assert "unattended-upgrades" in packages
    periodic = (ROOTFS / "etc/apt/apt.conf.d/20auto-upgrades").read_text()
    assert 'APT::Periodic::Unattended-Upgrade "1";' in periodic
    assert 'APT::Periodic::Update-Package-Lists "1";' in periodic
    ours = (ROOTFS / "etc/apt/apt.conf.d/52huxleyd-unattended-upgrades").read_text()
    assert "#clear Unattended-Upgrade::Origins-Pattern;" in ours
    origins = re.findall(r'^\s*"(origin=[^"]*)";', ours, re.M)
    assert origins == ["origin=Debian,codename=${distro_codename}-security,label=Debian-Security"]
    assert 'Unattended-Upgrade::Automatic-Reboot "false";' in ours  # huxleyd-reboot.timer does


def test_apt_reads_our_policy_over_debians_own(tmp_path: Path) -> None:
    """apt-config itself, over trixie's real 50unattended-upgrades (fetched through
    the image's arm64 apt): our file replaces Debian's origins with the security
    one alone, and leaves rebooting to huxleyd-reboot.timer."""
    if shutil.which("apt-config") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("no apt-config/dpkg-deb on this machine")
    fetch = subprocess.run(
        ["sh", "-c", f'. image/arm64-apt.sh && arm64_apt "{tmp_path}/apt" && '
         f'cd "{tmp_path}" && apt-get -qq download unattended-upgrades'],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if fetch.returncode == 77:
        pytest.skip(f"the archive cannot be reached: {fetch.stderr.strip()[:200]}")
    assert fetch.returncode == 0, fetch.stderr
    (deb,) = tmp_path.glob("unattended-upgrades_*.deb")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path / "x")], check=True)
    parts = tmp_path / "apt.conf.d"  # as on the device: the package's postinst copies it
    parts.mkdir()
    shutil.copy(tmp_path / "x/usr/share/unattended-upgrades/50unattended-upgrades", parts)
    for name in ("20auto-upgrades", "52huxleyd-unattended-upgrades"):
        shutil.copy(ROOTFS / "etc/apt/apt.conf.d" / name, parts)
    only = tmp_path / "only.conf"
    only.write_text(f'Dir::Etc::parts "{parts}";\nDir::Etc::main "/dev/null";\n')
    dump = subprocess.run(
        ["apt-config", "dump"], env={"APT_CONFIG": str(only), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    origins = [line for line in dump if line.startswith("Unattended-Upgrade::Origins-Pattern::")]
    assert origins == [
        "Unattended-Upgrade::Origins-Pattern:: "
        '"origin=Debian,codename=${distro_codename}-security,label=Debian-Security";'
    ]
    assert 'Unattended-Upgrade::Automatic-Reboot "false";' in dump
    assert 'APT::Periodic::Unattended-Upgrade "1";' in dump
    # What writes the flag huxleyd-reboot.service waits for: its kernel hook.
    hook = (tmp_path / "x/etc/kernel/postinst.d/unattended-upgrades").read_text()
    assert "touch /var/run/reboot-required" in hook


def calendar_hours(spec: str) -> set[int]:
    """The hours at which ``spec`` elapses over two days (systemd-analyze itself)."""
    out = subprocess.run(
        ["systemd-analyze", "calendar", "--iterations=100", spec],
        env={"TZ": "UTC", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    stamps = re.findall(r"(?:Next elapse|Iter\. #\d+): \w+ (\S+ \S+)", out)
    assert len(stamps) == 100, out
    return {datetime.strptime(s, "%Y-%m-%d %H:%M:%S").hour for s in stamps}


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_reboots_are_tried_at_night_after_the_nights_upgrade() -> None:
    system = ROOTFS / "etc/systemd/system"
    timer = system / "huxleyd-reboot.timer"
    (when,) = unit_lines(timer, "Timer", "OnCalendar")
    assert calendar_hours(when) == {2, 3, 4, 5}
    assert unit_values(timer, "Timer", "Persistent") == ["false"]  # never made up by day
    assert unit_values(timer, "Install", "WantedBy") == ["timers.target"]
    service = system / "huxleyd-reboot.service"
    assert unit_values(service, "Unit", "ConditionPathExists") == ["/run/reboot-required"]
    assert unit_values(service, "Service", "ExecStart") == [
        "/usr/local/bin/huxleyctl",
        "reboot-if-idle",
    ]
    # The upgrade runs at 01:00-01:30, so its reboot falls in the same night.
    upgrade = system / "apt-daily-upgrade.timer.d/huxleyd.conf"
    assert unit_lines(upgrade, "Timer", "OnCalendar")[0] == ""  # drops Debian's 06:00
    (at,) = unit_lines(upgrade, "Timer", "OnCalendar")[1:]
    assert calendar_hours(at) == {1}
    assert unit_values(upgrade, "Timer", "RandomizedDelaySec") == ["30m"]
    assert re.search(r"^systemctl enable .*huxleyd-reboot\.timer", _customize(), re.M)
    # The boot test turns the shipped persona's line to "never" with sed.
    shipped = (REPO / "config/personas/default.toml").read_text()
    assert re.search(r'^reboot = "when_idle"$', shipped, re.M)
    assert 's/^reboot = "when_idle"$/reboot = "never"/' in (REPO / "image/selftest.sh").read_text()


def _customize() -> str:
    return (REPO / "image/customize.sh").read_text()


def test_the_base_is_trixie() -> None:
    for script in ("base.sh", "check-packages.sh"):
        assert "HUXLEYD_IMAGE_SUITE:-trixie}" in (REPO / "image" / script).read_text()
    assert "--abi cp313" in (REPO / "image/wheels.sh").read_text()


def test_the_daemon_is_told_where_first_boot_reports_a_failure() -> None:
    from huxleyd.firstboot.__main__ import FAILURE_REPORT

    dropin = ROOTFS / "etc/systemd/system/huxleyd.service.d/image.conf"
    (env,) = unit_values(dropin, "Service", "Environment")
    assert env == f"HUXLEYD_SETUP_FAILED_FILE=/{FAILURE_REPORT}"
