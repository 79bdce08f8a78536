//! Disbursement batch reads: by id, and a merchant's by batch key.

use crate::domain::DisbursementBatch;
use crate::store::keys::{prefixed, KeyPrefix};
use crate::store::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// A batch by id (any merchant's: callers check the owner).
    pub fn disbursement_batch(&self, id: &Uuid) -> Result<Option<DisbursementBatch>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::DisbursementBatch, &[id.as_bytes()]))
    }

    /// A merchant's batch made under idempotency key `key`.
    pub fn disbursement_batch_by_key(
        &self,
        merchant_id: &Uuid,
        key: &str,
    ) -> Result<Option<DisbursementBatch>, StoreError> {
        let key_hash = self.key_hash(key).to_be_bytes();
        let index = prefixed(KeyPrefix::DisbursementBatchByKey, &[merchant_id.as_bytes(), &key_hash]);
        let found: Option<DisbursementBatch> = self.by_index(&index, KeyPrefix::DisbursementBatch)?;
        // The hash is 128 bits and seeded: a match is the key, but a batch
        // that says otherwise is never answered for another key.
        Ok(found.filter(|batch| batch.merchant_id == *merchant_id && batch.idempotency_key == key))
    }
}
