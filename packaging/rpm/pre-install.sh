getent group cuzk >/dev/null || groupadd --system cuzk
getent passwd cuzk >/dev/null || useradd --system --gid cuzk --home-dir /var/lib/cuzk \
    --no-create-home --shell /sbin/nologin --comment "cuzk-appliance proving service" cuzk
for dev in /dev/nvidia* /dev/dri/renderD*; do
    [ -e "$dev" ] || continue
    group=$(stat -c %G "$dev")
    [ "$group" = "root" ] || usermod -a -G "$group" cuzk || true
done
for group in video render; do
    getent group "$group" >/dev/null && usermod -a -G "$group" cuzk || true
done
exit 0
