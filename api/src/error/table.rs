//! Every error the API answers, declared once: its V1 status and code and
//! its Legacy status and message. The V1 envelope, the Legacy envelope and
//! the API document's error answers (`openapi::errors`) all read them here,
//! so the three cannot disagree.

use axum::http::StatusCode;

/// The Legacy messages, byte for byte what older integrations match on:
/// never reword one.
pub mod legacy_messages {
    /// A body or parameter the Legacy API refuses.
    pub const INVALID_PARAMETERS: &str = "Invalid request parameters";
    /// An e-wallet code that names no usable e-wallet.
    pub const INVALID_EWALLET_CODE: &str = "Invalid ewalletCode";
    /// A `merchantId` that names no merchant.
    pub const INVALID_CLIENT_ID: &str = "Invalid Client ID";
    /// A payment request's HMAC signature that does not match.
    pub const INVALID_SIGNATURE: &str = "Invalid Signature";
    /// A disbursement request's RSA signature that does not verify.
    pub const INVALID_X_SIGNATURE: &str = "Invalid X-SIGNATURE";
    /// No order or disbursement with that id.
    pub const ORDER_ID_NOT_FOUND: &str = "Order ID not found";
    /// The merchant's id was used before.
    pub const ORDER_ID_USED: &str = "Order ID already used";
    /// A signed route for a merchant without an RSA public key.
    pub const PUBLIC_KEY_NOT_SET: &str = "Public Key is not set";
    /// A bank that is unknown or closed to disbursements.
    pub const BANK_NOT_USABLE: &str = "Bank Cannot be used for Disbursement";
    /// The wallet cannot cover the amount and fee.
    pub const INSUFFICIENT_BALANCE: &str = "Insufficient Balance";
    /// Over the per-transaction limit.
    pub const MAXIMUM_EXCEEDED: &str = "Maximum Request Amount Exceeded";
    /// Under the e-wallet's minimum (DANA's is the one the message names).
    pub const DANA_MINIMUM: &str = "Minimum requestAmount for DANA is 20000";
    /// The merchant cannot do this (not a wallet merchant, no vendor).
    pub const MERCHANT_SETTING_INVALID: &str = "Merchant setting is not Valid";
    /// Over the merchant's daily limit.
    pub const DAILY_LIMIT_EXCEEDED: &str = "Daily Limit Exceeded";
    /// A body over the size limit.
    pub const BODY_TOO_LARGE: &str = "Request body too large";
    /// Every payment vendor failed (the Legacy API has no message of its own
    /// for it).
    pub const GATEWAY_ERROR: &str = "Payment gateway error";
    /// Broken machinery; the cause is logged, never sent.
    pub const INTERNAL: &str = "Internal Server Error";
    /// Too many requests from one merchant or address.
    pub const TOO_MANY_REQUESTS: &str = "Too Many Requests";
    /// The service cannot take the request now; retrying later may work.
    pub const SERVICE_UNAVAILABLE: &str = "Service Unavailable";
    /// No route at this path.
    pub const NOT_FOUND: &str = "Not Found";
    /// A route that does not take this method.
    pub const METHOD_NOT_ALLOWED: &str = "Method Not Allowed";
}

/// One error the API can answer. Its row (`ErrorKind::row`) says how each
/// envelope answers it; the message a V1 answer carries is the caller's, as
/// it names the field or state at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::VariantArray)]
pub enum ErrorKind {
    /// A body that is not valid for its route.
    InvalidBody,
    /// A path id that is not a UUID.
    InvalidId,
    /// A query parameter out of its range or vocabulary.
    InvalidQuery,
    /// No API key, or no admin token.
    Unauthorized,
    /// An API key that names no merchant.
    InvalidApiKey,
    /// A deactivated merchant.
    MerchantInactive,
    /// A body signature (V1 `X-Signature`, Legacy `signature`, a vendor's
    /// callback, a cluster hop) that does not match.
    InvalidSignature,
    /// A Legacy disbursement route's RSA `X-SIGNATURE` that does not verify.
    InvalidRsaSignature,
    /// A Legacy signed route for a merchant without a public key.
    PublicKeyNotSet,
    /// A body not received within its deadline.
    RequestTimeout,
    /// A body over its size limit.
    PayloadTooLarge,
    /// No route at this path, or no resource of a kind without a code of
    /// its own (settlement, batch, vendor).
    NotFound,
    /// A route that does not take this method.
    MethodNotAllowed,
    /// Over a rate limit.
    RateLimited,
    /// Broken machinery; the cause is logged, never sent.
    Internal,
    /// Shutting down, overloaded, storage refusing writes, a shard moving.
    Unavailable,
    /// An operation that did not finish in time; safe to retry with the
    /// same idempotency key.
    Timeout,
    /// No merchant with this id.
    MerchantNotFound,
    /// A merchant whose kind has no wallet.
    NotWalletMerchant,
    /// A bank code in a body that names no bank.
    BankNotFound,
    /// An e-wallet code in a body that names no e-wallet.
    EwalletNotFound,
    /// An e-wallet code in an admin path that names no e-wallet.
    EwalletPathNotFound,
    /// A bank closed to disbursements.
    BankDisabled,
    /// An e-wallet closed to disbursements.
    EwalletDisabled,
    /// A bank payout without its account fields.
    MissingBankInfo,
    /// An e-wallet payout without its provider or phone.
    MissingEwalletInfo,
    /// The wallet cannot cover the amount and fee.
    InsufficientBalance,
    /// An idempotency key already used for a ledger entry, refund or
    /// disbursement.
    DuplicateIdempotencyKey,
    /// An idempotency key used before with a different body.
    IdempotencyKeyReused,
    /// A `merchant_order_id` used before.
    DuplicateOrder,
    /// Over the per-transaction limit.
    AmountExceedsLimit,
    /// Over the merchant's daily limit.
    DailyLimitExceeded,
    /// Under the e-wallet's minimum.
    AmountBelowMinimum,
    /// Not allowed in the resource's current status.
    InvalidStatus,
    /// A callback that contradicts a payout's final status.
    StatusConflict,
    /// No vendor configured for the operation.
    NoVendor,
    /// Every configured vendor failed.
    VendorError,
    /// No order with this id.
    OrderNotFound,
    /// No refund with this id.
    RefundNotFound,
    /// No disbursement with this id.
    DisbursementNotFound,
    /// No beneficiary with this id.
    BeneficiaryNotFound,
    /// No webhook event with this id.
    EventNotFound,
    /// A refund over what is left to refund.
    AmountExceedsOrder,
    /// A refund through a vendor that cannot refund.
    RefundNotSupported,
    /// A resend of an event with nowhere to send it.
    NoNotifyUrl,
    /// A user email already taken.
    EmailTaken,
}

/// How one envelope answers an error: HTTP status and the code (V1) or
/// message (Legacy).
pub type Answer = (u16, &'static str);

/// Broken machinery's answers, which the envelopes also give without a row
/// lookup when a kind has no answer of theirs.
pub(crate) const INTERNAL_V1: Answer = (500, "INTERNAL");
/// See `INTERNAL_V1`.
pub(crate) const INTERNAL_LEGACY: Answer = (500, legacy_messages::INTERNAL);

/// An error's row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The V1 and admin answer; `None` where V1 has no such error.
    pub v1: Option<Answer>,
    /// The Legacy answer; `None` where the Legacy API has no message for
    /// it, which it then answers as a logged 500.
    pub legacy: Option<Answer>,
}

impl ErrorKind {
    /// The table.
    pub const fn row(self) -> Row {
        use legacy_messages as legacy;
        use ErrorKind as E;
        const fn row(v1: Option<Answer>, legacy: Option<Answer>) -> Row {
            Row { v1, legacy }
        }
        #[rustfmt::skip]
        let row = match self {
            //                         V1                                           Legacy
            E::InvalidBody          => row(Some((400, "INVALID_BODY")),             Some((400, legacy::INVALID_PARAMETERS))),
            E::InvalidId            => row(Some((400, "INVALID_ID")),               None),
            E::InvalidQuery         => row(Some((400, "INVALID_QUERY")),            None),
            E::Unauthorized         => row(Some((401, "UNAUTHORIZED")),             None),
            E::InvalidApiKey        => row(Some((401, "INVALID_API_KEY")),          None),
            E::MerchantInactive     => row(Some((403, "MERCHANT_INACTIVE")),        None),
            E::InvalidSignature     => row(Some((401, "INVALID_SIGNATURE")),        Some((401, legacy::INVALID_SIGNATURE))),
            E::InvalidRsaSignature  => row(None,                                    Some((401, legacy::INVALID_X_SIGNATURE))),
            E::PublicKeyNotSet      => row(None,                                    Some((422, legacy::PUBLIC_KEY_NOT_SET))),
            E::RequestTimeout       => row(Some((408, "REQUEST_TIMEOUT")),          None),
            E::PayloadTooLarge      => row(Some((413, "PAYLOAD_TOO_LARGE")),        Some((413, legacy::BODY_TOO_LARGE))),
            E::NotFound             => row(Some((404, "NOT_FOUND")),                Some((404, legacy::NOT_FOUND))),
            E::MethodNotAllowed     => row(Some((405, "METHOD_NOT_ALLOWED")),       Some((405, legacy::METHOD_NOT_ALLOWED))),
            E::RateLimited          => row(Some((429, "RATE_LIMITED")),             Some((429, legacy::TOO_MANY_REQUESTS))),
            E::Internal             => row(Some(INTERNAL_V1),                       Some(INTERNAL_LEGACY)),
            E::Unavailable          => row(Some((503, "UNAVAILABLE")),              Some((503, legacy::SERVICE_UNAVAILABLE))),
            E::Timeout              => row(Some((503, "TIMEOUT")),                  Some((503, legacy::SERVICE_UNAVAILABLE))),
            E::MerchantNotFound     => row(Some((404, "MERCHANT_NOT_FOUND")),       Some((401, legacy::INVALID_CLIENT_ID))),
            E::NotWalletMerchant    => row(Some((403, "NOT_WALLET_MERCHANT")),      Some((422, legacy::MERCHANT_SETTING_INVALID))),
            E::BankNotFound         => row(Some((400, "BANK_NOT_FOUND")),           Some((422, legacy::BANK_NOT_USABLE))),
            E::EwalletNotFound      => row(Some((400, "EWALLET_NOT_FOUND")),        Some((400, legacy::INVALID_EWALLET_CODE))),
            E::EwalletPathNotFound  => row(Some((404, "EWALLET_NOT_FOUND")),        None),
            E::BankDisabled         => row(Some((422, "BANK_DISABLED")),            Some((422, legacy::BANK_NOT_USABLE))),
            E::EwalletDisabled      => row(Some((422, "EWALLET_DISABLED")),         Some((400, legacy::INVALID_EWALLET_CODE))),
            E::MissingBankInfo      => row(Some((400, "MISSING_BANK_INFO")),        Some((400, legacy::INVALID_PARAMETERS))),
            E::MissingEwalletInfo   => row(Some((400, "MISSING_EWALLET_INFO")),     Some((400, legacy::INVALID_PARAMETERS))),
            E::InsufficientBalance  => row(Some((422, "INSUFFICIENT_BALANCE")),     Some((422, legacy::INSUFFICIENT_BALANCE))),
            E::DuplicateIdempotencyKey => row(Some((409, "DUPLICATE_IDEMPOTENCY_KEY")), Some((409, legacy::ORDER_ID_USED))),
            E::IdempotencyKeyReused => row(Some((422, "IDEMPOTENCY_KEY_REUSED")),   None),
            E::DuplicateOrder       => row(Some((409, "DUPLICATE_ORDER")),          Some((409, legacy::ORDER_ID_USED))),
            E::AmountExceedsLimit   => row(Some((422, "AMOUNT_EXCEEDS_LIMIT")),     Some((422, legacy::MAXIMUM_EXCEEDED))),
            E::DailyLimitExceeded   => row(Some((422, "DAILY_LIMIT_EXCEEDED")),     Some((422, legacy::DAILY_LIMIT_EXCEEDED))),
            E::AmountBelowMinimum   => row(Some((422, "AMOUNT_BELOW_MINIMUM")),     Some((422, legacy::DANA_MINIMUM))),
            E::InvalidStatus        => row(Some((422, "INVALID_STATUS")),           None),
            E::StatusConflict       => row(Some((409, "STATUS_CONFLICT")),          None),
            E::NoVendor             => row(Some((503, "NO_VENDOR")),                Some((422, legacy::MERCHANT_SETTING_INVALID))),
            E::VendorError          => row(Some((503, "VENDOR_ERROR")),             Some((503, legacy::GATEWAY_ERROR))),
            E::OrderNotFound        => row(Some((404, "ORDER_NOT_FOUND")),          Some((404, legacy::ORDER_ID_NOT_FOUND))),
            E::RefundNotFound       => row(Some((404, "REFUND_NOT_FOUND")),         None),
            E::DisbursementNotFound => row(Some((404, "DISBURSEMENT_NOT_FOUND")),   Some((404, legacy::ORDER_ID_NOT_FOUND))),
            E::BeneficiaryNotFound  => row(Some((404, "BENEFICIARY_NOT_FOUND")),    None),
            E::EventNotFound        => row(Some((404, "EVENT_NOT_FOUND")),          None),
            E::AmountExceedsOrder   => row(Some((422, "AMOUNT_EXCEEDS_ORDER")),     None),
            E::RefundNotSupported   => row(Some((422, "REFUND_NOT_SUPPORTED")),     None),
            E::NoNotifyUrl          => row(Some((422, "NO_NOTIFY_URL")),            None),
            E::EmailTaken           => row(Some((409, "EMAIL_TAKEN")),              None),
        };
        row
    }

    /// Every kind, in declaration order.
    pub fn all() -> &'static [ErrorKind] {
        <ErrorKind as strum::VariantArray>::VARIANTS
    }
}

/// An answer's status as `http`'s type.
pub(crate) fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn every_status_in_the_table_is_an_error_status() {
        for kind in ErrorKind::all() {
            let row = kind.row();
            for (status, _) in row.v1.iter().chain(row.legacy.iter()) {
                let parsed = StatusCode::from_u16(*status).expect("a valid status");
                assert!(
                    parsed.is_client_error() || parsed.is_server_error(),
                    "{kind:?}: {status} is not an error status"
                );
            }
        }
    }

    #[test]
    fn every_kind_is_answered_by_at_least_one_api() {
        for kind in ErrorKind::all() {
            let row = kind.row();
            assert!(row.v1.is_some() || row.legacy.is_some(), "{kind:?} has no answer");
        }
    }

    #[test]
    fn a_v1_code_has_one_status_but_ewallet_not_found() {
        // EWALLET_NOT_FOUND is the one code answered with two statuses: 400
        // for a code in a body, 404 for one in an admin path.
        let mut statuses: HashMap<&str, Vec<u16>> = HashMap::new();
        for kind in ErrorKind::all() {
            if let Some((status, code)) = kind.row().v1 {
                let seen = statuses.entry(code).or_default();
                if !seen.contains(&status) {
                    seen.push(status);
                }
            }
        }
        let several: Vec<_> = statuses.iter().filter(|(_, seen)| seen.len() > 1).collect();
        assert_eq!(several, vec![(&"EWALLET_NOT_FOUND", &vec![400, 404])]);
    }

    #[test]
    fn a_legacy_message_is_answered_with_one_status() {
        let mut statuses: HashMap<&str, u16> = HashMap::new();
        for kind in ErrorKind::all() {
            if let Some((status, message)) = kind.row().legacy {
                let first = *statuses.entry(message).or_insert(status);
                assert_eq!(first, status, "{kind:?}: {message:?} with two statuses");
            }
        }
    }
}
