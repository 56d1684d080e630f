install -d -o cuzk -g cuzk -m 0750 /var/lib/cuzk
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
# Enabled on first install, not started: the operator starts it after editing the config.
if [ "$1" -eq 1 ]; then
    systemctl enable cuzk.service >/dev/null 2>&1 || true
fi
