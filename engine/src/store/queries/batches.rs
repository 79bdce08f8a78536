//! Disbursement batch reads: by id, and a merchant's by batch key
//! (versions in blocks, `history::BATCHES`).

use crate::domain::DisbursementBatch;
use crate::store::history::Kind;
use crate::store::{Store, StoreError};
use uuid::Uuid;

/// The batches' lookup, as `history::BATCHES` declares it.
const BATCH_KEY_LOOKUP: usize = 0;

impl Store {
    /// A batch by id (any merchant's: callers check the owner).
    pub fn disbursement_batch(&self, id: &Uuid) -> Result<Option<DisbursementBatch>, StoreError> {
        self.newest_version(Kind::Batches, id)
    }

    /// A merchant's batch made under idempotency key `key`.
    pub fn disbursement_batch_by_key(
        &self,
        merchant_id: &Uuid,
        key: &str,
    ) -> Result<Option<DisbursementBatch>, StoreError> {
        let hash = self.key_hash(key);
        let Some(id) = self.id_by_lookup(Kind::Batches, BATCH_KEY_LOOKUP, merchant_id, hash)? else {
            return Ok(None);
        };
        // The hash is 128 bits and seeded: a match is the key, but a batch
        // that says otherwise is never answered for another key.
        Ok(self
            .disbursement_batch(&id)?
            .filter(|batch| batch.merchant_id == *merchant_id && batch.idempotency_key == key))
    }
}
