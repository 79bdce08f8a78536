//! Validation of payout accounts shared by disbursements and beneficiaries:
//! the bank or e-wallet must exist and be enabled, the account number and
//! phone must have their shapes (5 to 34 digits; a phone normalized to
//! `62…`, then `^628[1-35-9][0-9]{7,10}$`).

use crate::catalog::PlatformCatalog;
use crate::domain::disbursement::{is_valid_ewallet_phone, normalize_phone};
use crate::domain::Destination;
use crate::error::EngineError;
use crate::limits;

/// A field's value unless absent or blank.
pub(crate) fn present(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl PlatformCatalog {
    /// A bank account at an enabled bank; an empty `name` stands for "not given".
    pub(crate) fn bank_account(&self, code: &str, number: &str, name: &str) -> Result<Destination, EngineError> {
        let bank = self.bank(code).ok_or(EngineError::BankNotFound)?;
        if !bank.is_enabled {
            return Err(EngineError::BankDisabled);
        }
        if !(5..=34).contains(&number.len()) || !number.chars().all(|c| c.is_ascii_digit()) {
            return Err(EngineError::invalid("account_number", "must be 5 to 34 digits"));
        }
        if name.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid("account_name", "must be at most 255 characters"));
        }
        Ok(Destination::Bank {
            bank_short_code: bank.short_code,
            bank_id: bank.id,
            account_number: number.to_string(),
            account_name: name.to_string(),
        })
    }

    /// An e-wallet account at an enabled e-wallet, the phone normalized.
    pub(crate) fn ewallet_account(&self, code: &str, raw_phone: &str) -> Result<Destination, EngineError> {
        let ewallet = self.ewallet(code).ok_or(EngineError::EwalletNotFound)?;
        if !ewallet.is_enabled {
            return Err(EngineError::EwalletDisabled);
        }
        let phone = normalize_phone(raw_phone);
        if !is_valid_ewallet_phone(&phone) {
            return Err(EngineError::invalid(
                "ewallet_phone",
                "must be an Indonesian mobile number (62 8xx...)",
            ));
        }
        Ok(Destination::Ewallet {
            provider: ewallet.short_code,
            phone,
        })
    }
}
