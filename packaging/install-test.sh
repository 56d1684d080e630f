#!/bin/sh
# Installs the .deb on this machine, runs cuzk as the cuzk user, checks the unit, upgrades with an
# edited conffile, purges, and checks that nothing is left. Needs root (dpkg).
set -eu
cd "$(dirname "$0")/.."

deb=$(ls target/debian/cuzk-appliance_*.deb | head -n 1)
fail() { echo "install-test: $*" >&2; exit 1; }

dpkg --purge cuzk-appliance >/dev/null 2>&1 || true
dpkg -i "$deb"

test -x /usr/bin/cuzk || fail "/usr/bin/cuzk missing"
getent passwd cuzk >/dev/null || fail "no cuzk user"
[ "$(stat -c %U /var/lib/cuzk)" = cuzk ] || fail "/var/lib/cuzk not owned by cuzk"
runuser -u cuzk -- cuzk --version
runuser -u cuzk -- cuzk config show | grep -q '^listen = "127.0.0.1:9820"  # /etc/cuzk/cuzk.toml\|^listen = "127.0.0.1:9820"  # default' \
    || fail "cuzk config show as cuzk"

unit=$(dpkg -L cuzk-appliance | grep '/systemd/system/cuzk.service$')
systemd-analyze verify "$unit"
exposure=$(systemd-analyze security --offline=true "$unit" | sed -n 's/.*Overall exposure level for cuzk.service: \([0-9.]*\).*/\1/p')
echo "install-test: systemd-analyze security exposure $exposure"
awk -v e="$exposure" 'BEGIN { exit !(e < 3.0) }' || fail "exposure $exposure is not below 3.0"
test -L /etc/systemd/system/multi-user.target.wants/cuzk.service || fail "the unit is not enabled"

# An edited conffile survives an upgrade.
sed -i 's/^# workers = [0-9]*$/workers = 3/' /etc/cuzk/cuzk.toml
grep -q '^workers = 3$' /etc/cuzk/cuzk.toml || fail "could not edit the conffile"
version=$(dpkg-deb -f "$deb" Version)
cargo deb --no-build --deb-version "${version}+upgrade" --output target/debian/upgrade.deb >/dev/null
dpkg -i target/debian/upgrade.deb
[ "$(dpkg-query -W -f '${Version}' cuzk-appliance)" = "${version}+upgrade" ] || fail "upgrade not installed"
grep -q '^workers = 3$' /etc/cuzk/cuzk.toml || fail "the edited conffile was replaced on upgrade"
runuser -u cuzk -- cuzk config show | grep -q '^workers = 3  # /etc/cuzk/cuzk.toml' || fail "edited value not in effect"

# Purge leaves nothing behind.
dpkg --purge cuzk-appliance
for path in /usr/bin/cuzk /etc/cuzk /var/lib/cuzk "$unit" \
    /etc/systemd/system/multi-user.target.wants/cuzk.service /usr/share/doc/cuzk-appliance; do
    [ ! -e "$path" ] || fail "$path left after purge"
done
! getent passwd cuzk >/dev/null || fail "cuzk user left after purge"
! getent group cuzk >/dev/null || fail "cuzk group left after purge"
rm -f target/debian/upgrade.deb
echo "install-test: install, upgrade (conffile kept) and purge OK"
