//! Errors as RFC 9457 problem details: `{"type", "title", "status", "detail"}` (plus `field`
//! for invalid input), served as application/problem+json. The type is stable per error:
//! `urn:cuzk:problem:<name>`. A 5xx is logged with its cause, which the answer does not show
//! (it may name host paths); a 429 or 503 says when to come back (`Retry-After`).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::circuits::CircuitError;

#[derive(Debug)]
pub struct Problem {
    status: StatusCode,
    name: &'static str,
    title: &'static str,
    detail: String,
    field: Option<String>,
    /// What the log gets beside a 5xx (not sent).
    cause: Option<Box<str>>,
    /// Seconds for `Retry-After`.
    retry_after: Option<u32>,
}

impl Problem {
    pub fn new(
        status: StatusCode,
        name: &'static str,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        Problem {
            status,
            name,
            title,
            detail: detail.into(),
            field: None,
            cause: None,
            retry_after: None,
        }
    }

    /// The cause the log gets (not the client).
    pub fn caused_by(self, cause: impl Into<String>) -> Self {
        Problem {
            cause: Some(cause.into().into_boxed_str()),
            ..self
        }
    }

    /// Tells the client to try again after `after` (rounded up to whole seconds, at least 1).
    pub fn retry_after(self, after: std::time::Duration) -> Self {
        Problem {
            retry_after: Some(after.as_secs_f64().ceil().clamp(1.0, u32::MAX as f64) as u32),
            ..self
        }
    }

    /// A failure of the job store: 507 when the data dir's file system is full or over quota
    /// (the operator's to fix; the service recovers once there is room), else 500. The detail
    /// names no host path; the log gets the whole cause.
    pub fn storage(what: &str, e: &anyhow::Error) -> Self {
        let problem = if crate::jobs::out_of_space(e) {
            Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "insufficient-storage",
                "Insufficient storage",
                format!("{what}: the data directory's file system is full; free space there and try again"),
            )
        } else {
            Self::internal(format!("{what} failed; the service log has the cause"))
        };
        problem.caused_by(format!("{e:#}"))
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "Not found", detail)
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method-not-allowed",
            "Method not allowed",
            "this resource does not take that method",
        )
    }

    /// A body over `api.max_body_bytes` (its Content-Length, or its bytes as they came).
    pub fn body_too_large(limit: usize) -> Self {
        Self::body_too_large_because(format!("the body is over api.max_body_bytes = {limit}"))
    }

    /// A body refused for its size, for the reason `detail` gives.
    pub fn body_too_large_because(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            "Request body too large",
            detail,
        )
    }

    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            detail,
        )
    }

    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Service unavailable",
            detail,
        )
    }

    /// A request the proof kinds refuse: 422, naming the field (none for the body as a whole).
    pub fn invalid_input(e: CircuitError) -> Self {
        let field = match &e {
            CircuitError::InvalidInput { field, .. } if !field.is_empty() => Some(field.clone()),
            _ => None,
        };
        Problem {
            field,
            ..Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid-input",
                "Invalid proof request",
                e.to_string(),
            )
        }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut body = json!({
            "type": format!("urn:cuzk:problem:{}", self.name),
            "title": self.title,
            "status": self.status.as_u16(),
            "detail": self.detail,
        });
        if let Some(field) = self.field {
            body["field"] = json!(field);
        }
        if self.status.is_server_error() {
            tracing::warn!(
                status = self.status.as_u16(),
                problem = self.name,
                detail = %self.detail,
                cause = self.cause.as_deref().unwrap_or("-"),
                "answered with a server error"
            );
        }
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body.to_string(),
        )
            .into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
        }
        response
    }
}
