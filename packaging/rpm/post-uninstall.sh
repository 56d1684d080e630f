if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
if [ "$1" -eq 0 ]; then
    rm -rf /var/lib/cuzk /run/cuzk
    getent passwd cuzk >/dev/null && userdel cuzk || true
    getent group cuzk >/dev/null && groupdel cuzk || true
fi
