//! The merchant actor's side of beneficiaries: what a create, a vendor's
//! account inquiry answer or a delete writes, checked against the stored
//! beneficiaries of this merchant only (a default one unsets the last).

use super::MerchantState;
use crate::domain::{Beneficiary, VerificationStatus};
use crate::error::EngineError;
use uuid::Uuid;

/// A change of one of the merchant's beneficiaries.
#[derive(Clone, Debug)]
pub enum BeneficiaryChange {
    /// A new one (a default one unsets the previous default).
    Create(Box<Beneficiary>),
    /// The vendor's account inquiry answered: the holder's name, or why not.
    Verify { id: Uuid, result: Result<String, String> },
    /// Soft delete.
    Delete { id: Uuid },
}

impl MerchantState {
    /// The records a beneficiary change writes, and the changed beneficiary.
    pub(super) fn change_beneficiary(
        &self,
        change: BeneficiaryChange,
    ) -> Result<(Beneficiary, Vec<Beneficiary>), EngineError> {
        let now = self.args.clock.now().timestamp_millis();
        let store = &self.args.store;
        let mine = |id: &Uuid| -> Result<Beneficiary, EngineError> {
            store
                .beneficiary(id)?
                .filter(|b| b.merchant_id == self.args.merchant_id && b.deleted_at_ms.is_none())
                .ok_or(EngineError::BeneficiaryNotFound)
        };
        match change {
            BeneficiaryChange::Create(new) => {
                let new = *new;
                let mut records = Vec::new();
                if new.is_default {
                    for mut old in store.merchant_beneficiaries(&self.args.merchant_id)? {
                        if old.is_default {
                            old.is_default = false;
                            old.updated_at_ms = now;
                            records.push(old);
                        }
                    }
                }
                records.push(new.clone());
                Ok((new, records))
            }
            BeneficiaryChange::Verify { id, result } => {
                let mut beneficiary = mine(&id)?;
                match result {
                    Ok(name) => {
                        beneficiary.verification_status = VerificationStatus::Verified;
                        beneficiary.verified_name = Some(name);
                    }
                    Err(_) => beneficiary.verification_status = VerificationStatus::Failed,
                }
                beneficiary.updated_at_ms = now;
                Ok((beneficiary.clone(), vec![beneficiary]))
            }
            BeneficiaryChange::Delete { id } => {
                let mut beneficiary = mine(&id)?;
                beneficiary.deleted_at_ms = Some(now);
                beneficiary.is_default = false;
                beneficiary.updated_at_ms = now;
                Ok((beneficiary.clone(), vec![beneficiary]))
            }
        }
    }
}
