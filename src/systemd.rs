//! The systemd notification protocol (sd_notify, through the sd-notify crate): READY, STATUS,
//! WATCHDOG, RELOADING (with MONOTONIC_USEC) and STOPPING to the socket systemd names in
//! NOTIFY_SOCKET, and the watchdog interval it sets in WATCHDOG_USEC. Not run by systemd (no NOTIFY_SOCKET), nothing is sent.
//! tests/service.rs checks the datagrams on a real socket.

use std::time::Duration;

use sd_notify::NotifyState;

/// The notification socket systemd set up for this process.
pub struct Notifier(());

impl Notifier {
    /// The notifier, if this process was started with NOTIFY_SOCKET.
    pub fn from_env() -> Option<Notifier> {
        std::env::var_os("NOTIFY_SOCKET").map(|_| Notifier(()))
    }

    pub fn ready(&self) {
        self.send(&[NotifyState::Ready]);
    }

    /// A one-line status systemctl shows.
    pub fn status(&self, line: &str) {
        self.send(&[NotifyState::Status(line)]);
    }

    pub fn watchdog(&self) {
        self.send(&[NotifyState::Watchdog]);
    }

    /// A configuration reload begins: systemd holds `systemctl reload` until [`Notifier::ready`].
    pub fn reloading(&self) {
        match NotifyState::monotonic_usec_now() {
            Ok(now) => self.send(&[NotifyState::Reloading, now]),
            Err(e) => tracing::warn!(error = %e, "reading the monotonic clock for RELOADING=1"),
        }
    }

    pub fn stopping(&self) {
        self.send(&[NotifyState::Stopping]);
    }

    /// Failures are logged, not fatal: systemd going away must not stop the proving.
    fn send(&self, states: &[NotifyState]) {
        if let Err(e) = sd_notify::notify(states) {
            tracing::warn!(error = %e, state = ?states, "sd_notify failed");
        }
    }
}

/// How often WATCHDOG=1 must be sent (half the interval systemd set), if a watchdog is on for
/// this process.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled()
        .filter(|d| !d.is_zero())
        .map(|d| d / 2)
}
