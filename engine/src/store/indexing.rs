//! What each versioned kind's resources are indexed under, in one place:
//! the entry the recent index and the runs take (`Indexed`: id, merchant,
//! the listing it is in, creation time) and the hashes of its ref code and
//! lookups (`Hashes`), in the order its `KindSpec` declares them. Used when
//! a version is applied and when an older data dir's records are moved
//! into blocks.

use super::history::{Hashes, Indexed};
use super::stored::StoredEvent;
use super::Store;
use crate::domain::{Beneficiary, Disbursement, DisbursementBatch, Order, Refund, Settlement, WebhookAttempt};
use uuid::Uuid;

/// A version listed under its merchant, not final.
fn listed_by_merchant(id: Uuid, merchant_id: Uuid, created_ms: i64, new: bool) -> Indexed {
    Indexed {
        id,
        merchant_id,
        listed_under: merchant_id,
        created_ms,
        new,
        terminal: false,
    }
}

/// A disbursement: final ones leave the open set.
pub(super) fn disbursement_indexed(disbursement: &Disbursement, new: bool) -> Indexed {
    Indexed {
        terminal: disbursement.status.is_terminal(),
        ..listed_by_merchant(
            disbursement.id,
            disbursement.merchant_id,
            disbursement.created_at_ms,
            new,
        )
    }
}

/// An order (`new`: its creation record, or as far as is known).
pub(super) fn order_indexed(order: &Order, new: bool) -> Indexed {
    listed_by_merchant(order.id, order.merchant_id, order.created_at_ms, new)
}

/// A refund, listed under its order. New to the index with every version
/// (a refund's first version is not always PENDING); one already indexed
/// only writes the same entries again, which merges fold into one.
pub(super) fn refund_indexed(refund: &Refund) -> Indexed {
    Indexed {
        listed_under: refund.order_id,
        ..listed_by_merchant(refund.id, refund.merchant_id, refund.created_at_ms, true)
    }
}

/// A settlement (`new`: its creation record).
pub(super) fn settlement_indexed(settlement: &Settlement, new: bool) -> Indexed {
    listed_by_merchant(settlement.id, settlement.merchant_id, settlement.created_at_ms, new)
}

/// A beneficiary: every version is saved alike, so each counts as new.
pub(super) fn beneficiary_indexed(beneficiary: &Beneficiary) -> Indexed {
    listed_by_merchant(beneficiary.id, beneficiary.merchant_id, beneficiary.created_at_ms, true)
}

/// A batch (written once).
pub(super) fn batch_indexed(batch: &DisbursementBatch) -> Indexed {
    listed_by_merchant(batch.id, batch.merchant_id, batch.created_at_ms, true)
}

/// A webhook event: found by id only, so nothing is new to the index.
pub(super) fn event_indexed(event: &StoredEvent) -> Indexed {
    listed_by_merchant(event.id, event.merchant_id, event.occurred_at_ms, false)
}

/// A delivery attempt under the id drawn for it, listed by its time.
pub(super) fn attempt_indexed(id: Uuid, attempt: &WebhookAttempt) -> Indexed {
    Indexed {
        terminal: true,
        ..listed_by_merchant(id, attempt.merchant_id, attempt.attempted_at_ms, true)
    }
}

impl Store {
    /// What a disbursement is found by: its ref code, and its idempotency key.
    pub(super) fn disbursement_hashes(&self, disbursement: &Disbursement) -> Hashes {
        (
            Some(self.key_hash(&disbursement.ref_code)),
            [Some(self.key_hash(&disbursement.idempotency_key)), None],
        )
    }

    /// What an order is found by: its ref code, its `Idempotency-Key` if it
    /// had one, and the merchant's own id for it in its API.
    pub(super) fn order_hashes(&self, order: &Order) -> Hashes {
        (
            Some(self.key_hash(&order.ref_code)),
            [
                order.idempotency.as_ref().map(|(key, _)| self.key_hash(key)),
                Some(self.order_id_hash(order.source, &order.merchant_order_id)),
            ],
        )
    }

    /// What a refund is found by: its merchant's idempotency key.
    pub(super) fn refund_hashes(&self, refund: &Refund) -> Hashes {
        (None, [Some(self.key_hash(&refund.idempotency_key)), None])
    }

    /// What a settlement is found by: its ref code.
    pub(super) fn settlement_hashes(&self, settlement: &Settlement) -> Hashes {
        (Some(self.key_hash(&settlement.ref_code)), [None, None])
    }

    /// What a batch is found by: its merchant's batch key.
    pub(super) fn batch_hashes(&self, batch: &DisbursementBatch) -> Hashes {
        (None, [Some(self.key_hash(&batch.idempotency_key)), None])
    }
}
