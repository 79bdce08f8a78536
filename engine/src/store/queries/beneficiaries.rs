//! Beneficiary reads: by id and a merchant's list (versions in blocks,
//! `history::BENEFICIARIES`).

use crate::domain::Beneficiary;
use crate::store::history::Kind;
use crate::store::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// A beneficiary by id (deleted ones included).
    pub fn beneficiary(&self, id: &Uuid) -> Result<Option<Beneficiary>, StoreError> {
        self.newest_version(Kind::Beneficiaries, id)
    }

    /// A merchant's beneficiaries, deleted ones included, newest first.
    pub fn merchant_beneficiaries(&self, merchant_id: &Uuid) -> Result<Vec<Beneficiary>, StoreError> {
        let ids = self.created_between(Kind::Beneficiaries, merchant_id, i64::MIN, i64::MAX)?;
        self.load_all(ids.into_iter().rev(), |id| self.beneficiary(id))
    }
}
