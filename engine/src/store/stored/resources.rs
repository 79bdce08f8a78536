//! Layout 1 of the resources merchants create: disbursements, orders and
//! refunds, batches, beneficiaries and webhook events, field for field as
//! data formats 3 to 5 wrote them; and beside each of the first three, from
//! the same declaration, layout 1 of its changing fields, which layout 2
//! webhook events keep (`events.rs`).

use super::MinorUnitsV1;
use crate::domain::batch::{BatchItem, BatchRefusal};
use crate::domain::beneficiary::VerificationStatus;
use crate::domain::changes::{DisbursementChanges, OrderChanges, RefundChanges};
use crate::domain::disbursement::{Destination, DisbursementStatus, Source};
use crate::domain::order::{FeeSplit, OrderStatus, PaymentMethod, Refund, RefundStatus, VirtualAccount};
use crate::domain::webhook::{EventDelivery, EventDeliveryVersion, WebhookAttempt};
use crate::domain::{Beneficiary, Channel, Disbursement, DisbursementBatch, Order};
use crate::money::MinorUnits;
use serde::{Deserialize, Serialize};
use serde_with::serde_as;
use std::sync::Arc;
use uuid::Uuid;

super::enum_layout! {
    /// Layout 1 of [`Channel`].
    ChannelV1 for Channel { Bank = 0, Ewallet = 1 }
    /// Layout 1 of [`DisbursementStatus`].
    DisbursementStatusV1 for DisbursementStatus {
        Pending = 0, InReview = 1, OnProcess = 2, Success = 3, Failed = 4, Rejected = 5,
    }
    /// Layout 1 of [`Source`].
    SourceV1 for Source { Api = 0, Legacy = 1 }
    /// Layout 1 of [`Destination`].
    DestinationV1 for Destination {
        Bank { bank_short_code: String, bank_id: Uuid, account_number: String, account_name: String } = 0,
        Ewallet { provider: String, phone: String } = 1,
    }
    /// Layout 1 of [`PaymentMethod`].
    PaymentMethodV1 for PaymentMethod { Qris = 0, BankTransfer = 1 }
    /// Layout 1 of [`OrderStatus`].
    OrderStatusV1 for OrderStatus {
        Pending = 0, Paid = 1, PartiallyRefunded = 2, Refunded = 3, Expired = 4, Failed = 5,
    }
    /// Layout 1 of [`RefundStatus`].
    RefundStatusV1 for RefundStatus { Pending = 0, Success = 1, Failed = 2 }
    /// Layout 1 of [`BatchRefusal`].
    BatchRefusalV1 for BatchRefusal {
        Invalid { field: String, reason: String } = 0,
        BankNotFound = 1, BankDisabled = 2, EwalletNotFound = 3, EwalletDisabled = 4,
        MissingBankInfo(fields: String) = 5, MissingEwalletInfo = 6, AmountBelowMinimum(channel: String) = 7,
        BeneficiaryNotFound = 8, NoVendor = 9, InsufficientBalance = 10, AmountOverflow = 11,
        AmountExceedsLimit = 12, DailyLimitExceeded = 13, Duplicate(disbursement_id: Uuid) = 14,
        NotWalletMerchant = 15, Internal = 16,
    }
    /// Layout 1 of [`VerificationStatus`].
    VerificationStatusV1 for VerificationStatus { Pending = 0, Verified = 1, Failed = 2 }
}

super::layout_with_changes! {
    /// Layout 1 of [`Disbursement`].
    #[serde(remote = "Disbursement")]
    pub(crate) struct DisbursementV1 {
        id: Uuid,
        ref_code: String,
        merchant_id: Uuid,
        idempotency_key: String,
        #[serde_as(as = "Arc<DestinationV1>")]
        destination: Arc<Destination>,
        #[serde_as(as = "MinorUnitsV1")]
        request_amount: MinorUnits,
        #[serde_as(as = "MinorUnitsV1")]
        fee: MinorUnits,
        #[serde_as(as = "MinorUnitsV1")]
        final_amount: MinorUnits,
        changing vendor_disbursement_id: Option<String>,
        changing payout_vendor: Option<String>,
        changing on_process_at_ms: Option<i64>,
        #[serde_as(as = "SourceV1")]
        source: Source,
        // First in the changes: their struct was written out by hand, status
        // first, before it was derived from this one's changing fields.
        #[serde_as(as = "DisbursementStatusV1")]
        changing first status: DisbursementStatus,
        notify_url: Option<String>,
        beneficiary_id: Option<Uuid>,
        changing failure_reason: Option<String>,
        debit_seq: u64,
        changing reversal_seq: Option<u64>,
        wib_day: i64,
        created_at_ms: i64,
        changing updated_at_ms: i64,
    }

    /// Layout 1 of the changing fields of a disbursement (only ever inside
    /// an event).
    #[serde(remote = "DisbursementChanges")]
    pub(crate) struct DisbursementChangesV1;
}

/// Layout 1 of [`VirtualAccount`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "VirtualAccount")]
pub(crate) struct VirtualAccountV1 {
    bank_short_code: String,
    account_number: String,
}

/// Layout 1 of [`FeeSplit`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "FeeSplit")]
pub(crate) struct FeeSplitV1 {
    #[serde_as(as = "MinorUnitsV1")]
    mdr: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    platform_fee: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    aggregator_fee: MinorUnits,
    #[serde_as(as = "MinorUnitsV1")]
    net: MinorUnits,
}

super::layout_with_changes! {
    /// Layout 1 of [`Order`].
    #[serde(remote = "Order")]
    pub(crate) struct OrderV1 {
        id: Uuid,
        ref_code: String,
        merchant_id: Uuid,
        merchant_order_id: String,
        #[serde_as(as = "SourceV1")]
        source: Source,
        #[serde_as(as = "PaymentMethodV1")]
        payment_method: PaymentMethod,
        #[serde_as(as = "MinorUnitsV1")]
        amount: MinorUnits,
        #[serde_as(as = "OrderStatusV1")]
        changing status: OrderStatus,
        qris_string: Option<String>,
        #[serde_as(as = "Option<VirtualAccountV1>")]
        virtual_account: Option<VirtualAccount>,
        vendor: String,
        vendor_reference: Option<String>,
        expires_at_ms: Option<i64>,
        changing paid_at_ms: Option<i64>,
        changing vendor_rrn: Option<String>,
        changing is_settled: bool,
        customer_name: Option<String>,
        customer_email: Option<String>,
        customer_phone: Option<String>,
        notify_url: Option<String>,
        return_url: Option<String>,
        metadata: Option<String>,
        #[serde_as(as = "Option<FeeSplitV1>")]
        changing fees: Option<FeeSplit>,
        changing payment_seq: Option<u64>,
        #[serde_as(as = "MinorUnitsV1")]
        changing refunded_amount: MinorUnits,
        idempotency: Option<(String, [u8; 32])>,
        changing failure_reason: Option<String>,
        changing settlement_id: Option<Uuid>,
        created_at_ms: i64,
        changing updated_at_ms: i64,
    }

    /// Layout 1 of the changing fields of an order (only ever inside an
    /// event).
    #[serde(remote = "OrderChanges")]
    pub(crate) struct OrderChangesV1;
}

super::layout_with_changes! {
    /// Layout 1 of [`Refund`].
    #[serde(remote = "Refund")]
    pub(crate) struct RefundV1 {
        id: Uuid,
        order_id: Uuid,
        order_ref_code: String,
        merchant_id: Uuid,
        #[serde_as(as = "MinorUnitsV1")]
        amount: MinorUnits,
        reason: String,
        reason_detail: Option<String>,
        idempotency_key: String,
        #[serde_as(as = "RefundStatusV1")]
        changing status: RefundStatus,
        changing vendor_refund_id: Option<String>,
        changing failure_reason: Option<String>,
        changing debit_seq: Option<u64>,
        changing reversal_seq: Option<u64>,
        changing settlement_id: Option<Uuid>,
        created_at_ms: i64,
        changing updated_at_ms: i64,
    }

    /// Layout 1 of the changing fields of a refund (only ever inside an
    /// event).
    #[serde(remote = "RefundChanges")]
    pub(crate) struct RefundChangesV1;
}

/// Layout 1 of [`DisbursementBatch`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "DisbursementBatch")]
pub(crate) struct DisbursementBatchV1 {
    id: Uuid,
    merchant_id: Uuid,
    idempotency_key: String,
    created_at_ms: i64,
    #[serde_as(as = "Vec<BatchItemV1>")]
    items: Vec<BatchItem>,
}

/// Layout 1 of [`BatchItem`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "BatchItem")]
pub(crate) enum BatchItemV1 {
    Created(Uuid),
    Refused(#[serde_as(as = "BatchRefusalV1")] BatchRefusal),
}

/// Layout 1 of [`Beneficiary`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "Beneficiary")]
pub(crate) struct BeneficiaryV1 {
    id: Uuid,
    organization_id: Uuid,
    merchant_id: Uuid,
    label: Option<String>,
    #[serde_as(as = "DestinationV1")]
    destination: Destination,
    #[serde_as(as = "VerificationStatusV1")]
    verification_status: VerificationStatus,
    verified_name: Option<String>,
    is_default: bool,
    is_enabled: bool,
    deleted_at_ms: Option<i64>,
    created_at_ms: i64,
    updated_at_ms: i64,
}

/// Layout 1 of [`EventDelivery`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "EventDelivery")]
pub(crate) struct EventDeliveryV1 {
    attempts: u32,
    delivered: bool,
    next_attempt_at_ms: Option<i64>,
}

/// Layout 1 of [`EventDeliveryVersion`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "EventDeliveryVersion")]
pub(crate) struct EventDeliveryVersionV1 {
    event_id: Uuid,
    #[serde_as(as = "EventDeliveryV1")]
    delivery: EventDelivery,
}

/// Layout 1 of [`WebhookAttempt`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "WebhookAttempt")]
pub(crate) struct WebhookAttemptV1 {
    event_id: Uuid,
    merchant_id: Uuid,
    event: String,
    url: String,
    attempt: u32,
    status_code: Option<u16>,
    latency_ms: u64,
    error: Option<String>,
    next_retry_at_ms: Option<i64>,
    delivered: bool,
    attempted_at_ms: i64,
    manual: bool,
}

super::layout_of! {
    Disbursement => DisbursementV1,
    DisbursementChanges => DisbursementChangesV1,
    VirtualAccount => VirtualAccountV1,
    FeeSplit => FeeSplitV1,
    Order => OrderV1,
    OrderChanges => OrderChangesV1,
    Refund => RefundV1,
    RefundChanges => RefundChangesV1,
    DisbursementBatch => DisbursementBatchV1,
    BatchItem => BatchItemV1,
    Beneficiary => BeneficiaryV1,
    EventDelivery => EventDeliveryV1,
    EventDeliveryVersion => EventDeliveryVersionV1,
    WebhookAttempt => WebhookAttemptV1,
}
