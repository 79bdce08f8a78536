//! Order and refund reads: orders by id, ref code, merchant order id and
//! idempotency key (versions in blocks, `history::ORDERS`), listings, the
//! expiry sweep; refunds by id and key, an order's, and the open ones.

use crate::domain::{Order, Refund, Source};
use crate::store::history::Kind;
use crate::store::keys::{prefix_range, prefixed, KeyPrefix};
use crate::store::{Store, StoreError};
use uuid::Uuid;

/// The orders' lookups, as `history::ORDERS` declares them.
const ORDER_KEY_LOOKUP: usize = 0;
const ORDER_ID_LOOKUP: usize = 1;
/// The refunds' lookup, as `history::REFUNDS` declares it.
const REFUND_KEY_LOOKUP: usize = 0;

/// Which of a merchant's order keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderLookup {
    /// `Idempotency-Key`s (`Store::key_hash`).
    IdempotencyKey,
    /// Their own order ids in one API (`Store::order_id_hash`).
    OrderId,
}

impl Store {
    /// An order by id: the overlay's newest version, else the block the
    /// index points to.
    pub fn order(&self, id: &Uuid) -> Result<Option<Order>, StoreError> {
        self.newest_version(Kind::Orders, id)
    }

    /// An order by ref code.
    pub fn order_by_ref(&self, ref_code: &str) -> Result<Option<Order>, StoreError> {
        match self.id_by_ref(Kind::Orders, ref_code)? {
            Some(id) => Ok(self.order(&id)?.filter(|o| o.ref_code == ref_code)),
            None => Ok(None),
        }
    }

    /// True when an order ref code is taken (or shares its 128-bit hash with one that is).
    pub fn order_ref_exists(&self, ref_code: &str) -> Result<bool, StoreError> {
        Ok(self.id_by_ref(Kind::Orders, ref_code)?.is_some())
    }

    /// A merchant's order by its own id, in one API.
    pub fn order_by_merchant_order_id(
        &self,
        merchant_id: &Uuid,
        source: Source,
        merchant_order_id: &str,
    ) -> Result<Option<Order>, StoreError> {
        let hash = self.order_id_hash(source, merchant_order_id);
        match self.id_by_lookup(Kind::Orders, ORDER_ID_LOOKUP, merchant_id, hash)? {
            Some(id) => Ok(self
                .order(&id)?
                .filter(|o| o.source == source && o.merchant_order_id == merchant_order_id)),
            None => Ok(None),
        }
    }

    /// The order a merchant created with an `Idempotency-Key`.
    pub fn order_by_idempotency_key(&self, merchant_id: &Uuid, key: &str) -> Result<Option<Order>, StoreError> {
        let hash = self.key_hash(key);
        match self.id_by_lookup(Kind::Orders, ORDER_KEY_LOOKUP, merchant_id, hash)? {
            Some(id) => Ok(self
                .order(&id)?
                .filter(|o| o.idempotency.as_ref().is_some_and(|(k, _)| k == key))),
            None => Ok(None),
        }
    }

    /// A merchant's orders created in `[from_ms, to_ms)`, newest first, that
    /// pass `keep`: the `offset`..`offset + limit` slice and the total.
    pub fn merchant_orders(
        &self,
        merchant_id: &Uuid,
        from_ms: i64,
        to_ms: i64,
        keep: impl Fn(&Order) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Order>, usize), StoreError> {
        let ids = self.created_between(Kind::Orders, merchant_id, from_ms, to_ms)?;
        super::versions::newest_page(ids, |id| self.order(id), keep, offset, limit)
    }

    /// PENDING orders whose expiry is at or before `now_ms`, oldest first, at most `limit`.
    pub fn orders_due(&self, now_ms: i64, limit: usize) -> Result<Vec<Uuid>, StoreError> {
        let end = prefixed(
            KeyPrefix::PendingOrderByExpiry,
            &[&((now_ms.max(0) as u64) + 1).to_be_bytes()],
        );
        let mut ids = self.indexed_ids(&[KeyPrefix::PendingOrderByExpiry.byte()], &end)?;
        ids.truncate(limit);
        Ok(ids)
    }

    /// The hashes under which a merchant's order ids (`OrderLookup::OrderId`)
    /// or `Idempotency-Key`s (`OrderLookup::IdempotencyKey`) are indexed, or
    /// `None` when there are more than `limit`.
    pub fn merchant_order_hashes(
        &self,
        lookup: OrderLookup,
        merchant_id: &Uuid,
        limit: usize,
    ) -> Result<Option<Vec<u128>>, StoreError> {
        let lookup = match lookup {
            OrderLookup::IdempotencyKey => ORDER_KEY_LOOKUP,
            OrderLookup::OrderId => ORDER_ID_LOOKUP,
        };
        self.lookup_hashes(Kind::Orders, lookup, merchant_id, limit)
    }

    /// A refund by id.
    pub fn refund(&self, id: &Uuid) -> Result<Option<Refund>, StoreError> {
        self.newest_version(Kind::Refunds, id)
    }

    /// The refund a merchant created with an idempotency key.
    pub fn refund_by_key(&self, merchant_id: &Uuid, key: &str) -> Result<Option<Refund>, StoreError> {
        let hash = self.key_hash(key);
        match self.id_by_lookup(Kind::Refunds, REFUND_KEY_LOOKUP, merchant_id, hash)? {
            Some(id) => Ok(self
                .refund(&id)?
                .filter(|r| r.merchant_id == *merchant_id && r.idempotency_key == key)),
            None => Ok(None),
        }
    }

    /// An order's refunds, oldest first.
    pub fn order_refunds(&self, order_id: &Uuid) -> Result<Vec<Refund>, StoreError> {
        let ids = self.created_between(Kind::Refunds, order_id, i64::MIN, i64::MAX)?;
        self.load_all(ids, |id| self.refund(id))
    }

    /// Refunds still PENDING, to resume after a restart.
    pub fn open_refunds(&self) -> Result<Vec<Refund>, StoreError> {
        let (start, end) = prefix_range(KeyPrefix::PendingRefund);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(ids, |id| self.refund(id))
    }
}

#[cfg(test)]
pub(in crate::store) mod tests {
    use super::*;
    use crate::domain::{OrderStatus, PaymentMethod};
    use crate::money::MinorUnits;
    use crate::store::record::{encode_value, JournalRecord};

    pub(in crate::store) fn test_order(merchant_id: Uuid, n: usize) -> Order {
        Order {
            id: Uuid::new_v4(),
            ref_code: format!("ORD-261127000000-{n:04}"),
            merchant_id,
            merchant_order_id: format!("INV-{n}"),
            source: if n.is_multiple_of(2) {
                Source::Api
            } else {
                Source::Legacy
            },
            payment_method: PaymentMethod::Qris,
            amount: MinorUnits::new(10_000 + n as i64),
            status: OrderStatus::Pending,
            qris_string: Some("000201".into()),
            virtual_account: None,
            vendor: "SANDBOX".into(),
            vendor_reference: None,
            expires_at_ms: Some(1_000_000 + n as i64),
            paid_at_ms: None,
            vendor_rrn: None,
            is_settled: false,
            customer_name: None,
            customer_email: None,
            customer_phone: None,
            notify_url: None,
            return_url: None,
            metadata: None,
            fees: None,
            payment_seq: None,
            refunded_amount: MinorUnits::ZERO,
            idempotency: (!n.is_multiple_of(3)).then(|| (format!("key-{n}"), [0; 32])),
            failure_reason: None,
            settlement_id: None,
            created_at_ms: n as i64,
            updated_at_ms: n as i64,
        }
    }

    /// Every order is found by id, ref code, its own id in its API and its
    /// key (when it has one), and listed; every third is EXPIRED.
    fn assert_orders_stored(store: &Store, orders: &[Order]) {
        let merchant = orders[0].merchant_id;
        for (n, order) in orders.iter().enumerate() {
            let found = store.order(&order.id).unwrap().unwrap();
            let status = if n % 3 == 1 {
                OrderStatus::Expired
            } else {
                OrderStatus::Pending
            };
            assert_eq!(found.status, status, "order {n}");
            assert_eq!(store.order_by_ref(&order.ref_code).unwrap().unwrap().id, order.id);
            assert!(store.order_ref_exists(&order.ref_code).unwrap());
            let by_own_id = store
                .order_by_merchant_order_id(&merchant, order.source, &order.merchant_order_id)
                .unwrap();
            assert_eq!(by_own_id.unwrap().id, order.id);
            let other_api = if order.source == Source::Api {
                Source::Legacy
            } else {
                Source::Api
            };
            let in_other_api = store
                .order_by_merchant_order_id(&merchant, other_api, &order.merchant_order_id)
                .unwrap();
            assert!(in_other_api.is_none(), "one API's ids are not the other's");
            match &order.idempotency {
                Some((key, _)) => {
                    let by_key = store.order_by_idempotency_key(&merchant, key).unwrap();
                    assert_eq!(by_key.unwrap().id, order.id);
                }
                None => assert!(store
                    .order_by_idempotency_key(&merchant, &format!("key-{n}"))
                    .unwrap()
                    .is_none()),
            }
        }
        assert!(store.order_by_ref("ORD-261127000000-XXXX").unwrap().is_none());
        let (page, total) = store
            .merchant_orders(&merchant, 100, 200, |o| o.status == OrderStatus::Expired, 0, 3)
            .unwrap();
        assert_eq!(total, 34, "EXPIRED ones created in [100, 200)");
        let created: Vec<i64> = page.iter().map(|o| o.created_at_ms).collect();
        assert_eq!(created, [199, 196, 193], "newest first");
        let keyed = orders.iter().filter(|o| o.idempotency.is_some()).count();
        let key_hashes = store
            .merchant_order_hashes(OrderLookup::IdempotencyKey, &merchant, usize::MAX)
            .unwrap()
            .unwrap();
        assert_eq!(key_hashes.len(), keyed);
        let id_hashes = store
            .merchant_order_hashes(OrderLookup::OrderId, &merchant, usize::MAX)
            .unwrap()
            .unwrap();
        assert_eq!(id_hashes.len(), orders.len());
        assert!(id_hashes.contains(&store.order_id_hash(orders[7].source, &orders[7].merchant_order_id)));
        assert!(store
            .merchant_order_hashes(OrderLookup::OrderId, &merchant, orders.len() - 1)
            .unwrap()
            .is_none());
    }

    fn apply(store: &Store, seq: &mut u64, record: JournalRecord) {
        *seq += 1;
        store.apply(*seq, &record, &record.encode()).unwrap();
    }

    /// Orders read the same from the overlay, from blocks after checkpoints
    /// (newer versions over older blocks), and after reopening; no order
    /// leaves a key of its own in sled but its expiry key while PENDING.
    #[test]
    fn orders_are_found_in_the_overlay_in_blocks_and_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let merchant = Uuid::new_v4();
        let orders: Vec<Order> = (0..1000).map(|n| test_order(merchant, n)).collect();
        let mut seq = 0;
        {
            let store = Store::open(dir.path()).unwrap();
            for (n, order) in orders.iter().enumerate() {
                apply(&store, &mut seq, JournalRecord::OrderCreated(Box::new(order.clone())));
                if n == 500 {
                    store.checkpoint().unwrap();
                }
            }
            for (n, order) in orders.iter().enumerate().skip(1).step_by(3) {
                let mut expired = order.clone();
                expired.status = OrderStatus::Expired;
                apply(&store, &mut seq, JournalRecord::OrderUpdated(Box::new(expired)));
                if n == 700 {
                    assert_orders_stored_partly(&store, &orders);
                    store.checkpoint().unwrap();
                }
            }
            assert_orders_stored(&store, &orders);
            store.checkpoint().unwrap();
            assert_orders_stored(&store, &orders);
            let due = store.orders_due(2_000_000, usize::MAX).unwrap();
            assert_eq!(due.len(), 1000 - 333, "the EXPIRED ones are no longer due");
        }
        let store = Store::open(dir.path()).unwrap();
        assert_orders_stored(&store, &orders);
        let own_keys = [KeyPrefix::Order, KeyPrefix::OrderByRefCode, KeyPrefix::OrderByMerchant]
            .iter()
            .map(|prefix| store.ledger_tree().scan_prefix([prefix.byte()]).count())
            .sum::<usize>();
        assert_eq!(own_keys, 0, "orders are in blocks, not keys");
        assert!(store.ledger_tree().scan_prefix([KeyPrefix::OrderBlock.byte()]).count() > 1);
    }

    /// Half way through the EXPIRED versions: the ones not yet changed are PENDING.
    fn assert_orders_stored_partly(store: &Store, orders: &[Order]) {
        assert_eq!(
            store.order(&orders[998].id).unwrap().unwrap().status,
            OrderStatus::Pending
        );
        assert_eq!(
            store.order(&orders[1].id).unwrap().unwrap().status,
            OrderStatus::Expired
        );
    }

    /// A data dir that kept orders as keys (format 3) is brought into order
    /// blocks when opened, and the keys go; a move cut short before its
    /// runs' marker is done again from the start.
    #[test]
    fn orders_kept_as_keys_move_into_blocks_when_the_store_opens() {
        let dir = tempfile::tempdir().unwrap();
        let merchant = Uuid::new_v4();
        let mut orders: Vec<Order> = (0..1000).map(|n| test_order(merchant, n)).collect();
        for order in orders.iter_mut().skip(1).step_by(3) {
            order.status = OrderStatus::Expired;
        }
        {
            let store = Store::open(dir.path()).unwrap();
            // What format 3 wrote: a record and index keys per order, and
            // no order runs (nor their format key).
            for order in &orders {
                let id = order.id.as_bytes();
                store
                    .ledger_tree()
                    .insert(prefixed(KeyPrefix::Order, &[id]), encode_value(order))
                    .unwrap();
                let created = (order.created_at_ms as u64).to_be_bytes();
                let by_merchant = prefixed(KeyPrefix::OrderByMerchant, &[merchant.as_bytes(), &created, id]);
                store.ledger_tree().insert(by_merchant, &[][..]).unwrap();
                let by_ref = prefixed(KeyPrefix::OrderByRefCode, &[order.ref_code.as_bytes()]);
                store.ledger_tree().insert(by_ref, &id[..]).unwrap();
            }
            store
                .ledger_tree()
                .remove(crate::store::history::ORDERS.format_key)
                .unwrap();
            // A move cut short: blocks without runs.
            store.ledger_tree().insert(b"O-stale", &b"x"[..]).unwrap();
            store.flush().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert!(
            store.ledger_tree().get(b"O-stale").unwrap().is_none(),
            "a cut move's blocks go"
        );
        assert_orders_stored(&store, &orders);
        for prefix in [KeyPrefix::Order, KeyPrefix::OrderByRefCode, KeyPrefix::OrderByMerchant] {
            assert_eq!(
                store.ledger_tree().scan_prefix([prefix.byte()]).count(),
                0,
                "{prefix:?} keys removed"
            );
        }
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_orders_stored(&store, &orders);
    }
}
