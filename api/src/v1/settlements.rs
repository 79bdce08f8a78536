//! `GET /v1/settlements` (paginated; `status`, `created_from`, `created_to`)
//! and `GET /v1/settlements/{id}` (SPEC.md 4.6).

use super::pagination::ListQuery;
use crate::error::V1Error;
use crate::extract::V1Merchant;
use crate::wire::{settlement_view, Data, Page};
use crate::AppState;
use axum::extract::{Path, State};
use paygate_engine::domain::SettlementStatus;
use paygate_engine::settlements::SettlementFilter;
use serde_json::Value;
use uuid::Uuid;

/// GET /v1/settlements: newest first, paginated.
pub async fn list_settlements(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    query: ListQuery,
) -> Result<Page, V1Error> {
    let status = match &query.status {
        None => None,
        Some(raw) => Some(SettlementStatus::parse(raw).ok_or_else(|| {
            V1Error::new(
                axum::http::StatusCode::BAD_REQUEST,
                "INVALID_QUERY",
                "status: not a settlement status",
            )
        })?),
    };
    let filter = SettlementFilter {
        status,
        created_from_ms: query.created_from_ms,
        created_to_ms: query.created_to_ms,
    };
    let (items, total) = state
        .engine
        .list_settlements(merchant.id, &filter, query.page, query.limit)?;
    Ok(Page {
        items: items.iter().map(settlement_view).collect(),
        page: query.page,
        limit: query.limit,
        total,
    })
}

/// GET /v1/settlements/{id}: 400 `INVALID_ID`, 404 `NOT_FOUND` (also another merchant's).
pub async fn get_settlement(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(id): Path<String>,
) -> Result<Data<Value>, V1Error> {
    let id = Uuid::parse_str(&id).map_err(|_| V1Error::invalid_id())?;
    let settlement = state.engine.settlement_for(merchant.id, id)?;
    Ok(Data(settlement_view(&settlement)))
}
