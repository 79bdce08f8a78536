//! Admin reference data: organizations, banks, e-wallets.

use crate::error::{ErrorKind, V1Error};
use crate::extract::{Admin, V1Json};
use crate::openapi::values::NameText;
use crate::wire::{
    bank_view, ewallet_view, organization_view, BankView, Created, Data, DataBody, EwalletView, OrganizationView,
};
use crate::AppState;
use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::ToSchema;

/// Body of `POST /admin/v1/organizations`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOrganization {
    #[schema(value_type = NameText)]
    name: String,
}

/// POST /admin/v1/organizations.
#[utoipa::path(post, path = "/admin/v1/organizations", tag = "Admin", operation_id = "admin_create_organization",
    summary = "Create an organization", security(("admin_token" = [])), request_body = CreateOrganization,
    responses((status = 201, description = "The organization.", body = DataBody<OrganizationView>)))]
pub async fn create_organization(
    State(state): State<AppState>,
    _admin: Admin,
    V1Json(body): V1Json<CreateOrganization>,
) -> Result<Created<OrganizationView>, V1Error> {
    let organization = state.engine.catalog().create_organization(&body.name).await?;
    Ok(Created(organization_view(&organization)))
}

/// Body of `PUT /admin/v1/banks/{code}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveBank {
    is_enabled: bool,
    /// Required to add a bank; renames an existing one.
    #[schema(value_type = Option<NameText>)]
    name: Option<String>,
}

/// PUT /admin/v1/banks/{code}: enable, disable, rename or add a bank.
#[utoipa::path(put, path = "/admin/v1/banks/{code}", tag = "Admin", operation_id = "admin_save_bank",
    summary = "Add or change a bank", description = "Enables, disables, renames or adds a bank.",
    security(("admin_token" = [])), params(("code" = String, Path, description = "The bank's short code: 1 to 32 of A-Z, 0-9 and _.", pattern = "^[A-Z0-9_]{1,32}$")),
    request_body = SaveBank,
    responses((status = 200, description = "The bank.", body = DataBody<BankView>)))]
pub async fn save_bank(
    State(state): State<AppState>,
    _admin: Admin,
    Path(code): Path<String>,
    V1Json(body): V1Json<SaveBank>,
) -> Result<Data<BankView>, V1Error> {
    let bank = state
        .engine
        .catalog()
        .save_bank(&code, body.is_enabled, body.name)
        .await?;
    Ok(Data(bank_view(&bank)))
}

/// Body of `PUT /admin/v1/ewallets/{code}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveEwallet {
    is_enabled: bool,
}

/// PUT /admin/v1/ewallets/{code}: enable or disable an e-wallet (404 for unknown codes).
#[utoipa::path(put, path = "/admin/v1/ewallets/{code}", tag = "Admin", operation_id = "admin_save_ewallet",
    summary = "Enable or disable an e-wallet", security(("admin_token" = [])),
    params(("code" = String, Path, description = "The e-wallet's short code.")),
    request_body = SaveEwallet,
    responses((status = 200, description = "The e-wallet.", body = DataBody<EwalletView>)))]
pub async fn save_ewallet(
    State(state): State<AppState>,
    _admin: Admin,
    Path(code): Path<String>,
    V1Json(body): V1Json<SaveEwallet>,
) -> Result<Data<EwalletView>, V1Error> {
    let ewallet = state
        .engine
        .catalog()
        .save_ewallet(&code, body.is_enabled)
        .await
        .map_err(|error| match error {
            paygate_engine::EngineError::EwalletNotFound => {
                V1Error::new(ErrorKind::EwalletPathNotFound, "e-wallet not found")
            }
            other => other.into(),
        })?;
    Ok(Data(ewallet_view(&ewallet, &state.config.cdn_url)))
}
