//! Admin vendor configuration: HTTP vendors by name,
//! each organization's payment vendors per payment method and payout
//! vendors per channel, tried in order.

use super::parse_id;
use crate::error::V1Error;
use crate::extract::{Admin, V1Json};
use crate::openapi::names::{ChannelName, PaymentMethodName};
use crate::openapi::values::HttpUrlText;
use crate::wire::{Data, DataBody};
use crate::AppState;
use axum::extract::{Path, State};
use paygate_engine::domain::catalog::PayoutRouting;
use paygate_engine::domain::{Channel, PaymentMethod, PaymentVendorConfig, VendorKind, VendorRouting};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// Body of `PUT /admin/v1/vendors/{name}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveVendor {
    /// The vendor's base URL.
    #[schema(value_type = HttpUrlText)]
    url: String,
    /// Signs requests and callbacks both ways (HMAC-SHA256): 1 to 256 bytes.
    #[schema(min_length = 1, max_length = 256)]
    secret: String,
    /// Per-call timeout, 1 to 60,000; 10,000 by default.
    #[schema(minimum = 1, maximum = 60000)]
    timeout_ms: Option<u64>,
    /// Whether it takes refunds; `true` by default.
    supports_refund: Option<bool>,
    /// Whether it also pays out; `false` by default.
    payouts: Option<bool>,
}

/// An HTTP vendor as saved (its secret is never shown).
#[derive(Serialize, ToSchema)]
pub struct VendorView {
    name: String,
    /// Always `HTTP`.
    kind: &'static str,
    url: String,
    timeout_ms: u64,
    supports_refund: bool,
    payouts: bool,
    /// Where the vendor sends its callbacks.
    callback_path: String,
}

/// Default per-request timeout of an HTTP vendor.
const VENDOR_TIMEOUT_MS_DEFAULT: u64 = 10_000;

/// PUT /admin/v1/vendors/{name}: adds or changes an HTTP vendor (of
/// payments, and of payouts with `payouts: true`).
#[utoipa::path(put, path = "/admin/v1/vendors/{name}", tag = "Admin", operation_id = "admin_save_vendor",
    summary = "Add or change an HTTP vendor",
    description = "A payment vendor, and a payout vendor too with `payouts: true`. paygate calls it at `{url}/payments`, \
        `{url}/refunds` and, for payouts, `{url}/payouts` and `{url}/account-inquiries`, each request signed \
        `X-Paygate-Signature: sha256=<hex HMAC-SHA256(secret, body)>`; it calls back `POST /callbacks/{name}`, signed \
        the same way.",
    security(("admin_token" = [])), params(("name" = String, Path, description = "The vendor's name: 1 to 64 of a-z, 0-9, - and _, not `sandbox` (the built-in one).", pattern = "^(?!sandbox$)[a-z0-9_-]{1,64}$")),
    request_body = SaveVendor,
    responses((status = 200, description = "The vendor.", body = DataBody<VendorView>)))]
pub async fn save_vendor(
    State(state): State<AppState>,
    _admin: Admin,
    Path(name): Path<String>,
    V1Json(body): V1Json<SaveVendor>,
) -> Result<Data<VendorView>, V1Error> {
    let config = PaymentVendorConfig {
        name,
        kind: VendorKind::Http {
            url: body.url,
            secret: body.secret,
            timeout_ms: body.timeout_ms.unwrap_or(VENDOR_TIMEOUT_MS_DEFAULT),
        },
        supports_refund: body.supports_refund.unwrap_or(true),
        payouts: body.payouts.unwrap_or(false),
    };
    let saved = state.engine.orders().save_payment_vendor(config).await?;
    let VendorKind::Http { url, timeout_ms, .. } = &saved.kind else {
        return Err(V1Error::internal("saved vendor is not HTTP"));
    };
    Ok(Data(VendorView {
        callback_path: format!("/callbacks/{}", saved.name),
        name: saved.name.clone(),
        kind: "HTTP",
        url: url.clone(),
        timeout_ms: *timeout_ms,
        supports_refund: saved.supports_refund,
        payouts: saved.payouts,
    }))
}

/// Body of `PUT /admin/v1/organizations/{id}/vendors/{payment_method}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveRouting {
    /// Vendor names, tried in this order; empty: none (`NO_VENDOR`).
    vendors: Vec<String>,
}

/// An organization's payment vendors for one payment method.
#[derive(Serialize, ToSchema)]
pub struct RoutingView {
    organization_id: Uuid,
    #[schema(value_type = PaymentMethodName)]
    payment_method: &'static str,
    vendors: Vec<String>,
}

/// An organization's payout vendors for one channel.
#[derive(Serialize, ToSchema)]
pub struct PayoutRoutingView {
    organization_id: Uuid,
    #[schema(value_type = ChannelName)]
    channel: &'static str,
    vendors: Vec<String>,
}

/// PUT /admin/v1/organizations/{id}/vendors/{payment_method}: the vendors
/// tried in order for that organization's orders (empty: `NO_VENDOR`).
#[utoipa::path(put, path = "/admin/v1/organizations/{id}/vendors/{payment_method}", tag = "Admin", operation_id = "admin_save_routing",
    summary = "Route an organization's payments",
    description = "The payment vendors tried in order for the organization's orders of a payment method.",
    security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "The organization's id."),
        ("payment_method" = PaymentMethodName, Path, description = "QRIS or BANK_TRANSFER.")),
    request_body = SaveRouting,
    responses((status = 200, description = "The routing.", body = DataBody<RoutingView>)))]
pub async fn save_routing(
    State(state): State<AppState>,
    _admin: Admin,
    Path((id, method)): Path<(String, String)>,
    V1Json(body): V1Json<SaveRouting>,
) -> Result<Data<RoutingView>, V1Error> {
    let organization_id = parse_id(&id)?;
    let method = PaymentMethod::parse(&method)
        .ok_or_else(|| V1Error::invalid_body("payment_method: must be QRIS or BANK_TRANSFER"))?;
    let routing = state
        .engine
        .orders()
        .set_vendor_routing(VendorRouting {
            organization_id,
            method,
            vendors: body.vendors,
        })
        .await?;
    Ok(Data(RoutingView {
        organization_id: routing.organization_id,
        payment_method: routing.method.as_str(),
        vendors: routing.vendors,
    }))
}

/// PUT /admin/v1/organizations/{id}/payout-vendors/{channel}: the payout
/// vendors tried in order for that organization's disbursements on a
/// channel (empty: `NO_VENDOR`). Body as `SaveRouting`.
#[utoipa::path(put, path = "/admin/v1/organizations/{id}/payout-vendors/{channel}", tag = "Admin", operation_id = "admin_save_payout_routing",
    summary = "Route an organization's payouts",
    description = "The payout vendors tried in order for the organization's disbursements on a channel.",
    security(("admin_token" = [])),
    params(("id" = Uuid, Path, description = "The organization's id."),
        ("channel" = ChannelName, Path, description = "BANK or EWALLET.")),
    request_body = SaveRouting,
    responses((status = 200, description = "The routing.", body = DataBody<PayoutRoutingView>)))]
pub async fn save_payout_routing(
    State(state): State<AppState>,
    _admin: Admin,
    Path((id, channel)): Path<(String, String)>,
    V1Json(body): V1Json<SaveRouting>,
) -> Result<Data<PayoutRoutingView>, V1Error> {
    let organization_id = parse_id(&id)?;
    let channel = match channel.as_str() {
        "BANK" => Channel::Bank,
        "EWALLET" => Channel::Ewallet,
        _ => return Err(V1Error::invalid_body("channel: must be BANK or EWALLET")),
    };
    let routing = state
        .engine
        .disbursements()
        .set_payout_routing(PayoutRouting {
            organization_id,
            channel,
            vendors: body.vendors,
        })
        .await?;
    Ok(Data(PayoutRoutingView {
        organization_id: routing.organization_id,
        channel: routing.channel.as_str(),
        vendors: routing.vendors,
    }))
}
