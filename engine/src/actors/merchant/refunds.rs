//! The merchant actor's side of refunds: a refund and its order change in
//! one journal record, with the refund's entry when it moves money.

use super::orders::OrderOutcome;
use super::MerchantState;
use crate::domain::{EventResource, Order, OrderStatus, Refund, RefundStatus, SettlementType, WebhookEvent};
use crate::error::EngineError;
use crate::ledger::{
    reversal_idempotency_key, Account, Entry, EntryKind, EntryProposal, EntryResource, LedgerError, Posting,
    ResourceKind,
};
use crate::money::MinorUnits;
use crate::store::record::JournalRecord;
use uuid::Uuid;

impl MerchantState {
    pub(super) fn accept_refund(
        &mut self,
        id: Uuid,
        vendor_refund_id: String,
        now_ms: i64,
    ) -> Result<(OrderOutcome, Option<JournalRecord>), EngineError> {
        let mut refund = self.refund(id)?;
        if refund.status != RefundStatus::Pending {
            return Err(EngineError::InvalidStatus(refund.status.as_str().into()));
        }
        let order = self.order(refund.order_id)?;
        refund.vendor_refund_id = Some(vendor_refund_id);
        refund.updated_at_ms = now_ms;
        // No status change: no event, no money.
        Ok(self.refund_saved(order, refund, None, Vec::new()))
    }

    pub(super) fn create_refund(
        &mut self,
        mut refund: Refund,
    ) -> Result<(OrderOutcome, Option<JournalRecord>), EngineError> {
        if let Some(existing) = self.refund_by_key(&refund.idempotency_key)? {
            return Err(EngineError::DuplicateRefund(Box::new(existing)));
        }
        let mut order = self.order(refund.order_id)?;
        if !matches!(order.status, OrderStatus::Paid | OrderStatus::PartiallyRefunded) {
            return Err(EngineError::InvalidStatus(order.status.as_str().into()));
        }
        if refund.amount.get() > order.refundable().get() {
            return Err(EngineError::AmountExceedsOrder);
        }
        let refunded = order
            .refunded_amount
            .checked_add(refund.amount)
            .ok_or(LedgerError::Overflow)?;
        let mut entry = None;
        if self.profile.settlement_type == SettlementType::Wallet {
            let posted = self.record_refund_move(&refund, RefundMove::Debit)?;
            refund.debit_seq = Some(posted.seq);
            entry = Some(posted);
        }
        let before = order.status;
        order.refunded_amount = refunded;
        order.status = order.status_for_refunded(refunded);
        order.updated_at_ms = refund.created_at_ms;
        // A new refund sends nothing; the order's status change does.
        let events = if order.status != before {
            vec![self.order_event(&order)]
        } else {
            Vec::new()
        };
        Ok(self.refund_saved(order, refund, entry, events))
    }

    pub(super) fn settle_refund(
        &mut self,
        id: Uuid,
        outcome: RefundStatus,
        vendor_refund_id: Option<String>,
        reason: Option<String>,
        now_ms: i64,
    ) -> Result<(OrderOutcome, Option<JournalRecord>), EngineError> {
        let mut refund = self.refund(id)?;
        if refund.status != RefundStatus::Pending || outcome == RefundStatus::Pending {
            return Err(EngineError::InvalidStatus(refund.status.as_str().into()));
        }
        let mut order = self.order(refund.order_id)?;
        let before = order.status;
        refund.status = outcome;
        refund.updated_at_ms = now_ms;
        if vendor_refund_id.is_some() {
            refund.vendor_refund_id = vendor_refund_id;
        }
        let mut entry = None;
        if outcome == RefundStatus::Failed {
            refund.failure_reason = reason.or_else(|| Some("the vendor could not refund".into()));
            if let Some(debit_seq) = refund.debit_seq {
                let posted = self.record_refund_move(&refund, RefundMove::Reverse(debit_seq))?;
                refund.reversal_seq = Some(posted.seq);
                entry = Some(posted);
            } else if let Some(settlement_id) = refund.settlement_id {
                // MANUAL, and a settlement already deducted it: the refund
                // waits for the next settlement to give it back (a negative
                // part of its refund total), as an unsettled refund waits to
                // be deducted.
                let posted = self.record_refund_move(&refund, RefundMove::ReturnToSettlement(settlement_id))?;
                refund.reversal_seq = Some(posted.seq);
                refund.settlement_id = None;
                entry = Some(posted);
            }
            // The order's refunded amount holds this refund's, so it cannot go below zero.
            let refunded = order
                .refunded_amount
                .checked_sub(refund.amount)
                .filter(|left| !left.is_negative())
                .unwrap_or(MinorUnits::ZERO);
            order.refunded_amount = refunded;
            if order.status.was_paid() {
                order.status = order.status_for_refunded(refunded);
            }
            order.updated_at_ms = now_ms;
        }
        let mut events = vec![self.refund_event(&refund, &order)];
        if order.status != before {
            events.push(self.order_event(&order));
        }
        Ok(self.refund_saved(order, refund, entry, events))
    }

    /// A refund and its order as they now are: kept, and journaled in one
    /// record with the refund's entry, if it moved money, and `events`.
    fn refund_saved(
        &mut self,
        order: Order,
        refund: Refund,
        entry: Option<Entry>,
        events: Vec<WebhookEvent>,
    ) -> (OrderOutcome, Option<JournalRecord>) {
        self.remember_order(order.clone());
        self.remember_refund(refund.clone());
        let record = JournalRecord::RefundSaved {
            order: Box::new(order.clone()),
            refund: Box::new(refund.clone()),
            entry,
        };
        let record = JournalRecord::with_events(record, events);
        (OrderOutcome::Refund(Box::new((order, refund))), Some(record))
    }

    /// Posts the entry of `how` for `refund`, one of its amount; returns it
    /// for the refund's journal record.
    fn record_refund_move(&mut self, refund: &Refund, how: RefundMove) -> Result<Entry, LedgerError> {
        let (id, amount) = (refund.id, refund.amount);
        let (kind, idempotency_key, memo, posting, reverses) = match how {
            RefundMove::Debit => (
                EntryKind::Refund,
                format!("refund:{id}"),
                format!("refund {id} of order {}", refund.order_ref_code),
                Posting::debit(Account::Wallet, amount),
                None,
            ),
            RefundMove::Reverse(debit_seq) => (
                EntryKind::Reversal,
                reversal_idempotency_key(debit_seq),
                format!("refund {id} failed"),
                Posting::credit(Account::Wallet, amount),
                Some(debit_seq),
            ),
            RefundMove::ReturnToSettlement(settlement_id) => (
                EntryKind::Refund,
                format!("refund-returned:{id}"),
                format!("refund {id} failed after settlement {settlement_id}"),
                Posting::credit(Account::PendingSettlement, amount),
                None,
            ),
        };
        let proposal = EntryProposal {
            kind,
            idempotency_key: Some(idempotency_key),
            memo,
            // Each move is one account against refund clearing.
            postings: vec![posting, posting.balanced_by(Account::RefundClearing)],
            reverses,
            resource: Some(refund_resource(refund)),
        };
        let (posted, _) = self.record_entry(proposal)?;
        Ok(Entry::clone(&posted))
    }

    /// The event of a refund's new status; refunds notify their order's URL.
    fn refund_event(&self, refund: &Refund, order: &Order) -> WebhookEvent {
        let url = self.notify_url(order);
        let resource = EventResource::Refund(Box::new(refund.clone()));
        WebhookEvent::new(refund.merchant_id, refund.updated_at_ms, url, resource)
    }

    fn refund(&self, id: Uuid) -> Result<Refund, EngineError> {
        let held = self.orders.refunds.get(&id).map(Box::as_ref);
        self.held_or_stored(held, || self.args.store.refund(&id), |refund| refund.merchant_id)?
            .ok_or(EngineError::RefundNotFound)
    }

    fn refund_by_key(&self, key: &str) -> Result<Option<Refund>, EngineError> {
        let hash = self.args.store.key_hash(key);
        if let Some(refund) = self
            .orders
            .refunds_by_key
            .get(&hash)
            .and_then(|id| self.orders.refunds.get(id))
        {
            if refund.idempotency_key == key {
                return Ok(Some(Refund::clone(refund)));
            }
        }
        Ok(self.args.store.refund_by_key(&self.args.merchant_id, key)?)
    }

    pub(super) fn remember_refund(&mut self, refund: Refund) {
        let hash = self.args.store.key_hash(&refund.idempotency_key);
        self.orders.refunds_by_key.insert(hash, refund.id);
        self.orders.refunds.insert(refund.id, Box::new(refund));
    }
}

/// The ways a refund moves money, each one entry of its amount.
enum RefundMove {
    /// A WALLET merchant's wallet pays the refund.
    Debit,
    /// A failed refund's debit (this entry) goes back to the wallet.
    Reverse(u64),
    /// A failed refund of a MANUAL merchant that this settlement already
    /// deducted: its amount goes back to pending settlement.
    ReturnToSettlement(Uuid),
}

/// A refund as its entries name it: its own id, its order's reference code.
fn refund_resource(refund: &Refund) -> EntryResource {
    EntryResource {
        kind: ResourceKind::Refund,
        id: refund.id,
        ref_code: refund.order_ref_code.clone(),
    }
}
