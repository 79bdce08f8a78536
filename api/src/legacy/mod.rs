//! The Legacy API under `/api/`: the
//! same engine as V1 behind the envelope, field names, formats and messages
//! that older integrations parse byte for byte. Every answer is
//! `{code, message, data}` with the HTTP status equal to `code`.

mod disbursements;
mod orders;

pub use disbursements::{legacy_disbursement, LegacyDisbursement};

use crate::AppState;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use paygate_engine::domain::MerchantRecord;
use paygate_engine::EngineError;
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

/// The Legacy error messages, byte for byte what older integrations match
/// on: never reword one.
pub mod messages {
    /// 400.
    pub const INVALID_PARAMETERS: &str = "Invalid request parameters";
    /// 400.
    pub const INVALID_EWALLET_CODE: &str = "Invalid ewalletCode";
    /// 401.
    pub const INVALID_CLIENT_ID: &str = "Invalid Client ID";
    /// 401.
    pub const INVALID_SIGNATURE: &str = "Invalid Signature";
    /// 401.
    pub const INVALID_X_SIGNATURE: &str = "Invalid X-SIGNATURE";
    /// 404.
    pub const ORDER_ID_NOT_FOUND: &str = "Order ID not found";
    /// 409.
    pub const ORDER_ID_USED: &str = "Order ID already used";
    /// 422.
    pub const PUBLIC_KEY_NOT_SET: &str = "Public Key is not set";
    /// 422.
    pub const BANK_NOT_USABLE: &str = "Bank Cannot be used for Disbursement";
    /// 422.
    pub const INSUFFICIENT_BALANCE: &str = "Insufficient Balance";
    /// 422.
    pub const MAXIMUM_EXCEEDED: &str = "Maximum Request Amount Exceeded";
    /// 422.
    pub const DANA_MINIMUM: &str = "Minimum requestAmount for DANA is 20000";
    /// 422.
    pub const MERCHANT_SETTING_INVALID: &str = "Merchant setting is not Valid";
    /// 422.
    pub const DAILY_LIMIT_EXCEEDED: &str = "Daily Limit Exceeded";
    /// 413.
    pub const BODY_TOO_LARGE: &str = "Request body too large";
    /// 503: every payment vendor failed (no Legacy message exists for it).
    pub const GATEWAY_ERROR: &str = "Payment gateway error";
    /// 500.
    pub const INTERNAL: &str = "Internal Server Error";
}

/// A Legacy error: `{code, message, data: null}` with HTTP status `code`.
#[derive(Debug)]
pub struct LegacyError {
    status: StatusCode,
    message: &'static str,
}

impl LegacyError {
    /// An error with its status and one of `messages`.
    pub fn new(status: StatusCode, message: &'static str) -> LegacyError {
        LegacyError { status, message }
    }

    fn invalid_parameters() -> LegacyError {
        LegacyError::new(StatusCode::BAD_REQUEST, messages::INVALID_PARAMETERS)
    }

    fn internal(cause: impl std::fmt::Display) -> LegacyError {
        tracing::error!(%cause, "internal error (legacy)");
        LegacyError::new(StatusCode::INTERNAL_SERVER_ERROR, messages::INTERNAL)
    }
}

impl IntoResponse for LegacyError {
    fn into_response(self) -> Response {
        crate::ops::legacy_error(self.status, self.message)
    }
}

/// Engine refusals as Legacy messages; anything without one is a bad request
/// or, for broken machinery, a 500.
impl From<EngineError> for LegacyError {
    fn from(error: EngineError) -> LegacyError {
        use messages::*;
        use paygate_engine::ledger::LedgerError;
        use StatusCode as S;
        match error {
            EngineError::Ledger(LedgerError::InsufficientBalance) => {
                LegacyError::new(S::UNPROCESSABLE_ENTITY, INSUFFICIENT_BALANCE)
            }
            EngineError::AmountExceedsLimit => LegacyError::new(S::UNPROCESSABLE_ENTITY, MAXIMUM_EXCEEDED),
            EngineError::DailyLimitExceeded => LegacyError::new(S::UNPROCESSABLE_ENTITY, DAILY_LIMIT_EXCEEDED),
            EngineError::AmountBelowMinimum(_) => LegacyError::new(S::UNPROCESSABLE_ENTITY, DANA_MINIMUM),
            EngineError::BankNotFound | EngineError::BankDisabled => {
                LegacyError::new(S::UNPROCESSABLE_ENTITY, BANK_NOT_USABLE)
            }
            EngineError::EwalletNotFound | EngineError::EwalletDisabled => {
                LegacyError::new(S::BAD_REQUEST, INVALID_EWALLET_CODE)
            }
            EngineError::NotWalletMerchant | EngineError::NoVendor => {
                LegacyError::new(S::UNPROCESSABLE_ENTITY, MERCHANT_SETTING_INVALID)
            }
            EngineError::VendorError(_) => LegacyError::new(S::SERVICE_UNAVAILABLE, GATEWAY_ERROR),
            EngineError::DuplicateOrder(_) | EngineError::DuplicateDisbursement(_) => {
                LegacyError::new(S::CONFLICT, ORDER_ID_USED)
            }
            EngineError::OrderNotFound | EngineError::DisbursementNotFound => {
                LegacyError::new(S::NOT_FOUND, ORDER_ID_NOT_FOUND)
            }
            EngineError::MerchantNotFound => LegacyError::new(S::UNAUTHORIZED, INVALID_CLIENT_ID),
            EngineError::InvalidInput { .. }
            | EngineError::MissingBankInfo(_)
            | EngineError::MissingEwalletInfo
            | EngineError::Ledger(LedgerError::Overflow) => LegacyError::invalid_parameters(),
            EngineError::Timeout | EngineError::ShuttingDown | EngineError::Busy | EngineError::StorageUnavailable => {
                LegacyError::new(S::SERVICE_UNAVAILABLE, "Service Unavailable")
            }
            other => LegacyError::internal(other),
        }
    }
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
                LegacyError::new(StatusCode::PAYLOAD_TOO_LARGE, messages::BODY_TOO_LARGE)
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
            .merchant_by_client_id(client_id)
            .filter(|m| m.is_active)
            .ok_or(LegacyError::new(StatusCode::UNAUTHORIZED, messages::INVALID_CLIENT_ID))
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
        return Err(LegacyError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            messages::PUBLIC_KEY_NOT_SET,
        ));
    };
    let signature = headers
        .get("x-signature")
        .and_then(|v| v.to_str().ok())
        .ok_or(LegacyError::new(
            StatusCode::UNAUTHORIZED,
            messages::INVALID_X_SIGNATURE,
        ))?;
    let message = format!(
        "{}|{}|{}",
        merchant.credentials.client_id,
        merchant.credentials.client_secret,
        paygate_engine::signing::sha256_hex(&body.raw)
    );
    if !paygate_engine::signing::verify_rsa_sha256(public_key, message.as_bytes(), signature) {
        return Err(LegacyError::new(
            StatusCode::UNAUTHORIZED,
            messages::INVALID_X_SIGNATURE,
        ));
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
