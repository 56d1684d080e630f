//! /v1/proofs: submit, watch, fetch and cancel proof jobs.
//!
//! The body of a submission is a proof request (docs/requests.md) with an optional `"id"`: the
//! client's idempotency key. The same id with the same request returns the same job (200); with
//! another request it is 409. A new job is on disk before its 202.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rand::Rng;
use serde::Deserialize;

use super::{App, Problem};
use crate::circuits::ProofRequest;
use crate::engine::{CancelError, SubmitError};
use crate::jobs::{valid_id, JobRecord, JobState};

/// The longest `?wait=` honoured.
const MAX_WAIT: Duration = Duration::from_secs(300);

fn job_url(id: &str) -> String {
    format!("/v1/proofs/{id}")
}

fn job_response(status: StatusCode, record: &JobRecord) -> Response {
    (
        status,
        [(header::LOCATION, job_url(&record.id))],
        Json(record),
    )
        .into_response()
}

pub async fn submit(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Problem> {
    if app.draining() {
        return Err(Problem::unavailable(
            "the service is shutting down; submit again after it restarts",
        )
        .retry_after(RESTART_RETRY));
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json {
        return Err(Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Unsupported media type",
            "send the request as Content-Type: application/json",
        ));
    }
    let body = body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Problem::body_too_large(app.settings.max_body_bytes)
        } else {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "unreadable-body",
                "Unreadable body",
                r.body_text(),
            )
        }
    })?;
    let engine = app.engine.clone();
    let answer = app.clone();
    // Off the async threads, one check a core: reading a large body and checking a request
    // take a while.
    let permit =
        app.checking.acquire().await.map_err(|e| {
            Problem::internal("validating the request failed").caused_by(e.to_string())
        })?;
    let (id, kind, request) = tokio::task::spawn_blocking(move || {
        // Read without a Value of it (a C1 output's numbers take ~8x their text as one).
        let mut members = crate::circuits::json::object(&body).map_err(|e| match e {
            crate::circuits::json::NotObject::Malformed(e) => malformed(e),
            crate::circuits::json::NotObject::NotAnObject => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid-input",
                "Invalid proof request",
                "the request is not a JSON object",
            ),
        })?;
        let id = take_id(members.remove("id"))?;
        // A new job must find room before it is checked in full (the costly part).
        if engine.get(&id).is_none() {
            engine.has_room().map_err(|e| submit_problem(&answer, e))?;
        }
        // The stored form: canonical (keys sorted), without the id.
        let request = crate::circuits::json::canonical_object(&members).map_err(malformed)?;
        drop(members);
        drop(body);
        let parsed = ProofRequest::from_json(&request).map_err(Problem::invalid_input)?;
        let kind = parsed.kind();
        // A new job is checked in full before acceptance: a job that is accepted can be
        // proved. A known id needs only the comparison `submit` makes.
        if engine.get(&id).is_none() {
            parsed.prepare().map_err(Problem::invalid_input)?;
        }
        Ok::<_, Problem>((id, kind, request))
    })
    .await
    .map_err(|e| Problem::internal("validating the request failed").caused_by(e.to_string()))??;
    drop(permit);
    // Stored (waiting on the disk, not a core) apart from the checks.
    let engine = app.engine.clone();
    let answer = app.clone();
    let (record, created) = tokio::task::spawn_blocking(move || {
        engine
            .submit(&id, kind, &request)
            .map_err(|e| submit_problem(&answer, e))
    })
    .await
    .map_err(|e| Problem::internal("storing the job failed").caused_by(e.to_string()))??;
    Ok(job_response(
        if created {
            StatusCode::ACCEPTED
        } else {
            StatusCode::OK
        },
        &record,
    ))
}

fn malformed(e: serde_json::Error) -> Problem {
    Problem::new(
        StatusCode::BAD_REQUEST,
        "malformed-json",
        "Malformed JSON",
        e.to_string(),
    )
}

/// The client's id, checked, or a fresh random one.
fn take_id(raw: Option<&serde_json::value::RawValue>) -> Result<String, Problem> {
    let invalid =
        |why: &str| Problem::invalid_input(crate::circuits::CircuitError::invalid("id", why));
    match raw.map(|r| serde_json::from_str::<String>(r.get())) {
        None => {
            let bytes: [u8; 16] = rand::rngs::OsRng.gen();
            Ok(crate::circuits::request::hex(&bytes))
        }
        Some(Ok(id)) if valid_id(&id) => Ok(id),
        Some(_) => Err(invalid(
            "1 to 128 of A-Z a-z 0-9 . _ - (not starting with a dot or a dash, no '..')",
        )),
    }
}

/// How soon a client refused for a restart should come back.
const RESTART_RETRY: Duration = Duration::from_secs(30);

fn submit_problem(app: &App, e: SubmitError) -> Problem {
    match e {
        SubmitError::Conflict(_) => Problem::new(
            StatusCode::CONFLICT,
            "id-conflict",
            "Job id in use",
            e.to_string(),
        ),
        SubmitError::QueueFull(_) => Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            "queue-full",
            "Queue full",
            e.to_string(),
        )
        .retry_after(app.engine.retry_after()),
        SubmitError::Draining => Problem::unavailable(e.to_string()).retry_after(RESTART_RETRY),
        SubmitError::Store(e) => Problem::storage("storing the job", &e),
    }
}

#[derive(Deserialize)]
pub struct WaitQuery {
    wait: Option<String>,
}

/// `30s`, `500ms`, `2m` or plain seconds.
fn parse_wait(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let n: f64 = num.parse().ok()?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return None,
    };
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs).min(MAX_WAIT))
}

/// The job id of the path, or a problem (a path segment that is not UTF-8, say).
fn job_id(path: Result<Path<String>, PathRejection>) -> Result<String, Problem> {
    path.map(|Path(id)| id).map_err(|r| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-path",
            "Bad path",
            format!("the job id in the path cannot be read: {}", r.body_text()),
        )
    })
}

pub async fn get_job(
    State(app): State<Arc<App>>,
    path: Result<Path<String>, PathRejection>,
    query: Result<Query<WaitQuery>, QueryRejection>,
) -> Result<Response, Problem> {
    let id = job_id(path)?;
    let Query(query) = query.map_err(|r| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "bad-query",
            "Bad query",
            format!("{}: give at most one wait=, e.g. wait=30s", r.body_text()),
        )
    })?;
    let mut changes = app
        .engine
        .subscribe(&id)
        .ok_or_else(|| Problem::not_found(format!("no job {id}")))?;
    if let Some(wait) = &query.wait {
        let wait = parse_wait(wait).ok_or_else(|| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "bad-wait",
                "Bad wait",
                format!("wait={wait:?}: give e.g. 30s, 500ms or 2m"),
            )
        })?;
        // Answered before the connection's idle timeout would close it.
        let wait = wait.min(app.settings.idle_timeout - Duration::from_secs(1));
        let _ = tokio::time::timeout(wait, changes.wait_for(|r| r.state.is_final())).await;
    }
    let record = changes.borrow().clone();
    Ok(job_response(StatusCode::OK, &record))
}

pub async fn get_proof(
    State(app): State<Arc<App>>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, Problem> {
    let id = job_id(path)?;
    let record = app
        .engine
        .get(&id)
        .ok_or_else(|| Problem::not_found(format!("no job {id}")))?;
    if record.state != JobState::Done {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            "not-done",
            "Proof not ready",
            format!("job {id} is {}", record.state.as_str()),
        ));
    }
    let engine = app.engine.clone();
    let bytes = tokio::task::spawn_blocking(move || engine.proof(&record))
        .await
        .map_err(|e| Problem::internal("reading the proof failed").caused_by(e.to_string()))?
        .map_err(|e| {
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "proof-damaged",
                "Stored proof damaged",
                format!("the stored proof of job {id} is missing or damaged; submit the request again under a new id"),
            )
            .caused_by(format!("{e:#}"))
        })?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response())
}

pub async fn cancel(
    State(app): State<Arc<App>>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, Problem> {
    let id = job_id(path)?;
    let engine = app.engine.clone();
    let record = tokio::task::spawn_blocking(move || engine.cancel(&id))
        .await
        .map_err(|e| Problem::internal("cancelling failed").caused_by(e.to_string()))?
        .map_err(|e| match e {
            CancelError::Store(_, cause) => Problem::storage("storing the cancellation", &cause),
            CancelError::NotFound(_) => Problem::not_found(e.to_string()),
            CancelError::Final(..) => Problem::new(
                StatusCode::CONFLICT,
                "already-final",
                "Job already ended",
                e.to_string(),
            ),
        })?;
    Ok(job_response(StatusCode::ACCEPTED, &record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_parse_with_units_and_are_capped() {
        assert_eq!(parse_wait("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_wait("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_wait("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_wait("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_wait("1h"), None);
        assert_eq!(parse_wait("-1s"), None);
        assert_eq!(parse_wait("9999s"), Some(MAX_WAIT));
    }
}
