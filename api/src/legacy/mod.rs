//! The Legacy API under `/api/`: the
//! same engine as V1 behind the envelope, field names, formats and messages
//! that older integrations parse byte for byte. Every answer is
//! `{code, message, data}` with the HTTP status equal to `code`.

mod disbursements;
mod orders;

pub use disbursements::{legacy_disbursement, LegacyDisbursement};

use crate::error::{ErrorKind, LegacyError};
use crate::AppState;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use paygate_engine::domain::MerchantRecord;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Every `/api/` route, each with its entry in the document.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(orders::create_order))
        .routes(routes!(orders::query_order))
        .routes(routes!(disbursements::create_bank))
        .routes(routes!(disbursements::create_ewallet))
        .routes(routes!(disbursements::query))
        .routes(routes!(disbursements::get_balance))
}

/// `{code: 200, message: "Success", data}`.
pub struct LegacyOk<T>(pub T);

/// The Legacy success body.
#[derive(Serialize, ToSchema)]
pub struct LegacySuccessBody<T> {
    /// Always 200.
    code: u16,
    /// Always `Success`.
    message: &'static str,
    data: T,
}

impl<T: Serialize> IntoResponse for LegacyOk<T> {
    fn into_response(self) -> Response {
        let body = LegacySuccessBody {
            code: 200,
            message: "Success",
            data: self.0,
        };
        (StatusCode::OK, Json(body)).into_response()
    }
}

/// A Legacy request body: the raw bytes (signatures are over them, never
/// over re-serialized JSON) and the JSON object they hold.
pub struct LegacyBody {
    raw: Bytes,
    fields: Map<String, Value>,
}

impl<S: Send + Sync> axum::extract::FromRequest<S> for LegacyBody {
    type Rejection = LegacyError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, LegacyError> {
        let raw = Bytes::from_request(request, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                LegacyError::from(ErrorKind::PayloadTooLarge)
            } else {
                LegacyError::invalid_parameters()
            }
        })?;
        match serde_json::from_slice::<Value>(&raw) {
            Ok(Value::Object(fields)) => Ok(LegacyBody { raw, fields }),
            _ => Err(LegacyError::invalid_parameters()),
        }
    }
}

impl LegacyBody {
    /// A required non-empty string field.
    fn string(&self, name: &str) -> Result<String, LegacyError> {
        match self.fields.get(name) {
            Some(Value::String(value)) if !value.trim().is_empty() => Ok(value.clone()),
            _ => Err(LegacyError::invalid_parameters()),
        }
    }

    /// An optional string field: absent or null is `None`; another type is invalid.
    fn optional_string(&self, name: &str) -> Result<Option<String>, LegacyError> {
        match self.fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(value)) if value.is_empty() => Ok(None),
            Some(Value::String(value)) => Ok(Some(value.clone())),
            Some(_) => Err(LegacyError::invalid_parameters()),
        }
    }

    /// A required positive whole-IDR integer.
    fn rupiah(&self, name: &str) -> Result<i64, LegacyError> {
        match self.fields.get(name).and_then(Value::as_i64) {
            Some(value) if value >= 1 => Ok(value),
            _ => Err(LegacyError::invalid_parameters()),
        }
    }

    /// The merchant behind `clientId`: active, or 401 "Invalid Client ID".
    fn merchant(&self, state: &AppState) -> Result<Arc<MerchantRecord>, LegacyError> {
        let client_id = match self.fields.get("clientId") {
            Some(Value::String(id)) if !id.is_empty() => id,
            Some(Value::String(_)) | None | Some(Value::Null) => return Err(LegacyError::invalid_parameters()),
            Some(_) => return Err(LegacyError::invalid_parameters()),
        };
        state
            .engine
            .merchants()
            .merchant_by_client_id(client_id)
            .filter(|m| m.is_active)
            .ok_or(LegacyError::from(ErrorKind::MerchantNotFound))
    }
}

/// Checks `X-SIGNATURE`: base64 RSA-SHA256 over
/// `clientId|clientSecret|sha256hex(raw body)` with the uploaded public key.
fn check_x_signature(
    merchant: &MerchantRecord,
    headers: &axum::http::HeaderMap,
    body: &LegacyBody,
) -> Result<(), LegacyError> {
    let Some(public_key) = &merchant.public_key_pem else {
        return Err(LegacyError::from(ErrorKind::PublicKeyNotSet));
    };
    let signature = headers
        .get("x-signature")
        .and_then(|v| v.to_str().ok())
        .ok_or(LegacyError::from(ErrorKind::InvalidRsaSignature))?;
    let message = format!(
        "{}|{}|{}",
        merchant.credentials.client_id,
        merchant.credentials.client_secret,
        paygate_engine::signing::sha256_hex(&body.raw)
    );
    if !paygate_engine::signing::verify_rsa_sha256(public_key, message.as_bytes(), signature) {
        return Err(LegacyError::from(ErrorKind::InvalidRsaSignature));
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS` in WIB (UTC+7).
pub fn wib(millis: i64) -> String {
    paygate_engine::clock::wib_format(millis, "%Y-%m-%d %H:%M:%S")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wib_is_utc_plus_seven_without_zone() {
        let millis = chrono::DateTime::parse_from_rfc3339("2026-11-21T17:30:05Z")
            .unwrap()
            .timestamp_millis();
        assert_eq!(wib(millis), "2026-11-22 00:30:05");
    }
}
