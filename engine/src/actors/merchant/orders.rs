//! The merchant actor's side of orders: it is the only writer of an
//! order's record, so uniqueness checks and the payment's entry happen in
//! one place, each in one journal record (refunds: `refunds.rs`).

use super::MerchantState;
use crate::domain::{
    EventResource, FeeSplit, Order, OrderStatus, Refund, RefundStatus, SettlementType, Source, WebhookEvent,
};
use crate::error::EngineError;
use crate::ledger::{Account, EntryKind, EntryProposal, EntryResource, LedgerError, Posting, ResourceKind};
use crate::store::record::JournalRecord;
use crate::store::StoreError;
use foldhash::HashMap;
use uuid::Uuid;

/// What a merchant actor is asked to do with an order.
#[derive(Clone, Debug)]
pub enum OrderCommand {
    /// Would this order be created? (Asked before any vendor is.)
    Check(Box<Order>),
    /// Record a new order (its vendor already accepted it).
    Create(Box<Order>),
    /// The payment was confirmed: PAID, and the net is posted.
    Pay {
        /// Which order.
        id: Uuid,
        /// The payment network's reference.
        vendor_rrn: Option<String>,
    },
    /// PENDING to EXPIRED: when due, or at once when `force` (sandbox).
    Expire {
        /// Which order.
        id: Uuid,
        /// Expire even before `expires_at`.
        force: bool,
    },
    /// PENDING to FAILED.
    Fail {
        /// Which order.
        id: Uuid,
        /// Why.
        reason: String,
    },
    /// A new refund of a paid order; WALLET merchants are debited now.
    CreateRefund(Box<Refund>),
    /// Settle everything not yet settled (MANUAL merchants).
    Settle(Box<super::settlements::SettlementDraft>),
    /// Move a settlement along its lifecycle.
    MoveSettlement {
        /// Which.
        id: Uuid,
        /// To what.
        to: crate::domain::SettlementStatus,
        /// Why, for FAILED.
        reason: Option<String>,
    },
    /// The vendor took a PENDING refund and will call back: its reference
    /// is kept, so a restart waits for the callback instead of asking again.
    RefundAccepted {
        /// Which refund.
        id: Uuid,
        /// The vendor's reference.
        vendor_refund_id: String,
    },
    /// The vendor's outcome of a PENDING refund; a failure gives the money back.
    SettleRefund {
        /// Which refund.
        id: Uuid,
        /// SUCCESS or FAILED.
        outcome: RefundStatus,
        /// The vendor's reference, if it gave one.
        vendor_refund_id: Option<String>,
        /// Why it failed.
        reason: Option<String>,
    },
}

/// What an order command produced.
#[derive(Clone, Debug)]
pub enum OrderOutcome {
    /// A new or changed order.
    Order(Order),
    /// An `Idempotency-Key` replay: the order as first created, nothing written.
    Replayed(Order),
    /// A new or changed refund, with its order.
    Refund(Box<(Order, Refund)>),
    /// A new or changed settlement; none when there was nothing to settle.
    Settled(Option<Box<crate::domain::Settlement>>),
}

/// Orders and refunds written lately, authoritative while their records may
/// still be in flight (storage catches up once applied).
#[derive(Default)]
pub(super) struct RecentOrders {
    /// Boxed: an `Order` is about 600 bytes, and a map's empty slots are
    /// as large as its values.
    orders: HashMap<Uuid, Box<Order>>,
    by_merchant_order_id: HashMap<(Source, String), Uuid>,
    by_idempotency_key: HashMap<u128, Uuid>,
    pub(super) refunds: HashMap<Uuid, Box<Refund>>,
    pub(super) refunds_by_key: HashMap<u128, Uuid>,
}

impl RecentOrders {
    /// How many there are (see `MerchantState::forget_what_storage_has`).
    pub(super) fn len(&self) -> usize {
        self.orders.len() + self.refunds.len()
    }

    /// Forgets them all (see `forget_all`).
    pub(super) fn clear(&mut self) {
        super::forget_all(&mut self.orders);
        super::forget_all(&mut self.by_merchant_order_id);
        super::forget_all(&mut self.by_idempotency_key);
        super::forget_all(&mut self.refunds);
        super::forget_all(&mut self.refunds_by_key);
    }
}

impl MerchantState {
    /// Validates an order command against memory and storage and applies its
    /// money to the book; returns the outcome and the record to journal.
    pub(super) fn order_command(
        &mut self,
        command: OrderCommand,
    ) -> Result<(OrderOutcome, Option<JournalRecord>), EngineError> {
        let now_ms = self.args.clock.now().timestamp_millis();
        match command {
            OrderCommand::Check(order) => {
                // The checks of Create without the write: answered from memory
                // for keys never seen, so the early check costs no storage read.
                match self.order_creation_conflict(&order)? {
                    Some(replay) => Ok((replay, None)),
                    None => Ok((OrderOutcome::Order(*order), None)),
                }
            }
            OrderCommand::Create(order) => {
                if let Some(replay) = self.order_creation_conflict(&order)? {
                    return Ok((replay, None));
                }
                self.remember_order((*order).clone());
                Ok((
                    OrderOutcome::Order((*order).clone()),
                    Some(JournalRecord::OrderCreated(order)),
                ))
            }
            OrderCommand::Pay { id, vendor_rrn } => {
                let mut order = self.pending_order(id)?;
                let split = FeeSplit::of(order.amount, order.payment_method, &self.profile.fees);
                let wallet = self.profile.settlement_type == SettlementType::Wallet;
                let mut postings = vec![Posting::debit(Account::VendorClearing, order.amount)];
                let merchant_account = if wallet {
                    Account::Wallet
                } else {
                    Account::PendingSettlement
                };
                for (account, amount) in [
                    (merchant_account, split.net),
                    (Account::MdrRevenue, split.mdr),
                    (Account::PlatformFeeRevenue, split.platform_fee),
                    (Account::AggregatorFeeRevenue, split.aggregator_fee),
                ] {
                    if amount.is_positive() {
                        postings.push(Posting::credit(account, amount));
                    }
                }
                let proposal = EntryProposal {
                    kind: EntryKind::OrderPayment,
                    resource: Some(EntryResource {
                        kind: ResourceKind::Order,
                        id: order.id,
                        ref_code: order.ref_code.clone(),
                    }),
                    // One payment entry per order, whatever asks twice.
                    idempotency_key: Some(format!("order-payment:{id}")),
                    memo: format!("order {} paid", order.ref_code),
                    postings,
                    reverses: None,
                };
                let (entry, _) = self.record_entry(proposal).map_err(|error| match error {
                    LedgerError::DuplicateIdempotencyKey(_) => {
                        EngineError::InvalidStatus(OrderStatus::Paid.as_str().into())
                    }
                    other => other.into(),
                })?;
                order.status = OrderStatus::Paid;
                order.paid_at_ms = Some(now_ms);
                order.vendor_rrn = vendor_rrn.or_else(|| Some(sandbox_rrn(&order)));
                order.is_settled = wallet;
                order.fees = Some(split);
                order.payment_seq = Some(entry.seq);
                order.updated_at_ms = now_ms;
                self.remember_order(order.clone());
                let record = JournalRecord::OrderPaid {
                    order: Box::new(order.clone()),
                    entry: (*entry).clone(),
                };
                let events = vec![self.order_event(&order)];
                Ok((
                    OrderOutcome::Order(order),
                    Some(JournalRecord::with_events(record, events)),
                ))
            }
            OrderCommand::Expire { id, force } => {
                let mut order = self.pending_order(id)?;
                if !force && order.expires_at_ms.is_none_or(|at| at > now_ms) {
                    return Err(EngineError::InvalidStatus(order.status.as_str().into()));
                }
                order.status = OrderStatus::Expired;
                order.updated_at_ms = now_ms;
                Ok(self.order_updated(order))
            }
            OrderCommand::Fail { id, reason } => {
                let mut order = self.pending_order(id)?;
                order.status = OrderStatus::Failed;
                order.failure_reason = Some(reason);
                order.updated_at_ms = now_ms;
                Ok(self.order_updated(order))
            }
            OrderCommand::CreateRefund(refund) => self.create_refund(*refund),
            OrderCommand::Settle(draft) => self
                .settle(*draft)
                .map(|(settlement, record)| (OrderOutcome::Settled(settlement), record)),
            OrderCommand::MoveSettlement { id, to, reason } => self
                .move_settlement(id, to, reason)
                .map(|(settlement, record)| (OrderOutcome::Settled(settlement), record)),
            OrderCommand::SettleRefund {
                id,
                outcome,
                vendor_refund_id,
                reason,
            } => self.settle_refund(id, outcome, vendor_refund_id, reason, now_ms),
            OrderCommand::RefundAccepted { id, vendor_refund_id } => self.accept_refund(id, vendor_refund_id, now_ms),
        }
    }

    /// An order whose status changed, without money: kept, and journaled
    /// with the event of its new status.
    fn order_updated(&mut self, order: Order) -> (OrderOutcome, Option<JournalRecord>) {
        self.remember_order(order.clone());
        let events = vec![self.order_event(&order)];
        let record = JournalRecord::OrderUpdated(Box::new(order.clone()));
        (
            OrderOutcome::Order(order),
            Some(JournalRecord::with_events(record, events)),
        )
    }

    /// Why an order may not be created: a replay of its `Idempotency-Key`
    /// (same body: the first answer), or an error (key reused with another
    /// body, duplicate merchant order id).
    fn order_creation_conflict(&self, order: &Order) -> Result<Option<OrderOutcome>, EngineError> {
        if let Some((key, body_hash)) = &order.idempotency {
            if let Some(existing) = self.order_by_idempotency_key(key)? {
                let same_body = existing.idempotency.as_ref().is_some_and(|(_, h)| h == body_hash);
                if !same_body {
                    return Err(EngineError::IdempotencyKeyReused);
                }
                return Ok(Some(OrderOutcome::Replayed(existing.as_created())));
            }
        }
        if let Some(existing) = self.order_by_merchant_order_id(order.source, &order.merchant_order_id)? {
            return Err(EngineError::DuplicateOrder(Box::new(existing)));
        }
        Ok(None)
    }

    /// The event of an order's new status, for its notify URL or the merchant's default.
    pub(super) fn order_event(&self, order: &Order) -> WebhookEvent {
        let url = self.notify_url(order);
        WebhookEvent::new(
            order.merchant_id,
            order.updated_at_ms,
            url,
            EventResource::Order(Box::new(order.clone())),
        )
    }

    /// Where an order's events go: its notify URL, else the merchant's default.
    pub(super) fn notify_url(&self, order: &Order) -> Option<String> {
        order
            .notify_url
            .clone()
            .or_else(|| self.profile.default_notify_url.clone())
    }

    pub(super) fn order(&self, id: Uuid) -> Result<Order, EngineError> {
        let held = self.orders.orders.get(&id).map(Box::as_ref);
        self.held_or_stored(held, || self.args.store.order(&id), |order| order.merchant_id)?
            .ok_or(EngineError::OrderNotFound)
    }

    fn pending_order(&self, id: Uuid) -> Result<Order, EngineError> {
        let order = self.order(id)?;
        if order.status != OrderStatus::Pending {
            return Err(EngineError::InvalidStatus(order.status.as_str().into()));
        }
        Ok(order)
    }

    /// A record by id: the actor's own copy (`held`), else what `stored`
    /// reads if it is this merchant's (`merchant_of`).
    pub(super) fn held_or_stored<T: Clone>(
        &self,
        held: Option<&T>,
        stored: impl FnOnce() -> Result<Option<T>, StoreError>,
        merchant_of: impl Fn(&T) -> Uuid,
    ) -> Result<Option<T>, EngineError> {
        if let Some(record) = held {
            return Ok(Some(T::clone(record)));
        }
        Ok(stored()?.filter(|record| merchant_of(record) == self.args.merchant_id))
    }

    fn order_by_idempotency_key(&self, key: &str) -> Result<Option<Order>, EngineError> {
        let hash = self.args.store.key_hash(key);
        if let Some(order) = self
            .orders
            .by_idempotency_key
            .get(&hash)
            .and_then(|id| self.orders.orders.get(id))
        {
            if order.idempotency.as_ref().is_some_and(|(k, _)| k == key) {
                return Ok(Some(Order::clone(order)));
            }
        }
        if !self.known_order_keys.may_contain(hash) {
            return Ok(None);
        }
        Ok(self.args.store.order_by_idempotency_key(&self.args.merchant_id, key)?)
    }

    fn order_by_merchant_order_id(
        &self,
        source: Source,
        merchant_order_id: &str,
    ) -> Result<Option<Order>, EngineError> {
        let key = (source, merchant_order_id.to_string());
        if let Some(order) = self
            .orders
            .by_merchant_order_id
            .get(&key)
            .and_then(|id| self.orders.orders.get(id))
        {
            return Ok(Some(Order::clone(order)));
        }
        if !self
            .known_order_ids
            .may_contain(self.args.store.order_id_hash(source, merchant_order_id))
        {
            return Ok(None);
        }
        Ok(self
            .args
            .store
            .order_by_merchant_order_id(&self.args.merchant_id, source, merchant_order_id)?)
    }

    pub(super) fn remember_order(&mut self, order: Order) {
        self.known_order_ids
            .insert(self.args.store.order_id_hash(order.source, &order.merchant_order_id));
        let recent = &mut self.orders;
        recent
            .by_merchant_order_id
            .insert((order.source, order.merchant_order_id.clone()), order.id);
        if let Some((key, _)) = &order.idempotency {
            let hash = self.args.store.key_hash(key);
            recent.by_idempotency_key.insert(hash, order.id);
            self.known_order_keys.insert(hash);
        }
        recent.orders.insert(order.id, Box::new(order));
    }
}

/// The sandbox's retrieval reference when the confirmation names none: 12
/// digits, stable per order.
fn sandbox_rrn(order: &Order) -> String {
    format!("{:012}", order.id.as_u128() % 1_000_000_000_000)
}
