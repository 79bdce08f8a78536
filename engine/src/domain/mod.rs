//! The records the engine keeps besides money: merchants and their
//! credentials, organizations, the bank and e-wallet catalog, and the
//! resources merchants make (orders, disbursements and their batches, ...).

pub mod batch;
pub mod beneficiary;
pub mod catalog;
pub mod changes;
pub mod disbursement;
pub mod merchant;
pub mod order;
pub mod settlement;
pub mod user;
pub mod webhook;

pub use batch::{BatchItem, BatchRefusal, DisbursementBatch, BATCH_ITEMS_MAX};
pub use beneficiary::{Beneficiary, VerificationStatus};
pub use catalog::{Bank, Catalog, Ewallet, Organization, PaymentVendorConfig, VendorKind, VendorRouting};
pub use changes::{DisbursementChanges, OrderChanges, RefundChanges};
pub use disbursement::{Channel, Destination, Disbursement, DisbursementRequest, DisbursementStatus, Source};
pub use merchant::{Credentials, Fees, Limits, MerchantRecord, SettlementBank, SettlementType, StoredCredentials};
pub use order::{FeeSplit, Order, OrderStatus, PaymentMethod, Refund, RefundStatus, VirtualAccount};
pub use settlement::{Settlement, SettlementStatus};
pub use user::MerchantUser;
pub use webhook::{EventDelivery, EventDeliveryVersion, EventResource, WebhookAttempt, WebhookEvent};
