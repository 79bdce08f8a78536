//! The engine's errors: business refusals and broken machinery, with no HTTP in sight.

use crate::domain::{BatchRefusal, Disbursement};
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
    /// No bank with that code.
    #[error("bank not found")]
    BankNotFound,
    /// No e-wallet with that code.
    #[error("e-wallet not found")]
    EwalletNotFound,
    /// A disbursement with this idempotency key exists already.
    #[error("a disbursement with this idempotency key exists")]
    DuplicateDisbursement(Box<crate::domain::Disbursement>),
    /// No such (undeleted) beneficiary for this merchant.
    #[error("beneficiary not found")]
    BeneficiaryNotFound,
    /// No such disbursement for this merchant.
    #[error("disbursement not found")]
    DisbursementNotFound,
    /// The bank exists but is disabled.
    #[error("bank is disabled")]
    BankDisabled,
    /// The e-wallet exists but is disabled.
    #[error("e-wallet is disabled")]
    EwalletDisabled,
    /// A bank disbursement or beneficiary without the account fields it
    /// needs; says which.
    #[error("{0}")]
    MissingBankInfo(std::borrow::Cow<'static, str>),
    /// An e-wallet disbursement without provider or phone.
    #[error("ewallet_provider and ewallet_phone are required for EWALLET")]
    MissingEwalletInfo,
    /// Above the per-transaction limit.
    #[error("amount exceeds the per-transaction limit")]
    AmountExceedsLimit,
    /// Above the WIB-day limit.
    #[error("amount exceeds the daily limit")]
    DailyLimitExceeded,
    /// Below a channel's minimum (DANA: IDR 20,000).
    #[error("amount is below the minimum of {0}")]
    AmountBelowMinimum(String),
    /// The operation does not fit the resource's status.
    #[error("not allowed in status {0}")]
    InvalidStatus(String),
    /// A vendor reported the opposite of a payout's final status (nothing changed).
    #[error("the payout is already {0}")]
    StatusConflict(String),
    /// No vendor is configured for the operation.
    #[error("no vendor configured")]
    NoVendor,
    /// Every configured vendor failed.
    #[error("all configured vendors failed: {0}")]
    VendorError(String),
    /// No such order for this merchant.
    #[error("order not found")]
    OrderNotFound,
    /// The merchant already has an order with this id.
    #[error("merchant_order_id already exists")]
    DuplicateOrder(Box<crate::domain::Order>),
    /// The same `Idempotency-Key` came with a different body.
    #[error("Idempotency-Key was used with a different request body")]
    IdempotencyKeyReused,
    /// A refund above what is left to refund.
    #[error("amount exceeds the remaining refundable amount")]
    AmountExceedsOrder,
    /// The vendor that took the order cannot refund.
    #[error("refunds are not supported for this order's vendor")]
    RefundNotSupported,
    /// A refund with this idempotency key exists already.
    #[error("a refund with this idempotency key exists")]
    DuplicateRefund(Box<crate::domain::Refund>),
    /// No payment vendor with that name takes callbacks.
    #[error("no such vendor")]
    VendorNotFound,
    /// A signature did not verify.
    #[error("signature does not match")]
    InvalidSignature,
    /// No such settlement for this merchant.
    #[error("settlement not found")]
    SettlementNotFound,
    /// No such webhook event for this merchant.
    #[error("event not found")]
    EventNotFound,
    /// No such refund for this merchant.
    #[error("refund not found")]
    RefundNotFound,
    /// No such disbursement batch for this merchant.
    #[error("disbursement batch not found")]
    BatchNotFound,
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
    /// Too much work in flight to take more now; try again shortly.
    #[error("too much work in flight; try again shortly")]
    Busy,
    /// A dashboard user with this email exists.
    #[error("a user with this email exists")]
    EmailTaken,
    /// Storage cannot take writes now (the journal's disk is full or
    /// failing, or a checkpoint failed): refused before anything changed.
    #[error("storage cannot take writes now (disk full or failing); nothing was changed")]
    StorageUnavailable,
    /// Storage is broken.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Broken machinery recorded earlier (an item of a batch that met a
    /// storage failure), or state that should exist and does not.
    #[error("internal: {0}")]
    Internal(String),
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

impl EngineError {
    /// This refusal of one item of a batch, as stored with the batch.
    /// Refusals a disbursement's creation cannot meet, and broken
    /// machinery, are `Internal`.
    pub fn refusal(&self) -> BatchRefusal {
        match self {
            EngineError::InvalidInput { field, reason } => BatchRefusal::Invalid {
                field: field.clone(),
                reason: reason.clone(),
            },
            EngineError::BankNotFound => BatchRefusal::BankNotFound,
            EngineError::BankDisabled => BatchRefusal::BankDisabled,
            EngineError::EwalletNotFound => BatchRefusal::EwalletNotFound,
            EngineError::EwalletDisabled => BatchRefusal::EwalletDisabled,
            EngineError::MissingBankInfo(message) => BatchRefusal::MissingBankInfo(message.to_string()),
            EngineError::MissingEwalletInfo => BatchRefusal::MissingEwalletInfo,
            EngineError::AmountBelowMinimum(minimum) => BatchRefusal::AmountBelowMinimum(minimum.clone()),
            EngineError::BeneficiaryNotFound => BatchRefusal::BeneficiaryNotFound,
            EngineError::NoVendor => BatchRefusal::NoVendor,
            EngineError::Ledger(LedgerError::InsufficientBalance) => BatchRefusal::InsufficientBalance,
            EngineError::Ledger(LedgerError::Overflow) => BatchRefusal::AmountOverflow,
            EngineError::AmountExceedsLimit => BatchRefusal::AmountExceedsLimit,
            EngineError::DailyLimitExceeded => BatchRefusal::DailyLimitExceeded,
            EngineError::DuplicateDisbursement(existing) => BatchRefusal::Duplicate(existing.id),
            EngineError::NotWalletMerchant => BatchRefusal::NotWalletMerchant,
            _ => BatchRefusal::Internal,
        }
    }

    /// The error a stored refusal stands for; a duplicate carries
    /// `existing`, the disbursement that holds its key (as it is now).
    pub fn from_refusal(refusal: BatchRefusal, existing: Option<Disbursement>) -> EngineError {
        match refusal {
            BatchRefusal::Invalid { field, reason } => EngineError::InvalidInput { field, reason },
            BatchRefusal::BankNotFound => EngineError::BankNotFound,
            BatchRefusal::BankDisabled => EngineError::BankDisabled,
            BatchRefusal::EwalletNotFound => EngineError::EwalletNotFound,
            BatchRefusal::EwalletDisabled => EngineError::EwalletDisabled,
            BatchRefusal::MissingBankInfo(message) => EngineError::MissingBankInfo(message.into()),
            BatchRefusal::MissingEwalletInfo => EngineError::MissingEwalletInfo,
            BatchRefusal::AmountBelowMinimum(minimum) => EngineError::AmountBelowMinimum(minimum),
            BatchRefusal::BeneficiaryNotFound => EngineError::BeneficiaryNotFound,
            BatchRefusal::NoVendor => EngineError::NoVendor,
            BatchRefusal::InsufficientBalance => EngineError::Ledger(LedgerError::InsufficientBalance),
            BatchRefusal::AmountOverflow => EngineError::Ledger(LedgerError::Overflow),
            BatchRefusal::AmountExceedsLimit => EngineError::AmountExceedsLimit,
            BatchRefusal::DailyLimitExceeded => EngineError::DailyLimitExceeded,
            BatchRefusal::Duplicate(id) => match existing {
                Some(existing) => EngineError::DuplicateDisbursement(Box::new(existing)),
                None => EngineError::Internal(format!("disbursement {id} of a batch is missing")),
            },
            BatchRefusal::NotWalletMerchant => EngineError::NotWalletMerchant,
            BatchRefusal::Internal => EngineError::Internal("an item of this batch met a storage failure".into()),
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
