//! Payout vendors: where disbursements are paid. The sandbox
//! vendor answers in process and settles by itself after a delay (account
//! `0000000000` always fails); the HTTP vendor speaks the protocol below.
//!
//! HTTP payout protocol (requests and callbacks carry
//! `X-Paygate-Signature: sha256=<hex HMAC-SHA256(secret, raw body)>`; a GET
//! signs the path it requests, the URL's own prefix included):
//! - `POST {url}/payouts` `{payout_id, ref_code, channel, bank_short_code?,
//!   account_number?, account_name?, ewallet_provider?, ewallet_phone?,
//!   amount_minor, currency: "IDR"}`; `payout_id` is the disbursement's id
//!   and the vendor's idempotency key, `amount_minor` the request amount.
//!   2xx `{status: ACCEPTED|SUCCESS|FAILED, reference, failure_reason?}`;
//!   4xx: refused, nothing paid; anything else: outcome unknown.
//! - `GET {url}/payouts/{payout_id}` -> 200 `{status, reference?,
//!   failure_reason?}`, or 404 when the vendor never received it.
//! - `POST {url}/account-inquiries` `{channel, bank_short_code?,
//!   account_number?, ewallet_provider?, ewallet_phone?}` -> 200
//!   `{account_name}`, or 404 when there is no such account.
//! - Callbacks to paygate: `POST /callbacks/{vendor}` `{type: "payout",
//!   payout_id, status: SUCCESS|FAILED, reference?, failure_reason?}`.

use super::http::{NoAnswer, SignedClient};
use crate::domain::catalog::{PaymentVendorConfig, SANDBOX_VENDOR};
use crate::domain::{Destination, Disbursement, DisbursementStatus};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use std::time::Duration;

/// Where a payout stands at the vendor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayoutStatus {
    /// Taken, not yet final.
    Accepted,
    /// Paid.
    Success,
    /// Taken and failed.
    Failed,
}

impl PayoutStatus {
    fn parse(name: &str) -> Option<PayoutStatus> {
        match name {
            "ACCEPTED" => Some(PayoutStatus::Accepted),
            "SUCCESS" => Some(PayoutStatus::Success),
            "FAILED" => Some(PayoutStatus::Failed),
            _ => None,
        }
    }
}

/// What a vendor says of a payout it has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayoutReport {
    /// Where it stands.
    pub status: PayoutStatus,
    /// The vendor's reference.
    pub reference: Option<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// For a vendor that settles on its own schedule (the sandbox): when,
    /// and how. Others tell by callback or inquiry.
    pub settles: Option<(Duration, DisbursementStatus)>,
}

/// The answer to a hand-over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Submission {
    /// The vendor has it.
    Taken(PayoutReport),
    /// The vendor refused it (4xx): it pays nothing.
    Refused(String),
    /// No usable answer (timeout, 5xx, unreadable): it may or may not have it.
    Unknown(String),
}

/// The answer to an inquiry about a payout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inquiry {
    /// The vendor has it.
    Found(PayoutReport),
    /// The vendor never received it (404): only now may it be sent again.
    NeverReceived,
    /// No usable answer.
    Unknown(String),
}

/// The answer to an account inquiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountCheck {
    /// The account exists; its holder's name.
    Holder(String),
    /// No such account.
    NotFound(String),
    /// No usable answer: ask again later.
    Unknown(String),
}

/// A payout vendor. Its calls are asynchronous, so one waiting on the
/// vendor holds up only its caller; callers bound each call by `timeout`.
pub trait PayoutVendor: Send + Sync + 'static {
    /// Its configured name (`sandbox` for the built-in one).
    fn name(&self) -> &str;

    /// True for a vendor outside this process that moves real money: a
    /// hand-over to it is recorded before the request leaves, and after a
    /// doubt it is asked, never sent the payout again without its 404.
    fn pays_out_for_real(&self) -> bool;

    /// How long one call may take.
    fn timeout(&self) -> Duration;

    /// Hands a disbursement over.
    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Submission>;

    /// Asks what became of a disbursement handed over before.
    fn inquire<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Inquiry>;

    /// Asks whether an account exists, and whose it is.
    fn check_account<'a>(&'a self, destination: &'a Destination) -> BoxFuture<'a, AccountCheck>;
}

/// The account number (or phone) the sandbox always fails.
pub const SANDBOX_FAILING_ACCOUNT: &str = "0000000000";

/// The in-process sandbox vendor.
pub struct SandboxPayoutVendor {
    /// How long a disbursement stays ON_PROCESS.
    pub delay: Duration,
}

impl PayoutVendor for SandboxPayoutVendor {
    fn name(&self) -> &str {
        SANDBOX_VENDOR
    }

    fn pays_out_for_real(&self) -> bool {
        false
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Submission> {
        Box::pin(std::future::ready(Submission::Taken(self.report(disbursement))))
    }

    /// The sandbox keeps nothing: it has every payout handed to it, and
    /// settles it `delay` after it is asked.
    fn inquire<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Inquiry> {
        Box::pin(std::future::ready(Inquiry::Found(self.report(disbursement))))
    }

    fn check_account<'a>(&'a self, destination: &'a Destination) -> BoxFuture<'a, AccountCheck> {
        Box::pin(std::future::ready(self.account_holder(destination)))
    }
}

impl SandboxPayoutVendor {
    /// The sandbox's view of a payout: taken, settling after `delay`.
    fn report(&self, disbursement: &Disbursement) -> PayoutReport {
        let outcome = if disbursement.destination.account() == SANDBOX_FAILING_ACCOUNT {
            DisbursementStatus::Failed
        } else {
            DisbursementStatus::Success
        };
        PayoutReport {
            status: PayoutStatus::Accepted,
            reference: Some(sandbox_reference(disbursement.id)),
            failure_reason: None,
            settles: Some((self.delay, outcome)),
        }
    }

    fn account_holder(&self, destination: &Destination) -> AccountCheck {
        let account = destination.account();
        if account == SANDBOX_FAILING_ACCOUNT {
            return AccountCheck::NotFound("account not found".into());
        }
        let last4 = &account[account.len().saturating_sub(4)..];
        AccountCheck::Holder(match destination {
            Destination::Bank { account_name, .. } if !account_name.is_empty() => account_name.to_uppercase(),
            Destination::Bank { bank_short_code, .. } => format!("{bank_short_code} ACCOUNT HOLDER {last4}"),
            Destination::Ewallet { provider, .. } => format!("{provider} USER {last4}"),
        })
    }
}

/// A payout vendor over HTTP.
pub struct HttpPayoutVendor {
    http: SignedClient,
}

/// The longest reference or reason taken from a vendor: it is stored and
/// shown to merchants, so it is checked like input.
const VENDOR_TEXT_CHARS_MAX: usize = 255;

/// Whether a reference or reason a vendor sent (in an answer or a callback)
/// may be stored: absent, or 1 to `VENDOR_TEXT_CHARS_MAX` characters.
pub fn fits_vendor_text(text: &Option<String>) -> bool {
    text.as_ref()
        .is_none_or(|t| !t.is_empty() && t.chars().count() <= VENDOR_TEXT_CHARS_MAX)
}

/// The reason of a vendor-reported failure that gave none.
pub const VENDOR_FAILED_REASON: &str = "the payout vendor reported the transfer failed";

/// The sandbox vendor's reference of a disbursement.
pub fn sandbox_reference(disbursement_id: uuid::Uuid) -> String {
    format!("SBX-{}", disbursement_id.simple())
}

#[derive(Deserialize)]
struct PayoutAnswer {
    status: String,
    reference: Option<String>,
    failure_reason: Option<String>,
}

#[derive(Deserialize)]
struct AccountAnswer {
    account_name: String,
}

impl HttpPayoutVendor {
    /// The vendor of `config` (which must be `VendorKind::Http`), over `client`.
    pub fn new(config: &PaymentVendorConfig, client: reqwest::Client) -> Option<HttpPayoutVendor> {
        SignedClient::new(config, client).map(|http| HttpPayoutVendor { http })
    }

    /// A 2xx answer's report; `None` when it is not one (unreadable, an
    /// unknown status, a text too long, no reference where one is due).
    fn report(&self, body: &[u8], reference_required: bool) -> Option<PayoutReport> {
        let answer: PayoutAnswer = serde_json::from_slice(body).ok()?;
        let status = PayoutStatus::parse(&answer.status)?;
        if !fits_vendor_text(&answer.reference) || !fits_vendor_text(&answer.failure_reason) {
            return None;
        }
        if reference_required && answer.reference.is_none() {
            return None;
        }
        Some(PayoutReport {
            status,
            reference: answer.reference,
            failure_reason: answer.failure_reason,
            settles: None,
        })
    }
}

/// The account fields of a request: those of its channel only.
fn account_fields(destination: &Destination, body: &mut serde_json::Map<String, serde_json::Value>) {
    use serde_json::Value::String as S;
    body.insert("channel".into(), S(destination.channel().as_str().into()));
    match destination {
        Destination::Bank {
            bank_short_code,
            account_number,
            account_name,
            ..
        } => {
            body.insert("bank_short_code".into(), S(bank_short_code.clone()));
            body.insert("account_number".into(), S(account_number.clone()));
            if !account_name.is_empty() {
                body.insert("account_name".into(), S(account_name.clone()));
            }
        }
        Destination::Ewallet { provider, phone } => {
            body.insert("ewallet_provider".into(), S(provider.clone()));
            body.insert("ewallet_phone".into(), S(phone.clone()));
        }
    }
}

impl PayoutVendor for HttpPayoutVendor {
    fn name(&self) -> &str {
        &self.http.name
    }

    fn pays_out_for_real(&self) -> bool {
        true
    }

    fn timeout(&self) -> Duration {
        self.http.timeout()
    }

    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Submission> {
        Box::pin(async move {
            let mut body = serde_json::Map::new();
            body.insert("payout_id".into(), disbursement.id.to_string().into());
            body.insert("ref_code".into(), disbursement.ref_code.clone().into());
            account_fields(&disbursement.destination, &mut body);
            body.insert("amount_minor".into(), disbursement.request_amount.get().into());
            body.insert("currency".into(), "IDR".into());
            let name = &self.http.name;
            match self.http.post("/payouts", &serde_json::Value::Object(body)).await {
                Err(NoAnswer(reason)) => Submission::Unknown(reason),
                Ok((status, _)) if (400..500).contains(&status) => {
                    Submission::Refused(format!("{name}: HTTP {status}"))
                }
                Ok((status, body)) if (200..300).contains(&status) => match self.report(&body, true) {
                    Some(report) => Submission::Taken(report),
                    None => Submission::Unknown(format!("{name}: unusable answer")),
                },
                Ok((status, _)) => Submission::Unknown(format!("{name}: HTTP {status}")),
            }
        })
    }

    fn inquire<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Inquiry> {
        Box::pin(async move {
            let name = &self.http.name;
            match self.http.get(&format!("/payouts/{}", disbursement.id)).await {
                Err(NoAnswer(reason)) => Inquiry::Unknown(reason),
                Ok((404, _)) => Inquiry::NeverReceived,
                Ok((200, body)) => match self.report(&body, false) {
                    Some(report) => Inquiry::Found(report),
                    None => Inquiry::Unknown(format!("{name}: unusable answer")),
                },
                Ok((status, _)) => Inquiry::Unknown(format!("{name}: HTTP {status}")),
            }
        })
    }

    fn check_account<'a>(&'a self, destination: &'a Destination) -> BoxFuture<'a, AccountCheck> {
        Box::pin(async move {
            let mut body = serde_json::Map::new();
            account_fields(destination, &mut body);
            body.remove("account_name");
            let name = &self.http.name;
            match self
                .http
                .post("/account-inquiries", &serde_json::Value::Object(body))
                .await
            {
                Err(NoAnswer(reason)) => AccountCheck::Unknown(reason),
                Ok((404, _)) => AccountCheck::NotFound(format!("{name}: no such account")),
                Ok((200, body)) => match serde_json::from_slice::<AccountAnswer>(&body) {
                    Ok(answer)
                        if !answer.account_name.trim().is_empty()
                            && answer.account_name.chars().count() <= VENDOR_TEXT_CHARS_MAX =>
                    {
                        AccountCheck::Holder(answer.account_name.trim().to_string())
                    }
                    _ => AccountCheck::Unknown(format!("{name}: unusable answer")),
                },
                Ok((status, _)) => AccountCheck::Unknown(format!("{name}: HTTP {status}")),
            }
        })
    }
}
