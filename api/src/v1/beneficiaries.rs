//! `POST/GET /v1/beneficiaries` and `DELETE /v1/beneficiaries/{id}` (SPEC.md 4.5).

use crate::error::V1Error;
use crate::extract::{Signed, SignedJson, V1Merchant};
use crate::wire::{beneficiary_view, Created, Data};
use crate::AppState;
use axum::extract::{Path, State};
use paygate_engine::beneficiaries::NewBeneficiary;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

/// Body of `POST /v1/beneficiaries`; per-channel requirements are checked by
/// the engine so each gets its own code.
#[derive(Deserialize)]
pub struct CreateBeneficiary {
    channel: Option<String>,
    label: Option<String>,
    bank_short_code: Option<String>,
    account_number: Option<String>,
    account_name: Option<String>,
    ewallet_provider: Option<String>,
    ewallet_phone: Option<String>,
    #[serde(default)]
    is_default: bool,
}

/// POST /v1/beneficiaries: 201, verification PENDING until the account inquiry answers.
pub async fn create_beneficiary(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    SignedJson(body): SignedJson<CreateBeneficiary>,
) -> Result<Created<Value>, V1Error> {
    let new = NewBeneficiary {
        channel: body.channel,
        label: body.label,
        bank_short_code: body.bank_short_code,
        account_number: body.account_number,
        account_name: body.account_name,
        ewallet_provider: body.ewallet_provider,
        ewallet_phone: body.ewallet_phone,
        is_default: body.is_default,
    };
    let beneficiary = state.engine.create_beneficiary(merchant.id, new).await?;
    Ok(Created(beneficiary_view(&beneficiary)))
}

/// GET /v1/beneficiaries: every saved one, not paginated.
pub async fn list_beneficiaries(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
) -> Result<Data<Vec<Value>>, V1Error> {
    Ok(Data(
        state
            .engine
            .beneficiaries(merchant.id)?
            .iter()
            .map(beneficiary_view)
            .collect(),
    ))
}

/// DELETE /v1/beneficiaries/{id}: soft delete, `{deleted: true}`.
pub async fn delete_beneficiary(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(id): Path<String>,
    _signed: Signed,
) -> Result<Data<Value>, V1Error> {
    let id = Uuid::parse_str(&id).map_err(|_| V1Error::invalid_id())?;
    state.engine.delete_beneficiary(merchant.id, id).await?;
    Ok(Data(json!({ "deleted": true })))
}
