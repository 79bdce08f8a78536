//! Admin merchant routes: create, read, patch, public key, rotation, wallet credit.

use super::parse_id;
use super::settings::{FeesPatch, LimitsPatch};
use crate::error::V1Error;
use crate::extract::{Admin, V1Json};
use crate::openapi::names::SettlementTypeName;
use crate::openapi::values::{HttpUrlText, IdempotencyKeyText, NameText};
use crate::wire::{merchant_view, Created, Data, DataBody, MerchantView};
use crate::AppState;
use axum::extract::{Path, State};
use paygate_engine::domain::{Credentials, SettlementBank, SettlementType};
use paygate_engine::input::HttpUrl;
use paygate_engine::{EngineError, MinorUnits, NewMerchant, SettingChange};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// The `id` path parameter of the merchant routes.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub struct MerchantId {
    /// The merchant's id.
    #[allow(dead_code)]
    id: Uuid,
}

/// Body of `POST /admin/v1/merchants`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateMerchant {
    #[schema(value_type = NameText)]
    name: String,
    #[schema(value_type = SettlementTypeName)]
    settlement_type: SettlementType,
    /// An organization of `POST /admin/v1/organizations`; the default one when absent.
    organization_id: Option<Uuid>,
    settlement_bank: Option<SettlementBank>,
    #[serde(default)]
    fees: FeesPatch,
    #[serde(default)]
    limits: LimitsPatch,
    #[schema(value_type = Option<HttpUrlText>)]
    default_notify_url: Option<String>,
    #[serde(default)]
    require_signature: bool,
}

/// A merchant's secrets, shown only when made.
#[derive(Serialize, ToSchema)]
pub struct CredentialsView {
    /// For `X-API-Key`.
    api_key: String,
    /// The Legacy `clientId`.
    client_id: String,
    /// The Legacy signing secret.
    client_secret: String,
    /// `whsec_...`: signs webhooks and `X-Signature`.
    webhook_secret: String,
}

fn credentials_view(credentials: &Credentials) -> CredentialsView {
    CredentialsView {
        api_key: credentials.api_key.clone(),
        client_id: credentials.client_id.clone(),
        client_secret: credentials.client_secret.clone(),
        webhook_secret: credentials.webhook_secret.clone(),
    }
}

/// A new merchant and its credentials.
#[derive(Serialize, ToSchema)]
pub struct CreatedMerchantView {
    merchant: MerchantView,
    credentials: CredentialsView,
}

/// POST /admin/v1/merchants: 201 with the merchant and its credentials, shown once.
#[utoipa::path(post, path = "/admin/v1/merchants", tag = "Admin", operation_id = "admin_create_merchant",
    summary = "Create a merchant", description = "Answers with its credentials, shown this once.",
    security(("admin_token" = [])), request_body = CreateMerchant,
    responses((status = 201, description = "The merchant and its credentials.", body = DataBody<CreatedMerchantView>)))]
pub async fn create_merchant(
    State(state): State<AppState>,
    _admin: Admin,
    V1Json(body): V1Json<CreateMerchant>,
) -> Result<Created<CreatedMerchantView>, V1Error> {
    let new = NewMerchant {
        name: body.name,
        settlement_type: body.settlement_type,
        organization_id: body.organization_id,
        settlement_bank: body.settlement_bank,
        fees: body.fees.overrides()?,
        limits: body.limits.overrides()?,
        default_notify_url: notify_url(body.default_notify_url)?,
        require_signature: body.require_signature,
    };
    let (merchant, credentials) = state.engine.merchants().create_merchant(new).await?;
    Ok(Created(CreatedMerchantView {
        merchant: merchant_view(&merchant),
        credentials: credentials_view(&credentials),
    }))
}

/// GET /admin/v1/merchants/{id}.
#[utoipa::path(get, path = "/admin/v1/merchants/{id}", tag = "Admin", operation_id = "admin_get_merchant",
    summary = "Get a merchant", security(("admin_token" = [])), params(MerchantId),
    responses((status = 200, description = "The merchant.", body = DataBody<MerchantView>)))]
pub async fn get_merchant(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Data<MerchantView>, V1Error> {
    let merchant = state
        .engine
        .merchants()
        .merchant(parse_id(&id)?)
        .ok_or(paygate_engine::EngineError::MerchantNotFound)?;
    Ok(Data(merchant_view(&merchant)))
}

/// Distinguishes an absent field (`None`) from an explicit null (`Some(None)`).
fn explicit_null<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Body of `PATCH /admin/v1/merchants/{id}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMerchant {
    fees: Option<FeesPatch>,
    limits: Option<LimitsPatch>,
    /// `null` removes it.
    #[serde(default, deserialize_with = "explicit_null")]
    #[schema(value_type = Option<HttpUrlText>)]
    default_notify_url: Option<Option<String>>,
    is_active: Option<bool>,
    require_signature: Option<bool>,
    settlement_bank: Option<SettlementBank>,
}

/// PATCH /admin/v1/merchants/{id}: fees, limits, URL, flags.
#[utoipa::path(patch, path = "/admin/v1/merchants/{id}", tag = "Admin", operation_id = "admin_update_merchant",
    summary = "Change a merchant", description = "Fees, limits, default notify URL, flags; absent fields keep their value.",
    security(("admin_token" = [])), params(MerchantId), request_body = UpdateMerchant,
    responses((status = 200, description = "The merchant.", body = DataBody<MerchantView>)))]
pub async fn update_merchant(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    V1Json(body): V1Json<UpdateMerchant>,
) -> Result<Data<MerchantView>, V1Error> {
    let merchants = state.engine.merchants();
    let id = parse_id(&id)?;
    // An unknown merchant is refused as such before its changes are read.
    merchants.merchant(id).ok_or(EngineError::MerchantNotFound)?;
    let merchant = merchants.update_merchant(id, body.changes()?).await?;
    Ok(Data(merchant_view(&merchant)))
}

impl UpdateMerchant {
    /// The changes named, each checked, in the order their refusals take.
    fn changes(self) -> Result<Vec<SettingChange>, EngineError> {
        let mut changes = Vec::new();
        if let Some(fees) = self.fees {
            changes.push(SettingChange::Fees(fees.overrides()?));
        }
        if let Some(limits) = self.limits {
            changes.push(SettingChange::Limits(limits.overrides()?));
        }
        if let Some(url) = self.default_notify_url {
            changes.push(SettingChange::DefaultNotifyUrl(notify_url(url)?));
        }
        changes.extend(self.is_active.map(SettingChange::Active));
        changes.extend(self.require_signature.map(SettingChange::RequireSignature));
        changes.extend(self.settlement_bank.map(SettingChange::SettlementBank));
        Ok(changes)
    }
}

/// A `default_notify_url` as sent, checked as a URL.
fn notify_url(url: Option<String>) -> Result<Option<HttpUrl>, EngineError> {
    url.map(|url| HttpUrl::parse("default_notify_url", url)).transpose()
}

/// Body of `PUT /admin/v1/merchants/{id}/public-key`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPublicKey {
    /// PEM of an RSA public key of 2048 bits or more.
    pem: String,
}

/// PUT /admin/v1/merchants/{id}/public-key: an RSA key of 2048 bits or more.
#[utoipa::path(put, path = "/admin/v1/merchants/{id}/public-key", tag = "Admin", operation_id = "admin_set_public_key",
    summary = "Set a merchant's RSA public key", description = "The key Legacy `X-SIGNATURE`s are checked with.",
    security(("admin_token" = [])), params(MerchantId), request_body = SetPublicKey,
    responses((status = 200, description = "The merchant.", body = DataBody<MerchantView>)))]
pub async fn set_public_key(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    V1Json(body): V1Json<SetPublicKey>,
) -> Result<Data<MerchantView>, V1Error> {
    let id = parse_id(&id)?;
    let merchant = state.engine.merchants().set_public_key(id, &body.pem).await?;
    Ok(Data(merchant_view(&merchant)))
}

/// POST /admin/v1/merchants/{id}/rotate-credentials: the old key and secrets die at once.
#[utoipa::path(post, path = "/admin/v1/merchants/{id}/rotate-credentials", tag = "Admin", operation_id = "admin_rotate_credentials",
    summary = "Rotate a merchant's credentials", description = "The old key and secrets stop working at once.",
    security(("admin_token" = [])), params(MerchantId),
    responses((status = 200, description = "The new credentials, shown this once.", body = DataBody<CredentialsView>)))]
pub async fn rotate_credentials(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Data<CredentialsView>, V1Error> {
    let id = parse_id(&id)?;
    let credentials = state.engine.merchants().rotate_credentials(id).await?;
    // The dashboard's sessions of the merchant end with its old credentials.
    state.sessions.end_merchant(id, None);
    Ok(Data(credentials_view(&credentials)))
}

/// Body of `POST /admin/v1/merchants/{id}/wallet/credit`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditWallet {
    /// At least 1, in minor units.
    #[schema(minimum = 1)]
    amount_minor: i64,
    /// At most 1,024 characters.
    #[schema(max_length = 1024)]
    reason: String,
    /// A key used before is 409 and moves nothing.
    #[schema(value_type = Option<IdempotencyKeyText>)]
    idempotency_key: Option<String>,
}

/// A wallet's balance after a credit.
#[derive(Serialize, ToSchema)]
pub struct CreditView {
    merchant_id: Uuid,
    balance_minor: i64,
}

/// POST /admin/v1/merchants/{id}/wallet/credit: operator funding. A repeated
/// `idempotency_key` is 409 `DUPLICATE_IDEMPOTENCY_KEY` and moves nothing.
#[utoipa::path(post, path = "/admin/v1/merchants/{id}/wallet/credit", tag = "Admin", operation_id = "admin_credit_wallet",
    summary = "Credit a wallet", description = "Operator funding of a WALLET merchant. A repeated `idempotency_key` is 409 \
        `DUPLICATE_IDEMPOTENCY_KEY`, with the balance, and moves nothing.",
    security(("admin_token" = [])), params(MerchantId), request_body = CreditWallet,
    responses((status = 200, description = "The balance after the credit.", body = DataBody<CreditView>)))]
pub async fn credit_wallet(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    V1Json(body): V1Json<CreditWallet>,
) -> Result<Data<CreditView>, V1Error> {
    let id = parse_id(&id)?;
    if body.amount_minor < 1 {
        return Err(V1Error::invalid_body("amount_minor: must be at least 1"));
    }
    let result = state
        .engine
        .merchants()
        .credit_wallet(
            id,
            MinorUnits::new(body.amount_minor),
            &body.reason,
            body.idempotency_key,
        )
        .await;
    match result {
        Ok(receipt) => Ok(Data(CreditView {
            merchant_id: id,
            balance_minor: receipt.wallet_balance.get(),
        })),
        Err(
            error
            @ paygate_engine::EngineError::Ledger(paygate_engine::ledger::LedgerError::DuplicateIdempotencyKey(_)),
        ) => {
            let balance = state.engine.merchants().wallet_balance(id).await?;
            Err(V1Error::from(error).with_data(CreditView {
                merchant_id: id,
                balance_minor: balance.get(),
            }))
        }
        Err(other) => Err(other.into()),
    }
}

/// Body of `POST /admin/v1/merchants/{id}/users`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    /// The sign-in name; unique across merchants.
    #[schema(format = Email)]
    email: String,
    /// At least 12 characters; kept only as an argon2id hash.
    #[schema(min_length = 12, max_length = 1024)]
    password: String,
}

/// A dashboard user.
#[derive(Serialize, ToSchema)]
pub struct UserView {
    id: Uuid,
    email: String,
}

/// POST /admin/v1/merchants/{id}/users: a dashboard user.
#[utoipa::path(post, path = "/admin/v1/merchants/{id}/users", tag = "Admin", operation_id = "admin_create_user",
    summary = "Create a dashboard user", description = "A person who signs in to the merchant's dashboard at `/dashboard`.",
    security(("admin_token" = [])), params(MerchantId), request_body = CreateUser,
    responses((status = 201, description = "The user.", body = DataBody<UserView>)))]
pub async fn create_user(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    V1Json(body): V1Json<CreateUser>,
) -> Result<Created<UserView>, V1Error> {
    let user = state
        .engine
        .merchants()
        .create_merchant_user(parse_id(&id)?, &body.email, &body.password)
        .await?;
    Ok(Created(UserView {
        id: user.id,
        email: user.email,
    }))
}
