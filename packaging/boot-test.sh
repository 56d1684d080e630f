#!/bin/bash
# Boot test: boots a minimal Debian bookworm under a real systemd (systemd-nspawn --boot: systemd
# 252 is PID 1 of the container), installs target/debian/cuzk-appliance_*.deb from a signed local
# apt repository (with a second build of it, one version up) and drives the service: start
# (Type=notify), /metrics, reload, stop, `apt upgrade` with an edited conffile (kept), remove while
# running (prerm stops it), purge (user and /var/lib/cuzk gone). The steps in the guest are
# packaging/boot/guest-test.sh, run there as a transient unit. Needs root; exits non-zero on any
# failed check. The transcript of a passing run is kept in $CUZK_BOOT_CACHE/transcript.txt (of a
# failing one in transcript-failed.txt).
#
# The debootstrap'd root is cached in $CUZK_BOOT_CACHE/root and no run changes it: the guest boots
# with --volatile=overlay (its writes go to a tmpfs) and --private-network (loopback only; the root
# holds every dependency, adduser and curl included, and lists no Debian mirror). It is rebuilt
# when missing or when the recipe below changes; delete it to force a rebuild.
#
# Environment:
#   CUZK_BOOT_CACHE   cache directory (default /var/tmp/cuzk-boot)
#   CUZK_DEB          the .deb to test (default: newest target/debian/cuzk-appliance_*.deb)
#   CUZK_DEB_WAIT     seconds to wait for that .deb to appear (default 1200, polled every 30 s)
#   DEBIAN_MIRROR     mirror for debootstrap (default http://deb.debian.org/debian)
# A warm run (cached root) takes seconds; building the root takes a minute or two (network).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${CUZK_BOOT_CACHE:-/var/tmp/cuzk-boot}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$cache/root
include=systemd,systemd-sysv,dbus,curl,ca-certificates,adduser,procps,init-system-helpers
# A change here (or in $include) rebuilds the root.
recipe="bookworm minbase $include; no sources.list; v1"

say() { echo "boot-test: $*"; }
fail() { echo "boot-test: FAIL: $*"; exit 1; }

host_tools() {
    local missing=""
    command -v systemd-nspawn >/dev/null || missing="$missing systemd-container"
    command -v debootstrap >/dev/null || missing="$missing debootstrap"
    command -v apt-ftparchive >/dev/null || missing="$missing apt-utils"
    command -v gpg >/dev/null && command -v gpg-agent >/dev/null || missing="$missing gnupg"
    command -v flock >/dev/null || missing="$missing util-linux"
    if [ -n "$missing" ]; then
        say "installing on the host:$missing"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >/dev/null
    fi
}

find_deb() {
    if [ -n "${CUZK_DEB:-}" ]; then
        deb=$CUZK_DEB
        [ -f "$deb" ] || fail "CUZK_DEB=$deb: no such file"
        return
    fi
    local limit=${CUZK_DEB_WAIT:-1200} waited=0
    while :; do
        deb=$(ls -t "$here"/target/debian/cuzk-appliance_*.deb 2>/dev/null | head -n 1 || true)
        # A .deb still being written does not read back yet.
        if [ -n "$deb" ] && dpkg-deb -f "$deb" Package >/dev/null 2>&1; then
            return
        fi
        [ "$waited" -lt "$limit" ] || fail "no target/debian/cuzk-appliance_*.deb after ${limit} s (make packages)"
        say "waiting for target/debian/cuzk-appliance_*.deb (${waited} s of ${limit} s)"
        sleep 30; waited=$((waited + 30))
    done
}

build_root() {
    if [ -f "$root/.cuzk-boot-recipe" ] && [ "$(cat "$root/.cuzk-boot-recipe")" = "$recipe" ]; then
        say "root: cached $root"
        return
    fi
    local t=$(date +%s) tmp=$cache/root.tmp
    say "root: debootstrap bookworm into $tmp ($mirror)"
    rm -rf "$tmp" "$root"
    debootstrap --variant=minbase --include="$include" bookworm "$tmp" "$mirror" \
        >"$cache/debootstrap.log" 2>&1 || { tail -n 20 "$cache/debootstrap.log"; fail "debootstrap (log: $cache/debootstrap.log)"; }
    echo cuzk-boot >"$tmp/etc/hostname"
    # Only the local repository: the guest has no network and must not reach for a mirror.
    : >"$tmp/etc/apt/sources.list"
    # A machine id is made at each boot (the overlay is thrown away).
    : >"$tmp/etc/machine-id"
    chroot "$tmp" apt-get clean
    rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/*.bin
    echo "$recipe" >"$tmp/.cuzk-boot-recipe"
    mv "$tmp" "$root"
    say "root: built in $(($(date +%s) - t)) s ($(du -sh "$root" | cut -f1))"
}

# The flat apt repository over the .deb, signed with a key made for this run only.
make_repo() {
    local share=$1 gnupg=$run/gnupg
    mkdir -p "$share/repo" && chmod 0755 "$share" "$share/repo"
    install -m 0644 "$deb" "$share/repo/"
    # A second build of the same package, its version one step up: what `apt upgrade` moves to.
    local unpacked=$run/upgrade
    dpkg-deb -R "$deb" "$unpacked"
    sed -i "s/^Version: .*/Version: $version+upgrade/" "$unpacked/DEBIAN/control"
    dpkg-deb --root-owner-group -b "$unpacked" "$share/repo/cuzk-appliance_${version}+upgrade_amd64.deb" >/dev/null
    rm -rf "$unpacked"
    install -d -m 0700 "$gnupg"
    export GNUPGHOME=$gnupg
    gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
        --quick-gen-key 'cuzk boot test (throwaway) <boot-test@cuzk.invalid>' ed25519 sign 1d 2>/dev/null
    gpg --batch --export >"$share/cuzk-boot-test.gpg"
    chmod 0644 "$share/cuzk-boot-test.gpg"
    (
        cd "$share/repo"
        apt-ftparchive packages . >Packages
        apt-ftparchive \
            -o APT::FTPArchive::Release::Origin=cuzk-boot-test \
            -o APT::FTPArchive::Release::Label=cuzk-boot-test \
            -o APT::FTPArchive::Release::Suite=cuzk-boot-test \
            -o APT::FTPArchive::Release::Codename=cuzk-boot-test \
            release . >"$run/Release"
        mv "$run/Release" Release
        gpg --batch --yes --clearsign -o InRelease Release
        gpg --batch --yes --armor --detach-sign -o Release.gpg Release
        chmod 0644 ./*
    )
    say "repo: $(ls "$share/repo" | tr '\n' ' ')signed by throwaway key $(gpg --batch --quiet --with-colons --list-keys 2>/dev/null | awk -F: '/^fpr/ {print $10; exit}')"
    gpgconf --kill gpg-agent 2>/dev/null || true
    unset GNUPGHOME
}

guest() { nsenter -t "$leader" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 "$@"; }

cleanup() {
    if [ -n "${nspawn:-}" ] && kill -0 "$nspawn" 2>/dev/null; then
        # SIGTERM: the container halts; a second one, or SIGKILL, ends it at once.
        kill -TERM "$nspawn" 2>/dev/null || true
        for _ in $(seq 30); do kill -0 "$nspawn" 2>/dev/null || break; sleep 1; done
        kill -KILL "$nspawn" 2>/dev/null || true
        wait "$nspawn" 2>/dev/null || true
    fi
    [ -z "${run:-}" ] || rm -rf "$run"
}

main() {
    local t0=$(date +%s)
    say "$(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n), kernel $(uname -r)"
    host_tools
    find_deb
    version=$(dpkg-deb -f "$deb" Version)
    say "package: $deb ($(dpkg-deb -f "$deb" Package) $version; Depends: $(dpkg-deb -f "$deb" Depends))"
    build_root
    run=$(mktemp -d "$cache/run.XXXXXX")
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    make_repo "$run/share"
    install -m 0755 "$here/packaging/boot/guest-test.sh" "$run/share/guest-test.sh"
    echo "$version" >"$run/share/version"

    local t1=$(date +%s)
    say "boot: systemd-nspawn --boot -D $root (volatile overlay, private network)"
    # No host systemd/machined here: --register=no --keep-unit. nspawn's seccomp filter refuses
    # mlock() unless the container keeps CAP_IPC_LOCK (the service locks its page-locked pool;
    # its own unit gives it no capabilities, so this only undoes nspawn's extra filter).
    systemd-nspawn --quiet --boot -D "$root" --machine=cuzk-boot --register=no --keep-unit \
        --console=pipe --volatile=overlay --private-network --capability=CAP_IPC_LOCK \
        --bind-ro="$run/share:/srv/cuzk-boot" </dev/null >"$run/console.log" 2>&1 &
    nspawn=$!
    leader="" state="" waited=0
    until [ "$state" = running ] || [ "$state" = degraded ]; do
        kill -0 "$nspawn" 2>/dev/null || { cat "$run/console.log"; fail "systemd-nspawn exited"; }
        [ "$waited" -lt 120 ] || { cat "$run/console.log"; fail "the guest did not finish booting in 120 s (state: $state)"; }
        sleep 1; waited=$((waited + 1))
        [ -n "$leader" ] || leader=$(pgrep -P "$nspawn" | head -n 1 || true)
        [ -z "$leader" ] || state=$(guest systemctl is-system-running 2>/dev/null || true)
    done
    say "boot: $state in ${waited} s; PID 1 of the guest: $(guest cat /proc/1/comm), $(guest systemctl --version | head -n 1)"
    if [ "$state" = degraded ]; then
        guest systemctl --failed --no-pager --plain | sed 's/^/boot-test:   /'
    fi

    local rc=0
    timeout 900 nsenter -t "$leader" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        systemd-run --quiet --wait --pipe --collect --unit=cuzk-boot-test \
        /srv/cuzk-boot/guest-test.sh </dev/null || rc=$?
    say "guest: exit status $rc ($(($(date +%s) - t1)) s from boot)"
    cleanup
    nspawn="" run=""
    say "total $(($(date +%s) - t0)) s"
    [ "$rc" = 0 ] || fail "the guest test failed"
    say "PASS"
}

[ "$(id -u)" = 0 ] || fail "needs root"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock -n 9 || fail "another boot test holds $cache/lock"
rc=0
main "$@" 2>&1 | tee "$cache/transcript.txt.part" || rc=$?
if [ "$rc" = 0 ]; then
    mv "$cache/transcript.txt.part" "$cache/transcript.txt"
else
    mv "$cache/transcript.txt.part" "$cache/transcript-failed.txt"
fi
exit "$rc"
