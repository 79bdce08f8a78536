//! What may differ between two versions of one order, refund or
//! disbursement: everything else is fixed when it is created.
//!
//! A webhook event is stored as its resource's id and these fields as they
//! were right after the change; its resource is read back by laying them
//! over any version of the same resource (`with_changes`). That holds only
//! while no other field ever changes after creation, so `changes` and
//! `with_changes` name every field of their struct: a new field does not
//! compile until it is put on one side or the other.

use crate::domain::{Disbursement, DisbursementStatus, FeeSplit, Order, OrderStatus, Refund, RefundStatus};
use crate::money::MinorUnits;
use uuid::Uuid;

/// The fields of a disbursement that change over its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisbursementChanges {
    /// Where it is in its lifecycle.
    pub status: DisbursementStatus,
    /// The payout vendor's reference once handed over.
    pub vendor_disbursement_id: Option<String>,
    /// The payout vendor it was handed to.
    pub payout_vendor: Option<String>,
    /// When it became ON_PROCESS, Unix ms.
    pub on_process_at_ms: Option<i64>,
    /// Why it failed or was rejected.
    pub failure_reason: Option<String>,
    /// The ledger entry that gave the money back, if any.
    pub reversal_seq: Option<u64>,
    /// Last change, Unix ms.
    pub updated_at_ms: i64,
}

impl Disbursement {
    /// Its fields that change over its life, as they are now.
    pub fn changes(&self) -> DisbursementChanges {
        let Disbursement {
            id: _,
            ref_code: _,
            merchant_id: _,
            idempotency_key: _,
            destination: _,
            request_amount: _,
            fee: _,
            final_amount: _,
            vendor_disbursement_id,
            payout_vendor,
            on_process_at_ms,
            source: _,
            status,
            notify_url: _,
            beneficiary_id: _,
            failure_reason,
            debit_seq: _,
            reversal_seq,
            wib_day: _,
            created_at_ms: _,
            updated_at_ms,
        } = self;
        DisbursementChanges {
            status: *status,
            vendor_disbursement_id: vendor_disbursement_id.clone(),
            payout_vendor: payout_vendor.clone(),
            on_process_at_ms: *on_process_at_ms,
            failure_reason: failure_reason.clone(),
            reversal_seq: *reversal_seq,
            updated_at_ms: *updated_at_ms,
        }
    }

    /// This disbursement as it was when its changing fields were `changes`.
    pub fn with_changes(&self, changes: DisbursementChanges) -> Disbursement {
        let DisbursementChanges {
            status,
            vendor_disbursement_id,
            payout_vendor,
            on_process_at_ms,
            failure_reason,
            reversal_seq,
            updated_at_ms,
        } = changes;
        Disbursement {
            id: self.id,
            ref_code: self.ref_code.clone(),
            merchant_id: self.merchant_id,
            idempotency_key: self.idempotency_key.clone(),
            destination: self.destination.clone(),
            request_amount: self.request_amount,
            fee: self.fee,
            final_amount: self.final_amount,
            vendor_disbursement_id,
            payout_vendor,
            on_process_at_ms,
            source: self.source,
            status,
            notify_url: self.notify_url.clone(),
            beneficiary_id: self.beneficiary_id,
            failure_reason,
            debit_seq: self.debit_seq,
            reversal_seq,
            wib_day: self.wib_day,
            created_at_ms: self.created_at_ms,
            updated_at_ms,
        }
    }

    /// The disbursement as its creation answered it: every disbursement is
    /// created PENDING, not yet handed to a vendor, so a replay of the key
    /// that made it (a batch's) answers exactly that, whatever happened since.
    pub fn as_created(&self) -> Disbursement {
        self.with_changes(DisbursementChanges {
            status: DisbursementStatus::Pending,
            vendor_disbursement_id: None,
            payout_vendor: None,
            on_process_at_ms: None,
            failure_reason: None,
            reversal_seq: None,
            updated_at_ms: self.created_at_ms,
        })
    }
}

/// The fields of an order that change over its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderChanges {
    /// Where it is in its lifecycle.
    pub status: OrderStatus,
    /// Payment confirmation, Unix ms.
    pub paid_at_ms: Option<i64>,
    /// The payment network's retrieval reference.
    pub vendor_rrn: Option<String>,
    /// True once the net reached the wallet or a settlement.
    pub is_settled: bool,
    /// The fees and net of the payment, once paid.
    pub fees: Option<FeeSplit>,
    /// The ledger entry of the payment.
    pub payment_seq: Option<u64>,
    /// Refunds PENDING or SUCCESS.
    pub refunded_amount: MinorUnits,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// The settlement that took its net.
    pub settlement_id: Option<Uuid>,
    /// Last change, Unix ms.
    pub updated_at_ms: i64,
}

impl Order {
    /// Its fields that change over its life, as they are now.
    pub fn changes(&self) -> OrderChanges {
        let Order {
            id: _,
            ref_code: _,
            merchant_id: _,
            merchant_order_id: _,
            source: _,
            payment_method: _,
            amount: _,
            status,
            qris_string: _,
            virtual_account: _,
            vendor: _,
            vendor_reference: _,
            expires_at_ms: _,
            paid_at_ms,
            vendor_rrn,
            is_settled,
            customer_name: _,
            customer_email: _,
            customer_phone: _,
            notify_url: _,
            return_url: _,
            metadata: _,
            fees,
            payment_seq,
            refunded_amount,
            idempotency: _,
            failure_reason,
            settlement_id,
            created_at_ms: _,
            updated_at_ms,
        } = self;
        OrderChanges {
            status: *status,
            paid_at_ms: *paid_at_ms,
            vendor_rrn: vendor_rrn.clone(),
            is_settled: *is_settled,
            fees: *fees,
            payment_seq: *payment_seq,
            refunded_amount: *refunded_amount,
            failure_reason: failure_reason.clone(),
            settlement_id: *settlement_id,
            updated_at_ms: *updated_at_ms,
        }
    }

    /// This order as it was when its changing fields were `changes`.
    pub fn with_changes(&self, changes: OrderChanges) -> Order {
        let OrderChanges {
            status,
            paid_at_ms,
            vendor_rrn,
            is_settled,
            fees,
            payment_seq,
            refunded_amount,
            failure_reason,
            settlement_id,
            updated_at_ms,
        } = changes;
        Order {
            id: self.id,
            ref_code: self.ref_code.clone(),
            merchant_id: self.merchant_id,
            merchant_order_id: self.merchant_order_id.clone(),
            source: self.source,
            payment_method: self.payment_method,
            amount: self.amount,
            status,
            qris_string: self.qris_string.clone(),
            virtual_account: self.virtual_account.clone(),
            vendor: self.vendor.clone(),
            vendor_reference: self.vendor_reference.clone(),
            expires_at_ms: self.expires_at_ms,
            paid_at_ms,
            vendor_rrn,
            is_settled,
            customer_name: self.customer_name.clone(),
            customer_email: self.customer_email.clone(),
            customer_phone: self.customer_phone.clone(),
            notify_url: self.notify_url.clone(),
            return_url: self.return_url.clone(),
            metadata: self.metadata.clone(),
            fees,
            payment_seq,
            refunded_amount,
            idempotency: self.idempotency.clone(),
            failure_reason,
            settlement_id,
            created_at_ms: self.created_at_ms,
            updated_at_ms,
        }
    }

    /// The order as its creation response showed it: replays of an
    /// `Idempotency-Key` answer exactly that.
    pub fn as_created(&self) -> Order {
        self.with_changes(OrderChanges {
            status: OrderStatus::Pending,
            paid_at_ms: None,
            vendor_rrn: None,
            is_settled: false,
            fees: None,
            payment_seq: None,
            refunded_amount: MinorUnits::ZERO,
            failure_reason: None,
            settlement_id: None,
            updated_at_ms: self.created_at_ms,
        })
    }
}

/// The fields of a refund that change over its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundChanges {
    /// Where it is in its lifecycle.
    pub status: RefundStatus,
    /// The vendor's reference.
    pub vendor_refund_id: Option<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// The ledger entry that debited the wallet.
    pub debit_seq: Option<u64>,
    /// The ledger entry that gave the money back, if any.
    pub reversal_seq: Option<u64>,
    /// The settlement that took it.
    pub settlement_id: Option<Uuid>,
    /// Last change, Unix ms.
    pub updated_at_ms: i64,
}

impl Refund {
    /// Its fields that change over its life, as they are now.
    pub fn changes(&self) -> RefundChanges {
        let Refund {
            id: _,
            order_id: _,
            order_ref_code: _,
            merchant_id: _,
            amount: _,
            reason: _,
            reason_detail: _,
            idempotency_key: _,
            status,
            vendor_refund_id,
            failure_reason,
            debit_seq,
            reversal_seq,
            settlement_id,
            created_at_ms: _,
            updated_at_ms,
        } = self;
        RefundChanges {
            status: *status,
            vendor_refund_id: vendor_refund_id.clone(),
            failure_reason: failure_reason.clone(),
            debit_seq: *debit_seq,
            reversal_seq: *reversal_seq,
            settlement_id: *settlement_id,
            updated_at_ms: *updated_at_ms,
        }
    }

    /// This refund as it was when its changing fields were `changes`.
    pub fn with_changes(&self, changes: RefundChanges) -> Refund {
        let RefundChanges {
            status,
            vendor_refund_id,
            failure_reason,
            debit_seq,
            reversal_seq,
            settlement_id,
            updated_at_ms,
        } = changes;
        Refund {
            id: self.id,
            order_id: self.order_id,
            order_ref_code: self.order_ref_code.clone(),
            merchant_id: self.merchant_id,
            amount: self.amount,
            reason: self.reason.clone(),
            reason_detail: self.reason_detail.clone(),
            idempotency_key: self.idempotency_key.clone(),
            status,
            vendor_refund_id,
            failure_reason,
            debit_seq,
            reversal_seq,
            settlement_id,
            created_at_ms: self.created_at_ms,
            updated_at_ms,
        }
    }
}
