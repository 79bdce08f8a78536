//! Admin vendor configuration (DESIGN.md 7 and 8): HTTP vendors by name,
//! each organization's payment vendors per payment method and payout
//! vendors per channel, tried in order.

use super::parse_id;
use crate::error::V1Error;
use crate::extract::{Admin, V1Json};
use crate::wire::Data;
use crate::AppState;
use axum::extract::{Path, State};
use paygate_engine::domain::catalog::PayoutRouting;
use paygate_engine::domain::{Channel, PaymentMethod, PaymentVendorConfig, VendorKind, VendorRouting};
use serde::Deserialize;
use serde_json::{json, Value};

/// Body of `PUT /admin/v1/vendors/{name}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveVendor {
    url: String,
    secret: String,
    timeout_ms: Option<u64>,
    supports_refund: Option<bool>,
    payouts: Option<bool>,
}

/// Default per-request timeout of an HTTP vendor.
const VENDOR_TIMEOUT_MS_DEFAULT: u64 = 10_000;

/// PUT /admin/v1/vendors/{name}: adds or changes an HTTP vendor (of
/// payments, and of payouts with `payouts: true`).
pub async fn save_vendor(
    State(state): State<AppState>,
    _admin: Admin,
    Path(name): Path<String>,
    V1Json(body): V1Json<SaveVendor>,
) -> Result<Data<Value>, V1Error> {
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
    let saved = state.engine.save_payment_vendor(config).await?;
    let VendorKind::Http { url, timeout_ms, .. } = &saved.kind else {
        return Err(V1Error::internal("saved vendor is not HTTP"));
    };
    Ok(Data(json!({
        "name": saved.name,
        "kind": "HTTP",
        "url": url,
        "timeout_ms": timeout_ms,
        "supports_refund": saved.supports_refund,
        "payouts": saved.payouts,
        "callback_path": format!("/callbacks/{}", saved.name),
    })))
}

/// Body of `PUT /admin/v1/organizations/{id}/vendors/{payment_method}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveRouting {
    vendors: Vec<String>,
}

/// PUT /admin/v1/organizations/{id}/vendors/{payment_method}: the vendors
/// tried in order for that organization's orders (empty: `NO_VENDOR`).
pub async fn save_routing(
    State(state): State<AppState>,
    _admin: Admin,
    Path((id, method)): Path<(String, String)>,
    V1Json(body): V1Json<SaveRouting>,
) -> Result<Data<Value>, V1Error> {
    let organization_id = parse_id(&id)?;
    let method = PaymentMethod::parse(&method)
        .ok_or_else(|| V1Error::invalid_body("payment_method: must be QRIS or BANK_TRANSFER"))?;
    let routing = state
        .engine
        .set_vendor_routing(VendorRouting {
            organization_id,
            method,
            vendors: body.vendors,
        })
        .await?;
    Ok(Data(json!({
        "organization_id": routing.organization_id,
        "payment_method": routing.method.as_str(),
        "vendors": routing.vendors,
    })))
}

/// PUT /admin/v1/organizations/{id}/payout-vendors/{channel}: the payout
/// vendors tried in order for that organization's disbursements on a
/// channel (empty: `NO_VENDOR`). Body as `SaveRouting`.
pub async fn save_payout_routing(
    State(state): State<AppState>,
    _admin: Admin,
    Path((id, channel)): Path<(String, String)>,
    V1Json(body): V1Json<SaveRouting>,
) -> Result<Data<Value>, V1Error> {
    let organization_id = parse_id(&id)?;
    let channel = match channel.as_str() {
        "BANK" => Channel::Bank,
        "EWALLET" => Channel::Ewallet,
        _ => return Err(V1Error::invalid_body("channel: must be BANK or EWALLET")),
    };
    let routing = state
        .engine
        .set_payout_routing(PayoutRouting {
            organization_id,
            channel,
            vendors: body.vendors,
        })
        .await?;
    Ok(Data(json!({
        "organization_id": routing.organization_id,
        "channel": routing.channel.as_str(),
        "vendors": routing.vendors,
    })))
}
