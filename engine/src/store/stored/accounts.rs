//! Layout 1 of the money and catalog records: ledger entries and books,
//! merchants, the catalog, dashboard users and settlements, field for field
//! as data formats 3 to 5 wrote them.

use super::resources::{ChannelV1, PaymentMethodV1};
use super::MinorUnitsV1;
use crate::domain::catalog::{
    Bank, Ewallet, Organization, PaymentVendorConfig, PayoutRouting, VendorKind, VendorRouting,
};
use crate::domain::merchant::{Fees, Limits, MerchantRecord, SettlementBank, SettlementType, StoredCredentials};
use crate::domain::order::PaymentMethod;
use crate::domain::settlement::{Settlement, SettlementStatus};
use crate::domain::{Channel, MerchantUser};
use crate::ledger::{Account, Entry, EntryKind, EntryResource, MerchantBook, Posting, ResourceKind, Side};
use crate::money::MinorUnits;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_with::{serde_as, DeserializeAs, SerializeAs};
use uuid::Uuid;

super::enum_layout! {
    /// Layout 1 of [`Account`].
    AccountV1 for Account {
        Wallet = 0, PendingSettlement = 1, VendorClearing = 2, MdrRevenue = 3, PlatformFeeRevenue = 4,
        AggregatorFeeRevenue = 5, DisbursementFeeRevenue = 6, PayoutClearing = 7, RefundClearing = 8, Funding = 9,
    }
    /// Layout 1 of [`Side`].
    SideV1 for Side { Debit = 0, Credit = 1 }
    /// Layout 1 of [`EntryKind`].
    EntryKindV1 for EntryKind {
        WalletCredit = 0, WalletDebit = 1, Reversal = 2, Disbursement = 3, OrderPayment = 4, Refund = 5,
        Settlement = 6,
    }
    /// Layout 1 of [`ResourceKind`].
    ResourceKindV1 for ResourceKind { Order = 0, Refund = 1, Disbursement = 2 }
    /// Layout 1 of [`SettlementType`].
    SettlementTypeV1 for SettlementType { Wallet = 0, Manual = 1 }
    /// Layout 1 of [`VendorKind`].
    VendorKindV1 for VendorKind { Sandbox = 0, Http { url: String, secret: String, timeout_ms: u64 } = 1 }
    /// Layout 1 of [`SettlementStatus`].
    SettlementStatusV1 for SettlementStatus { Pending = 0, Processing = 1, Paid = 2, Failed = 3, Cancelled = 4 }
}

/// Layout 1 of [`Posting`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Posting")]
pub(crate) struct PostingV1 {
    #[serde_as(as = "AccountV1")]
    account: Account,
    #[serde_as(as = "SideV1")]
    side: Side,
    #[serde_as(as = "MinorUnitsV1")]
    amount: MinorUnits,
}

/// Layout 1 of [`EntryResource`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "EntryResource")]
pub(crate) struct EntryResourceV1 {
    #[serde_as(as = "ResourceKindV1")]
    kind: ResourceKind,
    id: Uuid,
    ref_code: String,
}

/// Layout 1 of [`Entry`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Entry")]
pub(crate) struct EntryV1 {
    merchant_id: Uuid,
    seq: u64,
    #[serde_as(as = "EntryKindV1")]
    kind: EntryKind,
    idempotency_key: Option<String>,
    memo: String,
    #[serde_as(as = "Vec<PostingV1>")]
    postings: Vec<Posting>,
    reverses: Option<u64>,
    created_at_ms: i64,
    #[serde_as(as = "Option<EntryResourceV1>")]
    resource: Option<EntryResource>,
    wallet_balance_after: i64,
}

/// Layout 1 of [`MerchantBook`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "MerchantBook")]
pub(crate) struct MerchantBookV1 {
    merchant_id: Uuid,
    last_seq: u64,
    balances: [i64; 10],
}

/// Layout 1 of [`Fees`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Fees")]
pub(crate) struct FeesV1 {
    qris_mdr_bps: i64,
    bank_transfer_mdr_minor: i64,
    platform_fee_minor: i64,
    aggregator_fee_minor: i64,
    disbursement_fee_bank_minor: i64,
    disbursement_fee_ewallet_minor: i64,
}

/// Layout 1 of [`Limits`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Limits")]
pub(crate) struct LimitsV1 {
    per_transaction_minor: i64,
    daily_minor: i64,
    review_threshold_minor: i64,
    rate_limit_per_second: i64,
    rate_limit_burst: i64,
}

/// Layout 1 of [`SettlementBank`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "SettlementBank")]
pub(crate) struct SettlementBankV1 {
    bank_short_code: String,
    account_number: String,
    account_name: String,
}

/// Layout 1 of [`StoredCredentials`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "StoredCredentials")]
pub(crate) struct StoredCredentialsV1 {
    api_key_sha256: [u8; 32],
    client_id: String,
    client_secret: String,
    webhook_secret: String,
}

/// Layout 1 of [`MerchantRecord`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "MerchantRecord")]
pub(crate) struct MerchantRecordV1 {
    id: Uuid,
    organization_id: Uuid,
    name: String,
    #[serde_as(as = "SettlementTypeV1")]
    settlement_type: SettlementType,
    #[serde_as(as = "Option<SettlementBankV1>")]
    settlement_bank: Option<SettlementBank>,
    #[serde_as(as = "FeesV1")]
    fees: Fees,
    #[serde_as(as = "LimitsV1")]
    limits: Limits,
    default_notify_url: Option<String>,
    is_active: bool,
    require_signature: bool,
    #[serde_as(as = "StoredCredentialsV1")]
    credentials: StoredCredentials,
    public_key_pem: Option<String>,
    created_at_ms: i64,
    updated_at_ms: i64,
}

/// Layout 1 of [`Bank`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Bank")]
pub(crate) struct BankV1 {
    id: Uuid,
    name: String,
    short_code: String,
    is_enabled: bool,
}

/// Layout 1 of [`Ewallet`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Ewallet")]
pub(crate) struct EwalletV1 {
    id: Uuid,
    name: String,
    short_code: String,
    is_enabled: bool,
    sort_order: i64,
}

/// Layout 1 of [`Organization`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Organization")]
pub(crate) struct OrganizationV1 {
    id: Uuid,
    name: String,
    created_at_ms: i64,
}

/// Layout 1 of [`PaymentVendorConfig`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "PaymentVendorConfig")]
pub(crate) struct PaymentVendorConfigV1 {
    name: String,
    #[serde_as(as = "VendorKindV1")]
    kind: VendorKind,
    supports_refund: bool,
    payouts: bool,
}

/// Layout 1 of [`VendorRouting`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "VendorRouting")]
pub(crate) struct VendorRoutingV1 {
    organization_id: Uuid,
    #[serde_as(as = "PaymentMethodV1")]
    method: PaymentMethod,
    vendors: Vec<String>,
}

/// Layout 1 of [`PayoutRouting`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "PayoutRouting")]
pub(crate) struct PayoutRoutingV1 {
    organization_id: Uuid,
    #[serde_as(as = "ChannelV1")]
    channel: Channel,
    vendors: Vec<String>,
}

/// Layout 1 of [`MerchantUser`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "MerchantUser")]
pub(crate) struct MerchantUserV1 {
    id: Uuid,
    merchant_id: Uuid,
    email: String,
    password_hash: String,
    created_at_ms: i64,
}

/// Layout 1 of a settlement's destination: the bank code, account number
/// and holder as three optional values in a row, all present or none.
pub(crate) struct DestinationV1;

impl SerializeAs<Option<SettlementBank>> for DestinationV1 {
    fn serialize_as<S: Serializer>(value: &Option<SettlementBank>, serializer: S) -> Result<S::Ok, S::Error> {
        let bank = value.as_ref();
        (
            bank.map(|bank| &bank.bank_short_code),
            bank.map(|bank| &bank.account_number),
            bank.map(|bank| &bank.account_name),
        )
            .serialize(serializer)
    }
}

impl<'de> DeserializeAs<'de, Option<SettlementBank>> for DestinationV1 {
    fn deserialize_as<D: Deserializer<'de>>(deserializer: D) -> Result<Option<SettlementBank>, D::Error> {
        Ok(
            match <(Option<String>, Option<String>, Option<String>)>::deserialize(deserializer)? {
                (Some(bank_short_code), Some(account_number), Some(account_name)) => Some(SettlementBank {
                    bank_short_code,
                    account_number,
                    account_name,
                }),
                _ => None,
            },
        )
    }
}

/// Layout 1 of [`Settlement`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Settlement")]
pub(crate) struct SettlementV1 {
    id: Uuid,
    ref_code: String,
    merchant_id: Uuid,
    settlement_date: String,
    period_start_ms: i64,
    period_end_ms: i64,
    #[serde_as(as = "MinorUnitsV1")]
    gross_amount: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    mdr_total: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    platform_fee: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    aggregator_fee: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    refund_total: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    disbursement_fee: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    carried_over: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    net_payout: MinorUnits,
    order_count: u64,
    bank_id: Option<Uuid>,
    #[serde_as(as = "DestinationV1")]
    destination: Option<SettlementBank>,
    #[serde_as(as = "SettlementStatusV1")]
    status: SettlementStatus,
    failure_reason: Option<String>,
    #[serde_as(as = "MinorUnitsV1")]
    carry_out: MinorUnits,
    entry_seq: Option<u64>,
    reversal_seq: Option<u64>,
    created_at_ms: i64,
    updated_at_ms: i64,
}

super::layout_of! {
    Posting => PostingV1,
    EntryResource => EntryResourceV1,
    Entry => EntryV1,
    MerchantBook => MerchantBookV1,
    Fees => FeesV1,
    Limits => LimitsV1,
    SettlementBank => SettlementBankV1,
    StoredCredentials => StoredCredentialsV1,
    MerchantRecord => MerchantRecordV1,
    Bank => BankV1,
    Ewallet => EwalletV1,
    Organization => OrganizationV1,
    PaymentVendorConfig => PaymentVendorConfigV1,
    VendorRouting => VendorRoutingV1,
    PayoutRouting => PayoutRoutingV1,
    MerchantUser => MerchantUserV1,
    Settlement => SettlementV1,
}
