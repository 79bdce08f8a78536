//! The error envelopes: V1's (also the admin API's) here and Legacy's in
//! `legacy`, both built from the one error table (`table`) and the one
//! mapping of engine errors onto it (`engine_errors`).

mod engine_errors;
mod legacy;
pub mod table;

pub use engine_errors::classify;
pub use legacy::{LegacyError, LegacyErrorBody};
pub use table::{legacy_messages, ErrorKind};

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use paygate_engine::EngineError;
use serde_json::value::RawValue;

/// An error answered as `{success: false, error: {code, message}}`.
#[derive(Debug)]
pub struct V1Error {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code.
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
    /// The existing resource, for 409 duplicates (raw, so an order's
    /// metadata keeps its bytes).
    pub data: Option<Box<RawValue>>,
    /// Seconds for `Retry-After` (429, and 503 when it will pass).
    pub retry_after_seconds: Option<u64>,
}

impl V1Error {
    /// An error of `kind`, its status and code from the table, with a
    /// message naming what is at fault. A kind V1 has no answer for is a
    /// caller's mistake, answered as a logged 500.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> V1Error {
        let Some((status, code)) = kind.row().v1 else {
            return V1Error::internal(format!("{kind:?} has no V1 answer"));
        };
        V1Error {
            status: table::status(status),
            code,
            message: message.into(),
            data: None,
            retry_after_seconds: None,
        }
    }

    /// 400 `INVALID_BODY`.
    pub fn invalid_body(message: impl Into<String>) -> V1Error {
        V1Error::new(ErrorKind::InvalidBody, message)
    }

    /// 400 `INVALID_ID`.
    pub fn invalid_id() -> V1Error {
        V1Error::new(ErrorKind::InvalidId, "id is not a valid UUID")
    }

    /// 400 `INVALID_QUERY`.
    pub fn invalid_query(message: impl Into<String>) -> V1Error {
        V1Error::new(ErrorKind::InvalidQuery, message)
    }

    /// 404 `NOT_FOUND` for routes.
    pub fn route_not_found() -> V1Error {
        V1Error::new(ErrorKind::NotFound, "no such route")
    }

    /// 500 `INTERNAL`; the cause is logged, never sent.
    pub fn internal(cause: impl std::fmt::Display) -> V1Error {
        tracing::error!(%cause, "internal error");
        let (status, code) = table::INTERNAL_V1;
        V1Error {
            status: table::status(status),
            code,
            message: "internal error".to_owned(),
            data: None,
            retry_after_seconds: None,
        }
    }

    /// Attaches the existing resource (409 duplicates).
    pub fn with_data(mut self, data: impl serde::Serialize) -> V1Error {
        self.data = serde_json::value::to_raw_value(&data).ok();
        self
    }

    /// Sets `Retry-After`.
    pub fn retry_after(mut self, seconds: u64) -> V1Error {
        self.retry_after_seconds = Some(seconds);
        self
    }
}

/// The V1 and admin error body. The document narrows `error.code` to the
/// codes each route can answer (`openapi::errors`).
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(as = V1ErrorBody)]
pub struct ErrorBody<'a> {
    /// Always `false`.
    success: bool,
    /// What went wrong.
    error: ErrorFields<'a>,
    /// The existing resource, on a 409 duplicate.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    data: Option<&'a RawValue>,
}

/// `error` of the V1 error body.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(as = V1ErrorFields)]
pub struct ErrorFields<'a> {
    /// Stable machine-readable code.
    code: &'a str,
    /// Human-readable message; may change, never parse it.
    message: &'a str,
}

impl IntoResponse for V1Error {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            success: false,
            error: ErrorFields {
                code: self.code,
                message: &self.message,
            },
            data: self.data.as_deref(),
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after_seconds {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// Maps an engine error of an order operation: like `From`, but a
/// duplicate order carries its view with an absolute `qr_url`.
pub fn order_error(error: EngineError, public_url: &str) -> V1Error {
    let EngineError::DuplicateOrder(existing) = &error else {
        return error.into();
    };
    let (kind, message) = classify(&error);
    V1Error::new(kind, message).with_data(crate::wire::order_view(existing, public_url))
}

impl From<EngineError> for V1Error {
    fn from(error: EngineError) -> V1Error {
        let (kind, message) = classify(&error);
        if kind == ErrorKind::Internal {
            return V1Error::internal(error);
        }
        let answer = V1Error::new(kind, message);
        match error {
            // Order handlers use `order_error`, which makes `qr_url` absolute.
            EngineError::DuplicateOrder(_) => order_error(error, ""),
            EngineError::DuplicateDisbursement(existing) => answer.with_data(crate::wire::disbursement_view(&existing)),
            EngineError::DuplicateRefund(existing) => answer.with_data(crate::wire::refund_view(&existing)),
            EngineError::Busy => answer.retry_after(1),
            EngineError::StorageUnavailable => answer.retry_after(paygate_engine::limits::STORAGE_RETRY_AFTER_SECONDS),
            _ => answer,
        }
    }
}
