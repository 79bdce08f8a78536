//! The merchant directory: every merchant by id and by credential, in
//! memory for authentication.

use super::Store;
use crate::domain::MerchantRecord;
use std::collections::HashMap;
use std::sync::{Arc, RwLockReadGuard};
use uuid::Uuid;

/// Merchants by id and by credential, kept in memory for authentication.
#[derive(Default)]
pub struct Directory {
    merchants: HashMap<Uuid, Arc<MerchantRecord>>,
    by_api_key_hash: HashMap<[u8; 32], Uuid>,
    by_client_id: HashMap<String, Uuid>,
}

impl Directory {
    /// A merchant by id.
    pub fn get(&self, id: &Uuid) -> Option<Arc<MerchantRecord>> {
        self.merchants.get(id).cloned()
    }

    /// A merchant by the SHA-256 of its API key.
    pub fn by_api_key_hash(&self, hash: &[u8; 32]) -> Option<Arc<MerchantRecord>> {
        self.by_api_key_hash.get(hash).and_then(|id| self.get(id))
    }

    /// A merchant by Legacy client id.
    pub fn by_client_id(&self, client_id: &str) -> Option<Arc<MerchantRecord>> {
        self.by_client_id.get(client_id).and_then(|id| self.get(id))
    }

    /// Every merchant id.
    pub fn ids(&self) -> Vec<Uuid> {
        self.merchants.keys().copied().collect()
    }

    /// How many merchants exist.
    pub fn len(&self) -> usize {
        self.merchants.len()
    }

    /// True when no merchant exists yet.
    pub fn is_empty(&self) -> bool {
        self.merchants.is_empty()
    }

    pub(super) fn insert(&mut self, record: MerchantRecord) {
        if let Some(old) = self.merchants.get(&record.id) {
            self.by_api_key_hash.remove(&old.credentials.api_key_sha256);
            self.by_client_id.remove(&old.credentials.client_id);
        }
        self.by_api_key_hash
            .insert(record.credentials.api_key_sha256, record.id);
        self.by_client_id
            .insert(record.credentials.client_id.clone(), record.id);
        self.merchants.insert(record.id, Arc::new(record));
    }
}

impl Store {
    /// The merchant directory.
    pub fn directory(&self) -> RwLockReadGuard<'_, Directory> {
        self.directory.read().expect("directory lock")
    }
}
