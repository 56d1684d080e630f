//! The systemd notification protocol (sd_notify): datagrams such as `READY=1` to the unix socket
//! named by NOTIFY_SOCKET (a path, or `@name` in the abstract namespace), and the watchdog
//! interval from WATCHDOG_USEC. Without NOTIFY_SOCKET (not run by systemd) nothing is sent.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

pub struct Notifier {
    socket: UnixDatagram,
    addr: std::os::unix::net::SocketAddr,
}

impl Notifier {
    /// The notifier systemd set up for this process, if any.
    pub fn from_env() -> Option<Notifier> {
        let path = std::env::var_os("NOTIFY_SOCKET")?;
        let path = path.to_string_lossy().into_owned();
        let addr = if let Some(name) = path.strip_prefix('@') {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).ok()?
        } else {
            std::os::unix::net::SocketAddr::from_pathname(&path).ok()?
        };
        let socket = UnixDatagram::unbound().ok()?;
        Some(Notifier { socket, addr })
    }

    /// Sends one notification, e.g. `READY=1` or `STATUS=...`. Failures are logged, not fatal:
    /// systemd going away must not stop the proving.
    pub fn notify(&self, state: &str) {
        if let Err(e) = self.socket.send_to_addr(state.as_bytes(), &self.addr) {
            tracing::warn!(error = %e, state, "sd_notify failed");
        }
    }
}

/// How often WATCHDOG=1 must be sent (half the interval systemd set), if a watchdog is on for
/// this process.
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok()? != std::process::id() {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_arrive_on_a_real_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        let addr = std::os::unix::net::SocketAddr::from_pathname(&path).unwrap();
        let n = Notifier {
            socket: UnixDatagram::unbound().unwrap(),
            addr,
        };
        n.notify("READY=1");
        let mut buf = [0u8; 64];
        let len = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1");
    }
}
