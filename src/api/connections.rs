//! What a listener lets in: at most `api.max_connections` connections at once, and beyond them
//! [`RESERVED_CONNECTIONS`] more kept for health checks (a connection let in on the reserve is
//! answered only on /healthz, /readyz and /metrics: a monitor is not locked out by a flood of
//! clients); past both the next waits in the kernel's backlog until one closes. Each
//! connection is closed once no byte has gone either way for `api.idle_timeout_secs` (a client
//! that connects and sends nothing, or a byte a minute, holds a connection for that long, not
//! for ever).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// Connections beyond `api.max_connections` let in for health checks only.
pub const RESERVED_CONNECTIONS: usize = 16;

/// A listener whose connections are counted and time out when idle.
pub struct Guarded<L> {
    inner: L,
    permits: Arc<Semaphore>,
    reserve: Arc<Semaphore>,
    idle: Duration,
}

impl<L> Guarded<L> {
    pub fn new(inner: L, max_connections: usize, idle: Duration) -> Self {
        Guarded {
            inner,
            permits: Arc::new(Semaphore::new(max_connections)),
            reserve: Arc::new(Semaphore::new(RESERVED_CONNECTIONS)),
            idle,
        }
    }
}

/// A permit of the cap where one is free, else of the reserve; waits for either.
async fn permit(cap: Arc<Semaphore>, reserve: Arc<Semaphore>) -> (OwnedSemaphorePermit, bool) {
    tokio::select! {
        biased;
        p = cap.acquire_owned() => (p.expect("never closed"), false),
        p = reserve.acquire_owned() => (p.expect("never closed"), true),
    }
}

/// What a request knows of its connection (axum's `ConnectInfo`, put on each request by
/// `api::serve_connections`):
/// whether it was let in on the reserve, for health checks only.
#[derive(Clone, Copy, Debug)]
pub struct Admission {
    pub reserved: bool,
}

impl<L: axum::serve::Listener> axum::serve::Listener for Guarded<L> {
    type Io = Connection<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // A permit first: past the cap and the reserve, connections stay in the backlog.
        let (mut permit, mut reserved) = permit(self.permits.clone(), self.reserve.clone()).await;
        let (io, addr) = self.inner.accept().await;
        // Taken before the connection came: where the cap has room by now, it is not a reserve's.
        if reserved {
            if let Ok(p) = self.permits.clone().try_acquire_owned() {
                (permit, reserved) = (p, false);
            }
        }
        (Connection::new(io, permit, reserved, self.idle), addr)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// One accepted connection: its permit, given back when it is dropped, and its idle timer.
pub struct Connection<Io> {
    io: Io,
    _permit: OwnedSemaphorePermit,
    /// Let in on the reserve: health checks only.
    reserved: bool,
    idle: Duration,
    timer: Pin<Box<Sleep>>,
}

impl<Io> Connection<Io> {
    /// Let in on the reserve past `api.max_connections`: health checks only.
    pub fn reserved(&self) -> bool {
        self.reserved
    }

    fn new(io: Io, permit: OwnedSemaphorePermit, reserved: bool, idle: Duration) -> Self {
        Connection {
            io,
            _permit: permit,
            reserved,
            idle,
            timer: Box::pin(tokio::time::sleep(idle)),
        }
    }

    /// Bytes moved: the idle timer starts again.
    fn moved(&mut self) {
        let deadline = Instant::now() + self.idle;
        self.timer.as_mut().reset(deadline);
    }

    /// Nothing moved: an error once the timer has run out (the waker is registered either way).
    fn check_idle(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no byte read or written for api.idle_timeout_secs",
            )),
            Poll::Pending => Ok(()),
        }
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Connection<Io> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.moved();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.check_idle(cx) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            },
        }
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Connection<Io> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    this.moved();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Pending => match this.check_idle(cx) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            },
            other => other,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
