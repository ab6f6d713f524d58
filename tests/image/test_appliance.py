"""The image's system configuration, read from the recipe (the boot test
checks the same on a booted image): clock, journal, exposed services,
security updates, and what first boot's failure report is wired to."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTFS = REPO / "image/rootfs"


def unit_values(path: Path, section: str, key: str) -> list[str]:
    """Every value of ``key`` in ``[section]`` of a systemd unit file, split on spaces."""
    values: list[str] = []
    current = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("["):
            current = line.strip("[]")
        elif current == section and line.startswith(f"{key}="):
            values += line.split("=", 1)[1].split()
    return values


def test_the_daemon_waits_for_the_clock() -> None:
    """A Pi has no RTC: TLS and time of day need the NTP time."""
    unit = REPO / "systemd/huxleyd.service"
    assert "time-sync.target" in unit_values(unit, "Unit", "After")
    assert "time-sync.target" in unit_values(unit, "Unit", "Wants")
    customize = (REPO / "image/customize.sh").read_text()
    assert "systemd-time-wait-sync.service" in customize  # makes time-sync.target wait
    # ...but not forever: offline, the daemon must still start and say so.
    wait = ROOTFS / "etc/systemd/system/systemd-time-wait-sync.service.d/huxleyd.conf"
    (timeout,) = unit_values(wait, "Service", "TimeoutStartSec")
    assert timeout.endswith("s") and int(timeout[:-1]) <= 60


def test_the_journal_is_capped_for_an_sd_card() -> None:
    conf = ROOTFS / "etc/systemd/journald.conf.d/huxleyd.conf"
    (max_use,) = unit_values(conf, "Journal", "SystemMaxUse")
    assert max_use.endswith("M") and int(max_use[:-1]) <= 128
    assert unit_values(conf, "Journal", "Storage") == ["persistent"]


def test_nothing_answers_the_lan_that_need_not() -> None:
    conf = ROOTFS / "etc/systemd/resolved.conf.d/huxleyd.conf"
    assert unit_values(conf, "Resolve", "LLMNR") == ["no"]
    assert unit_values(conf, "Resolve", "MulticastDNS") == ["no"]
    assert re.search(
        r"^systemctl mask wpa_supplicant\.service", (REPO / "image/customize.sh").read_text(), re.M
    )


def test_security_updates_only_and_no_reboot_by_themselves() -> None:
    packages = (REPO / "image/packages.txt").read_text().split()
    assert "unattended-upgrades" in packages
    periodic = (ROOTFS / "etc/apt/apt.conf.d/20auto-upgrades").read_text()
    assert 'APT::Periodic::Unattended-Upgrade "1";' in periodic
    assert 'APT::Periodic::Update-Package-Lists "1";' in periodic
    ours = (ROOTFS / "etc/apt/apt.conf.d/52huxleyd-unattended-upgrades").read_text()
    assert "#clear Unattended-Upgrade::Origins-Pattern;" in ours
    origins = re.findall(r'^\s*"(origin=[^"]*)";', ours, re.M)
    assert origins == ["origin=Debian,codename=${distro_codename}-security,label=Debian-Security"]
    assert 'Unattended-Upgrade::Automatic-Reboot "false";' in ours


def test_the_base_is_trixie() -> None:
    for script in ("base.sh", "check-packages.sh"):
        assert "HUXLEYD_IMAGE_SUITE:-trixie}" in (REPO / "image" / script).read_text()
    assert "--abi cp313" in (REPO / "image/wheels.sh").read_text()


def test_the_daemon_is_told_where_first_boot_reports_a_failure() -> None:
    from huxleyd.firstboot.__main__ import FAILURE_REPORT

    dropin = ROOTFS / "etc/systemd/system/huxleyd.service.d/image.conf"
    (env,) = unit_values(dropin, "Service", "Environment")
    assert env == f"HUXLEYD_SETUP_FAILED_FILE=/{FAILURE_REPORT}"
