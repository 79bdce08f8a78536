//! Orders (payments taken by QRIS or bank transfer) and their refunds, with
//! their lifecycles and the fee split of a paid order.

use crate::domain::{Fees, Source};
use crate::money::MinorUnits;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How the customer pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PaymentMethod {
    /// A dynamic QRIS code.
    #[serde(rename = "QRIS")]
    Qris,
    /// A virtual account number at a bank.
    #[serde(rename = "BANK_TRANSFER")]
    BankTransfer,
}

impl PaymentMethod {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentMethod::Qris => "QRIS",
            PaymentMethod::BankTransfer => "BANK_TRANSFER",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<PaymentMethod> {
        match name {
            "QRIS" => Some(PaymentMethod::Qris),
            "BANK_TRANSFER" => Some(PaymentMethod::BankTransfer),
            _ => None,
        }
    }

    /// Both methods.
    pub const ALL: [PaymentMethod; 2] = [PaymentMethod::Qris, PaymentMethod::BankTransfer];
}

/// Order statuses: PENDING becomes PAID, EXPIRED or FAILED; a paid order
/// becomes PARTIALLY_REFUNDED or REFUNDED as refunds count against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OrderStatus {
    /// Awaiting payment.
    #[serde(rename = "PENDING")]
    Pending,
    /// Paid; money posted.
    #[serde(rename = "PAID")]
    Paid,
    /// Some of it refunded (refunds PENDING or SUCCESS).
    #[serde(rename = "PARTIALLY_REFUNDED")]
    PartiallyRefunded,
    /// All of it refunded.
    #[serde(rename = "REFUNDED")]
    Refunded,
    /// Not paid in time.
    #[serde(rename = "EXPIRED")]
    Expired,
    /// The vendor reported the payment failed.
    #[serde(rename = "FAILED")]
    Failed,
}

impl OrderStatus {
    /// The V1 wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Pending => "PENDING",
            OrderStatus::Paid => "PAID",
            OrderStatus::PartiallyRefunded => "PARTIALLY_REFUNDED",
            OrderStatus::Refunded => "REFUNDED",
            OrderStatus::Expired => "EXPIRED",
            OrderStatus::Failed => "FAILED",
        }
    }

    /// The Legacy view: expired and failed show as FAILED,
    /// refunded ones as PAID.
    pub fn legacy_str(self) -> &'static str {
        match self {
            OrderStatus::Pending => "PENDING",
            OrderStatus::Paid | OrderStatus::PartiallyRefunded | OrderStatus::Refunded => "PAID",
            OrderStatus::Expired | OrderStatus::Failed => "FAILED",
        }
    }

    /// Parses a V1 wire name.
    pub fn parse(name: &str) -> Option<OrderStatus> {
        [
            OrderStatus::Pending,
            OrderStatus::Paid,
            OrderStatus::PartiallyRefunded,
            OrderStatus::Refunded,
            OrderStatus::Expired,
            OrderStatus::Failed,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }

    /// Paid at some point (money was posted).
    pub fn was_paid(self) -> bool {
        matches!(
            self,
            OrderStatus::Paid | OrderStatus::PartiallyRefunded | OrderStatus::Refunded
        )
    }
}

/// Refund statuses: PENDING becomes SUCCESS or FAILED.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RefundStatus {
    /// Sent to the vendor; counts against the refundable amount.
    #[serde(rename = "PENDING")]
    Pending,
    /// The customer got the money back.
    #[serde(rename = "SUCCESS")]
    Success,
    /// The vendor could not refund; the amount is refundable again.
    #[serde(rename = "FAILED")]
    Failed,
}

impl RefundStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RefundStatus::Pending => "PENDING",
            RefundStatus::Success => "SUCCESS",
            RefundStatus::Failed => "FAILED",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<RefundStatus> {
        [RefundStatus::Pending, RefundStatus::Success, RefundStatus::Failed]
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}

/// A bank transfer order's virtual account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualAccount {
    /// The bank that holds it.
    pub bank_short_code: String,
    /// The number the customer pays into.
    pub account_number: String,
}

/// What the merchant earns from a paid order and what the platform keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeeSplit {
    /// MDR (percentage for QRIS, flat for bank transfer).
    pub mdr: MinorUnits,
    /// Platform fee.
    pub platform_fee: MinorUnits,
    /// Aggregator fee.
    pub aggregator_fee: MinorUnits,
    /// What the merchant gets: amount minus the three fees.
    pub net: MinorUnits,
}

impl FeeSplit {
    /// QRIS MDR in basis points rounded half up to a minor
    /// unit, bank transfer MDR flat. Fees never take more than the amount:
    /// each is capped by what the ones before it left.
    pub fn of(amount: MinorUnits, method: PaymentMethod, fees: &Fees) -> FeeSplit {
        let amount = amount.get().max(0);
        let mdr = match method {
            PaymentMethod::Qris => {
                let scaled = amount as i128 * fees.qris_mdr_bps.max(0) as i128;
                ((scaled + 5_000) / 10_000) as i64
            }
            PaymentMethod::BankTransfer => fees.bank_transfer_mdr_minor.max(0),
        };
        let mdr = mdr.min(amount);
        let platform_fee = fees.platform_fee_minor.max(0).min(amount - mdr);
        let aggregator_fee = fees.aggregator_fee_minor.max(0).min(amount - mdr - platform_fee);
        FeeSplit {
            mdr: MinorUnits::new(mdr),
            platform_fee: MinorUnits::new(platform_fee),
            aggregator_fee: MinorUnits::new(aggregator_fee),
            net: MinorUnits::new(amount - mdr - platform_fee - aggregator_fee),
        }
    }
}

super::changes::resource_with_changes! {
    /// An order as stored.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Order {
        /// Id.
        fixed id: Uuid,
        /// `ORD-yymmddHHMMSS-XXXX`.
        fixed ref_code: String,
        /// Owner.
        fixed merchant_id: Uuid,
        /// The merchant's own id for it, unique per merchant and API.
        fixed merchant_order_id: String,
        /// V1 or Legacy: the same id string in both APIs names two orders.
        fixed source: Source,
        /// QRIS or bank transfer.
        fixed payment_method: PaymentMethod,
        /// What the customer pays.
        fixed amount: MinorUnits,
        /// Where it is in its lifecycle.
        changing status: OrderStatus,
        /// QRIS orders: the code to show.
        fixed qris_string: Option<String>,
        /// Bank transfer orders: where to pay.
        fixed virtual_account: Option<VirtualAccount>,
        /// The vendor that took it (its name), and its reference.
        fixed vendor: String,
        /// The vendor's own reference for the payment.
        fixed vendor_reference: Option<String>,
        /// Expiry, Unix ms.
        fixed expires_at_ms: Option<i64>,
        /// Payment confirmation, Unix ms.
        changing paid_at_ms: Option<i64>,
        /// The payment network's retrieval reference.
        changing vendor_rrn: Option<String>,
        /// True once the net reached the wallet or a settlement.
        changing is_settled: bool,
        /// Customer details.
        fixed customer_name: Option<String>,
        /// Customer details.
        fixed customer_email: Option<String>,
        /// Normalized `62…`.
        fixed customer_phone: Option<String>,
        /// Status webhooks go here, else to the merchant's default.
        fixed notify_url: Option<String>,
        /// Where the customer returns after paying.
        fixed return_url: Option<String>,
        /// The merchant's JSON object, kept as the exact text it sent.
        fixed metadata: Option<String>,
        /// The fees and net of the payment, once paid.
        changing fees: Option<FeeSplit>,
        /// The ledger entry of the payment.
        changing payment_seq: Option<u64>,
        /// Refunds PENDING or SUCCESS.
        changing refunded_amount: MinorUnits,
        /// `Idempotency-Key` it was created with, and the SHA-256 of that request's body.
        fixed idempotency: Option<(String, [u8; 32])>,
        /// Why it failed.
        changing failure_reason: Option<String>,
        /// The settlement that took its net (MANUAL merchants).
        changing settlement_id: Option<Uuid>,
        /// Creation, Unix ms.
        fixed created_at_ms: i64,
        /// Last change, Unix ms.
        changing updated_at_ms: i64,
    }

    /// The fields of an order that change over its life.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct OrderChanges;
}

impl Order {
    /// What may still be refunded: never more than the amount, as refunds
    /// are never more than what was left.
    pub fn refundable(&self) -> MinorUnits {
        self.amount
            .checked_sub(self.refunded_amount)
            .unwrap_or(MinorUnits::ZERO)
    }

    /// The status a paid order has with `refunded` of it refunded.
    pub fn status_for_refunded(&self, refunded: MinorUnits) -> OrderStatus {
        if refunded.get() <= 0 {
            OrderStatus::Paid
        } else if refunded.get() >= self.amount.get() {
            OrderStatus::Refunded
        } else {
            OrderStatus::PartiallyRefunded
        }
    }
}

super::changes::resource_with_changes! {
    /// A refund as stored.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Refund {
        /// Id.
        fixed id: Uuid,
        /// The refunded order.
        fixed order_id: Uuid,
        /// Its ref code.
        fixed order_ref_code: String,
        /// Owner.
        fixed merchant_id: Uuid,
        /// How much.
        fixed amount: MinorUnits,
        /// Reason category (`CUSTOMER_REQUEST`, ...).
        fixed reason: String,
        /// Free text.
        fixed reason_detail: Option<String>,
        /// Moves money at most once per merchant.
        fixed idempotency_key: String,
        /// Where it is.
        changing status: RefundStatus,
        /// The vendor's reference.
        changing vendor_refund_id: Option<String>,
        /// Why it failed.
        changing failure_reason: Option<String>,
        /// The wallet debit (WALLET merchants).
        changing debit_seq: Option<u64>,
        /// The credit back after a failure.
        changing reversal_seq: Option<u64>,
        /// MANUAL merchants: the settlement that deducted it.
        changing settlement_id: Option<Uuid>,
        /// Creation, Unix ms.
        fixed created_at_ms: i64,
        /// Last change, Unix ms.
        changing updated_at_ms: i64,
    }

    /// The fields of a refund that change over its life.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct RefundChanges;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fees(bps: i64, flat: i64, platform: i64, aggregator: i64) -> Fees {
        Fees {
            qris_mdr_bps: bps,
            bank_transfer_mdr_minor: flat,
            platform_fee_minor: platform,
            aggregator_fee_minor: aggregator,
            ..Fees::default()
        }
    }

    #[test]
    fn qris_mdr_rounds_half_up() {
        // 0.7% of IDR 100,000 = IDR 700.
        let split = FeeSplit::of(MinorUnits::new(10_000_000), PaymentMethod::Qris, &fees(70, 0, 0, 0));
        assert_eq!(split.mdr, MinorUnits::new(70_000));
        assert_eq!(split.net, MinorUnits::new(9_930_000));
        // 0.7% of 150 minor = 1.05 -> 1; of 250 = 1.75 -> 2; of 5000/70... half: 0.7% of 500 = 3.5 -> 4.
        assert_eq!(
            FeeSplit::of(MinorUnits::new(150), PaymentMethod::Qris, &fees(70, 0, 0, 0))
                .mdr
                .get(),
            1
        );
        assert_eq!(
            FeeSplit::of(MinorUnits::new(250), PaymentMethod::Qris, &fees(70, 0, 0, 0))
                .mdr
                .get(),
            2
        );
        assert_eq!(
            FeeSplit::of(MinorUnits::new(500), PaymentMethod::Qris, &fees(70, 0, 0, 0))
                .mdr
                .get(),
            4
        );
    }

    #[test]
    fn fees_never_exceed_the_amount() {
        let split = FeeSplit::of(
            MinorUnits::new(100_000),
            PaymentMethod::BankTransfer,
            &fees(0, 400_000, 50, 50),
        );
        assert_eq!(split.mdr.get(), 100_000);
        assert_eq!(split.platform_fee.get(), 0);
        assert_eq!(split.net.get(), 0);
        let split = FeeSplit::of(
            MinorUnits::new(1_000_000),
            PaymentMethod::BankTransfer,
            &fees(0, 400_000, 1_000, 2_000),
        );
        assert_eq!(split.net.get(), 1_000_000 - 400_000 - 1_000 - 2_000);
    }
}
