//! The V1 error envelope (also used by the admin API) and the one mapping
//! table from engine errors to HTTP statuses and codes.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use paygate_engine::ledger::LedgerError;
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
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> V1Error {
        V1Error {
            status,
            code,
            message: message.into(),
            data: None,
            retry_after_seconds: None,
        }
    }

    /// 400 `INVALID_BODY`.
    pub fn invalid_body(message: impl Into<String>) -> V1Error {
        V1Error::new(StatusCode::BAD_REQUEST, "INVALID_BODY", message)
    }

    /// 400 `INVALID_ID`.
    pub fn invalid_id() -> V1Error {
        V1Error::new(StatusCode::BAD_REQUEST, "INVALID_ID", "id is not a valid UUID")
    }

    /// 404 `NOT_FOUND` for routes.
    pub fn route_not_found() -> V1Error {
        V1Error::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such route")
    }

    /// 500 `INTERNAL`; the cause is logged, never sent.
    pub fn internal(cause: impl std::fmt::Display) -> V1Error {
        tracing::error!(%cause, "internal error");
        V1Error::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "internal error")
    }

    /// Attaches the existing resource (409 duplicates).
    pub fn with_data(mut self, data: impl serde::Serialize) -> V1Error {
        self.data = serde_json::value::to_raw_value(&data).ok();
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
    match error {
        EngineError::DuplicateOrder(existing) => V1Error::new(
            StatusCode::CONFLICT,
            "DUPLICATE_ORDER",
            "an order with this merchant_order_id exists",
        )
        .with_data(crate::wire::order_view(&existing, public_url)),
        other => other.into(),
    }
}

impl From<EngineError> for V1Error {
    fn from(error: EngineError) -> V1Error {
        use StatusCode as S;
        match error {
            EngineError::InvalidInput { field, reason } => V1Error::invalid_body(format!("{field}: {reason}")),
            EngineError::MerchantNotFound => V1Error::new(S::NOT_FOUND, "MERCHANT_NOT_FOUND", "merchant not found"),
            EngineError::NotWalletMerchant => {
                V1Error::new(S::FORBIDDEN, "NOT_WALLET_MERCHANT", "merchant is not a WALLET merchant")
            }
            EngineError::BankNotFound => V1Error::new(S::BAD_REQUEST, "BANK_NOT_FOUND", "bank not found"),
            EngineError::EwalletNotFound => V1Error::new(S::BAD_REQUEST, "EWALLET_NOT_FOUND", "e-wallet not found"),
            EngineError::Ledger(LedgerError::InsufficientBalance) => {
                V1Error::new(S::UNPROCESSABLE_ENTITY, "INSUFFICIENT_BALANCE", "insufficient balance")
            }
            EngineError::Ledger(LedgerError::DuplicateIdempotencyKey(_)) => {
                V1Error::new(S::CONFLICT, "DUPLICATE_IDEMPOTENCY_KEY", "idempotency key already used")
            }
            EngineError::Ledger(LedgerError::Overflow) => V1Error::invalid_body("amount_minor: too large"),
            EngineError::Timeout => V1Error::new(
                S::SERVICE_UNAVAILABLE,
                "TIMEOUT",
                "the operation did not finish in time; retry with the same idempotency key",
            ),
            EngineError::ShuttingDown => {
                V1Error::new(S::SERVICE_UNAVAILABLE, "UNAVAILABLE", "service is shutting down")
            }
            EngineError::Busy => {
                let mut error = V1Error::new(
                    S::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "too much work in flight; try again shortly",
                );
                error.retry_after_seconds = Some(1);
                error
            }
            EngineError::StorageUnavailable => {
                let mut error = V1Error::new(
                    S::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "storage cannot take writes now (disk full or failing); nothing was changed; try again later",
                );
                error.retry_after_seconds = Some(paygate_engine::limits::STORAGE_RETRY_AFTER_SECONDS);
                error
            }
            EngineError::DuplicateDisbursement(existing) => V1Error::new(
                S::CONFLICT,
                "DUPLICATE_IDEMPOTENCY_KEY",
                "a disbursement with this idempotency key exists",
            )
            .with_data(crate::wire::disbursement_view(&existing)),
            EngineError::BeneficiaryNotFound => {
                V1Error::new(S::NOT_FOUND, "BENEFICIARY_NOT_FOUND", "beneficiary not found")
            }
            EngineError::DisbursementNotFound => {
                V1Error::new(S::NOT_FOUND, "DISBURSEMENT_NOT_FOUND", "disbursement not found")
            }
            EngineError::BankDisabled => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "BANK_DISABLED",
                "bank is not available for disbursement",
            ),
            EngineError::EwalletDisabled => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "EWALLET_DISABLED",
                "e-wallet is not available for disbursement",
            ),
            EngineError::MissingBankInfo(message) => V1Error::new(S::BAD_REQUEST, "MISSING_BANK_INFO", message),
            EngineError::MissingEwalletInfo => V1Error::new(
                S::BAD_REQUEST,
                "MISSING_EWALLET_INFO",
                "ewallet_provider and ewallet_phone are required for EWALLET",
            ),
            EngineError::AmountExceedsLimit => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "AMOUNT_EXCEEDS_LIMIT",
                "amount exceeds the per-transaction limit",
            ),
            EngineError::DailyLimitExceeded => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "DAILY_LIMIT_EXCEEDED",
                "amount exceeds the daily limit",
            ),
            EngineError::AmountBelowMinimum(minimum) => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "AMOUNT_BELOW_MINIMUM",
                format!("amount is below the minimum of {minimum}"),
            ),
            EngineError::InvalidStatus(status) => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "INVALID_STATUS",
                format!("not allowed in status {status}"),
            ),
            EngineError::StatusConflict(status) => V1Error::new(
                S::CONFLICT,
                "STATUS_CONFLICT",
                format!("the payout is already {status}; nothing changed"),
            ),
            EngineError::NoVendor => V1Error::new(
                S::SERVICE_UNAVAILABLE,
                "NO_VENDOR",
                "no vendor is configured for this operation",
            ),
            EngineError::VendorError(_) => V1Error::new(
                S::SERVICE_UNAVAILABLE,
                "VENDOR_ERROR",
                "all configured payment vendors failed; retry later",
            ),
            EngineError::OrderNotFound => V1Error::new(S::NOT_FOUND, "ORDER_NOT_FOUND", "order not found"),
            EngineError::SettlementNotFound => V1Error::new(S::NOT_FOUND, "NOT_FOUND", "settlement not found"),
            EngineError::BatchNotFound => V1Error::new(S::NOT_FOUND, "NOT_FOUND", "disbursement batch not found"),
            EngineError::EventNotFound => V1Error::new(S::NOT_FOUND, "EVENT_NOT_FOUND", "event not found"),
            EngineError::RefundNotFound => V1Error::new(S::NOT_FOUND, "REFUND_NOT_FOUND", "refund not found"),
            EngineError::VendorNotFound => V1Error::new(S::NOT_FOUND, "NOT_FOUND", "no such vendor"),
            EngineError::InvalidSignature => V1Error::new(
                S::UNAUTHORIZED,
                "INVALID_SIGNATURE",
                "signature does not match the request body",
            ),
            // Order handlers use `order_error`, which makes `qr_url` absolute.
            EngineError::DuplicateOrder(existing) => order_error(EngineError::DuplicateOrder(existing), ""),
            EngineError::IdempotencyKeyReused => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "IDEMPOTENCY_KEY_REUSED",
                "Idempotency-Key was already used with a different request body",
            ),
            EngineError::AmountExceedsOrder => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "AMOUNT_EXCEEDS_ORDER",
                "amount exceeds the remaining refundable amount",
            ),
            EngineError::RefundNotSupported => V1Error::new(
                S::UNPROCESSABLE_ENTITY,
                "REFUND_NOT_SUPPORTED",
                "refunds are not supported by this order's payment vendor",
            ),
            EngineError::EmailTaken => V1Error::new(S::CONFLICT, "EMAIL_TAKEN", "a user with this email exists"),
            EngineError::DuplicateRefund(existing) => V1Error::new(
                S::CONFLICT,
                "DUPLICATE_IDEMPOTENCY_KEY",
                "a refund with this idempotency key exists",
            )
            .with_data(crate::wire::refund_view(&existing)),
            other @ (EngineError::Ledger(_) | EngineError::Store(_) | EngineError::Internal(_)) => {
                V1Error::internal(other)
            }
        }
    }
}
