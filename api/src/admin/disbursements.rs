//! Operator review: `POST /admin/v1/disbursements/{id}/approve|reject`.

use super::parse_id;
use crate::error::V1Error;
use crate::extract::{Admin, OptionalJson};
use crate::wire::{disbursement_view, Data, DataBody, DisbursementView};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

/// POST /admin/v1/disbursements/{id}/approve: an IN_REVIEW disbursement goes to the vendor.
#[utoipa::path(post, path = "/admin/v1/disbursements/{id}/approve", tag = "Admin", operation_id = "admin_approve_disbursement",
    summary = "Approve a disbursement in review", description = "An IN_REVIEW disbursement goes to the payout vendor.",
    security(("admin_token" = [])), params(("id" = Uuid, Path, description = "The disbursement's id.")),
    responses((status = 200, description = "The disbursement.", body = DataBody<DisbursementView>)))]
pub async fn approve_disbursement(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Response, V1Error> {
    let disbursement = state
        .engine
        .disbursements()
        .approve_disbursement(parse_id(&id)?)
        .await?;
    Ok(Data(disbursement_view(&disbursement)).into_response())
}

/// Optional body of the rejection.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectDisbursement {
    /// Why, for the record.
    reason: Option<String>,
}

/// POST /admin/v1/disbursements/{id}/reject: PENDING or IN_REVIEW becomes
/// REJECTED and the full amount goes back to the wallet.
#[utoipa::path(post, path = "/admin/v1/disbursements/{id}/reject", tag = "Admin", operation_id = "admin_reject_disbursement",
    summary = "Reject a disbursement", description = "A PENDING or IN_REVIEW disbursement becomes REJECTED and its full \
        amount goes back to the wallet.",
    security(("admin_token" = [])), params(("id" = Uuid, Path, description = "The disbursement's id.")),
    request_body(content = Option<RejectDisbursement>),
    responses((status = 200, description = "The disbursement.", body = DataBody<DisbursementView>)))]
pub async fn reject_disbursement(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    OptionalJson(body): OptionalJson<RejectDisbursement>,
) -> Result<Response, V1Error> {
    let id = parse_id(&id)?;
    let disbursement = state
        .engine
        .disbursements()
        .reject_disbursement(id, body.reason)
        .await?;
    Ok(Data(disbursement_view(&disbursement)).into_response())
}
