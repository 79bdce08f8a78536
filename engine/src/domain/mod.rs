//! The records the engine keeps besides money: merchants and their
//! credentials, organizations, and the bank and e-wallet catalog.

pub mod beneficiary;
pub mod catalog;
pub mod disbursement;
pub mod merchant;
pub mod order;
pub mod settlement;
pub mod webhook;

pub use beneficiary::{Beneficiary, VerificationStatus};
pub use catalog::{Bank, Catalog, Ewallet, Organization, PaymentVendorConfig, VendorKind, VendorRouting};
pub use disbursement::{Channel, Destination, Disbursement, DisbursementRequest, DisbursementStatus, Source};
pub use merchant::{
    Credentials, Fees, FeesPatch, Limits, LimitsPatch, MerchantRecord, MerchantSettings, SettlementBank,
    SettlementType, StoredCredentials,
};
pub use order::{FeeSplit, Order, OrderStatus, PaymentMethod, Refund, RefundStatus, VirtualAccount};
pub use settlement::{Settlement, SettlementStatus};
pub use webhook::{EventResource, WebhookAttempt, WebhookEvent};
