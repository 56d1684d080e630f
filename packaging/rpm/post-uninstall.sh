if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
if [ "$1" -eq 0 ]; then
    rm -rf /var/lib/cuzk /run/cuzk
    # A user that cannot be deleted (a process of it still running) says so.
    if getent passwd cuzk >/dev/null; then
        userdel cuzk
    fi
    if getent group cuzk >/dev/null; then
        groupdel cuzk
    fi
fi
