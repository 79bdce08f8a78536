//! The Legacy error envelope, `{code, message, data: null}` with the HTTP
//! status equal to `code`, built from the one error table.

use super::classify;
use super::table::{self, ErrorKind};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use paygate_engine::EngineError;

/// A Legacy error: `{code, message, data: null}` with HTTP status `code`.
#[derive(Debug)]
pub struct LegacyError {
    status: StatusCode,
    message: &'static str,
}

impl LegacyError {
    /// 400 `Invalid request parameters`.
    pub fn invalid_parameters() -> LegacyError {
        ErrorKind::InvalidBody.into()
    }

    /// 500; the cause is logged, never sent.
    pub fn internal(cause: impl std::fmt::Display) -> LegacyError {
        tracing::error!(%cause, "internal error (legacy)");
        let (status, message) = table::INTERNAL_LEGACY;
        LegacyError {
            status: table::status(status),
            message,
        }
    }
}

impl IntoResponse for LegacyError {
    fn into_response(self) -> Response {
        legacy_error(self.status, self.message)
    }
}

/// The Legacy answer of `kind`; one the Legacy API has no message for is
/// broken machinery to it, a logged 500.
impl From<ErrorKind> for LegacyError {
    fn from(kind: ErrorKind) -> LegacyError {
        match kind.row().legacy {
            Some((status, message)) => LegacyError {
                status: table::status(status),
                message,
            },
            None => LegacyError::internal(format!("{kind:?} has no Legacy answer")),
        }
    }
}

/// Engine refusals through the one mapping onto the table.
impl From<EngineError> for LegacyError {
    fn from(error: EngineError) -> LegacyError {
        let kind = classify(&error).0;
        match kind.row().legacy {
            Some(_) if kind != ErrorKind::Internal => kind.into(),
            _ => LegacyError::internal(error),
        }
    }
}

/// The Legacy error body. A struct, not `json!`: its keys serialize in this
/// order, the order of Legacy success bodies. The document narrows `message`
/// to the messages each route can answer (`openapi::errors`).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct LegacyErrorBody<'a> {
    /// The HTTP status, repeated.
    code: u16,
    /// One of the fixed Legacy messages.
    message: &'a str,
    /// Always `null`.
    #[schema(value_type = Option<Object>)]
    data: (),
}

/// The Legacy error body: HTTP status equals `code`, `data` null.
fn legacy_error(status: StatusCode, message: &str) -> Response {
    let body = LegacyErrorBody {
        code: status.as_u16(),
        message,
        data: (),
    };
    (status, Json(body)).into_response()
}
