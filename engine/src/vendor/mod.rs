//! Payout vendors: where disbursements are sent. The sandbox vendor settles
//! by itself after a delay; account `0000000000` always fails.

use crate::domain::{Disbursement, DisbursementStatus};
use std::time::Duration;

/// What a vendor said when a disbursement was handed to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The vendor's reference.
    pub vendor_disbursement_id: String,
    /// For vendors that settle on their own schedule (the sandbox): when and how.
    pub settles: Option<(Duration, DisbursementStatus)>,
}

/// A payout vendor.
pub trait PayoutVendor: Send + Sync + 'static {
    /// Hands a disbursement over; `Err` is the vendor refusing it outright.
    fn submit(&self, disbursement: &Disbursement) -> Result<Submission, String>;
}

/// The account number (or phone) the sandbox always fails.
pub const SANDBOX_FAILING_ACCOUNT: &str = "0000000000";

/// The in-process sandbox vendor.
pub struct SandboxPayoutVendor {
    /// How long a disbursement stays ON_PROCESS.
    pub delay: Duration,
}

impl PayoutVendor for SandboxPayoutVendor {
    fn submit(&self, disbursement: &Disbursement) -> Result<Submission, String> {
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
}
