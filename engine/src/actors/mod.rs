//! Actors: one merchant actor per merchant (the only writer of its money),
//! the registry that spawns them on demand and lets idle ones stop, and the
//! narrow handle others reach them through. Disbursement actors are hosted
//! per merchant in `disbursements::host`.

pub mod handle;
pub mod merchant;
pub mod registry;

pub use handle::{MerchantActorSettings, MerchantHandle};
pub use merchant::{
    BatchDraft, BatchOutcome, BeneficiaryChange, CreatedDisbursements, MerchantChange, MerchantMsg, OrderCommand,
    OrderOutcome, PostReceipt, SettingsChange, SettlementDraft,
};
pub use registry::ActorRegistry;
