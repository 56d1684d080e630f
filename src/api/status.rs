//! The service's own state: /v1/status (JSON), /healthz, /readyz, /metrics (Prometheus text).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::{App, Problem};

/// An engine loop that has not turned for this long is hung.
const HUNG_AFTER: Duration = Duration::from_secs(30);

pub async fn status(State(app): State<Arc<App>>) -> Response {
    let engine = app.engine.status();
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_s": app.started.elapsed().as_secs_f64(),
        "ready": app.ready(),
        "draining": app.draining(),
        "budget": app.budget,
        "backend": engine.backend,
        "gpus": engine.gpus,
        "workers": engine.workers,
        "running": engine.running,
        "queued": engine.queued,
        "ledger": engine.ledger,
        "pipeline": engine.memory,
        "pinned_pool": engine.pinned_pool,
        "caches": {
            "parameters_loaded": engine.parameters_loaded,
            "pces_loaded": engine.pces_loaded,
            "pces_extracting": engine.pces_extracting,
        },
        "data_dir": app.settings.data_dir,
        "params_dir": app.settings.params_dir,
        "quarantined_jobs": engine.quarantined_jobs,
    }))
    .into_response()
}

/// Alive: the engine loop turns.
pub async fn healthz(State(app): State<Arc<App>>) -> Result<Response, Problem> {
    let age = app.engine.heartbeat_age();
    if age > HUNG_AFTER {
        return Err(Problem::unavailable(format!(
            "the engine loop has not turned for {:.0}s",
            age.as_secs_f64()
        )));
    }
    Ok(Json(json!({"status": "ok"})).into_response())
}

/// Ready: started, and not shutting down.
pub async fn readyz(State(app): State<Arc<App>>) -> Result<Response, Problem> {
    if app.draining() {
        return Err(Problem::unavailable("shutting down"));
    }
    if !app.ready() {
        return Err(Problem::unavailable("starting"));
    }
    Ok(Json(json!({"status": "ready"})).into_response())
}

pub async fn metrics(State(app): State<Arc<App>>) -> Response {
    let status = app.engine.status();
    let memory = status.memory;
    app.metrics.reserved_bytes.set(memory.reserved_bytes as i64);
    for held in &memory.held {
        app.metrics
            .held_bytes
            .with_label_values(&[held.purpose])
            .set(held.bytes as i64);
    }
    app.metrics
        .partitions_waiting
        .set(memory.waiting_partitions as i64);
    let pool = status.pinned_pool.unwrap_or_default();
    for (state, bytes) in [("locked", pool.locked_bytes), ("leased", pool.leased_bytes)] {
        app.metrics
            .pinned_pool_bytes
            .with_label_values(&[state])
            .set(bytes as i64);
    }
    for gpu in &status.gpus {
        app.metrics.gpu_busy(gpu.info.ordinal, gpu.busy_seconds);
        app.metrics
            .gpu_resident_bytes
            .with_label_values(&[&gpu.info.ordinal.to_string()])
            .set(gpu.resident_bytes as i64);
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        app.metrics.render(),
    )
        .into_response()
}
