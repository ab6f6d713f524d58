# Sourced by check-packages.sh and boot-test.sh: an apt for Debian's arm64
# archive (image/base.sh's suite and mirrors) in a temporary directory, so
# nothing on this machine changes.
#
#   . image/arm64-apt.sh; arm64_apt DIR     then apt-get/apt-cache as usual
#
# Sets APT_CONFIG; returns 77 when the archive cannot be reached (offline).
# shellcheck shell=sh
arm64_apt() {
    _dir=$1
    _suite=${HUXLEYD_IMAGE_SUITE:-trixie}
    _mirror=${HUXLEYD_IMAGE_MIRROR:-http://deb.debian.org/debian}
    _security=${HUXLEYD_IMAGE_SECURITY:-http://deb.debian.org/debian-security}
    _keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    command -v apt-get >/dev/null || { echo "arm64-apt: no apt-get here" >&2; return 77; }
    [ -r "$_keyring" ] || { echo "arm64-apt: $_keyring missing (debian-archive-keyring)" >&2; return 77; }
    mkdir -p "$_dir/etc/apt/apt.conf.d" "$_dir/etc/apt/preferences.d" "$_dir/etc/apt/sources.list.d" \
        "$_dir/var/lib/apt/lists/partial" "$_dir/var/cache/apt/archives/partial" "$_dir/var/lib/dpkg" "$_dir/log"
    : > "$_dir/var/lib/dpkg/status"
    for _s in "$_mirror $_suite" "$_mirror $_suite-updates" "$_security $_suite-security"; do
        echo "deb [arch=arm64 signed-by=$_keyring] $_s main non-free-firmware"
    done > "$_dir/etc/apt/sources.list"
    cat > "$_dir/apt.conf" <<CONF
Dir "$_dir/";
Dir::State::status "$_dir/var/lib/dpkg/status";
Dir::Log "$_dir/log";
APT::Architecture "arm64";
APT::Architectures { "arm64"; };
APT::Install-Recommends "false";
APT::Sandbox::User "root";
Acquire::Languages "none";
Acquire::Retries "2";
Debug::NoLocking "true";
CONF
    APT_CONFIG="$_dir/apt.conf"
    export APT_CONFIG
    if ! apt-get -qq update >"$_dir/update.log" 2>&1; then
        echo "arm64-apt: the archive cannot be reached ($_mirror):" >&2
        sed 's/^/  /' "$_dir/update.log" >&2
        return 77
    fi
}
