//! Payment vendors: who collects an order's money and refunds it. The
//! sandbox vendor answers in process; the HTTP vendor POSTs signed JSON to a
//! configured URL and later confirms through signed callbacks
//! (`POST /callbacks/{vendor}`, see `signing::hmac_sha256_header`).
//!
//! HTTP vendor protocol (requests and callbacks carry
//! `X-Paygate-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>`):
//! - `POST {url}/payments` `{ref_code, amount_minor, currency, payment_method,
//!   expires_at}` -> 2xx `{reference, virtual_account?: {bank_short_code,
//!   account_number}}` (the virtual account is required for BANK_TRANSFER);
//! - `POST {url}/refunds` `{refund_id, ref_code, vendor_reference,
//!   amount_minor}` -> 2xx `{reference, status: PENDING|SUCCESS|FAILED}`;
//! - callbacks: `{type: "payment", ref_code, status: PAID|FAILED, vendor_rrn?}`
//!   and `{type: "refund", refund_id, status: SUCCESS|FAILED}`.
//!
//! Anything else (timeout, refused connection, non-2xx, unreadable body) is a
//! failure, and order creation moves on to the next vendor. A 4xx is a
//! refusal; any other failure leaves the outcome unknown, so a refund is
//! sent again with the same `refund_id` (the vendor's key to deduplicate).

use super::http::{NoAnswer, SignedClient};
use crate::domain::catalog::PaymentVendorConfig;
use crate::domain::order::{PaymentMethod, RefundStatus, VirtualAccount};
use crate::money::MinorUnits;
use serde::Deserialize;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use uuid::Uuid;

/// A boxed future, so the trait stays object safe.
pub type VendorFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, VendorError>> + Send + 'a>>;

/// Why a vendor call failed, and whether asking again could help.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VendorError {
    /// What went wrong, for logs and failure reasons.
    pub message: String,
    /// The vendor did not refuse: it timed out, could not be reached,
    /// answered 5xx, or answered something unusable. It may not have seen
    /// the request, or may have done it: the same request (same ids) may be
    /// sent again. False when the vendor refused it (4xx).
    pub retryable: bool,
}

impl VendorError {
    /// A refusal: asking again would get the same answer.
    pub fn refused(message: impl Into<String>) -> VendorError {
        VendorError {
            message: message.into(),
            retryable: false,
        }
    }

    /// A failure whose outcome at the vendor is unknown.
    pub fn uncertain(message: impl Into<String>) -> VendorError {
        VendorError {
            message: message.into(),
            retryable: true,
        }
    }
}

impl std::fmt::Display for VendorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What an order asks of a vendor.
#[derive(Clone, Debug)]
pub struct PaymentRequest {
    /// The order's id.
    pub order_id: Uuid,
    /// The order's ref code.
    pub ref_code: String,
    /// What the customer pays.
    pub amount: MinorUnits,
    /// QRIS or bank transfer.
    pub method: PaymentMethod,
    /// When the order expires, Unix ms.
    pub expires_at_ms: Option<i64>,
}

/// A vendor's acceptance of a payment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentAcceptance {
    /// The vendor's reference.
    pub reference: String,
    /// Bank transfer: where the customer pays.
    pub virtual_account: Option<VirtualAccount>,
}

/// What a refund asks of a vendor.
#[derive(Clone, Debug)]
pub struct RefundRequest {
    /// The refund's id.
    pub refund_id: Uuid,
    /// The order's ref code.
    pub ref_code: String,
    /// The vendor's reference of the payment.
    pub vendor_reference: Option<String>,
    /// How much.
    pub amount: MinorUnits,
}

/// How a vendor took a refund.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundAcceptance {
    /// The vendor's reference.
    pub reference: String,
    /// Settled at once (SUCCESS or FAILED), or PENDING until a callback
    /// or, for the sandbox, `settles_after`.
    pub status: RefundStatus,
    /// Sandbox: the outcome arrives by itself after this long.
    pub settles_after: Option<(Duration, RefundStatus)>,
}

/// A vendor that collects payments and refunds them.
pub trait PaymentVendor: Send + Sync {
    /// Its configured name.
    fn name(&self) -> &str;
    /// Asks the vendor to collect a payment.
    fn create_payment<'a>(&'a self, request: &'a PaymentRequest) -> VendorFuture<'a, PaymentAcceptance>;
    /// Asks the vendor to refund (part of) a payment.
    fn refund<'a>(&'a self, request: &'a RefundRequest) -> VendorFuture<'a, RefundAcceptance>;
}

/// The in-process sandbox vendor: accepts everything; virtual accounts at
/// BCA; refunds succeed after `refund_delay`.
pub struct SandboxPaymentVendor {
    /// How long a refund stays PENDING.
    pub refund_delay: Duration,
}

impl PaymentVendor for SandboxPaymentVendor {
    fn name(&self) -> &str {
        crate::domain::catalog::SANDBOX_VENDOR
    }

    fn create_payment<'a>(&'a self, request: &'a PaymentRequest) -> VendorFuture<'a, PaymentAcceptance> {
        Box::pin(async move {
            let virtual_account = (request.method == PaymentMethod::BankTransfer).then(|| VirtualAccount {
                bank_short_code: "BCA".into(),
                // 8808 (sandbox prefix) and 12 digits from the order id.
                account_number: format!("8808{:012}", request.order_id.as_u128() % 1_000_000_000_000),
            });
            Ok(PaymentAcceptance {
                reference: format!("SBX-PAY-{}", request.order_id.simple()),
                virtual_account,
            })
        })
    }

    fn refund<'a>(&'a self, request: &'a RefundRequest) -> VendorFuture<'a, RefundAcceptance> {
        Box::pin(async move {
            Ok(RefundAcceptance {
                reference: format!("SBX-RFD-{}", request.refund_id.simple()),
                status: RefundStatus::Pending,
                settles_after: Some((self.refund_delay, RefundStatus::Success)),
            })
        })
    }
}

/// A vendor reached over HTTP.
pub struct HttpPaymentVendor {
    http: SignedClient,
}

impl HttpPaymentVendor {
    /// The vendor of `config` (which must be `VendorKind::Http`), over `client`.
    pub fn new(config: &PaymentVendorConfig, client: reqwest::Client) -> Option<HttpPaymentVendor> {
        SignedClient::new(config, client).map(|http| HttpPaymentVendor { http })
    }

    async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> Result<T, VendorError> {
        let name = &self.http.name;
        let (status, body) = self
            .http
            .post(path, &body)
            .await
            .map_err(|NoAnswer(reason)| VendorError::uncertain(reason))?;
        if (400..500).contains(&status) {
            return Err(VendorError::refused(format!("{name}: HTTP {status}")));
        }
        if !(200..300).contains(&status) {
            return Err(VendorError::uncertain(format!("{name}: HTTP {status}")));
        }
        serde_json::from_slice(&body).map_err(|e| VendorError::uncertain(format!("{name}: unreadable answer: {e}")))
    }
}

#[derive(Deserialize)]
struct PaymentAnswer {
    reference: String,
    virtual_account: Option<VirtualAccountAnswer>,
}

#[derive(Deserialize)]
struct VirtualAccountAnswer {
    bank_short_code: String,
    account_number: String,
}

#[derive(Deserialize)]
struct RefundAnswer {
    reference: String,
    status: String,
}

impl PaymentVendor for HttpPaymentVendor {
    fn name(&self) -> &str {
        &self.http.name
    }

    fn create_payment<'a>(&'a self, request: &'a PaymentRequest) -> VendorFuture<'a, PaymentAcceptance> {
        Box::pin(async move {
            let expires_at = request
                .expires_at_ms
                .and_then(chrono::DateTime::<chrono::Utc>::from_timestamp_millis)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
            let body = serde_json::json!({
                "ref_code": request.ref_code,
                "amount_minor": request.amount.get(),
                "currency": "IDR",
                "payment_method": request.method.as_str(),
                "expires_at": expires_at,
            });
            let answer: PaymentAnswer = self.post("/payments", body).await?;
            if answer.reference.is_empty() || answer.reference.len() > 128 {
                return Err(VendorError::uncertain(format!(
                    "{}: unusable payment reference",
                    self.http.name
                )));
            }
            // Stored and shown to payers: a vendor's answer is checked like input.
            if let Some(va) = &answer.virtual_account {
                let usable = |value: &str, max: usize| !value.is_empty() && value.len() <= max;
                if !usable(&va.bank_short_code, 32) || !usable(&va.account_number, 64) {
                    return Err(VendorError::uncertain(format!(
                        "{}: unusable virtual account",
                        self.http.name
                    )));
                }
            }
            let virtual_account = answer.virtual_account.map(|va| VirtualAccount {
                bank_short_code: va.bank_short_code,
                account_number: va.account_number,
            });
            if request.method == PaymentMethod::BankTransfer && virtual_account.is_none() {
                return Err(VendorError::uncertain(format!(
                    "{}: no virtual account for a bank transfer",
                    self.http.name
                )));
            }
            Ok(PaymentAcceptance {
                reference: answer.reference,
                virtual_account,
            })
        })
    }

    fn refund<'a>(&'a self, request: &'a RefundRequest) -> VendorFuture<'a, RefundAcceptance> {
        Box::pin(async move {
            let body = serde_json::json!({
                "refund_id": request.refund_id,
                "ref_code": request.ref_code,
                "vendor_reference": request.vendor_reference,
                "amount_minor": request.amount.get(),
            });
            let answer: RefundAnswer = self.post("/refunds", body).await?;
            if answer.reference.is_empty() || answer.reference.len() > 128 {
                return Err(VendorError::uncertain(format!(
                    "{}: unusable refund reference",
                    self.http.name
                )));
            }
            let status = RefundStatus::parse(&answer.status).ok_or_else(|| {
                VendorError::uncertain(format!("{}: unknown refund status {}", self.http.name, answer.status))
            })?;
            Ok(RefundAcceptance {
                reference: answer.reference,
                status,
                settles_after: None,
            })
        })
    }
}
