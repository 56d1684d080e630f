if [ "$1" -eq 0 ]; then
    systemctl --no-reload disable --now cuzk.service >/dev/null 2>&1 || true
fi
