#!/bin/sh
# `make image-test`, inside the emulated image: copied onto the firmware
# partition of a copy of the image and started by huxleyd-selftest.service
# (wanted by multi-user.target, written into the copy by boot-test.sh): the
# image boots its default target as on a Pi. Everything goes to the serial
# console, where image/boot-test.sh reads the SELFTEST lines; the machine
# powers off when this ends.
#
# Expects the first-boot file boot-test.sh wrote: provider openai with the
# test key (its sha256 below), host name huxley-test, time zone Europe/Madrid,
# Wi-Fi "huxley-test-ap" (ES), SSH on. Two simulated radios: wlan0 (the
# device's) and wlan1, where this script runs the access point. After
# checking it, the daemon is switched to the simulator for a turn that must
# be answered (no Internet in the emulator); then a broken setup file; then
# updates: to N+1, and to a release that crashes after READY (rolled back).
# The speaker is looked up as huxley-test.local from a second network
# namespace (image/mdns-query.py, on the firmware partition).
exec >/dev/console 2>&1
KEY_SHA256=@KEY_SHA256@
KEY_MARK=@KEY_MARK@
PARTS="@PARTS@"  # all, or some of: appliance turn update skills
fails=0
up() { cut -d' ' -f1 /proc/uptime; }
ok() { echo "SELFTEST ok: $*"; }
bad() { echo "SELFTEST FAIL: $*"; fails=$((fails + 1)); }
check() { name=$1; shift; if "$@"; then ok "$name"; return 0; fi; bad "$name"; return 1; }
mono_s() {  # a unit's monotonic timestamp property, in seconds since the kernel started
    v=$(systemctl show -P "$2" "$1"); echo "$v" | awk '{ printf "%.1f", $1 / 1000000 }'
}
# Bounded waits: the emulator is slow and loaded; the limit (600 s of this
# machine's uptime, not tries: one `huxleyctl status` takes seconds here) is a
# safety net. While waiting, the pending jobs every minute show what the boot
# waits on.
wait_for() {
    t0=$(cut -d. -f1 /proc/uptime); said=0
    while ! "$@" 2>/dev/null; do
        n=$(( $(cut -d. -f1 /proc/uptime) - t0 ))
        [ $n -gt 600 ] && return 1
        if [ $((n / 60)) -gt $said ]; then
            said=$((n / 60))
            systemctl list-jobs --no-pager 2>&1 | sed "s/^/SELFTEST waiting ($n s): /"
        fi
        sleep 1
    done
}
active() { [ "$(systemctl is-active "$1")" = active ]; }
# Whether a part of this script runs (HUXLEYD_IMAGE_TEST_PARTS, boot-test.sh):
# the boot, the first-boot file and the switch to the simulator always do.
part() { case " $PARTS " in *" all "* | *" $1 "*) return 0 ;; *) return 1 ;; esac; }

echo "SELFTEST start at uptime $(up) s"
echo "SELFTEST parts: $PARTS"
# -- a normal boot ---------------------------------------------------------------------------
check "booted the default target (no systemd.run=)" sh -c '! grep -q "systemd.run=" /proc/cmdline'
echo "SELFTEST default target: $(systemctl get-default)"
check "multi-user.target reached" wait_for active multi-user.target
echo "SELFTEST boot: multi-user.target at $(mono_s multi-user.target ActiveEnterTimestampMonotonic) s after kernel start"
echo "SELFTEST os: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r), $(python3 --version), venv $(/opt/huxleyd/venv/bin/python --version)"
check "Debian 13 trixie" grep -q '^VERSION_CODENAME=trixie' /etc/os-release
check "Python 3.13 in the venv" sh -c '/opt/huxleyd/venv/bin/python --version | grep -q "^Python 3\.13\."'
check "huxleyd active (READY)" wait_for active huxleyd.service
start=$(systemctl show -P ExecMainStartTimestampMonotonic huxleyd)
ready=$(systemctl show -P ActiveEnterTimestampMonotonic huxleyd)
echo "SELFTEST ready: huxleyd READY $(awk -v a="$start" -v b="$ready" 'BEGIN { printf "%.1f", (b - a) / 1000000 }') s after its start, $(mono_s huxleyd ActiveEnterTimestampMonotonic) s after kernel start; restarts $(systemctl show -P NRestarts huxleyd)"
systemctl status --no-pager huxleyd 2>&1 | sed -n '1,4p;/Status:/p'

# -- a quiet boot: nothing failed (no Internet here: NTP never answers, as offline) -----
# The boot's jobs are done once time-wait-sync gave up (30 s) or the clock came.
settled() { systemctl is-system-running 2>/dev/null | grep -qv '^starting$'; }
check "boot finished (is-system-running is not starting)" wait_for settled
echo "SELFTEST system: $(systemctl is-system-running 2>&1)"
systemctl list-units --failed --no-legend --plain 2>&1 | sed 's/^/SELFTEST failed unit: /'
check "no failed unit" [ -z "$(systemctl list-units --failed --no-legend --plain)" ]
check "system running, not degraded" [ "$(systemctl is-system-running)" = running ]
echo "SELFTEST time-wait-sync: $(systemctl show -P Result systemd-time-wait-sync) after $(awk -v a="$(systemctl show -P ExecMainStartTimestampMonotonic systemd-time-wait-sync)" -v b="$(systemctl show -P ExecMainExitTimestampMonotonic systemd-time-wait-sync)" 'BEGIN { printf "%.1f", (b - a) / 1000000 }') s"
check "time-wait-sync: success, time-sync.target reached" sh -c \
    '[ "$(systemctl show -P Result systemd-time-wait-sync)" = success ] && [ "$(systemctl is-active time-sync.target)" = active ]'
# The kernel modules (already .ko.xz) come first in an uncompressed cpio;
# initramfs-tools compresses the rest with COMPRESS: a zstd frame after them.
zstd_initrd() {
    python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
end = d.find(b"TRAILER!!!") + 10 if d[:6] == b"070701" else 0
while end < len(d) and d[end] == 0:
    end += 1
print("SELFTEST initrd: %d bytes, plain cpio first %d, then %s" % (len(d), end, d[end:end + 4].hex()))
sys.exit(0 if d[end:end + 4] == bytes.fromhex("28b52ffd") else 1)' "$1"
}
check "initrd compressed as configured (zstd after the modules)" zstd_initrd "/boot/initrd.img-$(uname -r)"
echo "SELFTEST initrd: $(du -h "/boot/firmware/initrd.img-$(uname -r)" 2>/dev/null | cut -f1) on the FAT"
echo "SELFTEST clock: clock-epoch $(date -u -r /usr/lib/clock-epoch +%FT%TZ), timesync clock file $(date -u -r /var/lib/systemd/timesync/clock +%FT%TZ 2>&1)"
echo "SELFTEST release: $(readlink /opt/huxleyd/current); $(huxleyctl --version)"

# -- the first-boot file ---------------------------------------------------------------------
check "first boot applied" active huxleyd-firstboot.service
key=/etc/huxleyd/openai.key
echo "SELFTEST key: $(stat -c '%a %U:%G %n' "$key")"
check "key mode 0600 root" [ "$(stat -c '%a %U' "$key")" = "600 root" ]
check "key content" [ "$(sha256sum < "$key" | cut -d' ' -f1)" = "$KEY_SHA256" ]
check "setup file gone from FAT" [ ! -e /boot/firmware/huxleyd-setup.toml ]
check "key gone from FAT" sh -c "! grep -rl '$KEY_MARK' /boot/firmware --exclude=huxleyd-selftest.sh"
ls /boot/firmware | grep huxleyd-setup | sed 's/^/SELFTEST fat: /'
check "host name" [ "$(hostname)" = huxley-test ]
check "time zone" [ "$(readlink /etc/localtime)" = /usr/share/zoneinfo/Europe/Madrid ]

# Part "appliance": the network, SSH, mDNS, the image around the daemon, overlays.
if part appliance; then

# -- item 1: online over Wi-Fi in this boot ------------------------------------------------------
# The access point on the second radio, with a DHCP server; the device's
# side is only what first boot set up (wpa_supplicant@wlan0, networkd).
dpkg -i /boot/firmware/huxleyd-test-debs/hostapd_*.deb >/dev/null 2>&1
cat > /run/hostapd-test.conf <<'AP'
interface=wlan1
driver=nl80211
ssid=huxley-test-ap
country_code=ES
hw_mode=g
channel=6
wpa=2
wpa_passphrase=12345678
wpa_key_mgmt=WPA-PSK
rsn_pairwise=CCMP
AP
mkdir -p /run/systemd/network
printf '[Match]\nName=wlan1\n[Network]\nAddress=192.168.77.1/24\nDHCPServer=yes\n[DHCPServer]\nPoolOffset=10\n' \
    > /run/systemd/network/05-test-ap.network
networkctl reload
# hwsim0 is the simulated medium's monitor: it hears every frame wlan0 sends.
# Unmanaged by networkd, it takes resolved's global MulticastDNS=yes (seen:
# `resolvectl mdns` "Link 5 (hwsim0): yes", docs/lab/2026-12-03-image.md).
# A Pi has no such link; the test rig's is taken out of mDNS before the
# access point starts, so what the checks below see is what a Pi's links do.
no_mdns_on_hwsim0() { resolvectl mdns hwsim0 no 2>/dev/null; }
wait_for no_mdns_on_hwsim0 || echo "SELFTEST note: hwsim0's mDNS not turned off"
systemd-run --unit=test-hostapd /usr/sbin/hostapd /run/hostapd-test.conf >/dev/null
echo "SELFTEST wifi: journalctl -u wpa_supplicant@wlan0 (first lines)"
journalctl --no-pager -b -u wpa_supplicant@wlan0 -o short-monotonic | head -5 | sed 's/^/SELFTEST wpa: /'
check "wpa_supplicant@wlan0 started in the first boot" active wpa_supplicant@wlan0.service
associated() { wpa_cli -i wlan0 status | grep -q '^wpa_state=COMPLETED'; }
check "wlan0 associated (wpa_state=COMPLETED)" wait_for associated
leased() { ip -4 -o addr show dev wlan0 | grep -q 'inet 192\.168\.77\.'; }
check "wlan0 has a DHCP address" wait_for leased
networkctl --no-pager list 2>&1 | sed 's/^/SELFTEST networkctl: /'
ip -4 -o addr show dev wlan0 | sed 's/^/SELFTEST wlan0: /'

# -- item 2: SSH listening in this boot ------------------------------------------------------
listening22() { ss -Hltn 'sport = :22' | grep -q .; }
check "ssh.service active in the first boot" wait_for active ssh.service
check "something listens on :22" wait_for listening22
ss -Hltn 'sport = :22' | sed 's/^/SELFTEST ssh: /'
check "root's authorized_keys 0600" [ "$(stat -c '%a' /root/.ssh/authorized_keys)" = 600 ]
sshd -T 2>/dev/null | grep -E '^(passwordauthentication|kbdinteractiveauthentication|permitrootlogin) ' | sed 's/^/SELFTEST sshd: /'
check "sshd: no password login" sh -c 'sshd -T | grep -qx "passwordauthentication no"'
check "sshd: no keyboard-interactive login" sh -c 'sshd -T | grep -qx "kbdinteractiveauthentication no"'

# -- findable: huxley-test.local from a second network namespace ---------------------------
# A LAN host, as a namespace on a veth link: the device's end is eth9, which
# the image's own 10-wired.network (eth*) configures: DHCP (none here: an
# IPv6 link-local address) and Multicast DNS. The host end asks as any LAN
# host would (image/mdns-query.py: port 5353, the ff02::fb group).
ip netns add lan
ip link add eth9 type veth peer name lan0 netns lan
ip link set eth9 up
ip -n lan link set lo up
ip -n lan link set lan0 up
mdns_on_eth9() { resolvectl mdns eth9 2>/dev/null | grep -q 'yes'; }
check "resolved: Multicast DNS on eth9 (10-wired.network)" wait_for mdns_on_eth9
resolvectl mdns 2>&1 | sed 's/^/SELFTEST resolvectl mdns: /'
check "resolved: Multicast DNS on wlan0 (first boot's network file)" sh -c 'resolvectl mdns wlan0 | grep -q yes'
check "resolved listens on :5353" sh -c 'ss -Hlnu | grep -q ":5353"'
ll6() { ip -6 -o addr show dev eth9 scope link | grep -q 'inet6 fe80'; }
check "eth9 has its IPv6 link-local address" wait_for ll6
found() { ip netns exec lan python3 /boot/firmware/huxleyd-mdns-query.py "$1" "$2" lan0 5 >/tmp/mdns.out 2>&1; }
check "huxley-test.local resolved from the other namespace (AAAA)" wait_for found huxley-test.local AAAA
sed 's/^/SELFTEST mdns: /' /tmp/mdns.out
check "the answer is eth9's own address" sh -c \
    "grep -q \"\$(ip -6 -o addr show dev eth9 scope link | awk '{ print \$4 }' | cut -d/ -f1)\" /tmp/mdns.out"
# resolved 257.13 took its own answer, looped back while it probed its name,
# for another host's and renamed itself (huxley-test7, huxley-test10 in two
# runs). The image drops that echo (huxleyd-mdns-echo.service). A LAN host
# that asks while the name is probed is the case: the link goes down and up
# three more times, and each time the question comes as soon as it is up.
check "the rule that drops our own mDNS echo is loaded" sh -c \
    'nft list table inet huxleyd_mdns_echo | grep -q "udp dport 5353 fib saddr . iif type local"'
for round in 1 2 3; do
    ip link set eth9 down; ip link set eth9 up
    wait_for mdns_on_eth9; wait_for ll6
    found huxley-test.local AAAA || true
done
check "huxley-test.local answered after the link came up 3 more times" wait_for found huxley-test.local AAAA
check "SSH announced by DNS-SD (_ssh._tcp.local PTR huxley-test)" sh -c \
    'ip netns exec lan python3 /boot/firmware/huxleyd-mdns-query.py _ssh._tcp.local PTR lan0 5 >/tmp/mdns.out 2>&1 && grep -q "PTR huxley-test\._ssh\._tcp\.local" /tmp/mdns.out'
sed 's/^/SELFTEST dns-sd: /' /tmp/mdns.out
# A renamed service or host (huxley-test2...) is resolved's answer to what it
# took for a conflict: its own lines say on which link and for which record.
journalctl --no-pager -b -u systemd-resolved -o short-monotonic | grep -iE 'conflict|changing' | tail -8 \
    | sed 's/^/SELFTEST resolved: /'
check "resolved saw no name conflict in this boot" sh -c \
    '! journalctl --no-pager -b -u systemd-resolved | grep -q "Hostname conflict"'
nft list table inet huxleyd_mdns_echo | grep counter | sed 's/^[[:space:]]*/SELFTEST own echo dropped: /'
check "an unknown name gets no answer" sh -c \
    '! ip netns exec lan python3 /boot/firmware/huxleyd-mdns-query.py kitchen.local AAAA lan0 3 >/dev/null'
# The memory mDNS costs: none of it is a new process (avahi-daemon would be).
echo "SELFTEST memory: systemd-resolved $(grep -E '^VmRSS' "/proc/$(pidof systemd-resolved)/status" | tr -s ' \t' ' ') with mDNS on $(resolvectl mdns | grep -c yes) links; avahi-daemon running: $(pidof avahi-daemon >/dev/null && echo yes || echo no)"
ip link del eth9
ip netns del lan

# -- items 7, 8: clock, journal, exposure ----------------------------------------------------------
check "huxleyd ordered after time-sync.target" sh -c 'systemctl show -P After huxleyd | grep -qw time-sync.target'
check "systemd-time-wait-sync enabled" [ "$(systemctl is-enabled systemd-time-wait-sync.service)" = enabled ]
echo "SELFTEST journal: $(journalctl --disk-usage)"
check "journal capped (SystemMaxUse=64M)" sh -c 'systemd-analyze cat-config systemd/journald.conf | grep -q "^SystemMaxUse=64M"'
check "nothing on LLMNR :5355" sh -c "! ss -Hlnu | grep -q ':5355'"
check "wpa_supplicant.service (D-Bus, root) masked" [ "$(systemctl is-enabled wpa_supplicant.service 2>&1)" = masked ]
ss -Hltnu | sed 's/^/SELFTEST listening: /'
check "security updates on (APT::Periodic)" sh -c 'apt-config dump | grep -q "^APT::Periodic::Unattended-Upgrade \"1\";"'

# -- the image around it ---------------------------------------------------------------------
check "root grown" [ -e /var/lib/huxleyd-image/root-grown ]
echo "SELFTEST root: $(df -h --output=size,used,avail / | tail -1)"
ls -l /dev/gpiochip* | sed 's/^/SELFTEST gpio: /'
check "gpio chip group gpio 0660" [ "$(stat -c '%a %G' /dev/gpiochip0)" = "660 gpio" ]
check "service user opens the gpio chip" setpriv --reuid=huxley --regid=huxley --init-groups \
    /opt/huxleyd/venv/bin/python -c 'import os; os.close(os.open("/dev/gpiochip0", os.O_RDWR))'

# -- the journal: structured fields --------------------------------------------------------
echo "SELFTEST journal: journalctl -u huxleyd HUXLEY_EVENT=daemon_started"
journalctl --no-pager -u huxleyd HUXLEY_EVENT=daemon_started
journalctl --no-pager -u huxleyd HUXLEY_EVENT=daemon_started -o verbose | grep -E '^ +(HUXLEY_|CODE_|PRIORITY)' | sed 's/^ */SELFTEST field: /'
check "journal has HUXLEY_EVENT=daemon_started" \
    [ "$(journalctl -u huxleyd HUXLEY_EVENT=daemon_started -o cat | wc -l)" -ge 1 ]
check "no logging errors" sh -c "! journalctl -u huxleyd -o cat | grep -q -- '--- Logging error ---'"

echo "SELFTEST doctor:"
huxleyctl doctor 2>&1 | sed 's/^/  /'

# -- the control socket's group: the daemon gives it with chown, which the unit's --------
# seccomp filter must leave it (control_chgrp_failed otherwise: then only the
# daemon's own group reaches the socket).
journalctl --no-pager -u huxleyd -b -o cat | grep -E '^control_(listening|chgrp_failed|group_missing)' | tail -2 \
    | sed 's/^/SELFTEST control: /'
echo "SELFTEST control socket: $(stat -c '%a %U:%G' /run/huxleyd/control.sock)"
check "control socket group huxley-control (the daemon's chgrp)" \
    [ "$(stat -c '%G' /run/huxleyd/control.sock)" = huxley-control ]

# -- item 4: overlays after an initramfs update and a raspi-firmware reinstall -----------
overlays_apply() {
    n=0; bad=0
    for dtb in /boot/firmware/bcm2711-*.dtb /boot/firmware/bcm2837-*.dtb; do
        [ -e "$dtb" ] || continue
        for dtbo in /boot/firmware/overlays/huxley-*.dtbo; do
            n=$((n + 1))
            if ! fdtoverlay -i "$dtb" -o /tmp/merged.dtb "$dtbo" 2>/tmp/fdt.err; then
                echo "SELFTEST overlay: $(basename "$dtbo") on $(basename "$dtb"): $(cat /tmp/fdt.err)"
                bad=$((bad + 1))
            fi
        done
    done
    echo "SELFTEST overlays ($1): $((n - bad)) of $n apply"
    [ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
}
check "overlays apply (as built)" overlays_apply "as built"
t0=$(up)
update-initramfs -u >/tmp/initramfs.log 2>&1 || sed 's/^/SELFTEST initramfs: /' /tmp/initramfs.log
echo "SELFTEST update-initramfs -u took $(awk -v a="$t0" -v b="$(up)" 'BEGIN { printf "%.0f", b - a }') s"
check "overlays apply after update-initramfs -u" overlays_apply "after update-initramfs -u"
apt-get install -y -qq --reinstall /boot/firmware/huxleyd-test-debs/raspi-firmware_*.deb >/tmp/reinstall.log 2>&1 \
    || sed 's/^/SELFTEST reinstall: /' /tmp/reinstall.log
check "overlays apply after reinstalling raspi-firmware" overlays_apply "after a raspi-firmware reinstall"

fi  # part appliance

# -- a turn, with the simulator (no network in here) -------------------------------------
# The daemon runs as `make run` does without hardware: mock pins, WAV audio,
# the built-in simulator. The key stays where first boot put it (checked
# above); a second setup file, through the first-boot mechanism again, names
# the simulator as the provider.
printf '[provider]\nkind = "sim"\n' > /boot/firmware/huxleyd-setup.toml
systemctl restart huxleyd-firstboot.service
check "provider switched to sim" grep -q '^kind = "sim"' /etc/huxleyd/huxleyd.toml
check "key still in place, 0600 root" [ "$(stat -c '%a %U' "$key")" = "600 root" ]
# Emulation only, in this VM's config: TCG runs the arm64 machine many times
# slower than a Pi, and the simulator's spoken answer (espeak-ng, ~0.9 s to
# first audio natively) can take longer than the 6 s a provider gets before
# a reply counts as silent (response_retry, then outcome=silent). 60 s is
# the most the config allows.
sed -i 's/^silent_response_timeout_s = .*/silent_response_timeout_s = 60.0/' /etc/huxleyd/huxleyd.toml
check "reply time-out raised for emulation" grep -q '^silent_response_timeout_s = 60.0$' /etc/huxleyd/huxleyd.toml
# Likewise the link's stall bound (8 s without a complete frame while a reply is
# due): under emulation the simulator's first reply after a connect took longer
# (provider_stalled in the no-RTC test's journal), and when two VMs shared the
# host this test's first turn failed.
sed -i 's/^stall_timeout_s = .*/stall_timeout_s = 60.0/' /etc/huxleyd/huxleyd.toml
check "stall time-out raised for emulation" grep -q '^stall_timeout_s = 60.0$' /etc/huxleyd/huxleyd.toml
check "config valid (huxleyd --check-config)" /opt/huxleyd/venv/bin/huxleyd --check-config --config /etc/huxleyd/huxleyd.toml
# And the unit's start bound (TimeoutStartSec=90): the first boot's start took
# 52-69 s here, and with the host loaded (an image build beside) a restart
# took over 90 s, so updates were "rolled back" for the emulator's speed
# (docs/lab/2026-12-03-image.md). A drop-in in this VM only: an update still
# waits for READY through systemctl, and a release that crashes after READY
# is still caught by the health window.
mkdir -p /etc/systemd/system/huxleyd.service.d
printf '[Service]\nTimeoutStartSec=600\n' > /etc/systemd/system/huxleyd.service.d/zz-emulation.conf
systemctl daemon-reload
check "start time-out raised for emulation" sh -c '[ "$(systemctl show -P TimeoutStartUSec huxleyd)" = 10min ]'
# restart waits for READY (Type=notify) and fails at once if the daemon does.
if ! systemctl restart huxleyd.service; then
    journalctl --no-pager -u huxleyd -n 20 -o cat | sed 's/^/SELFTEST huxleyd failed: /'
fi
check "huxleyd READY again" wait_for active huxleyd.service
check "daemon started with the simulator" sh -c \
    "journalctl -u huxleyd HUXLEY_EVENT=daemon_started -o cat | tail -1 | grep -q 'provider=\"simulator'"
# A say while the provider link is down is refused at once ("offline"):
# wait until the daemon reports the link up.
connected() { huxleyctl status --json | grep -q '"provider_state": "connected"'; }
check "provider connected (huxleyctl status)" wait_for connected
idle_now() { huxleyctl status --json | tr -d ' \n' | grep -q '"busy":\[\],"reboot_pending":true,"reboot_policy":"when_idle"'; }
# Part "turn": a turn, the reboot timer, a broken setup file.
if part turn; then
echo "SELFTEST say: huxleyctl say 'what time is it'"
said=$(huxleyctl --timeout 300 say "what time is it" 2>&1); said_rc=$?
echo "$said" | sed 's/^/SELFTEST said: /'
# say exits 0 only for outcome=answered; it prints "(turn ..: no spoken
# answer)" for a turn that ended without one.
check "say exit 0 (answered)" [ "$said_rc" -eq 0 ]
check "say printed the answer" sh -c '[ -n "$1" ] && ! printf "%s\n" "$1" | grep -q "^(turn \|^huxleyctl:"' - "$said"
done_turn() { journalctl -u huxleyd HUXLEY_EVENT=turn_done -o cat | grep -q .; }
check "turn_done logged" wait_for done_turn
journalctl --no-pager -u huxleyd HUXLEY_EVENT=turn_done -n 1 -o verbose | grep -E '^ +HUXLEY_' | sed 's/^ */SELFTEST turn_done: /'
check "turn_done outcome=answered" sh -c \
    "journalctl -u huxleyd HUXLEY_EVENT=turn_done -n 1 -o verbose | grep -q '^ *HUXLEY_OUTCOME=answered$'"

# -- security-update reboots: at night, only idle, only if the persona allows it --------
# The reboot itself cannot run here (it would end this test): each case runs the
# timer's unit for real, with a reason to wait, and reads its journal line; the
# last one checks that the status the command obeys lists no reason to wait.
check "huxleyd-reboot.timer enabled" [ "$(systemctl is-enabled huxleyd-reboot.timer)" = enabled ]
systemctl list-timers --all --no-pager huxleyd-reboot.timer apt-daily-upgrade.timer | sed 's/^/SELFTEST timers: /'
check "unattended-upgrades at 01:00 (+30 min)" sh -c \
    'systemctl show -P TimersCalendar apt-daily-upgrade.timer | grep -q "01:00:00"'
# The command's own lines only: `-u` also matches systemd's lines about the unit
# ("Consumed 3.250s CPU time"), which come after the command's last word.
reboot_said() { journalctl _SYSTEMD_UNIT=huxleyd-reboot.service -o cat | tail -1 | grep -q "$1"; }
reboot_journal() {
    journalctl --no-pager _SYSTEMD_UNIT=huxleyd-reboot.service -o cat | tail -1 | sed "s/^/SELFTEST reboot ($1): /"
}
echo '*** System restart required ***' > /run/reboot-required  # as unattended-upgrades' kernel hook does
check "status shows the pending reboot" sh -c 'huxleyctl status | grep -q "reboot pending (security updates)"'
check "doctor shows the pending reboot" sh -c 'huxleyctl doctor | grep -q "reboot pending (security updates)"'
huxleyctl ptt press
systemctl start huxleyd-reboot.service
check "reboot waits while the button is held" wait_for reboot_said "reboot needed, waiting: listening to the user"
reboot_journal "button held"
huxleyctl ptt release
# A press held this long with nothing said (the mic is a silent WAV here) is the
# long silent hold, the mute gesture: the device is muted now, as a user's would
# be. Unmuted here, so the case "idle" below is the plain one; a muted device
# reboots too (checked after the update, on this checkout's daemon).
echo "SELFTEST after the silent hold: $(huxleyctl mute 2>&1)"
huxleyctl mute off >/dev/null
persona=/etc/huxleyd/personas/default.toml
cp "$persona" /root/persona.before
sed -i 's/^reboot = "when_idle"$/reboot = "never"/' "$persona"  # the shipped [updates] table
systemctl reload huxleyd
never() { huxleyctl status --json | grep -q '"reboot_policy": "never"'; }
check "reload: the persona says never" wait_for never
systemctl start huxleyd-reboot.service
check "reboot waits: the persona does not allow it" wait_for reboot_said "does not allow automatic reboots"
reboot_journal "persona never"
cp /root/persona.before "$persona" && systemctl reload huxleyd
systemctl stop huxleyd.service
systemctl start huxleyd-reboot.service
check "reboot waits while huxleyd does not answer" wait_for reboot_said "huxleyd is not answering"
reboot_journal "daemon down"
systemctl start huxleyd.service
check "huxleyd READY again" wait_for active huxleyd.service
check "idle and allowed: status lists no reason to wait (the timer would reboot now)" wait_for idle_now \
    || huxleyctl status --json | tr -d '\n' | sed 's/^/SELFTEST status: /'
rm -f /run/reboot-required
systemctl start huxleyd-reboot.service
check "no reboot pending: the unit is skipped" sh -c \
    '[ "$(systemctl show -P ConditionResult huxleyd-reboot.service)" = no ]'

# -- item 5: a broken setup file: the device says so, never the simulator ---------------
before=$(sha256sum /etc/huxleyd/huxleyd.toml /etc/hostname | sha256sum)
printf '[device]\nhostname = "kitchen"\n[wifi]\nssid = "home"\npassword = "12345678"\ncountry = "Spain"\n' \
    > /boot/firmware/huxleyd-setup.toml
systemctl restart huxleyd-firstboot.service 2>/dev/null
check "broken file: nothing applied" [ "$(sha256sum /etc/huxleyd/huxleyd.toml /etc/hostname | sha256sum)" = "$before" ]
check "broken file: stays on FAT" [ -e /boot/firmware/huxleyd-setup.toml ]
sed 's/^/SELFTEST error file: /' /boot/firmware/huxleyd-setup.error.txt
check "broken file: error file names the setting" grep -q 'wifi.country' /boot/firmware/huxleyd-setup.error.txt
journalctl --no-pager -u huxleyd-firstboot HUXLEY_EVENT=firstboot_failed -o cat | tail -1 | sed 's/^/SELFTEST firstboot_failed: /'
systemctl restart huxleyd.service || true
check "huxleyd up after the failed setup" wait_for active huxleyd.service
setup_failed() { huxleyctl status --json | grep -q '"provider_state": "setup_failed"'; }
check "status: setup_failed" wait_for setup_failed
huxleyctl status 2>&1 | sed 's/^/SELFTEST status: /'
check "status says setup failed: ..." sh -c 'huxleyctl status | grep -q "setup failed: huxleyd-setup.toml"'
check "not the simulator" sh -c '! huxleyctl status --json | grep -q "\"is_simulator\": true"'
huxleyctl ptt tap >/dev/null; huxleyctl ptt tap >/dev/null
pressed() { [ "$(journalctl -u huxleyd HUXLEY_EVENT=press_while_setup_failed -o cat | wc -l)" -ge 2 ]; }
check "each press: error cue (press_while_setup_failed x2)" wait_for pressed

fi  # part turn

# -- item 6: huxleyctl update to N+1, then a release that crashes after READY ------------
# The setup failure above would answer every press with the error cue: gone,
# as an owner fixing the file and restarting would leave it.
rm -f /boot/firmware/huxleyd-setup.toml /run/huxleyd-firstboot/failed
systemctl restart huxleyd.service || true
check "huxleyd READY without the setup failure" wait_for active huxleyd.service
check "provider connected again" wait_for connected
if part update; then
# Which release runs, as every way in sees it: the one link, the daemon's own
# process (its interpreter is the release's venv), the CLI on the PATH (which
# the reboot timer runs), the venv first boot runs, status and --version.
runs_release() {
    pid=$(systemctl show -P MainPID huxleyd)
    [ "$(readlink /opt/huxleyd/current)" = "releases/$1" ] \
        && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "^/opt/huxleyd/releases/$1/venv/bin/python" \
        && [ "$(readlink -f /usr/local/bin/huxleyctl)" = "/opt/huxleyd/releases/$1/venv/bin/huxleyctl" ] \
        && [ "$(readlink -f "$(systemctl show -P ExecStart huxleyd-reboot.service | sed -n 's/.*path=\([^ ;]*\).*/\1/p')")" = "/opt/huxleyd/releases/$1/venv/bin/huxleyctl" ] \
        && [ "$(readlink -f /opt/huxleyd/venv)" = "/opt/huxleyd/releases/$1/venv" ] \
        && huxleyctl --version | grep -q "(release $1," \
        && huxleyctl status --json | grep -q "\"release\": \"$1\""
}
# The units systemd loaded are the release's own files (huxleyd.update.units):
# each unit's fragment resolves into releases/<v>/share/systemd, and no link
# `systemctl enable` made names one release (the update would not move it).
units_of() {
    for unit in huxleyd.service huxleyd-skillhost.socket; do
        fragment=$(systemctl show -P FragmentPath "$unit")
        [ "$(readlink -f "$fragment")" = "/opt/huxleyd/releases/$1/share/systemd/$unit" ] || return 1
        [ "$(systemctl is-enabled "$unit")" = enabled ] || return 1
    done
    ! find /etc/systemd/system -type l -lname '*/releases/*' | grep -q .
}
show_units() {
    for unit in huxleyd.service huxleyd-skillhost.socket; do
        fragment=$(systemctl show -P FragmentPath "$unit")
        echo "SELFTEST units: $unit $fragment -> $(readlink -f "$fragment") ($(systemctl is-enabled "$unit"))"
    done
}
image_release=$(readlink /opt/huxleyd/current | sed 's|^releases/||')
check "the image runs release $image_release everywhere" runs_release "$image_release"
show_units
check "the units are release $image_release's, enabled, none pinned" units_of "$image_release"
t0=$(up)
huxleyctl update /root/huxleyd-update.tar >/tmp/update.out 2>&1; rc=$?
sed 's/^/SELFTEST update: /' /tmp/update.out
echo "SELFTEST update to N+1 took $(awk -v a="$t0" -v b="$(up)" 'BEGIN { printf "%.0f", b - a }') s (with the health window), exit $rc"
new=$(tar -xOf /root/huxleyd-update.tar huxleyd-update.toml | sed -n 's/^version = "\(.*\)"/\1/p')
check "update to N+1 ($new): exit 0" [ "$rc" -eq 0 ]
check "N+1 ($new) runs everywhere: daemon, CLI, reboot timer, first boot, status" runs_release "$new"
show_units
check "N+1's units: systemd reads $new's own unit files" units_of "$new"
check "huxleyd READY on $new" active huxleyd.service
journalctl --no-pager -u huxleyd -n 3 -o short-monotonic | sed 's/^/SELFTEST journal after update: /'
# N+1 is this checkout's daemon: a muted device is idle for the reboot timer.
echo '*** System restart required ***' > /run/reboot-required
huxleyctl mute on >/dev/null
check "N+1: muted and idle, status lists no reason to wait" wait_for idle_now \
    || huxleyctl status --json | tr -d '\n' | sed 's/^/SELFTEST status: /'
huxleyctl status --json | tr -d ' \n' | grep -o '"state":"[a-z]*"' | sed 's/^/SELFTEST N+1 status: /'
huxleyctl mute off >/dev/null
rm -f /run/reboot-required
# N+2: the same source, but 20 s after READY its daemon exits (status 3), as a
# release with a bug that shows a little after start; systemd restarts it.
rm -rf /root/broken && mkdir /root/broken && tar -xf /root/huxleyd-update.tar -C /root/broken
cat >> /root/broken/src/huxleyd/app/systemd.py <<'PY'


_vm_test_ready = Notifier.ready


def _vm_test_crash_after_ready(self, status=None):  # type: ignore[no-untyped-def]
    import os as _os
    import threading as _threading

    sent = _vm_test_ready(self, status)
    _threading.Timer(20.0, _os._exit, (3,)).start()  # the VM test's broken N+2
    return sent


Notifier.ready = _vm_test_crash_after_ready  # type: ignore[method-assign]
PY
check "broken N+2 made (crashes 20 s after READY)" grep -q '_vm_test_crash_after_ready' /root/broken/src/huxleyd/app/systemd.py
printf 'version = "%s"\n' "${new}-crashes" > /root/broken/huxleyd-update.toml
tar -C /root/broken -cf /root/broken.tar huxleyd-update.toml src wheels && rm -rf /root/broken
t0=$(up)
huxleyctl update /root/broken.tar >/tmp/update.out 2>&1; rc=$?
sed 's/^/SELFTEST broken update: /' /tmp/update.out
echo "SELFTEST broken update took $(awk -v a="$t0" -v b="$(up)" 'BEGIN { printf "%.0f", b - a }') s, exit $rc"
check "broken update: exit 1" [ "$rc" -eq 1 ]
check "broken update: it had reached READY (rolled back on health)" grep -q 'after READY' /tmp/update.out
check "broken update: rolled back, $new runs again everywhere" runs_release "$new"
show_units
check "rolled back: the units are $new's again" units_of "$new"
check "huxleyd READY again after the rollback" active huxleyd.service
check "broken release removed, $new kept" sh -c "[ ! -e '/opt/huxleyd/releases/${new}-crashes' ] && [ -d '/opt/huxleyd/releases/$new' ]"
journalctl --no-pager -u huxleyd --since=-15min -o short-monotonic | grep -E "Main process exited|Scheduled restart|Started|Stopped" | tail -6 | sed 's/^/SELFTEST journal rollback: /'
journalctl --no-pager HUXLEY_EVENT=update_rolled_back -o cat | tail -1 | sed 's/^/SELFTEST journal: /'
check "journal: update_rolled_back" sh -c 'journalctl HUXLEY_EVENT=update_rolled_back -o cat | grep -q .'
rolled_back_status() { huxleyctl status | grep -q "rolled back"; }
check "status says the update was rolled back" wait_for rolled_back_status
huxleyctl status 2>&1 | grep -A1 "rolled back" | sed 's/^/SELFTEST status: /'
check "doctor says it too" sh -c 'huxleyctl doctor 2>&1 | grep -q "rolled back"'
huxleyctl ptt tap >/dev/null
cued() { journalctl -u huxleyd HUXLEY_EVENT=press_while_degraded -o cat | grep -q 'update: update to'; }
check "the next press cues it (press_while_degraded: update)" wait_for cued
huxleyctl update /root/broken.tar >/tmp/update.out 2>&1; rc=$?
sed 's/^/SELFTEST broken again: /' /tmp/update.out
check "the rolled-back release is not tried again" sh -c "[ $rc -eq 1 ] && grep -q 'not tried again' /tmp/update.out"
check "and $new still runs" runs_release "$new"
fi  # part update

# -- third-party skills: a host of their own, as huxley-skills, walled off -----------------
# A skill installed as an owner installs one (`huxleyctl skills install`, a
# wheel made here by hand: no network, no build tools needed) whose tool
# tries to read the provider key, the daemon's environment and its state.
# systemd starts its host (huxleyd-skillhost.socket, one
# huxleyd-skillhost@.service per link) as huxley-skills; the unit hides those
# paths and other users' processes. The tool writes what it saw into its own
# data folder, the one place it may write.
if part skills; then
check "huxleyd-skillhost.socket enabled" [ "$(systemctl is-enabled huxleyd-skillhost.socket 2>&1)" = enabled ]
check "huxleyd-skillhost.socket listening" active huxleyd-skillhost.socket
ls -l /run/huxleyd-skills/link 2>&1 | sed 's/^/SELFTEST skill link: /'
mkdir -p -m 0755 /var/tmp/huxleyd-walls  # the install plans as an unprivileged user: readable
python3 - /var/tmp/huxleyd-walls <<'PY'
import base64, hashlib, sys, zipfile
SKILL = """import json
import os
import pwd
from pathlib import Path

from huxley_sdk import ToolDefinition, ToolResult

PID_FILE = Path("/run/huxleyd-walls-test/pid")  # the test writes the daemon's pid here


class WallsSkill:
    name = "walls"
    tools = [ToolDefinition("walls_probe", "Read what is the daemon's.", {"type": "object", "properties": {}})]

    async def setup(self, ctx):
        self.ctx = ctx

    async def handle(self, tool_name, args):
        pid = PID_FILE.read_text().strip()
        seen = {"uid": os.getuid(), "user": pwd.getpwuid(os.getuid()).pw_name, "daemon_pid": pid}
        for path in ("/etc/huxleyd/openai.key", "/proc/%s/environ" % pid, "/var/lib/huxleyd"):
            try:
                if os.path.isdir(path):
                    os.listdir(path)
                else:
                    with open(path, "rb") as f:
                        f.read(1)
                seen[path] = "read"
            except OSError as exc:
                seen[path] = "%s errno=%s" % (type(exc).__name__, exc.errno)
        (self.ctx.persona_data_dir / "walls.json").write_text(json.dumps(seen))
        return ToolResult(json.dumps(seen))
"""
info = "huxley_skill_walls-0.1.dist-info"
files = {
    "huxley_walls_skill.py": SKILL,
    info + "/METADATA": "Metadata-Version: 2.1\nName: huxley-skill-walls\nVersion: 0.1\nRequires-Dist: huxley-sdk\n",
    info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: image-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    info + "/entry_points.txt": "[huxley.skills]\nwalls = huxley_walls_skill:WallsSkill\n",
}
def line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))
record = [line(n, t.encode()) for n, t in files.items()] + [info + "/RECORD,,"]
files[info + "/RECORD"] = "\n".join(record) + "\n"
with zipfile.ZipFile(sys.argv[1] + "/huxley_skill_walls-0.1-py3-none-any.whl", "w") as zf:
    for name, text in files.items():
        zf.writestr(name, text)
PY
chmod 0644 /var/tmp/huxleyd-walls/*.whl
huxleyctl skills install huxley-skill-walls --no-index --find-links /var/tmp/huxleyd-walls >/tmp/skills.out 2>&1; rc=$?
sed 's/^/SELFTEST skills install: /' /tmp/skills.out
check "huxleyctl skills install huxley-skill-walls: exit 0" [ "$rc" -eq 0 ]
persona=/etc/huxleyd/personas/default.toml
printf '\n[skills.walls]\n' >> "$persona"
mkdir -p -m 0755 /etc/huxleyd/walls-test
cat > /etc/huxleyd/walls-test/walls.toml <<'TOML'
name = "walls"
default_reply = "Sorry, once more?"

[[turns]]
hear = "check the walls"

[[turns.responses]]
tool_calls = [{ name = "walls_probe", arguments = {} }]

[[turns.responses]]
say = "Checked."
TOML
conf=/etc/huxleyd/huxleyd.toml
sed -i -e 's|^# *sim_scenario = .*|sim_scenario = "/etc/huxleyd/walls-test/walls.toml"|' \
    -e 's|^sim_scenario = .*|sim_scenario = "/etc/huxleyd/walls-test/walls.toml"|' "$conf"
check "config names the walls script" grep -q '^sim_scenario = "/etc/huxleyd/walls-test/walls.toml"' "$conf"
if ! systemctl restart huxleyd.service; then
    journalctl --no-pager -u huxleyd -n 20 -o cat | sed 's/^/SELFTEST huxleyd failed: /'
fi
check "huxleyd READY with the walls skill" wait_for active huxleyd.service
check "provider connected (walls)" wait_for connected
walls_loaded() { huxleyctl skills 2>/dev/null | grep -qw walls; }
check "huxleyctl skills lists walls" wait_for walls_loaded
huxleyctl skills 2>&1 | sed 's/^/SELFTEST skills: /'
daemon=$(systemctl show -P MainPID huxleyd)
mkdir -p -m 0755 /run/huxleyd-walls-test
echo "$daemon" > /run/huxleyd-walls-test/pid && chmod 0644 /run/huxleyd-walls-test/pid
said=$(huxleyctl --timeout 300 say "check the walls" 2>&1); said_rc=$?
echo "$said" | sed 's/^/SELFTEST walls said: /'
walls=$(find /var/lib/huxleyd-skills/data -name walls.json 2>/dev/null | head -1)
echo "SELFTEST walls: ${walls:-no walls.json} $(cat "$walls" 2>/dev/null)"
check "the walls tool ran (walls.json in its data folder)" [ -n "$walls" ]
echo "SELFTEST walls data folder: $(stat -c '%a %U:%G %n' "$(dirname "${walls:-/nonexistent/x}")" 2>&1)"
seen() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], "missing"))' "$walls" "$1" 2>/dev/null; }
check "the tool ran as huxley-skills" [ "$(seen user)" = huxley-skills ]
check "it saw the daemon's pid ($daemon)" [ "$(seen daemon_pid)" = "$daemon" ]
check "the key is refused to it (PermissionError)" sh -c "echo '$(seen /etc/huxleyd/openai.key)' | grep -q '^PermissionError errno=13$'"
# ProtectProc=invisible: another user's /proc/<pid> is not even there for it.
check "the daemon's environ is refused to it (PermissionError, or not visible)" sh -c \
    "echo '$(seen "/proc/$daemon/environ")' | grep -Eq '^(PermissionError errno=13|FileNotFoundError errno=2)$'"
check "the daemon's state is refused to it (PermissionError)" sh -c "echo '$(seen /var/lib/huxleyd)' | grep -q '^PermissionError errno=13$'"
# The host process itself, as systemd started it.
hosts=$(systemctl list-units --plain --no-legend 'huxleyd-skillhost@*' | awk '{ print $1 }')
echo "$hosts" | sed 's/^/SELFTEST skill host unit: /'
host_users() {
    for unit in $hosts; do
        pid=$(systemctl show -P MainPID "$unit")
        [ "$pid" -gt 0 ] 2>/dev/null && ps -o user= -p "$pid"
    done
}
echo "SELFTEST skill host users: $(host_users | sort | uniq -c | tr -s ' \n' ' ')"
check "a host process runs, and every one as huxley-skills" sh -c \
    '[ -n "$1" ] && [ -z "$(printf "%s\n" "$1" | grep -vx huxley-skills)" ]' - "$(host_users)"
check "the daemon runs as huxley" [ "$(ps -o user= -p "$daemon")" = huxley ]
fi  # part skills

if [ "$fails" -eq 0 ]; then echo "SELFTEST PASS"; else echo "SELFTEST FAILED: $fails check(s)"; fi
echo "SELFTEST end at uptime $(up) s"
systemctl poweroff --no-block
