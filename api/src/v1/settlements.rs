//! `GET /v1/settlements` (paginated; `status`, `created_from`, `created_to`)
//! and `GET /v1/settlements/{id}`.

use super::pagination::ListQuery;
use crate::error::V1Error;
use crate::extract::V1Merchant;
use crate::openapi::names::SettlementStatusName;
use crate::wire::{settlement_view, Data, DataBody, Page, PageBody, SettlementView};
use crate::AppState;
use axum::extract::{Path, State};
use uuid::Uuid;

/// GET /v1/settlements: newest first, paginated.
#[utoipa::path(get, path = "/v1/settlements", tag = "Settlements", operation_id = "list_settlements",
    summary = "List settlements", description = "Newest first. `status` is a settlement status.",
    security(("api_key" = [])), params(ListQuery<SettlementStatusName>),
    responses((status = 200, description = "A page of settlements.", body = PageBody<SettlementView>)))]
pub async fn list_settlements(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    query: ListQuery<SettlementStatusName>,
) -> Result<Page<SettlementView>, V1Error> {
    let (items, total) =
        state
            .engine
            .orders()
            .list_settlements(merchant.id, &query.filter(), query.page, query.limit)?;
    Ok(query.page(&items, total, settlement_view))
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
