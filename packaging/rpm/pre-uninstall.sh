# On erase (not upgrade): stop the service first, so that nothing runs from a deleted binary and
# the user can be deleted (a stop that fails fails the erase), then disable it.
if [ "$1" -eq 0 ]; then
    if [ -d /run/systemd/system ]; then
        systemctl stop cuzk.service
    fi
    systemctl --no-reload disable cuzk.service >/dev/null 2>&1 || true
fi
