//! Order and refund reads: by id, ref code, merchant order id and
//! idempotency key, listings, the expiry sweep and the open refunds.

use crate::domain::{Order, Refund, Source};
use crate::store::keys::{index_suffix_hash, merchant_range, order_id_key, prefix_range, prefixed, KeyPrefix};
use crate::store::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// An order by id.
    pub fn order(&self, id: &Uuid) -> Result<Option<Order>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::Order, &[id.as_bytes()]))
    }

    /// An order by ref code.
    pub fn order_by_ref(&self, ref_code: &str) -> Result<Option<Order>, StoreError> {
        self.by_index(
            &prefixed(KeyPrefix::OrderByRefCode, &[ref_code.as_bytes()]),
            KeyPrefix::Order,
        )
    }

    /// True when an order ref code is taken.
    pub fn order_ref_exists(&self, ref_code: &str) -> Result<bool, StoreError> {
        Ok(self
            .resource(&prefixed(KeyPrefix::OrderByRefCode, &[ref_code.as_bytes()]))?
            .is_some())
    }

    /// A merchant's order by its own id, in one API.
    pub fn order_by_merchant_order_id(
        &self,
        merchant_id: &Uuid,
        source: Source,
        merchant_order_id: &str,
    ) -> Result<Option<Order>, StoreError> {
        self.by_index(&order_id_key(merchant_id, source, merchant_order_id), KeyPrefix::Order)
    }

    /// The order a merchant created with an `Idempotency-Key`.
    pub fn order_by_idempotency_key(&self, merchant_id: &Uuid, key: &str) -> Result<Option<Order>, StoreError> {
        let key_hash = self.key_hash(key).to_be_bytes();
        let found: Option<Order> = self.by_index(
            &prefixed(KeyPrefix::OrderByIdempotencyKey, &[merchant_id.as_bytes(), &key_hash]),
            KeyPrefix::Order,
        )?;
        Ok(found.filter(|o| o.idempotency.as_ref().is_some_and(|(k, _)| k == key)))
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
        let ids = self.ids_in_time_range(KeyPrefix::OrderByMerchant, merchant_id, from_ms, to_ms)?;
        self.newest_page(KeyPrefix::Order, ids, keep, offset, limit)
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

    /// The hashes under which a merchant's keys of one kind are indexed
    /// (`prefix`: `OrderByMerchantOrderId` or `OrderByIdempotencyKey`), or
    /// `None` when there are more than `limit`.
    pub fn merchant_key_hashes(
        &self,
        prefix: KeyPrefix,
        merchant_id: &Uuid,
        limit: usize,
    ) -> Result<Option<crate::sharded::ShardedSet<u128>>, StoreError> {
        let start = prefixed(prefix, &[merchant_id.as_bytes()]);
        let mut end = start.clone();
        end.push(0xFF);
        end.extend_from_slice(&[0xFF; 32]);
        let mut hashes = crate::sharded::ShardedSet::default();
        for (key, _) in self.resource_range(&start, &end)? {
            if hashes.len() >= limit {
                return Ok(None);
            }
            hashes.insert(index_suffix_hash(prefix, &key[17..]));
        }
        Ok(Some(hashes))
    }

    /// A refund by id.
    pub fn refund(&self, id: &Uuid) -> Result<Option<Refund>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::Refund, &[id.as_bytes()]))
    }

    /// The refund a merchant created with an idempotency key.
    pub fn refund_by_key(&self, merchant_id: &Uuid, key: &str) -> Result<Option<Refund>, StoreError> {
        let key_hash = self.key_hash(key).to_be_bytes();
        let found: Option<Refund> = self.by_index(
            &prefixed(KeyPrefix::RefundByIdempotencyKey, &[merchant_id.as_bytes(), &key_hash]),
            KeyPrefix::Refund,
        )?;
        Ok(found.filter(|r| r.idempotency_key == key))
    }

    /// An order's refunds, oldest first.
    pub fn order_refunds(&self, order_id: &Uuid) -> Result<Vec<Refund>, StoreError> {
        let (start, end) = merchant_range(KeyPrefix::RefundByOrder, order_id);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(KeyPrefix::Refund, ids)
    }

    /// Refunds still PENDING, to resume after a restart.
    pub fn open_refunds(&self) -> Result<Vec<Refund>, StoreError> {
        let (start, end) = prefix_range(KeyPrefix::PendingRefund);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(KeyPrefix::Refund, ids)
    }
}
