#!/bin/sh
# Runs inside the booted Debian bookworm (systemd as PID 1), started by packaging/boot-test.sh as a
# transient unit (systemd-run --wait --pipe). /srv/cuzk-boot holds the signed local apt repository
# (repo/) and its key (cuzk-boot-test.gpg). One transcript line per step; exits non-zero on the
# first failed check.
set -eu
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin

share=/srv/cuzk-boot
n=0
step() { n=$((n + 1)); echo "guest: [$n] $*"; }
ok() { echo "guest:     ok: $*"; }
fail() {
    echo "guest:     FAIL: $*"
    echo "guest: --- systemctl status cuzk"
    systemctl status cuzk --no-pager 2>&1 | sed 's/^/guest:   | /' || true
    echo "guest: --- journalctl -u cuzk -n 40"
    journalctl -u cuzk --no-pager -n 40 2>&1 | sed 's/^/guest:   | /' || true
    exit 1
}
indent() { sed 's/^/guest:   | /'; }
# Runs a command, prints its output indented, returns its status.
run() {
    out=$(mktemp); rc=0
    "$@" >"$out" 2>&1 || rc=$?
    indent <"$out"; rm -f "$out"
    return "$rc"
}
# The journal's position now: since_mark prints cuzk.service's entries after it.
mark() { journalctl --no-pager -q -n 0 --show-cursor | sed -n 's/^-- cursor: //p'; }
since_mark() { journalctl -u cuzk --no-pager -o cat --after-cursor="$1" 2>/dev/null; }
# Waits up to $1 seconds for cuzk.service's journal after mark $2 to contain $3.
journal_has() {
    waited=0
    until since_mark "$2" | grep -q -- "$3"; do
        [ "$waited" -lt "$1" ] || return 1
        sleep 1; waited=$((waited + 1))
    done
}
is_active() { systemctl is-active cuzk 2>/dev/null || true; }
# pgrep's exit status says whether a process of the cuzk user runs (no user: none runs).
cuzk_procs() { getent passwd cuzk >/dev/null && pgrep -a -u cuzk || true; }

echo "guest: $(systemctl --version | head -n 1); PID 1 is $(cat /proc/1/comm); $(systemctl is-system-running 2>/dev/null || true)"

step "install cuzk-appliance from the signed local apt repository"
install -d -m 0755 /etc/apt/keyrings
install -m 0644 "$share/cuzk-boot-test.gpg" /etc/apt/keyrings/cuzk-boot-test.gpg
echo "deb [signed-by=/etc/apt/keyrings/cuzk-boot-test.gpg] file:$share/repo ./" \
    >/etc/apt/sources.list.d/cuzk-boot-test.list
cat /etc/apt/sources.list.d/cuzk-boot-test.list | indent
updated=$(apt-get update 2>&1) || { echo "$updated" | indent; fail "apt-get update"; }
echo "$updated" | indent
# A repository whose signature does not check out is only a warning for some apt versions.
! echo "$updated" | grep -q '^[WE]:' || fail "apt-get update warned or failed (signature?)"
run apt-cache policy cuzk-appliance
version=$(cat "$share/version")
run apt-get install -y --no-install-recommends "cuzk-appliance=$version" || fail "apt-get install cuzk-appliance=$version"
[ "$(dpkg-query -W -f '${Status}' cuzk-appliance 2>/dev/null)" = "install ok installed" ] \
    || fail "cuzk-appliance is not installed"
ok "cuzk-appliance $(dpkg-query -W -f '${Version}' cuzk-appliance) installed; unit $(systemctl is-enabled cuzk 2>&1)"

step "systemctl start cuzk (Type=notify: active once READY=1)"
t=$(date +%s)
systemctl start cuzk || fail "systemctl start cuzk"
waited=0
until [ "$(is_active)" = active ]; do
    [ "$waited" -lt 60 ] || fail "cuzk is $(is_active), not active, 60 s after start"
    sleep 1; waited=$((waited + 1))
done
main=$(systemctl show -p MainPID --value cuzk)
ok "is-active: $(is_active) ($(($(date +%s) - t)) s); main pid $main runs as $(ps -o user= -p "$main")"
# LimitMEMLOCK=infinity/LimitNOFILE=65536 apply only up to the hard limits the guest was given.
echo "guest:   limits of the main process: $(grep -E 'locked memory|open files' "/proc/$main/limits" | tr -s ' ' | tr '\n' ';')"
run systemctl status cuzk --no-pager || true
run journalctl -u cuzk --no-pager -n 20 || true

step "GET http://127.0.0.1:9820/metrics"
waited=0
until metrics=$(curl -fsS --max-time 10 http://127.0.0.1:9820/metrics 2>&1); do
    [ "$waited" -lt 20 ] || fail "curl /metrics: $metrics"
    sleep 1; waited=$((waited + 1))
done
echo "$metrics" | grep -q '^cuzk_' || fail "no line starting with cuzk_ in /metrics"
ok "$(echo "$metrics" | grep -c '^cuzk_') cuzk_ lines, e.g. $(echo "$metrics" | grep '^cuzk_' | head -n 1)"

step "systemctl reload cuzk (ExecReload: cuzk reload --pid \$MAINPID; RELOADING=1, READY=1)"
m=$(mark)
pid_before=$(systemctl show -p MainPID --value cuzk)
systemctl reload cuzk || fail "systemctl reload cuzk"
journal_has 20 "$m" "configuration reloaded" || fail "no \"configuration reloaded\" in the journal after reload"
[ "$(is_active)" = active ] || fail "cuzk is $(is_active) after reload"
[ "$(systemctl show -p MainPID --value cuzk)" = "$pid_before" ] || fail "the main process changed on reload"
ok "$(since_mark "$m" | grep 'configuration reloaded' | tail -n 1)"

step "systemctl stop cuzk"
m=$(mark)
systemctl stop cuzk || fail "systemctl stop cuzk"
state=$(is_active)
[ "$state" = inactive ] || fail "cuzk is $state after stop, not inactive"
journal_has 10 "$m" "stopping" || fail "no \"stopping\" in the journal after stop"
journal_has 10 "$m" "stopped" || fail "no \"stopped\" in the journal after stop"
ok "is-active: $state; journal: $(since_mark "$m" | grep -i 'stopp' | tr '\n' '|')"

step "apt-get upgrade to the second build with an edited conffile: the edit is kept"
sed -i 's/^# workers = [0-9]*$/workers = 3/' /etc/cuzk/cuzk.toml
grep -q '^workers = 3$' /etc/cuzk/cuzk.toml || fail "could not edit /etc/cuzk/cuzk.toml"
run apt-get upgrade -y || fail "apt-get upgrade"
[ "$(dpkg-query -W -f '${Version}' cuzk-appliance)" = "$version+upgrade" ] \
    || fail "cuzk-appliance is $(dpkg-query -W -f '${Version}' cuzk-appliance) after upgrade, not $version+upgrade"
grep -q '^workers = 3$' /etc/cuzk/cuzk.toml || fail "the edited conffile was replaced on upgrade"
systemctl start cuzk || fail "systemctl start cuzk after upgrade"
[ "$(is_active)" = active ] || fail "cuzk is $(is_active) after the upgrade's start"
main=$(systemctl show -p MainPID --value cuzk)
run runuser -u cuzk -- cuzk config show --config /etc/cuzk/cuzk.toml || fail "cuzk config show"
runuser -u cuzk -- cuzk config show --config /etc/cuzk/cuzk.toml | grep -q '^workers = 3  # /etc/cuzk/cuzk.toml' \
    || fail "the edited value is not in effect"
ok "upgraded to $(dpkg-query -W -f '${Version}' cuzk-appliance); workers = 3 kept; main pid $main active"

step "apt-get remove while the service runs: prerm stops it"
[ "$(is_active)" = active ] || fail "cuzk is $(is_active) before remove"
echo "guest:   running before remove: $(cuzk_procs | tr '\n' ' ')"
[ -n "$(cuzk_procs)" ] || fail "no process of the cuzk user runs before remove"
m=$(mark)
run apt-get remove -y cuzk-appliance || fail "apt-get remove cuzk-appliance"
[ "$(dpkg-query -W -f '${Status}' cuzk-appliance 2>/dev/null)" = "deinstall ok config-files" ] \
    || fail "cuzk-appliance is $(dpkg-query -W -f '${Status}' cuzk-appliance 2>&1), not removed"
left=$(cuzk_procs)
[ -z "$left" ] || fail "processes of the cuzk user run after remove: $left"
[ "$(is_active)" != active ] || fail "cuzk.service is still active after remove"
journal_has 10 "$m" "stopped" || fail "no \"stopped\" in the journal: the service was not stopped cleanly on remove"
ok "no cuzk process after remove (pgrep -u cuzk empty); unit $(is_active); journal: $(since_mark "$m" | grep -E 'stopped|Stopped' | tr '\n' '|')"

step "apt-get purge: the cuzk user, its group and /var/lib/cuzk are gone"
run apt-get purge -y cuzk-appliance || fail "apt-get purge cuzk-appliance"
[ -z "$(dpkg-query -W -f '${Status}' cuzk-appliance 2>/dev/null)" ] || [ "$(dpkg-query -W -f '${Status}' cuzk-appliance 2>/dev/null)" = "unknown ok not-installed" ] \
    || fail "cuzk-appliance is $(dpkg-query -W -f '${Status}' cuzk-appliance 2>&1) after purge"
! getent passwd cuzk >/dev/null || fail "the cuzk user is left after purge"
! getent group cuzk >/dev/null || fail "the cuzk group is left after purge"
[ ! -e /var/lib/cuzk ] || fail "/var/lib/cuzk is left after purge"
for path in /etc/cuzk /usr/bin/cuzk /etc/systemd/system/multi-user.target.wants/cuzk.service; do
    [ ! -e "$path" ] || fail "$path is left after purge"
done
ok "no cuzk user or group, no /var/lib/cuzk, /etc/cuzk or /usr/bin/cuzk"

echo "guest: all $n steps passed"
