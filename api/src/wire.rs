//! JSON views shared by V1 and admin: timestamps, success envelopes and the
//! records as clients see them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, SecondsFormat, Utc};
use paygate_engine::domain::{Bank, Ewallet, MerchantRecord, Organization};
use serde::Serialize;
use serde_json::{json, Value};

/// RFC 3339 UTC with `Z`, millisecond precision.
pub fn timestamp(millis: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(millis)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// 200 `{success: true, data}`.
pub struct Data<T>(pub T);

impl<T: Serialize> IntoResponse for Data<T> {
    fn into_response(self) -> Response {
        (StatusCode::OK, Json(json!({ "success": true, "data": self.0 }))).into_response()
    }
}

/// 201 `{success: true, data}`.
pub struct Created<T>(pub T);

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        (StatusCode::CREATED, Json(json!({ "success": true, "data": self.0 }))).into_response()
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
