//! Saved beneficiaries: destinations a merchant pays often,
//! verified by an account inquiry at the payout vendor.

use crate::domain::disbursement::Destination;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Where verification stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VerificationStatus {
    /// Not yet asked.
    #[serde(rename = "PENDING")]
    Pending,
    /// The vendor confirmed the account and its holder's name.
    #[serde(rename = "VERIFIED")]
    Verified,
    /// The vendor could not confirm the account.
    #[serde(rename = "FAILED")]
    Failed,
}

impl VerificationStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            VerificationStatus::Pending => "PENDING",
            VerificationStatus::Verified => "VERIFIED",
            VerificationStatus::Failed => "FAILED",
        }
    }
}

/// A saved beneficiary as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Beneficiary {
    /// Id.
    pub id: Uuid,
    /// The merchant's organization.
    pub organization_id: Uuid,
    /// Owner.
    pub merchant_id: Uuid,
    /// Friendly name.
    pub label: Option<String>,
    /// The account; for banks the name is optional here.
    pub destination: Destination,
    /// Result of the account inquiry.
    pub verification_status: VerificationStatus,
    /// The holder's name as the vendor reported it.
    pub verified_name: Option<String>,
    /// The merchant's default beneficiary (at most one).
    pub is_default: bool,
    /// Usable for disbursements.
    pub is_enabled: bool,
    /// Soft delete time, Unix ms: deleted ones are no longer listed or usable.
    pub deleted_at_ms: Option<i64>,
    /// Creation, Unix ms.
    pub created_at_ms: i64,
    /// Last change, Unix ms.
    pub updated_at_ms: i64,
}
