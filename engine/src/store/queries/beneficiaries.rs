//! Beneficiary reads: by id and a merchant's list.

use crate::domain::Beneficiary;
use crate::store::keys::{merchant_range, prefixed, KeyPrefix};
use crate::store::record::decode_value;
use crate::store::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// A beneficiary by id (deleted ones included).
    pub fn beneficiary(&self, id: &Uuid) -> Result<Option<Beneficiary>, StoreError> {
        match self.resource(&prefixed(KeyPrefix::Beneficiary, &[id.as_bytes()]))? {
            Some(bytes) => Ok(Some(decode_value(&bytes)?)),
            None => Ok(None),
        }
    }

    /// A merchant's beneficiaries, deleted ones included, newest first.
    pub fn merchant_beneficiaries(&self, merchant_id: &Uuid) -> Result<Vec<Beneficiary>, StoreError> {
        let (start, end) = merchant_range(KeyPrefix::BeneficiaryByMerchant, merchant_id);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(KeyPrefix::Beneficiary, ids.into_iter().rev())
    }
}
