//! Vendors: who moves the money outside paygate. Payment vendors
//! (`payment`) collect orders' money and refund it; payout vendors
//! (`payout`) pay disbursements out. Each kind has the in-process sandbox
//! vendor and an HTTP vendor speaking the signed protocol of `http`.

mod http;
pub mod payment;
pub mod payout;

pub use payout::{
    AccountCheck, HttpPayoutVendor, Inquiry, PayoutReport, PayoutStatus, PayoutVendor, SandboxPayoutVendor, Submission,
    SANDBOX_FAILING_ACCOUNT, VENDOR_FAILED_REASON,
};
