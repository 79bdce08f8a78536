//! Disbursement batches: many disbursements asked for in one
//! request under one batch key, each created or refused on its own, and
//! what each item came to, kept so the same batch key answers the same.

use uuid::Uuid;

/// Items one batch may hold; a batch of more, or of none, is refused.
pub const BATCH_ITEMS_MAX: usize = 1000;

/// A batch as stored: who asked, under which key, and what each item came
/// to, in request order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisbursementBatch {
    /// Id.
    pub id: Uuid,
    /// Owner.
    pub merchant_id: Uuid,
    /// The batch's own idempotency key (each item has its own besides).
    pub idempotency_key: String,
    /// When it was made, Unix ms.
    pub created_at_ms: i64,
    /// One per item of the request, in its order.
    pub items: Vec<BatchItem>,
}

impl DisbursementBatch {
    /// How many items created a disbursement.
    pub fn accepted(&self) -> usize {
        self.items
            .iter()
            .filter(|item| matches!(item, BatchItem::Created(_)))
            .count()
    }
}

/// What one item of a batch came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchItem {
    /// It created the disbursement with this id.
    Created(Uuid),
    /// It was refused, for this reason.
    Refused(BatchRefusal),
}

/// Why an item was refused: the refusals a single disbursement's creation
/// can meet, as data, so a replay answers with the same code and message.
/// (`EngineError` holds what cannot be stored, such as whole disbursements;
/// `EngineError::refusal` and `EngineError::from_refusal` convert.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchRefusal {
    /// A field failed validation.
    Invalid {
        /// The field.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No bank with that code.
    BankNotFound,
    /// The bank is disabled.
    BankDisabled,
    /// No e-wallet with that code.
    EwalletNotFound,
    /// The e-wallet is disabled.
    EwalletDisabled,
    /// Bank account fields missing; says which.
    MissingBankInfo(String),
    /// E-wallet provider or phone missing.
    MissingEwalletInfo,
    /// Below a channel's minimum; names it.
    AmountBelowMinimum(String),
    /// No such beneficiary.
    BeneficiaryNotFound,
    /// No payout vendor for the channel.
    NoVendor,
    /// The wallet could not cover request + fee.
    InsufficientBalance,
    /// An amount too large to add up.
    AmountOverflow,
    /// Above the per-transaction limit.
    AmountExceedsLimit,
    /// Above the WIB-day limit.
    DailyLimitExceeded,
    /// The item's key was already used, by this disbursement.
    Duplicate(Uuid),
    /// The merchant stopped being a WALLET merchant.
    NotWalletMerchant,
    /// Broken machinery (storage): nothing was created for the item.
    Internal,
}
