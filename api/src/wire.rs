//! JSON views shared by V1 and admin: timestamps, success envelopes and the
//! records as clients see them.

use crate::openapi::names::{
    ChannelName, DisbursementStatusName, OrderStatusName, PaymentMethodName, RefundStatusName, SettlementStatusName,
    SettlementTypeName, SourceName, VerificationStatusName,
};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, SecondsFormat, Utc};
use paygate_engine::domain::{
    Bank, Beneficiary, Destination, Disbursement, Ewallet, MerchantRecord, Order, Organization, Refund, Settlement,
};
use paygate_engine::domain::{Fees, Limits, SettlementBank};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// RFC 3339 UTC with `Z`, millisecond precision.
pub fn timestamp(millis: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `{success: true, data}`: the body of every V1 and admin success but a
/// page. Serialized straight from `T`, so raw JSON inside (an order's
/// metadata) keeps its exact bytes.
#[derive(Serialize, ToSchema)]
pub struct DataBody<T> {
    /// Always `true`.
    pub success: bool,
    /// The resource.
    pub data: T,
}

/// 200 `{success: true, data}`.
pub struct Data<T>(pub T);

impl<T: Serialize> IntoResponse for Data<T> {
    fn into_response(self) -> Response {
        (
            StatusCode::OK,
            Json(DataBody {
                success: true,
                data: self.0,
            }),
        )
            .into_response()
    }
}

/// 201 `{success: true, data}`.
pub struct Created<T>(pub T);

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        (
            StatusCode::CREATED,
            Json(DataBody {
                success: true,
                data: self.0,
            }),
        )
            .into_response()
    }
}

/// A merchant as the admin API shows it (no secrets).
#[derive(Serialize, ToSchema)]
pub struct MerchantView {
    id: Uuid,
    organization_id: Uuid,
    name: String,
    #[schema(value_type = SettlementTypeName)]
    settlement_type: &'static str,
    settlement_bank: Option<SettlementBank>,
    fees: Fees,
    limits: Limits,
    default_notify_url: Option<String>,
    is_active: bool,
    require_signature: bool,
    client_id: String,
    has_public_key: bool,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
}

/// A merchant as the admin API shows it (no secrets).
pub fn merchant_view(merchant: &MerchantRecord) -> MerchantView {
    MerchantView {
        id: merchant.id,
        organization_id: merchant.organization_id,
        name: merchant.name.clone(),
        settlement_type: merchant.settlement_type.as_str(),
        settlement_bank: merchant.settlement_bank.clone(),
        fees: merchant.fees.clone(),
        limits: merchant.limits.clone(),
        default_notify_url: merchant.default_notify_url.clone(),
        is_active: merchant.is_active,
        require_signature: merchant.require_signature,
        client_id: merchant.credentials.client_id.clone(),
        has_public_key: merchant.public_key_pem.is_some(),
        created_at: timestamp(merchant.created_at_ms),
        updated_at: timestamp(merchant.updated_at_ms),
    }
}

/// A bank of `GET /v1/banks`.
#[derive(Serialize, ToSchema)]
pub struct BankView {
    id: Uuid,
    name: String,
    short_code: String,
    is_enabled: bool,
}

/// A bank record of `GET /v1/banks`.
pub fn bank_view(bank: &Bank) -> BankView {
    BankView {
        id: bank.id,
        name: bank.name.clone(),
        short_code: bank.short_code.clone(),
        is_enabled: bank.is_enabled,
    }
}

/// An e-wallet of `GET /v1/ewallets`.
#[derive(Serialize, ToSchema)]
pub struct EwalletView {
    id: Uuid,
    name: String,
    short_code: String,
    logo_url: String,
    is_enabled: bool,
    sort_order: i64,
}

/// An e-wallet entry of `GET /v1/ewallets`.
pub fn ewallet_view(ewallet: &Ewallet, cdn_url: &str) -> EwalletView {
    EwalletView {
        id: ewallet.id,
        name: ewallet.name.clone(),
        short_code: ewallet.short_code.clone(),
        logo_url: format!(
            "{}/ewallets/{}.png",
            cdn_url.trim_end_matches('/'),
            ewallet.short_code.to_lowercase()
        ),
        is_enabled: ewallet.is_enabled,
        sort_order: ewallet.sort_order,
    }
}

/// An organization.
#[derive(Serialize, ToSchema)]
pub struct OrganizationView {
    id: Uuid,
    name: String,
    #[schema(format = DateTime)]
    created_at: String,
}

/// An organization.
pub fn organization_view(organization: &Organization) -> OrganizationView {
    OrganizationView {
        id: organization.id,
        name: organization.name.clone(),
        created_at: timestamp(organization.created_at_ms),
    }
}

/// A V1 disbursement; the other channel's fields are null.
/// Serialized straight from the disbursement: the busiest response of the
/// API, so no intermediate JSON tree.
#[derive(Serialize, ToSchema)]
pub struct DisbursementView<'a> {
    id: Uuid,
    ref_code: &'a str,
    idempotency_key: &'a str,
    #[schema(value_type = ChannelName)]
    channel: &'static str,
    bank_id: Option<Uuid>,
    account_number: Option<&'a str>,
    account_name: Option<&'a str>,
    ewallet_provider: Option<&'a str>,
    ewallet_phone: Option<&'a str>,
    request_amount_minor: i64,
    fee_minor: i64,
    final_amount_minor: i64,
    // The outer `None` leaves the field out (e-wallet creation responses).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    vendor_disbursement_id: Option<Option<&'a str>>,
    #[schema(value_type = SourceName)]
    source: &'static str,
    #[schema(value_type = DisbursementStatusName)]
    status: &'static str,
    #[schema(format = DateTime)]
    requested_at: String,
    #[schema(format = DateTime)]
    created_at: String,
}

/// A V1 disbursement; the other channel's fields are null.
pub fn disbursement_view(disbursement: &Disbursement) -> DisbursementView<'_> {
    let (bank_id, account_number, account_name, ewallet_provider, ewallet_phone) = match &*disbursement.destination {
        Destination::Bank {
            bank_id,
            account_number,
            account_name,
            ..
        } => (
            Some(*bank_id),
            Some(account_number.as_str()),
            Some(account_name.as_str()),
            None,
            None,
        ),
        Destination::Ewallet { provider, phone } => (None, None, None, Some(provider.as_str()), Some(phone.as_str())),
    };
    let created_at = timestamp(disbursement.created_at_ms);
    DisbursementView {
        id: disbursement.id,
        ref_code: &disbursement.ref_code,
        idempotency_key: &disbursement.idempotency_key,
        channel: disbursement.destination.channel().as_str(),
        bank_id,
        account_number,
        account_name,
        ewallet_provider,
        ewallet_phone,
        request_amount_minor: disbursement.request_amount.get(),
        fee_minor: disbursement.fee.get(),
        final_amount_minor: disbursement.final_amount.get(),
        vendor_disbursement_id: Some(disbursement.vendor_disbursement_id.as_deref()),
        source: match disbursement.source {
            paygate_engine::domain::Source::Api => "API",
            paygate_engine::domain::Source::Legacy => "LEGACY",
        },
        status: disbursement.status.as_str(),
        requested_at: created_at.clone(),
        created_at,
    }
}

/// The creation response: `vendor_disbursement_id` is absent from an
/// e-wallet creation response (and null in a bank one).
pub fn created_disbursement_view(disbursement: &Disbursement) -> DisbursementView<'_> {
    let mut view = disbursement_view(disbursement);
    if let Destination::Ewallet { .. } = &*disbursement.destination {
        view.vendor_disbursement_id = None;
    }
    view
}

/// `{success, data: [..], meta: {page, limit, total, total_pages}}`.
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// 1-based page number.
    pub page: usize,
    /// Page size in force.
    pub limit: usize,
    /// Items over all pages.
    pub total: usize,
}

/// The body of a page: `{success, data: [..], meta}`.
#[derive(Serialize, ToSchema)]
pub struct PageBody<T> {
    /// Always `true`.
    pub success: bool,
    /// This page's items.
    pub data: Vec<T>,
    /// Where this page is.
    pub meta: PageMeta,
}

/// The place of a page among all pages.
#[derive(Serialize, ToSchema)]
pub struct PageMeta {
    /// 1-based page number.
    page: usize,
    /// Page size in force.
    limit: usize,
    /// Items over all pages.
    total: usize,
    /// Pages in all.
    total_pages: usize,
}

impl<T: Serialize> IntoResponse for Page<T> {
    fn into_response(self) -> Response {
        let body = PageBody {
            success: true,
            meta: PageMeta {
                page: self.page,
                limit: self.limit,
                total: self.total,
                total_pages: self.total.div_ceil(self.limit.max(1)),
            },
            data: self.items,
        };
        (StatusCode::OK, Json(body)).into_response()
    }
}

/// A V1 beneficiary; the other channel's fields are null.
#[derive(Serialize, ToSchema)]
pub struct BeneficiaryView {
    id: Uuid,
    organization_id: Uuid,
    merchant_id: Uuid,
    label: Option<String>,
    #[schema(value_type = ChannelName)]
    channel: &'static str,
    bank_id: Option<Uuid>,
    account_number: Option<String>,
    account_name: Option<String>,
    ewallet_provider: Option<String>,
    ewallet_phone: Option<String>,
    #[schema(value_type = VerificationStatusName)]
    verification_status: &'static str,
    verified_name: Option<String>,
    is_default: bool,
    is_enabled: bool,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
}

/// A beneficiary's V1 view.
pub fn beneficiary_view(beneficiary: &Beneficiary) -> BeneficiaryView {
    let (bank_id, account_number, account_name, ewallet_provider, ewallet_phone) = match &beneficiary.destination {
        Destination::Bank {
            bank_id,
            account_number,
            account_name,
            ..
        } => {
            let name = (!account_name.is_empty()).then(|| account_name.clone());
            (Some(*bank_id), Some(account_number.clone()), name, None, None)
        }
        Destination::Ewallet { provider, phone } => (None, None, None, Some(provider.clone()), Some(phone.clone())),
    };
    BeneficiaryView {
        id: beneficiary.id,
        organization_id: beneficiary.organization_id,
        merchant_id: beneficiary.merchant_id,
        label: beneficiary.label.clone(),
        channel: beneficiary.destination.channel().as_str(),
        bank_id,
        account_number,
        account_name,
        ewallet_provider,
        ewallet_phone,
        verification_status: beneficiary.verification_status.as_str(),
        verified_name: beneficiary.verified_name.clone(),
        is_default: beneficiary.is_default,
        is_enabled: beneficiary.is_enabled,
        created_at: timestamp(beneficiary.created_at_ms),
        updated_at: timestamp(beneficiary.updated_at_ms),
    }
}

/// A V1 order with its `payment_method`, `virtual_account` (null for QRIS),
/// the input-only attributes it stores, and the refunded amount.
#[derive(Serialize, ToSchema)]
pub struct OrderView {
    id: uuid::Uuid,
    ref_code: String,
    merchant_order_id: String,
    amount_minor: i64,
    /// Always `IDR`.
    currency_code: &'static str,
    #[schema(value_type = PaymentMethodName)]
    payment_method: &'static str,
    #[schema(value_type = OrderStatusName)]
    status: &'static str,
    /// The QRIS payload (EMVCo), for QRIS orders.
    qris_string: Option<String>,
    /// The QRIS as a PNG image, for QRIS orders.
    qr_url: Option<String>,
    /// The hosted page the payer pays on: `<public url>/checkout/{id}`, for
    /// every payment method. It needs no key: the order's UUID is the
    /// capability.
    checkout_url: String,
    /// Where the payer transfers to, for BANK_TRANSFER orders.
    virtual_account: Option<VirtualAccountView>,
    #[schema(format = DateTime)]
    expires_at: Option<String>,
    #[schema(format = DateTime)]
    paid_at: Option<String>,
    is_settled: bool,
    vendor_rrn: Option<String>,
    customer_name: Option<String>,
    customer_email: Option<String>,
    customer_phone: Option<String>,
    notify_url: Option<String>,
    return_url: Option<String>,
    /// The object given at creation, byte for byte.
    #[schema(value_type = Option<Object>)]
    metadata: Option<Box<serde_json::value::RawValue>>,
    refunded_amount_minor: i64,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
}

/// A virtual account the payer transfers to.
#[derive(Serialize, ToSchema)]
pub struct VirtualAccountView {
    bank_short_code: String,
    account_number: String,
}

/// An order as V1 shows it; `public_url` makes `qr_url` and `checkout_url`
/// absolute.
pub fn order_view(order: &Order, public_url: &str) -> OrderView {
    let base = public_url.trim_end_matches('/');
    let qr_url = order
        .qris_string
        .as_ref()
        .map(|_| format!("{base}/v1/orders/{}/qr.png", order.ref_code));
    OrderView {
        id: order.id,
        ref_code: order.ref_code.clone(),
        merchant_order_id: order.merchant_order_id.clone(),
        amount_minor: order.amount.get(),
        currency_code: "IDR",
        payment_method: order.payment_method.as_str(),
        status: order.status.as_str(),
        qris_string: order.qris_string.clone(),
        qr_url,
        checkout_url: format!("{base}/checkout/{}", order.id),
        virtual_account: order.virtual_account.as_ref().map(|va| VirtualAccountView {
            bank_short_code: va.bank_short_code.clone(),
            account_number: va.account_number.clone(),
        }),
        expires_at: order.expires_at_ms.map(timestamp),
        paid_at: order.paid_at_ms.map(timestamp),
        is_settled: order.is_settled,
        vendor_rrn: order.vendor_rrn.clone(),
        customer_name: order.customer_name.clone(),
        customer_email: order.customer_email.clone(),
        customer_phone: order.customer_phone.clone(),
        notify_url: order.notify_url.clone(),
        return_url: order.return_url.clone(),
        // Stored only after it parsed as a JSON object.
        metadata: order
            .metadata
            .as_ref()
            .and_then(|raw| serde_json::value::RawValue::from_string(raw.clone()).ok()),
        refunded_amount_minor: order.refunded_amount.get(),
        created_at: timestamp(order.created_at_ms),
        updated_at: timestamp(order.updated_at_ms),
    }
}

/// A V1 refund, with the vendor's id and why it failed.
#[derive(Serialize, ToSchema)]
pub struct RefundView {
    id: Uuid,
    order_ref_code: String,
    amount_minor: i64,
    reason: String,
    reason_detail: Option<String>,
    #[schema(value_type = RefundStatusName)]
    status: &'static str,
    vendor_refund_id: Option<String>,
    failure_reason: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
}

/// A refund's V1 view.
pub fn refund_view(refund: &Refund) -> RefundView {
    RefundView {
        id: refund.id,
        order_ref_code: refund.order_ref_code.clone(),
        amount_minor: refund.amount.get(),
        reason: refund.reason.clone(),
        reason_detail: refund.reason_detail.clone(),
        status: refund.status.as_str(),
        vendor_refund_id: refund.vendor_refund_id.clone(),
        failure_reason: refund.failure_reason.clone(),
        created_at: timestamp(refund.created_at_ms),
        updated_at: timestamp(refund.updated_at_ms),
    }
}

/// A V1 settlement, with what was carried over and why
/// it failed or was not paid.
#[derive(Serialize, ToSchema)]
pub struct SettlementView {
    id: Uuid,
    ref_code: String,
    /// The WIB day settled, `YYYY-MM-DD`.
    #[schema(format = Date)]
    settlement_date: String,
    #[schema(format = DateTime)]
    period_start: String,
    #[schema(format = DateTime)]
    period_end: String,
    gross_amount_minor: i64,
    mdr_total_minor: i64,
    platform_fee_minor: i64,
    aggregator_fee_minor: i64,
    refund_total_minor: i64,
    disbursement_fee_minor: i64,
    carried_over_minor: i64,
    net_payout_minor: i64,
    order_count: u64,
    bank_id: Option<Uuid>,
    account_number: Option<String>,
    account_name: Option<String>,
    #[schema(value_type = SettlementStatusName)]
    status: &'static str,
    failure_reason: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
}

/// A settlement's V1 view.
pub fn settlement_view(settlement: &Settlement) -> SettlementView {
    SettlementView {
        id: settlement.id,
        ref_code: settlement.ref_code.clone(),
        settlement_date: settlement.settlement_date.clone(),
        period_start: timestamp(settlement.period_start_ms),
        period_end: timestamp(settlement.period_end_ms),
        gross_amount_minor: settlement.gross_amount.get(),
        mdr_total_minor: settlement.mdr_total.get(),
        platform_fee_minor: settlement.platform_fee.get(),
        aggregator_fee_minor: settlement.aggregator_fee.get(),
        refund_total_minor: settlement.refund_total.get(),
        disbursement_fee_minor: settlement.disbursement_fee.get(),
        carried_over_minor: settlement.carried_over.get(),
        net_payout_minor: settlement.net_payout.get(),
        order_count: settlement.order_count,
        bank_id: settlement.bank_id,
        account_number: settlement.destination.as_ref().map(|bank| bank.account_number.clone()),
        account_name: settlement.destination.as_ref().map(|bank| bank.account_name.clone()),
        status: settlement.status.as_str(),
        failure_reason: settlement.failure_reason.clone(),
        created_at: timestamp(settlement.created_at_ms),
        updated_at: timestamp(settlement.updated_at_ms),
    }
}
