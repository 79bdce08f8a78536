//! Settlement reads: by id and ref code (versions in blocks,
//! `history::SETTLEMENTS`), a merchant's list, the open ones, and the paid
//! orders and MANUAL refunds no settlement has taken yet.

use crate::domain::{Order, Refund, Settlement};
use crate::store::history::Kind;
use crate::store::keys::{prefix_range, KeyPrefix};
use crate::store::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// A settlement by id.
    pub fn settlement(&self, id: &Uuid) -> Result<Option<Settlement>, StoreError> {
        self.newest_version(Kind::Settlements, id)
    }

    /// True when a settlement ref code is taken (or shares its 128-bit hash
    /// with one that is).
    pub fn settlement_ref_exists(&self, ref_code: &str) -> Result<bool, StoreError> {
        Ok(self.id_by_ref(Kind::Settlements, ref_code)?.is_some())
    }

    /// How many of the ref codes `ref_code(1)`, `ref_code(2)`, ... are
    /// taken, for a sequence taken in order from 1 with no gaps (a day's
    /// settlements): found by galloping, then bisecting.
    pub fn settlement_refs_taken(&self, ref_code: impl Fn(usize) -> String) -> Result<usize, StoreError> {
        let taken = |n: usize| self.settlement_ref_exists(&ref_code(n));
        // Invariant: `low` is taken (0 stands for none), `high` is not.
        let (mut low, mut high) = (0usize, 1usize);
        while taken(high)? {
            low = high;
            high = high.saturating_mul(2);
        }
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if taken(middle)? {
                low = middle;
            } else {
                high = middle;
            }
        }
        Ok(low)
    }

    /// A merchant's settlements, newest first: the `offset`..`offset + limit` slice and the total.
    pub fn merchant_settlements(
        &self,
        merchant_id: &Uuid,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Settlement>, usize), StoreError> {
        let ids = self.created_between(Kind::Settlements, merchant_id, i64::MIN, i64::MAX)?;
        super::versions::newest_page(ids, |id| self.settlement(id), |_| true, offset, limit)
    }

    /// Settlements not yet final, to resume after a restart.
    pub fn open_settlements(&self) -> Result<Vec<Settlement>, StoreError> {
        let (start, end) = prefix_range(KeyPrefix::OpenSettlement);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(ids, |id| self.settlement(id))
    }

    /// A merchant's paid orders no settlement has taken, paid before `before_ms`.
    pub fn unsettled_orders(&self, merchant_id: &Uuid, before_ms: i64) -> Result<Vec<Order>, StoreError> {
        let ids = self.ids_in_time_range(KeyPrefix::UnsettledOrder, merchant_id, 0, before_ms)?;
        let mut orders = Vec::with_capacity(ids.len());
        for id in ids {
            orders.extend(self.order(&id)?);
        }
        Ok(orders)
    }

    /// A MANUAL merchant's refunds no settlement has deducted, created before `before_ms`.
    pub fn unsettled_refunds(&self, merchant_id: &Uuid, before_ms: i64) -> Result<Vec<Refund>, StoreError> {
        let ids = self.ids_in_time_range(KeyPrefix::UnsettledRefund, merchant_id, 0, before_ms)?;
        self.load_all(ids, |id| self.refund(id))
    }
}
