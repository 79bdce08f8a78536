//! Disbursements: money paid out of a WALLET merchant's wallet to a bank or
//! e-wallet account, and their lifecycle (one transition table: `lifecycle`).

use crate::money::MinorUnits;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

pub mod lifecycle;

/// Where the money goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Channel {
    /// A bank account.
    #[serde(rename = "BANK")]
    Bank,
    /// An e-wallet account (a phone number).
    #[serde(rename = "EWALLET")]
    Ewallet,
}

impl Channel {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Bank => "BANK",
            Channel::Ewallet => "EWALLET",
        }
    }

    /// The channel of a wire name.
    pub fn parse(name: &str) -> Option<Channel> {
        match name {
            "BANK" => Some(Channel::Bank),
            "EWALLET" => Some(Channel::Ewallet),
            _ => None,
        }
    }
}

/// Disbursement statuses; which leads to which is `lifecycle`'s table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DisbursementStatus {
    /// Created, wallet debited.
    #[serde(rename = "PENDING")]
    Pending,
    /// At or above the review threshold: waits for an operator.
    #[serde(rename = "IN_REVIEW")]
    InReview,
    /// Handed to the payout vendor.
    #[serde(rename = "ON_PROCESS")]
    OnProcess,
    /// Delivered.
    #[serde(rename = "SUCCESS")]
    Success,
    /// The transfer failed; the full amount went back to the wallet.
    #[serde(rename = "FAILED")]
    Failed,
    /// An operator refused it; the full amount went back to the wallet.
    #[serde(rename = "REJECTED")]
    Rejected,
}

impl DisbursementStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DisbursementStatus::Pending => "PENDING",
            DisbursementStatus::InReview => "IN_REVIEW",
            DisbursementStatus::OnProcess => "ON_PROCESS",
            DisbursementStatus::Success => "SUCCESS",
            DisbursementStatus::Failed => "FAILED",
            DisbursementStatus::Rejected => "REJECTED",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<DisbursementStatus> {
        [
            DisbursementStatus::Pending,
            DisbursementStatus::InReview,
            DisbursementStatus::OnProcess,
            DisbursementStatus::Success,
            DisbursementStatus::Failed,
            DisbursementStatus::Rejected,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }

    /// No transition leaves these.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            DisbursementStatus::Success | DisbursementStatus::Failed | DisbursementStatus::Rejected
        )
    }

    /// These gave the money back.
    pub fn is_reversed(self) -> bool {
        matches!(self, DisbursementStatus::Failed | DisbursementStatus::Rejected)
    }
}

/// Which API created it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Source {
    /// V1.
    #[serde(rename = "API")]
    Api,
    /// Legacy.
    #[serde(rename = "LEGACY")]
    Legacy,
}

/// A destination account, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// A bank account.
    Bank {
        /// Catalog short code.
        bank_short_code: String,
        /// Catalog id.
        bank_id: Uuid,
        /// Account number.
        account_number: String,
        /// Holder's name.
        account_name: String,
    },
    /// An e-wallet account.
    Ewallet {
        /// E-wallet code.
        provider: String,
        /// Normalized phone, `628...`.
        phone: String,
    },
}

impl Destination {
    /// The channel of this destination.
    pub fn channel(&self) -> Channel {
        match self {
            Destination::Bank { .. } => Channel::Bank,
            Destination::Ewallet { .. } => Channel::Ewallet,
        }
    }

    /// The account the sandbox vendor looks at: the account number or phone.
    pub fn account(&self) -> &str {
        match self {
            Destination::Bank { account_number, .. } => account_number,
            Destination::Ewallet { phone, .. } => phone,
        }
    }
}

/// A validated request to pay out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisbursementRequest {
    /// Moves money at most once per merchant.
    pub idempotency_key: String,
    /// Where to; the disbursement made of it shares it.
    pub destination: Arc<Destination>,
    /// Excluding the fee.
    pub request_amount: MinorUnits,
    /// Status webhook URL.
    pub notify_url: Option<String>,
    /// V1 or Legacy.
    pub source: Source,
    /// The saved beneficiary it came from.
    pub beneficiary_id: Option<Uuid>,
}

super::changes::resource_with_changes! {
    /// A disbursement as stored.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Disbursement {
        /// Id.
        fixed id: Uuid,
        /// `DSB-yymmddHHMMSS-XXXX`.
        fixed ref_code: String,
        /// Owner.
        fixed merchant_id: Uuid,
        /// The merchant's idempotency key.
        fixed idempotency_key: String,
        /// Where to; shared by its versions, as it never changes.
        fixed destination: Arc<Destination>,
        /// Excluding the fee.
        fixed request_amount: MinorUnits,
        /// The fee.
        fixed fee: MinorUnits,
        /// `request_amount + fee`: what the wallet was debited.
        fixed final_amount: MinorUnits,
        /// The payout vendor's reference once handed over.
        changing vendor_disbursement_id: Option<String>,
        /// The payout vendor it was handed to, or is being handed to: set
        /// durably before the request leaves, so after a crash paygate asks that
        /// vendor what became of it instead of sending it again blindly.
        changing payout_vendor: Option<String>,
        /// When it became ON_PROCESS, Unix ms: the inquiry schedule counts from it.
        changing on_process_at_ms: Option<i64>,
        /// V1 or Legacy.
        fixed source: Source,
        /// Where it is in its lifecycle.
        changing status: DisbursementStatus,
        /// Status webhook URL.
        fixed notify_url: Option<String>,
        /// The saved beneficiary it came from.
        fixed beneficiary_id: Option<Uuid>,
        /// Why it failed or was rejected.
        changing failure_reason: Option<String>,
        /// The ledger entry that debited the wallet.
        fixed debit_seq: u64,
        /// The ledger entry that gave the money back, if any.
        changing reversal_seq: Option<u64>,
        /// The WIB calendar day of creation, as days since 1970-01-01 (daily limit).
        fixed wib_day: i64,
        /// Creation, Unix ms.
        fixed created_at_ms: i64,
        /// Last change, Unix ms.
        changing updated_at_ms: i64,
    }

    /// The fields of a disbursement that change over its life.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct DisbursementChanges;
}

/// Seconds WIB (UTC+7) is ahead of UTC.
pub const WIB_OFFSET_SECONDS: i64 = 7 * 3600;

/// The WIB calendar day of a Unix-ms instant, as days since 1970-01-01.
pub fn wib_day(unix_ms: i64) -> i64 {
    (unix_ms.div_euclid(1000) + WIB_OFFSET_SECONDS).div_euclid(86_400)
}

/// Strip spaces, `-`, `(`, `)`; `+62…`/`0…`/`8…` become `62…`.
pub fn normalize_phone(raw: &str) -> String {
    let digits: String = raw.chars().filter(|c| !matches!(c, ' ' | '-' | '(' | ')')).collect();
    if let Some(rest) = digits.strip_prefix("+62") {
        format!("62{rest}")
    } else if let Some(rest) = digits.strip_prefix('0') {
        format!("62{rest}")
    } else if digits.starts_with('8') {
        format!("62{digits}")
    } else {
        digits
    }
}

/// `^628[1-35-9][0-9]{7,10}$` on a normalized phone (an e-wallet account).
pub fn is_valid_ewallet_phone(phone: &str) -> bool {
    let bytes = phone.as_bytes();
    // "628", one prefix digit, then 7 to 10 digits: 11 to 14 in all.
    (11..=14).contains(&bytes.len())
        && phone.starts_with("628")
        && matches!(bytes[3], b'1'..=b'3' | b'5'..=b'9')
        && bytes[4..].iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phones_normalize_to_62() {
        assert_eq!(normalize_phone("+62 812-3456-7890"), "6281234567890");
        assert_eq!(normalize_phone("0812 3456 7890"), "6281234567890");
        assert_eq!(normalize_phone("(812) 3456-7890"), "6281234567890");
        assert_eq!(normalize_phone("6281234567890"), "6281234567890");
    }

    #[test]
    fn ewallet_phones_follow_the_pattern() {
        assert!(is_valid_ewallet_phone("6281234567890"));
        assert!(is_valid_ewallet_phone("628123456789"));
        assert!(!is_valid_ewallet_phone("6284123456789"), "4 is not a mobile prefix");
        assert!(!is_valid_ewallet_phone("62812345"), "too short");
        assert!(!is_valid_ewallet_phone("62812345678901234"), "too long");
        assert!(
            is_valid_ewallet_phone("62812345678"),
            "the shortest: 7 digits after 628x"
        );
        assert!(
            is_valid_ewallet_phone("62812345678901"),
            "the longest: 10 digits after 628x"
        );
        assert!(!is_valid_ewallet_phone("6281234567"), "6 digits after 628x");
        assert!(!is_valid_ewallet_phone("628123456789012"), "11 digits after 628x");
        assert!(!is_valid_ewallet_phone("628123456789x"));
    }

    #[test]
    fn wib_days_turn_at_17_utc() {
        let before = chrono::DateTime::parse_from_rfc3339("2026-11-21T16:59:59Z")
            .unwrap()
            .timestamp_millis();
        let after = chrono::DateTime::parse_from_rfc3339("2026-11-21T17:00:00Z")
            .unwrap()
            .timestamp_millis();
        assert_eq!(wib_day(after) - wib_day(before), 1);
    }
}
