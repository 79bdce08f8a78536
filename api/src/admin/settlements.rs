//! `POST /admin/v1/settlements/run`: settles now what the
//! daily run would, for one merchant or all MANUAL merchants.

use crate::error::V1Error;
use crate::extract::{Admin, OptionalJson};
use crate::wire::{settlement_view, Data, DataBody, SettlementView};
use crate::AppState;
use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// Body of the run (both fields optional).
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunSettlements {
    /// Only this merchant; else every MANUAL merchant.
    #[schema(value_type = Option<Uuid>)]
    merchant_id: Option<String>,
    /// Settle up to this time (RFC 3339); else up to now.
    #[schema(format = DateTime)]
    period_end: Option<String>,
}

/// POST /admin/v1/settlements/run: the settlements created (none when
/// nothing was left to settle).
#[utoipa::path(post, path = "/admin/v1/settlements/run", tag = "Admin", operation_id = "admin_run_settlements",
    summary = "Run settlements now", description = "Settles now what the daily run would, for one merchant or every MANUAL merchant.",
    security(("admin_token" = [])), request_body(content = Option<RunSettlements>),
    responses((status = 200, description = "The settlements created; none when nothing was left to settle.", body = DataBody<Vec<SettlementView>>)))]
pub async fn run_settlements(
    State(state): State<AppState>,
    _admin: Admin,
    OptionalJson(body): OptionalJson<RunSettlements>,
) -> Result<Data<Vec<SettlementView>>, V1Error> {
    let merchant_id = body
        .merchant_id
        .as_deref()
        .map(|raw| Uuid::parse_str(raw).map_err(|_| V1Error::invalid_body("merchant_id: must be a UUID")))
        .transpose()?;
    let period_end = match &body.period_end {
        None => None,
        Some(raw) => Some(
            chrono::DateTime::parse_from_rfc3339(raw)
                .map_err(|_| V1Error::invalid_body("period_end: must be an RFC 3339 timestamp"))?
                .timestamp_millis(),
        ),
    };
    let created = state.engine.orders().run_settlements(merchant_id, period_end).await?;
    Ok(Data(created.iter().map(settlement_view).collect()))
}
