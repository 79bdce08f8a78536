//! The engine's errors: business refusals and broken machinery, with no HTTP in sight.

use crate::ledger::LedgerError;
use crate::store::StoreError;

/// Everything an engine operation can refuse or fail with.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A ledger rule refused the entry.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// No merchant with that id.
    #[error("merchant not found")]
    MerchantNotFound,
    /// The operation needs a WALLET merchant.
    #[error("merchant is not a WALLET merchant")]
    NotWalletMerchant,
    /// No organization with that id.
    #[error("organization not found")]
    OrganizationNotFound,
    /// No bank with that code.
    #[error("bank not found")]
    BankNotFound,
    /// No e-wallet with that code.
    #[error("e-wallet not found")]
    EwalletNotFound,
    /// Input failed validation; names the field.
    #[error("{field}: {reason}")]
    InvalidInput {
        /// The offending field.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An actor did not answer in time; the operation may still complete.
    #[error("timed out waiting for the engine")]
    Timeout,
    /// The engine is shutting down.
    #[error("engine is shutting down")]
    ShuttingDown,
    /// Storage is broken.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EngineError {
    /// Shorthand for a validation failure.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> EngineError {
        EngineError::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl From<crate::store::journal::JournalError> for EngineError {
    fn from(error: crate::store::journal::JournalError) -> Self {
        match error {
            crate::store::journal::JournalError::Closed => EngineError::ShuttingDown,
            other => EngineError::Store(StoreError::Journal(other)),
        }
    }
}
