//! Operator review: `POST /admin/v1/disbursements/{id}/approve|reject`.

use super::parse_id;
use crate::error::V1Error;
use crate::extract::{Admin, OptionalJson};
use crate::wire::{disbursement_view, Data};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// POST /admin/v1/disbursements/{id}/approve: an IN_REVIEW disbursement goes to the vendor.
pub async fn approve_disbursement(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Response, V1Error> {
    let disbursement = state.engine.approve_disbursement(parse_id(&id)?).await?;
    Ok(Data(disbursement_view(&disbursement)).into_response())
}

/// Optional body of the rejection.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RejectDisbursement {
    reason: Option<String>,
}

/// POST /admin/v1/disbursements/{id}/reject: PENDING or IN_REVIEW becomes
/// REJECTED and the full amount goes back to the wallet.
pub async fn reject_disbursement(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    OptionalJson(body): OptionalJson<RejectDisbursement>,
) -> Result<Response, V1Error> {
    let id = parse_id(&id)?;
    let disbursement = state.engine.reject_disbursement(id, body.reason).await?;
    Ok(Data(disbursement_view(&disbursement)).into_response())
}
