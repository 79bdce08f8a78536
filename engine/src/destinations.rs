//! Payout accounts against the catalog, shared by disbursements and
//! beneficiaries: the bank or e-wallet must exist and be enabled. The
//! account's own shape (digits, a mobile number) is its `input` type's.

use crate::catalog::PlatformCatalog;
use crate::domain::Destination;
use crate::error::EngineError;
use crate::input::EwalletPhone;

impl PlatformCatalog {
    /// A bank account at an enabled bank; an empty `name` stands for "not given".
    pub(crate) fn bank_account(&self, code: &str, number: &str, name: &str) -> Result<Destination, EngineError> {
        let bank = self.bank(code).ok_or(EngineError::BankNotFound)?;
        if !bank.is_enabled {
            return Err(EngineError::BankDisabled);
        }
        Ok(Destination::Bank {
            bank_short_code: bank.short_code,
            bank_id: bank.id,
            account_number: number.to_string(),
            account_name: name.to_string(),
        })
    }

    /// An e-wallet account at an enabled e-wallet.
    pub(crate) fn ewallet_account(&self, code: &str, phone: &EwalletPhone) -> Result<Destination, EngineError> {
        let ewallet = self.ewallet(code).ok_or(EngineError::EwalletNotFound)?;
        if !ewallet.is_enabled {
            return Err(EngineError::EwalletDisabled);
        }
        Ok(Destination::Ewallet {
            provider: ewallet.short_code,
            phone: phone.as_str().to_string(),
        })
    }
}
