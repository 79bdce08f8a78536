//! Vendors. Payout vendors: where disbursements are sent; the sandbox one
//! settles by itself after a delay, and account `0000000000` always fails.
//! Payment vendors (`payment`): who collects orders' money and refunds it.

pub mod payment;

use crate::domain::{Destination, Disbursement, DisbursementStatus};
use futures_util::future::BoxFuture;
use std::time::Duration;

/// What a vendor said when a disbursement was handed to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The vendor's reference.
    pub vendor_disbursement_id: String,
    /// For vendors that settle on their own schedule (the sandbox): when and how.
    pub settles: Option<(Duration, DisbursementStatus)>,
}

/// A payout vendor. Its calls are asynchronous: one that waits on the
/// vendor holds up only its caller (one merchant's hand-off round), never a
/// runtime worker, of which there are only as many as cores.
pub trait PayoutVendor: Send + Sync + 'static {
    /// Hands a disbursement over; `Err` is the vendor refusing it outright.
    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Result<Submission, String>>;

    /// Account inquiry: the holder's name, or why the account cannot be confirmed.
    fn inquire<'a>(&'a self, destination: &'a Destination) -> BoxFuture<'a, Result<String, String>>;
}

/// The account number (or phone) the sandbox always fails.
pub const SANDBOX_FAILING_ACCOUNT: &str = "0000000000";

/// The in-process sandbox vendor.
pub struct SandboxPayoutVendor {
    /// How long a disbursement stays ON_PROCESS.
    pub delay: Duration,
}

impl PayoutVendor for SandboxPayoutVendor {
    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Result<Submission, String>> {
        Box::pin(std::future::ready(self.submission(disbursement)))
    }

    fn inquire<'a>(&'a self, destination: &'a Destination) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(std::future::ready(self.account_holder(destination)))
    }
}

impl SandboxPayoutVendor {
    /// The sandbox's answer to a hand-over, given at once.
    fn submission(&self, disbursement: &Disbursement) -> Result<Submission, String> {
        let outcome = if disbursement.destination.account() == SANDBOX_FAILING_ACCOUNT {
            DisbursementStatus::Failed
        } else {
            DisbursementStatus::Success
        };
        Ok(Submission {
            vendor_disbursement_id: format!("SBX-{}", disbursement.id.simple()),
            settles: Some((self.delay, outcome)),
        })
    }

    /// The sandbox's answer to an account inquiry, given at once.
    fn account_holder(&self, destination: &Destination) -> Result<String, String> {
        let account = destination.account();
        if account == SANDBOX_FAILING_ACCOUNT {
            return Err("account not found".into());
        }
        let last4 = &account[account.len().saturating_sub(4)..];
        Ok(match destination {
            Destination::Bank { account_name, .. } if !account_name.is_empty() => account_name.to_uppercase(),
            Destination::Bank { bank_short_code, .. } => format!("{bank_short_code} ACCOUNT HOLDER {last4}"),
            Destination::Ewallet { provider, .. } => format!("{provider} USER {last4}"),
        })
    }
}
