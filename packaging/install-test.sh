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

# The unit's ExecReload runs a binary of this package (no other package's kill), and it makes a
# running service read its configuration again.
reload=$(sed -n 's/^ExecReload=\([^ ]*\).*/\1/p' "$unit")
dpkg -S "$reload" 2>/dev/null | grep -q '^cuzk-appliance:' || fail "ExecReload runs $reload, not a file of this package"
log=$(mktemp)
# setpriv execs (runuser would stay the parent): $! is the service's own pid.
CUZK_API__LISTEN=127.0.0.1:0 setpriv --reuid=cuzk --regid=cuzk --init-groups \
    cuzk serve --config /etc/cuzk/cuzk.toml >"$log" 2>&1 &
serve=$!
waited=0
until grep -q 'listening' "$log"; do
    sleep 1; waited=$((waited + 1))
    [ "$waited" -lt 60 ] || { cat "$log" >&2; kill "$serve"; fail "cuzk serve did not start"; }
done
setpriv --reuid=cuzk --regid=cuzk --init-groups \
    $(sed -n 's/^ExecReload=//p' "$unit" | sed "s/\\\$MAINPID/$serve/")
waited=0
until grep -q 'configuration reloaded' "$log"; do
    sleep 1; waited=$((waited + 1))
    [ "$waited" -lt 20 ] || { cat "$log" >&2; kill "$serve"; fail "ExecReload did not reload the service"; }
done
echo "install-test: ExecReload ($reload) reloaded the running service"
kill -TERM "$serve"; wait "$serve" || true
rm -f "$log"

# An edited conffile survives an upgrade.
sed -i 's/^# workers = [0-9]*$/workers = 3/' /etc/cuzk/cuzk.toml
grep -q '^workers = 3$' /etc/cuzk/cuzk.toml || fail "could not edit the conffile"
version=$(dpkg-deb -f "$deb" Version)
cargo deb --no-build --deb-version "${version}+upgrade" --output target/debian/upgrade.deb >/dev/null
dpkg -i target/debian/upgrade.deb
[ "$(dpkg-query -W -f '${Version}' cuzk-appliance)" = "${version}+upgrade" ] || fail "upgrade not installed"
grep -q '^workers = 3$' /etc/cuzk/cuzk.toml || fail "the edited conffile was replaced on upgrade"
runuser -u cuzk -- cuzk config show | grep -q '^workers = 3  # /etc/cuzk/cuzk.toml' || fail "edited value not in effect"

# A purge that cannot delete the cuzk user (a process of it still running) fails and says so.
runuser -u cuzk -- sleep 300 &
sleeper=$!
sleep 1
if dpkg --purge cuzk-appliance >/tmp/cuzk-purge.log 2>&1; then
    kill "$sleeper"; fail "purge succeeded while a process of the cuzk user ran"
fi
grep -q 'cuzk is currently used by process' /tmp/cuzk-purge.log \
    || { cat /tmp/cuzk-purge.log >&2; fail "the failed purge did not say why"; }
echo "install-test: purge refused while the cuzk user runs a process: $(grep 'used by process' /tmp/cuzk-purge.log)"
kill "$sleeper"; wait "$sleeper" 2>/dev/null || true

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
