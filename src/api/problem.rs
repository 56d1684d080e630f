//! Errors as RFC 9457 problem details: `{"type", "title", "status", "detail"}` (plus `field`
//! for invalid input), served as application/problem+json. The type is stable per error:
//! `urn:cuzk:problem:<name>`.

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
        }
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

    /// A request the proof kinds refuse: 422, naming the field.
    pub fn invalid_input(e: CircuitError) -> Self {
        let field = match &e {
            CircuitError::InvalidInput { field, .. } => Some(field.clone()),
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
        (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body.to_string(),
        )
            .into_response()
    }
}
