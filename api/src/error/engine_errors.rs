//! Engine errors as rows of the error table, with the message a V1 answer
//! gives. V1 and Legacy both answer an engine error through this one
//! mapping, so a refusal cannot mean one thing to V1 and another to Legacy.

use super::table::ErrorKind;
use paygate_engine::ledger::LedgerError;
use paygate_engine::EngineError;
use std::borrow::Cow;

/// The kind of `error` and the V1 message that names what is at fault.
/// Broken machinery (a ledger invariant, storage, an internal fault) is
/// `Internal`, whose cause the caller logs and never sends.
pub fn classify(error: &EngineError) -> (ErrorKind, Cow<'static, str>) {
    use ErrorKind as K;
    let (kind, message): (ErrorKind, Cow<'static, str>) = match error {
        EngineError::InvalidInput { field, reason } => (K::InvalidBody, format!("{field}: {reason}").into()),
        EngineError::Ledger(LedgerError::Overflow) => (K::InvalidBody, "amount_minor: too large".into()),
        EngineError::MerchantNotFound => (K::MerchantNotFound, "merchant not found".into()),
        EngineError::NotWalletMerchant => (K::NotWalletMerchant, "merchant is not a WALLET merchant".into()),
        EngineError::BankNotFound => (K::BankNotFound, "bank not found".into()),
        EngineError::EwalletNotFound => (K::EwalletNotFound, "e-wallet not found".into()),
        EngineError::Ledger(LedgerError::InsufficientBalance) => {
            (K::InsufficientBalance, "insufficient balance".into())
        }
        EngineError::Ledger(LedgerError::DuplicateIdempotencyKey(_)) => {
            (K::DuplicateIdempotencyKey, "idempotency key already used".into())
        }
        EngineError::Timeout => (
            K::Timeout,
            "the operation did not finish in time; retry with the same idempotency key".into(),
        ),
        EngineError::ShuttingDown => (K::Unavailable, "service is shutting down".into()),
        EngineError::Busy => (K::Unavailable, "too much work in flight; try again shortly".into()),
        EngineError::StorageUnavailable => (
            K::Unavailable,
            "storage cannot take writes now (disk full or failing); nothing was changed; try again later".into(),
        ),
        EngineError::DuplicateDisbursement(_) => (
            K::DuplicateIdempotencyKey,
            "a disbursement with this idempotency key exists".into(),
        ),
        EngineError::DuplicateRefund(_) => (
            K::DuplicateIdempotencyKey,
            "a refund with this idempotency key exists".into(),
        ),
        EngineError::DuplicateOrder(_) => (K::DuplicateOrder, "an order with this merchant_order_id exists".into()),
        EngineError::BeneficiaryNotFound => (K::BeneficiaryNotFound, "beneficiary not found".into()),
        EngineError::DisbursementNotFound => (K::DisbursementNotFound, "disbursement not found".into()),
        EngineError::BankDisabled => (K::BankDisabled, "bank is not available for disbursement".into()),
        EngineError::EwalletDisabled => (K::EwalletDisabled, "e-wallet is not available for disbursement".into()),
        EngineError::MissingBankInfo(message) => (K::MissingBankInfo, message.clone()),
        EngineError::MissingEwalletInfo => (
            K::MissingEwalletInfo,
            "ewallet_provider and ewallet_phone are required for EWALLET".into(),
        ),
        EngineError::AmountExceedsLimit => (K::AmountExceedsLimit, "amount exceeds the per-transaction limit".into()),
        EngineError::DailyLimitExceeded => (K::DailyLimitExceeded, "amount exceeds the daily limit".into()),
        EngineError::AmountBelowMinimum(minimum) => (
            K::AmountBelowMinimum,
            format!("amount is below the minimum of {minimum}").into(),
        ),
        EngineError::InvalidStatus(status) => (K::InvalidStatus, format!("not allowed in status {status}").into()),
        EngineError::StatusConflict(status) => (
            K::StatusConflict,
            format!("the payout is already {status}; nothing changed").into(),
        ),
        EngineError::NoVendor => (K::NoVendor, "no vendor is configured for this operation".into()),
        EngineError::VendorError(_) => (
            K::VendorError,
            "all configured payment vendors failed; retry later".into(),
        ),
        EngineError::OrderNotFound => (K::OrderNotFound, "order not found".into()),
        EngineError::SettlementNotFound => (K::NotFound, "settlement not found".into()),
        EngineError::BatchNotFound => (K::NotFound, "disbursement batch not found".into()),
        EngineError::EventNotFound => (K::EventNotFound, "event not found".into()),
        EngineError::RefundNotFound => (K::RefundNotFound, "refund not found".into()),
        EngineError::VendorNotFound => (K::NotFound, "no such vendor".into()),
        EngineError::InvalidSignature => (K::InvalidSignature, "signature does not match the request body".into()),
        EngineError::IdempotencyKeyReused => (
            K::IdempotencyKeyReused,
            "Idempotency-Key was already used with a different request body".into(),
        ),
        EngineError::AmountExceedsOrder => (
            K::AmountExceedsOrder,
            "amount exceeds the remaining refundable amount".into(),
        ),
        EngineError::RefundNotSupported => (
            K::RefundNotSupported,
            "refunds are not supported by this order's payment vendor".into(),
        ),
        EngineError::EmailTaken => (K::EmailTaken, "a user with this email exists".into()),
        EngineError::Ledger(_) | EngineError::Store(_) | EngineError::Internal(_) => {
            (K::Internal, "internal error".into())
        }
    };
    (kind, message)
}
