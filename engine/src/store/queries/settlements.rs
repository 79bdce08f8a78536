//! Settlement reads: by id and ref code, a merchant's list, the open ones,
//! and the paid orders and MANUAL refunds no settlement has taken yet.

use crate::domain::{Order, Refund, Settlement};
use crate::store::keys::{merchant_range, prefix_range, prefixed, KeyPrefix};
use crate::store::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// A settlement by id.
    pub fn settlement(&self, id: &Uuid) -> Result<Option<Settlement>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::Settlement, &[id.as_bytes()]))
    }

    /// True when a settlement ref code is taken.
    pub fn settlement_ref_exists(&self, ref_code: &str) -> Result<bool, StoreError> {
        Ok(self
            .resource(&prefixed(KeyPrefix::SettlementByRefCode, &[ref_code.as_bytes()]))?
            .is_some())
    }

    /// How many settlement ref codes start with `prefix`.
    pub fn settlement_refs_with_prefix(&self, prefix: &str) -> Result<usize, StoreError> {
        let start = prefixed(KeyPrefix::SettlementByRefCode, &[prefix.as_bytes()]);
        let end = prefixed(KeyPrefix::SettlementByRefCode, &[prefix.as_bytes(), &[0xFF]]);
        Ok(self.resource_range(&start, &end)?.len())
    }

    /// A merchant's settlements, newest first: the `offset`..`offset + limit` slice and the total.
    pub fn merchant_settlements(
        &self,
        merchant_id: &Uuid,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Settlement>, usize), StoreError> {
        let (start, end) = merchant_range(KeyPrefix::SettlementByMerchant, merchant_id);
        let ids = self.indexed_ids(&start, &end)?;
        self.newest_page(KeyPrefix::Settlement, ids, |_| true, offset, limit)
    }

    /// Settlements not yet final, to resume after a restart.
    pub fn open_settlements(&self) -> Result<Vec<Settlement>, StoreError> {
        let (start, end) = prefix_range(KeyPrefix::OpenSettlement);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(KeyPrefix::Settlement, ids)
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
        self.load_all(KeyPrefix::Refund, ids)
    }
}
