//! Actors: one merchant actor per merchant (the only writer of its money),
//! and the registry that spawns them on demand and lets idle ones stop.

pub mod merchant;
pub mod order;
pub mod registry;

pub use merchant::{
    BeneficiaryChange, MerchantActor, MerchantArgs, MerchantChange, MerchantMsg, OrderCommand, OrderOutcome,
    PostReceipt, SettlementDraft,
};
pub use registry::ActorRegistry;
