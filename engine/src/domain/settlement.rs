//! Settlements: what a MANUAL merchant's paid orders, less fees and refunds,
//! pay into its bank account.

use crate::domain::merchant::SettlementBank;
use crate::money::MinorUnits;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Settlement statuses (how they move: `can_become`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SettlementStatus {
    /// Created, awaiting the transfer.
    #[serde(rename = "PENDING")]
    Pending,
    /// Being transferred.
    #[serde(rename = "PROCESSING")]
    Processing,
    /// Transferred to the bank.
    #[serde(rename = "PAID")]
    Paid,
    /// The transfer failed; the amount carries into the next settlement.
    #[serde(rename = "FAILED")]
    Failed,
    /// Not paid: a net that does not cover the transfer fee, carried into
    /// the next settlement.
    #[serde(rename = "CANCELLED")]
    Cancelled,
}

impl SettlementStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SettlementStatus::Pending => "PENDING",
            SettlementStatus::Processing => "PROCESSING",
            SettlementStatus::Paid => "PAID",
            SettlementStatus::Failed => "FAILED",
            SettlementStatus::Cancelled => "CANCELLED",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<SettlementStatus> {
        [
            SettlementStatus::Pending,
            SettlementStatus::Processing,
            SettlementStatus::Paid,
            SettlementStatus::Failed,
            SettlementStatus::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }

    /// No transition leaves these.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SettlementStatus::Paid | SettlementStatus::Failed | SettlementStatus::Cancelled
        )
    }

    /// PENDING -> PROCESSING -> PAID | FAILED; PENDING -> CANCELLED.
    pub fn can_become(self, next: SettlementStatus) -> bool {
        use SettlementStatus::*;
        matches!(
            (self, next),
            (Pending, Processing) | (Pending, Cancelled) | (Processing, Paid) | (Processing, Failed)
        )
    }
}

/// A settlement as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    /// Id.
    pub id: Uuid,
    /// `STL-yymmdd-NNNNN`.
    pub ref_code: String,
    /// Whose.
    pub merchant_id: Uuid,
    /// `YYYY-MM-DD` (WIB): the day the period ends in.
    pub settlement_date: String,
    /// Period covered, Unix ms.
    pub period_start_ms: i64,
    /// Orders paid before this are in it, Unix ms.
    pub period_end_ms: i64,
    /// Sum of the orders' amounts.
    pub gross_amount: MinorUnits,
    /// Sum of their MDR.
    pub mdr_total: MinorUnits,
    /// Sum of their platform fees.
    pub platform_fee: MinorUnits,
    /// Sum of their aggregator fees.
    pub aggregator_fee: MinorUnits,
    /// Refunds created since the last settlement.
    pub refund_total: MinorUnits,
    /// The payout transfer's fee (zero when nothing is paid out).
    pub disbursement_fee: MinorUnits,
    /// Carried in from earlier settlements: a negative net, or a failed transfer.
    pub carried_over: MinorUnits,
    /// gross - mdr - platform fee - aggregator fee - refunds - fee + carried over.
    pub net_payout: MinorUnits,
    /// How many orders.
    pub order_count: u64,
    /// The destination bank's catalog id, when the catalog knows its code.
    pub bank_id: Option<Uuid>,
    /// Where it is paid: the merchant's settlement bank account when it was
    /// made, if the merchant had one.
    pub destination: Option<SettlementBank>,
    /// Where it is.
    pub status: SettlementStatus,
    /// Why it failed or was not paid.
    pub failure_reason: Option<String>,
    /// What this settlement hands to the next: its net when not paid, its
    /// transfer (net + fee) when the transfer failed.
    pub carry_out: MinorUnits,
    /// The ledger entry that took the money.
    pub entry_seq: Option<u64>,
    /// The reversal after a failed transfer.
    pub reversal_seq: Option<u64>,
    /// Creation, Unix ms.
    pub created_at_ms: i64,
    /// Last change, Unix ms.
    pub updated_at_ms: i64,
}
