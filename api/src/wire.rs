//! JSON views shared by V1 and admin: timestamps, success envelopes and the
//! records as clients see them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, SecondsFormat, Utc};
use paygate_engine::domain::{
    Bank, Beneficiary, Destination, Disbursement, Ewallet, MerchantRecord, Order, Organization, Refund, Settlement,
};
use serde::Serialize;
use serde_json::{json, Value};
use uuid::Uuid;

/// RFC 3339 UTC with `Z`, millisecond precision.
pub fn timestamp(millis: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `{success: true, data}`, serialized straight from `T` so raw JSON inside
/// (an order's metadata) keeps its exact bytes.
#[derive(Serialize)]
struct Envelope<'a, T> {
    success: bool,
    data: &'a T,
}

/// 200 `{success: true, data}`.
pub struct Data<T>(pub T);

impl<T: Serialize> IntoResponse for Data<T> {
    fn into_response(self) -> Response {
        (
            StatusCode::OK,
            Json(Envelope {
                success: true,
                data: &self.0,
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
            Json(Envelope {
                success: true,
                data: &self.0,
            }),
        )
            .into_response()
    }
}

/// A merchant as the admin API shows it (no secrets).
pub fn merchant_view(merchant: &MerchantRecord) -> Value {
    json!({
        "id": merchant.id,
        "organization_id": merchant.organization_id,
        "name": merchant.name,
        "settlement_type": merchant.settlement_type.as_str(),
        "settlement_bank": merchant.settlement_bank,
        "fees": merchant.fees,
        "limits": merchant.limits,
        "default_notify_url": merchant.default_notify_url,
        "is_active": merchant.is_active,
        "require_signature": merchant.require_signature,
        "client_id": merchant.credentials.client_id,
        "has_public_key": merchant.public_key_pem.is_some(),
        "created_at": timestamp(merchant.created_at_ms),
        "updated_at": timestamp(merchant.updated_at_ms),
    })
}

/// A bank record of `GET /v1/banks` (DESIGN.md 5).
pub fn bank_view(bank: &Bank) -> Value {
    json!({ "id": bank.id, "name": bank.name, "short_code": bank.short_code, "is_enabled": bank.is_enabled })
}

/// An e-wallet entry of SPEC.md 2.7.
pub fn ewallet_view(ewallet: &Ewallet, cdn_url: &str) -> Value {
    json!({
        "id": ewallet.id,
        "name": ewallet.name,
        "short_code": ewallet.short_code,
        "logo_url": format!("{}/ewallets/{}.png", cdn_url.trim_end_matches('/'), ewallet.short_code.to_lowercase()),
        "is_enabled": ewallet.is_enabled,
        "sort_order": ewallet.sort_order,
    })
}

/// An organization.
pub fn organization_view(organization: &Organization) -> Value {
    json!({ "id": organization.id, "name": organization.name, "created_at": timestamp(organization.created_at_ms) })
}

/// A disbursement as SPEC.md 2.3 shows it; null fields per channel.
/// Serialized straight from the disbursement: the busiest response of the
/// API, so no intermediate JSON tree.
#[derive(Serialize)]
pub struct DisbursementView<'a> {
    id: Uuid,
    ref_code: &'a str,
    idempotency_key: &'a str,
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
    vendor_disbursement_id: Option<Option<&'a str>>,
    source: &'static str,
    status: &'static str,
    requested_at: String,
    created_at: String,
}

/// A disbursement as SPEC.md 2.3 shows it; null fields per channel.
pub fn disbursement_view(disbursement: &Disbursement) -> DisbursementView<'_> {
    let (bank_id, account_number, account_name, ewallet_provider, ewallet_phone) = match &disbursement.destination {
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

/// The creation response: SPEC.md 2.3 leaves `vendor_disbursement_id` out
/// of the e-wallet creation response (and null at bank creation).
pub fn created_disbursement_view(disbursement: &Disbursement) -> DisbursementView<'_> {
    let mut view = disbursement_view(disbursement);
    if let Destination::Ewallet { .. } = &disbursement.destination {
        view.vendor_disbursement_id = None;
    }
    view
}

/// `{success, data: [..], meta: {page, limit, total, total_pages}}` (SPEC.md 4.1).
pub struct Page<T = Value> {
    /// The items of this page.
    pub items: Vec<T>,
    /// 1-based page number.
    pub page: usize,
    /// Page size in force.
    pub limit: usize,
    /// Items over all pages.
    pub total: usize,
}

#[derive(Serialize)]
struct PageBody<'a, T> {
    success: bool,
    data: &'a [T],
    meta: PageMeta,
}

#[derive(Serialize)]
struct PageMeta {
    page: usize,
    limit: usize,
    total: usize,
    total_pages: usize,
}

impl<T: Serialize> IntoResponse for Page<T> {
    fn into_response(self) -> Response {
        let body = PageBody {
            success: true,
            data: &self.items,
            meta: PageMeta {
                page: self.page,
                limit: self.limit,
                total: self.total,
                total_pages: self.total.div_ceil(self.limit.max(1)),
            },
        };
        (StatusCode::OK, Json(body)).into_response()
    }
}

/// A beneficiary as SPEC.md 2.4 shows it.
pub fn beneficiary_view(beneficiary: &Beneficiary) -> Value {
    let (bank_id, account_number, account_name, ewallet_provider, ewallet_phone) = match &beneficiary.destination {
        Destination::Bank {
            bank_id,
            account_number,
            account_name,
            ..
        } => {
            let name = if account_name.is_empty() {
                Value::Null
            } else {
                json!(account_name)
            };
            (json!(bank_id), json!(account_number), name, Value::Null, Value::Null)
        }
        Destination::Ewallet { provider, phone } => {
            (Value::Null, Value::Null, Value::Null, json!(provider), json!(phone))
        }
    };
    json!({
        "id": beneficiary.id,
        "organization_id": beneficiary.organization_id,
        "merchant_id": beneficiary.merchant_id,
        "label": beneficiary.label,
        "channel": beneficiary.destination.channel().as_str(),
        "bank_id": bank_id,
        "account_number": account_number,
        "account_name": account_name,
        "ewallet_provider": ewallet_provider,
        "ewallet_phone": ewallet_phone,
        "verification_status": beneficiary.verification_status.as_str(),
        "verified_name": beneficiary.verified_name,
        "is_default": beneficiary.is_default,
        "is_enabled": beneficiary.is_enabled,
        "created_at": timestamp(beneficiary.created_at_ms),
        "updated_at": timestamp(beneficiary.updated_at_ms),
    })
}

/// A V1 order (SPEC.md 2.1) plus `payment_method`, `virtual_account`
/// (DESIGN.md 5), the input-only attributes it stores, and the refunded amount.
#[derive(Serialize)]
pub struct OrderView {
    id: uuid::Uuid,
    ref_code: String,
    merchant_order_id: String,
    amount_minor: i64,
    currency_code: &'static str,
    payment_method: &'static str,
    status: &'static str,
    qris_string: Option<String>,
    qr_url: Option<String>,
    virtual_account: Option<VirtualAccountView>,
    expires_at: Option<String>,
    paid_at: Option<String>,
    is_settled: bool,
    vendor_rrn: Option<String>,
    customer_name: Option<String>,
    customer_email: Option<String>,
    customer_phone: Option<String>,
    notify_url: Option<String>,
    return_url: Option<String>,
    metadata: Option<Box<serde_json::value::RawValue>>,
    refunded_amount_minor: i64,
    created_at: String,
    updated_at: String,
}

#[derive(Serialize)]
struct VirtualAccountView {
    bank_short_code: String,
    account_number: String,
}

/// An order as V1 shows it; `public_url` makes `qr_url` absolute.
pub fn order_view(order: &Order, public_url: &str) -> OrderView {
    let qr_url = order.qris_string.as_ref().map(|_| {
        format!(
            "{}/v1/orders/{}/qr.png",
            public_url.trim_end_matches('/'),
            order.ref_code
        )
    });
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

/// A refund (SPEC.md 2.2) with its further fields.
pub fn refund_view(refund: &Refund) -> Value {
    json!({
        "id": refund.id,
        "order_ref_code": refund.order_ref_code,
        "amount_minor": refund.amount.get(),
        "reason": refund.reason,
        "reason_detail": refund.reason_detail,
        "status": refund.status.as_str(),
        "vendor_refund_id": refund.vendor_refund_id,
        "failure_reason": refund.failure_reason,
        "created_at": timestamp(refund.created_at_ms),
        "updated_at": timestamp(refund.updated_at_ms),
    })
}

/// A settlement as SPEC.md 2.5 shows it, plus what was carried over and why
/// it failed or was not paid.
pub fn settlement_view(settlement: &Settlement) -> Value {
    json!({
        "id": settlement.id,
        "ref_code": settlement.ref_code,
        "settlement_date": settlement.settlement_date,
        "period_start": timestamp(settlement.period_start_ms),
        "period_end": timestamp(settlement.period_end_ms),
        "gross_amount_minor": settlement.gross_amount.get(),
        "mdr_total_minor": settlement.mdr_total.get(),
        "platform_fee_minor": settlement.platform_fee.get(),
        "aggregator_fee_minor": settlement.aggregator_fee.get(),
        "refund_total_minor": settlement.refund_total.get(),
        "disbursement_fee_minor": settlement.disbursement_fee.get(),
        "carried_over_minor": settlement.carried_over.get(),
        "net_payout_minor": settlement.net_payout.get(),
        "order_count": settlement.order_count,
        "bank_id": settlement.bank_id,
        "account_number": settlement.account_number,
        "account_name": settlement.account_name,
        "status": settlement.status.as_str(),
        "failure_reason": settlement.failure_reason,
        "created_at": timestamp(settlement.created_at_ms),
        "updated_at": timestamp(settlement.updated_at_ms),
    })
}
