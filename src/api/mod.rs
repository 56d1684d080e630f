//! The REST API (axum): versioned under /v1, JSON in and out, errors as
//! application/problem+json (RFC 9457) with a stable type per error. The only module that knows
//! HTTP; it talks to the [`Engine`] and nothing else.
//!
//! - `POST /v1/proofs`, `GET /v1/proofs/{id}[?wait=30s]`, `GET /v1/proofs/{id}/proof`,
//!   `DELETE /v1/proofs/{id}`: [`proofs`]
//! - `GET /v1/status`, `/healthz`, `/readyz`, `/metrics`: [`status`]

mod connections;
mod problem;
mod proofs;
mod status;

pub use problem::Problem;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

use crate::config::Settings;
use crate::engine::Engine;
use crate::metrics::Metrics;

/// What every handler sees.
pub struct App {
    pub engine: Engine,
    pub metrics: Arc<Metrics>,
    pub settings: Settings,
    pub budget: crate::memory::Budget,
    pub started: Instant,
    /// What requests on a guarded listener must carry (`api.token_file`).
    token: Option<Token>,
    ready: AtomicBool,
    draining: AtomicBool,
    /// Bytes of request bodies being read and checked now (their declared lengths).
    reading: AtomicU64,
    /// Submissions parsed and checked at once: one a core. The checks are CPU work; past the
    /// cores they would only share them, and starve the async threads that answer /healthz.
    pub(crate) checking: tokio::sync::Semaphore,
}

/// When a client refused on a connection past api.max_connections should try again.
const CONNECTIONS_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// When a client whose body found no room should send it again.
const BODY_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// What reading and checking a body holds at most, in multiples of its length: the body, the
/// fields decoded from it and its canonical form (docs/measurements/2026-12-07-reliability/
/// bodies.log). A body's bytes are held from the memory budget at this multiple.
const BODY_MEMORY_FACTOR: u64 = 3;

/// A body's room under `api.max_inflight_body_bytes` and in the memory budget while it is
/// read and checked.
struct Reading {
    app: Arc<App>,
    bytes: u64,
    /// Its bytes held from the memory budget (purpose `request-bodies`).
    memory: Option<crate::memory::Hold>,
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.app.reading.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// A bearer token, kept as its SHA-256: what a request presents is hashed and compared in
/// constant time, so neither its bytes nor its length show in the time an answer takes.
pub struct Token([u8; 32]);

impl Token {
    pub fn new(secret: &str) -> Token {
        Token(Sha256::digest(secret.as_bytes()).into())
    }

    fn admits(&self, presented: &str) -> bool {
        let presented: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        presented
            .iter()
            .zip(&self.0)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl App {
    pub fn new(
        engine: Engine,
        metrics: Arc<Metrics>,
        settings: Settings,
        budget: crate::memory::Budget,
        token: Option<Token>,
    ) -> Arc<App> {
        Arc::new(App {
            engine,
            metrics,
            settings,
            budget,
            token,
            started: Instant::now(),
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            reading: AtomicU64::new(0),
            checking: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            ),
        })
    }

    /// Lets a body of `bytes` be read and checked if the bodies being read now leave room for
    /// it under `api.max_inflight_body_bytes` and the memory budget has room now for what
    /// reading it takes; else a 503 that says when to try again
    /// (a 413 for a body the budget can never hold). The room is given back when the returned
    /// guard is dropped (the request answered).
    fn admit_body(self: &Arc<Self>, bytes: u64) -> Result<Reading, Problem> {
        let cap = self.settings.max_inflight_body_bytes;
        let before = self.reading.fetch_add(bytes, Ordering::SeqCst);
        let mut reading = Reading {
            app: self.clone(),
            bytes,
            memory: None,
        };
        if before + bytes > cap {
            return Err(Problem::unavailable(format!(
                "{before} bytes of other requests are being read (api.max_inflight_body_bytes = {cap}); send this one again shortly"
            ))
            .retry_after(BODY_RETRY));
        }
        let admission = self.engine.admission();
        let need = bytes.saturating_mul(BODY_MEMORY_FACTOR);
        let budget = admission.budget();
        if need > budget {
            return Err(Problem::body_too_large_because(format!(
                "reading a body of {bytes} bytes takes {need} bytes of memory, past the memory budget of {budget} bytes"
            )));
        }
        reading.memory = admission.pass(crate::memory::Purpose::RequestBodies, need);
        if reading.memory.is_none() {
            return Err(Problem::unavailable(format!(
                "the memory budget has no room now for reading a body of {bytes} bytes ({need} bytes held while it is checked); send it again shortly"
            ))
            .retry_after(BODY_RETRY));
        }
        Ok(reading)
    }

    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::SeqCst);
    }

    /// From now on submissions are refused (503) and /readyz says so.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    fn ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst) && !self.draining()
    }

    fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// Serves the API on `listener` (TCP or a unix socket) as a task of `servers` until `stop` turns
/// true, then lets open requests finish. On a `guarded` listener every request but /healthz and
/// /readyz must carry the app's token, if it has one.
pub fn serve_on<L>(
    servers: &mut tokio::task::JoinSet<std::io::Result<()>>,
    listener: L,
    app: Arc<App>,
    guarded: bool,
    stop: tokio::sync::watch::Receiver<bool>,
) where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let listener = connections::Guarded::new(
        listener,
        app.settings.max_connections,
        app.settings.idle_timeout,
    );
    let header_timeout = app.settings.header_timeout;
    let router = router(app, guarded);
    servers.spawn(serve_connections(listener, router, header_timeout, stop));
}

/// Accepts connections until `stop` turns true and serves each as HTTP/1.1 (a request's head
/// due within `header_timeout`), with its [`connections::Admission`] as axum's `ConnectInfo`;
/// then lets every open connection finish its request in flight, and returns once all are
/// closed.
async fn serve_connections<L: axum::serve::Listener>(
    mut listener: connections::Guarded<L>,
    router: Router,
    header_timeout: std::time::Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    use axum::serve::Listener;
    // Every connection's task holds a receiver: the sender sees them all closed at the end.
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => Some(accepted),
            stopped = stop.wait_for(|s| *s) => { drop(stopped); None }
        };
        let Some((io, _)) = accepted else { break };
        let admission = axum::extract::ConnectInfo(connections::Admission {
            reserved: io.reserved(),
        });
        // The admission put on each request, as axum::serve puts its ConnectInfo.
        let service =
            hyper_util::service::TowerToHyperService::new(tower::ServiceExt::map_request(
                router.clone(),
                move |mut request: axum::http::Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(admission);
                    request
                },
            ));
        let (mut stop, open) = (stop.clone(), open_rx.clone());
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = http.serve_connection(hyper_util::rt::TokioIo::new(io), service);
            let mut connection = std::pin::pin!(connection);
            let stopping = tokio::select! {
                _ = connection.as_mut() => false,
                stopped = stop.wait_for(|s| *s) => { drop(stopped); true }
            };
            if stopping {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
            drop(open);
        });
    }
    drop(open_rx);
    open_tx.closed().await;
    Ok(())
}

pub fn router(app: Arc<App>, guarded: bool) -> Router {
    let limit = app.settings.max_body_bytes;
    Router::new()
        .route("/v1/proofs", axum::routing::post(proofs::submit))
        .route(
            "/v1/proofs/{id}",
            get(proofs::get_job).delete(proofs::cancel),
        )
        .route("/v1/proofs/{id}/proof", get(proofs::get_proof))
        .route("/v1/status", get(status::status))
        .route("/healthz", get(status::healthz))
        .route("/readyz", get(status::readyz))
        .route("/metrics", get(status::metrics))
        .fallback(|| async { Problem::not_found("no such resource") })
        .method_not_allowed_fallback(|| async { Problem::method_not_allowed() })
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            (app.clone(), guarded),
            front_door,
        ))
        .with_state(app)
}

/// Every request passes here: on a connection past `api.max_connections` (the reserve) only
/// health checks are answered, others get 503 with Retry-After; on a guarded listener one
/// without the token is refused (401);
/// a body whose Content-Length is over the limit is refused before a byte of it is read (and
/// before `Expect: 100-continue` is answered); each request gets an access log line, at debug,
/// and at warn for a 5xx.
async fn front_door(
    axum::extract::State((app, guarded)): axum::extract::State<(Arc<App>, bool)>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse;
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let start = Instant::now();
    let headers = request.headers();
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let refused = match &app.token {
        Some(token) if guarded && !matches!(path.as_str(), "/healthz" | "/readyz") => {
            !presented.is_some_and(|p| token.admits(p.trim()))
        }
        _ => false,
    };
    // A body to read: its declared length, or the largest accepted where none is declared.
    let body_bytes = declared.unwrap_or(match method == axum::http::Method::POST {
        true => app.settings.max_body_bytes as u64,
        false => 0,
    });
    // A connection let in on the reserve past api.max_connections: health checks only.
    let reserved = request
        .extensions()
        .get::<axum::extract::ConnectInfo<connections::Admission>>()
        .is_some_and(|c| c.0.reserved);
    let response = match declared {
        _ if reserved && !matches!(path.as_str(), "/healthz" | "/readyz" | "/metrics") => {
            Problem::unavailable(format!(
                "the service has api.max_connections ({}) connections open; this one, past them, \
                 is kept for /healthz, /readyz and /metrics",
                app.settings.max_connections
            ))
            .retry_after(CONNECTIONS_RETRY)
            .into_response()
        }
        _ if refused => {
            let mut r = Problem::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Unauthorized",
                "send the token of api.token_file as Authorization: Bearer <token>",
            )
            .into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            r
        }
        Some(n) if n > app.settings.max_body_bytes as u64 => {
            Problem::body_too_large(app.settings.max_body_bytes).into_response()
        }
        _ if body_bytes == 0 => next.run(request).await,
        _ => match app.admit_body(body_bytes) {
            Ok(reading) => {
                let response = next.run(request).await;
                drop(reading);
                response
            }
            Err(busy) => busy.into_response(),
        },
    };
    let (status, ms) = (
        response.status().as_u16(),
        start.elapsed().as_secs_f64() * 1e3,
    );
    if response.status().is_server_error() {
        tracing::warn!(%method, path, status, ms, "request");
    } else {
        tracing::debug!(%method, path, status, ms, "request");
    }
    response
}
