//! Admin merchant routes: create, read, patch, public key, rotation, wallet credit.

use super::parse_id;
use crate::error::V1Error;
use crate::extract::{Admin, V1Json};
use crate::wire::{merchant_view, Created, Data};
use crate::AppState;
use axum::extract::{Path, State};
use paygate_engine::domain::{Credentials, FeesPatch, LimitsPatch, SettlementBank, SettlementType};
use paygate_engine::{MerchantPatch, MinorUnits, NewMerchant};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};
use uuid::Uuid;

/// Body of `POST /admin/v1/merchants`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateMerchant {
    name: String,
    settlement_type: SettlementType,
    organization_id: Option<Uuid>,
    settlement_bank: Option<SettlementBank>,
    #[serde(default)]
    fees: FeesPatch,
    #[serde(default)]
    limits: LimitsPatch,
    default_notify_url: Option<String>,
    #[serde(default)]
    require_signature: bool,
}

fn credentials_view(credentials: &Credentials) -> Value {
    json!({
        "api_key": credentials.api_key,
        "client_id": credentials.client_id,
        "client_secret": credentials.client_secret,
        "webhook_secret": credentials.webhook_secret,
    })
}

/// POST /admin/v1/merchants: 201 with the merchant and its credentials, shown once.
pub async fn create_merchant(
    State(state): State<AppState>,
    _admin: Admin,
    V1Json(body): V1Json<CreateMerchant>,
) -> Result<Created<Value>, V1Error> {
    let (merchant, credentials) = state
        .engine
        .create_merchant(NewMerchant {
            name: body.name,
            settlement_type: Some(body.settlement_type),
            organization_id: body.organization_id,
            settlement_bank: body.settlement_bank,
            fees: body.fees,
            limits: body.limits,
            default_notify_url: body.default_notify_url,
            require_signature: body.require_signature,
        })
        .await?;
    Ok(Created(
        json!({ "merchant": merchant_view(&merchant), "credentials": credentials_view(&credentials) }),
    ))
}

/// GET /admin/v1/merchants/{id}.
pub async fn get_merchant(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Data<Value>, V1Error> {
    let merchant = state
        .engine
        .merchant(parse_id(&id)?)
        .ok_or(paygate_engine::EngineError::MerchantNotFound)?;
    Ok(Data(merchant_view(&merchant)))
}

/// Distinguishes an absent field (`None`) from an explicit null (`Some(None)`).
fn explicit_null<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Body of `PATCH /admin/v1/merchants/{id}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateMerchant {
    fees: Option<FeesPatch>,
    limits: Option<LimitsPatch>,
    #[serde(default, deserialize_with = "explicit_null")]
    default_notify_url: Option<Option<String>>,
    is_active: Option<bool>,
    require_signature: Option<bool>,
    settlement_bank: Option<SettlementBank>,
}

/// PATCH /admin/v1/merchants/{id}: fees, limits, URL, flags.
pub async fn update_merchant(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    V1Json(body): V1Json<UpdateMerchant>,
) -> Result<Data<Value>, V1Error> {
    let patch = MerchantPatch {
        fees: body.fees,
        limits: body.limits,
        default_notify_url: body.default_notify_url,
        is_active: body.is_active,
        require_signature: body.require_signature,
        settlement_bank: body.settlement_bank,
    };
    let merchant = state.engine.update_merchant(parse_id(&id)?, patch).await?;
    Ok(Data(merchant_view(&merchant)))
}

/// Body of `PUT /admin/v1/merchants/{id}/public-key`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetPublicKey {
    pem: String,
}

/// PUT /admin/v1/merchants/{id}/public-key: an RSA key of 2048 bits or more.
pub async fn set_public_key(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    V1Json(body): V1Json<SetPublicKey>,
) -> Result<Data<Value>, V1Error> {
    let id = parse_id(&id)?;
    let merchant = state.engine.set_public_key(id, &body.pem).await?;
    Ok(Data(merchant_view(&merchant)))
}

/// POST /admin/v1/merchants/{id}/rotate-credentials: the old key and secrets die at once.
pub async fn rotate_credentials(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Data<Value>, V1Error> {
    let credentials = state.engine.rotate_credentials(parse_id(&id)?).await?;
    Ok(Data(credentials_view(&credentials)))
}

/// Body of `POST /admin/v1/merchants/{id}/wallet/credit`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreditWallet {
    amount_minor: i64,
    reason: String,
    idempotency_key: Option<String>,
}

/// POST /admin/v1/merchants/{id}/wallet/credit: operator funding. A repeated
/// `idempotency_key` is 409 `DUPLICATE_IDEMPOTENCY_KEY` and moves nothing.
pub async fn credit_wallet(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    V1Json(body): V1Json<CreditWallet>,
) -> Result<Data<Value>, V1Error> {
    let id = parse_id(&id)?;
    if body.amount_minor < 1 {
        return Err(V1Error::invalid_body("amount_minor: must be at least 1"));
    }
    let result = state
        .engine
        .credit_wallet(
            id,
            MinorUnits::new(body.amount_minor),
            &body.reason,
            body.idempotency_key,
        )
        .await;
    match result {
        Ok(receipt) => Ok(Data(
            json!({ "merchant_id": id, "balance_minor": receipt.wallet_balance.get() }),
        )),
        Err(
            error
            @ paygate_engine::EngineError::Ledger(paygate_engine::ledger::LedgerError::DuplicateIdempotencyKey(_)),
        ) => {
            let balance = state.engine.wallet_balance(id).await?;
            Err(V1Error::from(error).with_data(json!({ "merchant_id": id, "balance_minor": balance.get() })))
        }
        Err(other) => Err(other.into()),
    }
}
