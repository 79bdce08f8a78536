//! `GET /v1/settlements` (paginated; `status`, `created_from`, `created_to`)
//! and `GET /v1/settlements/{id}`.

use super::pagination::ListQuery;
use crate::error::V1Error;
use crate::extract::V1Merchant;
use crate::openapi::names::SettlementStatusName;
use crate::wire::{settlement_view, Data, DataBody, PageBody, SettlementView};
use crate::AppState;
use axum::extract::{Path, State};
use uuid::Uuid;

status_list_route! {
    /// GET /v1/settlements: newest first, paginated.
    list_settlements: GET "/v1/settlements", tag = "Settlements",
    summary = "List settlements", description = "Newest first. `status` is a settlement status.",
    params(ListQuery<SettlementStatusName>), answer = ("A page of settlements.", PageBody<SettlementView>),
    listed_by = orders().list_settlements,
    shown_by = |_: &AppState, settlement| settlement_view(settlement),
}

/// GET /v1/settlements/{id}: 400 `INVALID_ID`, 404 `NOT_FOUND` (also another merchant's).
#[utoipa::path(get, path = "/v1/settlements/{id}", tag = "Settlements", operation_id = "get_settlement",
    summary = "Get a settlement", security(("api_key" = [])),
    params(("id" = Uuid, Path, description = "The settlement's id.")),
    responses((status = 200, description = "The settlement.", body = DataBody<SettlementView>)))]
pub async fn get_settlement(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(id): Path<String>,
) -> Result<Data<SettlementView>, V1Error> {
    let id = Uuid::parse_str(&id).map_err(|_| V1Error::invalid_id())?;
    let settlement = state.engine.orders().settlement_for(merchant.id, id)?;
    Ok(Data(settlement_view(&settlement)))
}
