//! `POST/GET /v1/beneficiaries` and `DELETE /v1/beneficiaries/{id}`.

use crate::commands::body_with_account_fields;
use crate::error::V1Error;
use crate::extract::{Signed, SignedJson, V1Merchant};
use crate::openapi::names::ChannelName;
use crate::wire::{beneficiary_view, BeneficiaryView, Created, Data, DataBody};
use crate::AppState;
use axum::extract::{Path, State};
use paygate_engine::beneficiaries::{Label, NewBeneficiary};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

body_with_account_fields! {
    /// Body of `POST /v1/beneficiaries`: every field optional here so that
    /// each channel's missing fields get their own code.
    #[derive(Deserialize, ToSchema)]
    pub struct CreateBeneficiary {
        ..account_fields {
            /// `BANK` or `EWALLET`.
            #[schema(required = true, value_type = ChannelName)]
            channel
        },
        /// A name of your own for it, at most 255 characters.
        #[schema(max_length = 255)]
        label: Option<String>,
        /// Becomes the merchant's default beneficiary.
        #[serde(default)]
        is_default: bool,
    }
}

/// POST /v1/beneficiaries: 201, verification PENDING until the account inquiry answers.
#[utoipa::path(post, path = "/v1/beneficiaries", tag = "Beneficiaries", operation_id = "create_beneficiary",
    summary = "Save a beneficiary", description = "Its verification is PENDING until the account inquiry answers.",
    security(("api_key" = []), ("api_key" = [], "v1_signature" = [])),
    request_body = CreateBeneficiary,
    responses((status = 201, description = "The beneficiary.", body = DataBody<BeneficiaryView>)))]
pub async fn create_beneficiary(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    SignedJson(body): SignedJson<CreateBeneficiary>,
) -> Result<Created<BeneficiaryView>, V1Error> {
    let account = body.account_fields().saved_account()?;
    let new = NewBeneficiary {
        account,
        label: body.label.map(Label::parse).transpose()?,
        is_default: body.is_default,
    };
    let beneficiary = state
        .engine
        .disbursements()
        .create_beneficiary(merchant.id, new)
        .await?;
    Ok(Created(beneficiary_view(&beneficiary)))
}

/// GET /v1/beneficiaries: every saved one, not paginated.
#[utoipa::path(get, path = "/v1/beneficiaries", tag = "Beneficiaries", operation_id = "list_beneficiaries",
    summary = "List beneficiaries", description = "Every saved beneficiary, not paginated.",
    security(("api_key" = [])),
    responses((status = 200, description = "The beneficiaries.", body = DataBody<Vec<BeneficiaryView>>)))]
pub async fn list_beneficiaries(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
) -> Result<Data<Vec<BeneficiaryView>>, V1Error> {
    Ok(Data(
        state
            .engine
            .disbursements()
            .beneficiaries(merchant.id)?
            .iter()
            .map(beneficiary_view)
            .collect(),
    ))
}

/// `{deleted: true}`.
#[derive(Serialize, ToSchema)]
pub struct Deleted {
    /// Always `true`.
    deleted: bool,
}

/// DELETE /v1/beneficiaries/{id}: soft delete, `{deleted: true}`.
#[utoipa::path(delete, path = "/v1/beneficiaries/{id}", tag = "Beneficiaries", operation_id = "delete_beneficiary",
    summary = "Delete a beneficiary", security(("api_key" = []), ("api_key" = [], "v1_signature" = [])),
    params(("id" = Uuid, Path, description = "The beneficiary's id.")),
    responses((status = 200, description = "Deleted.", body = DataBody<Deleted>)))]
pub async fn delete_beneficiary(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(id): Path<String>,
    _signed: Signed,
) -> Result<Data<Deleted>, V1Error> {
    let id = Uuid::parse_str(&id).map_err(|_| V1Error::invalid_id())?;
    state.engine.disbursements().delete_beneficiary(merchant.id, id).await?;
    Ok(Data(Deleted { deleted: true }))
}
