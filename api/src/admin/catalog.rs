//! Admin reference data: organizations, banks, e-wallets.

use crate::error::V1Error;
use crate::extract::{Admin, V1Json};
use crate::wire::{bank_view, ewallet_view, organization_view, Created, Data};
use crate::AppState;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::Value;

/// Body of `POST /admin/v1/organizations`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateOrganization {
    name: String,
}

/// POST /admin/v1/organizations.
pub async fn create_organization(
    State(state): State<AppState>,
    _admin: Admin,
    V1Json(body): V1Json<CreateOrganization>,
) -> Result<Created<Value>, V1Error> {
    let organization = state.engine.create_organization(&body.name).await?;
    Ok(Created(organization_view(&organization)))
}

/// Body of `PUT /admin/v1/banks/{code}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveBank {
    is_enabled: bool,
    name: Option<String>,
}

/// PUT /admin/v1/banks/{code}: enable, disable, rename or add a bank.
pub async fn save_bank(
    State(state): State<AppState>,
    _admin: Admin,
    Path(code): Path<String>,
    V1Json(body): V1Json<SaveBank>,
) -> Result<Data<Value>, V1Error> {
    let bank = state.engine.save_bank(&code, body.is_enabled, body.name).await?;
    Ok(Data(bank_view(&bank)))
}

/// Body of `PUT /admin/v1/ewallets/{code}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveEwallet {
    is_enabled: bool,
}

/// PUT /admin/v1/ewallets/{code}: enable or disable an e-wallet (404 for unknown codes).
pub async fn save_ewallet(
    State(state): State<AppState>,
    _admin: Admin,
    Path(code): Path<String>,
    V1Json(body): V1Json<SaveEwallet>,
) -> Result<Data<Value>, V1Error> {
    let ewallet = state
        .engine
        .save_ewallet(&code, body.is_enabled)
        .await
        .map_err(|error| match error {
            paygate_engine::EngineError::EwalletNotFound => V1Error::new(
                axum::http::StatusCode::NOT_FOUND,
                "EWALLET_NOT_FOUND",
                "e-wallet not found",
            ),
            other => other.into(),
        })?;
    Ok(Data(ewallet_view(&ewallet, &state.config.cdn_url)))
}
