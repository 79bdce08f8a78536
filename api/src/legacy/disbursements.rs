//! `POST /api/disbursement/create`, `/create-ewallet`, `/query` and
//! `/get-balance`: `X-SIGNATURE` over
//! the raw body, whole IDR in, two-decimal strings out.

use super::LegacySuccessBody;
use super::{check_x_signature, wib, LegacyBody, LegacyError, LegacyOk};
use crate::commands::{key_and_amount, AccountFields};
use crate::error::ErrorKind;
use crate::openapi::names::DisbursementStatusName;
use crate::openapi::values::NonBlankText;
use crate::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::{Destination, Disbursement, Source};
use paygate_engine::input::HttpUrl;
use paygate_engine::EngineError;
use serde::Serialize;
use utoipa::ToSchema;

/// A Legacy disbursement.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyDisbursement {
    ref_code: String,
    order_id: String,
    /// The account number, or the e-wallet's phone number.
    account_number: String,
    account_name: Option<String>,
    bank: Option<LegacyBank>,
    /// Rupiah with two decimals, e.g. `"50000.00"`.
    #[schema(pattern = "^-?[0-9]+\\.[0-9]{2}$")]
    request_amount: String,
    #[schema(pattern = "^-?[0-9]+\\.[0-9]{2}$")]
    disbursement_fee: String,
    #[schema(pattern = "^-?[0-9]+\\.[0-9]{2}$")]
    disbursement_amount: String,
    #[schema(value_type = DisbursementStatusName)]
    status: &'static str,
    /// `YYYY-MM-DD HH:MM:SS`, WIB.
    request_at: String,
}

/// The bank of a Legacy disbursement.
#[derive(Serialize, ToSchema)]
pub struct LegacyBank {
    name: String,
    code: String,
}

/// A disbursement as Legacy clients see it (answers and webhooks).
pub fn legacy_disbursement(state: &AppState, disbursement: &Disbursement) -> LegacyDisbursement {
    let (account_number, account_name, bank) = match &*disbursement.destination {
        Destination::Bank {
            bank_short_code,
            account_number,
            account_name,
            ..
        } => {
            let name = state
                .engine
                .catalog()
                .bank(bank_short_code)
                .map_or_else(|| bank_short_code.clone(), |bank| bank.name);
            (
                account_number.clone(),
                Some(account_name.clone()),
                Some(LegacyBank {
                    name,
                    code: bank_short_code.clone(),
                }),
            )
        }
        Destination::Ewallet { phone, .. } => (phone.clone(), None, None),
    };
    LegacyDisbursement {
        ref_code: disbursement.ref_code.clone(),
        order_id: disbursement.idempotency_key.clone(),
        account_number,
        account_name,
        bank,
        request_amount: disbursement.request_amount.to_decimal_string(),
        disbursement_fee: disbursement.fee.to_decimal_string(),
        disbursement_amount: disbursement.final_amount.to_decimal_string(),
        status: disbursement.status.as_str(),
        request_at: wib(disbursement.created_at_ms),
    }
}

/// A Legacy disbursement as its body spells it, before its values are checked.
struct LegacyRequest {
    order_id: String,
    /// `bankCode`, or `ewalletCode` for an e-wallet.
    code: String,
    /// The account number, or the e-wallet's phone.
    account_number: String,
    /// BANK only.
    account_name: Option<String>,
    amount_minor: i64,
    notify_url: Option<String>,
}

impl LegacyRequest {
    /// Whether this request describes `existing` (same API, channel,
    /// account and amount): a resubmitted `orderId` then answers with it.
    fn describes(&self, existing: &Disbursement) -> bool {
        let same_account = match &*existing.destination {
            Destination::Bank {
                bank_short_code,
                account_number,
                ..
            } => self.account_name.is_some() && self.code == *bank_short_code && self.account_number == *account_number,
            Destination::Ewallet { provider, phone } => {
                self.account_name.is_none()
                    && self.code == *provider
                    && paygate_engine::domain::disbursement::normalize_phone(&self.account_number) == *phone
            }
        };
        existing.source == Source::Legacy && same_account && existing.request_amount.get() == self.amount_minor
    }

    /// The disbursement it asks for, every value checked as V1's are.
    fn command(&self) -> Result<NewDisbursement, EngineError> {
        let bank = self.account_name.is_some();
        let fields = AccountFields {
            channel: Some(if bank { "BANK" } else { "EWALLET" }),
            bank_short_code: bank.then_some(self.code.as_str()),
            account_number: bank.then_some(self.account_number.as_str()),
            account_name: self.account_name.as_deref(),
            ewallet_provider: (!bank).then_some(self.code.as_str()),
            ewallet_phone: (!bank).then_some(self.account_number.as_str()),
        };
        let (idempotency_key, amount) = key_and_amount(Some(self.order_id.clone()), Some(self.amount_minor))?;
        Ok(NewDisbursement {
            idempotency_key,
            amount,
            payee: fields.payee(None)?,
            notify_url: self
                .notify_url
                .clone()
                .map(|url| HttpUrl::parse("notify_url", url))
                .transpose()?,
            source: Source::Legacy,
        })
    }
}

/// The existing disbursement when the request describes it; otherwise the id is taken.
fn existing_or_conflict(
    state: &AppState,
    existing: &Disbursement,
    wanted: &LegacyRequest,
) -> Result<LegacyOk<LegacyDisbursement>, LegacyError> {
    if wanted.describes(existing) {
        Ok(LegacyOk(legacy_disbursement(state, existing)))
    } else {
        Err(LegacyError::from(ErrorKind::DuplicateIdempotencyKey))
    }
}

async fn create(
    state: &AppState,
    headers: &HeaderMap,
    body: &LegacyBody,
    ewallet: bool,
) -> Result<LegacyOk<LegacyDisbursement>, LegacyError> {
    let merchant = body.merchant(state)?;
    check_x_signature(&merchant, headers, body)?;
    let order_id = body.string("orderId")?;
    let account_number = body.string("accountNumber")?;
    let request_amount = body.rupiah("requestAmount")?;
    let amount_minor = request_amount
        .checked_mul(100)
        .ok_or_else(LegacyError::invalid_parameters)?;
    let notify_url = body.optional_string("notifyUrl")?;
    let (code, account_name) = if ewallet {
        let code = body
            .string("ewalletCode")
            .map_err(|_| LegacyError::from(ErrorKind::EwalletNotFound))?;
        (code, None)
    } else {
        (body.string("bankCode")?, Some(body.string("accountName")?))
    };
    let wanted = LegacyRequest {
        order_id,
        code,
        account_number,
        account_name,
        amount_minor,
        notify_url,
    };
    let disbursements = state.engine.disbursements();
    // The idempotency key of a merchant's disbursements is one namespace
    // across both APIs (a Legacy `orderId` is a V1 `idempotency_key`).
    if let Some(existing) = disbursements.disbursement_by_idempotency_key(merchant.id, &wanted.order_id)? {
        return existing_or_conflict(state, &existing, &wanted);
    }
    // Whether this merchant may disburse at all comes before its values.
    disbursements.ensure_may_disburse(merchant.id)?;
    match disbursements.create_disbursement(merchant.id, wanted.command()?).await {
        Ok(disbursement) => Ok(LegacyOk(legacy_disbursement(state, &disbursement))),
        Err(EngineError::DuplicateDisbursement(existing)) => existing_or_conflict(state, &existing, &wanted),
        Err(error) => Err(error.into()),
    }
}

/// The body of `POST /api/disbursement/create`, as the handler reads it.
#[derive(serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LegacyCreateBankDisbursement)]
#[allow(dead_code)]
pub struct CreateBankBody {
    #[schema(value_type = NonBlankText)]
    client_id: String,
    /// Your id of the disbursement; one namespace with V1 idempotency keys.
    #[schema(value_type = NonBlankText)]
    order_id: String,
    #[schema(value_type = NonBlankText)]
    bank_code: String,
    #[schema(value_type = NonBlankText)]
    account_number: String,
    #[schema(value_type = NonBlankText)]
    account_name: String,
    /// Whole rupiah, at least 1.
    #[schema(minimum = 1)]
    request_amount: i64,
    notify_url: Option<String>,
}

/// The body of `POST /api/disbursement/create-ewallet`, as the handler reads it.
#[derive(serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LegacyCreateEwalletDisbursement)]
#[allow(dead_code)]
pub struct CreateEwalletBody {
    #[schema(value_type = NonBlankText)]
    client_id: String,
    #[schema(value_type = NonBlankText)]
    order_id: String,
    /// An e-wallet's short code, e.g. `DANA`.
    #[schema(value_type = NonBlankText)]
    ewallet_code: String,
    /// The e-wallet account's phone number.
    #[schema(value_type = NonBlankText)]
    account_number: String,
    /// Whole rupiah, at least 1.
    #[schema(minimum = 1)]
    request_amount: i64,
    notify_url: Option<String>,
}

/// The body of `POST /api/disbursement/query`, as the handler reads it.
#[derive(serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LegacyQueryDisbursement)]
#[allow(dead_code)]
pub struct QueryBody {
    #[schema(value_type = NonBlankText)]
    client_id: String,
    #[schema(value_type = NonBlankText)]
    order_id: String,
}

/// The body of `POST /api/disbursement/get-balance`, as the handler reads it.
#[derive(serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LegacyGetBalance)]
#[allow(dead_code)]
pub struct BalanceBody {
    #[schema(value_type = NonBlankText)]
    client_id: String,
}

/// A Legacy balance.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyBalance {
    client_id: String,
    /// Rupiah with two decimals.
    #[schema(pattern = "^-?[0-9]+\\.[0-9]{2}$")]
    balance: String,
}

/// POST /api/disbursement/create (bank).
#[utoipa::path(post, path = "/api/disbursement/create", tag = "Legacy", operation_id = "legacy_create_bank_disbursement",
    summary = "Create a bank disbursement (Legacy)",
    description = "Whole rupiah in, two-decimal strings out. The same `orderId` describing the same disbursement answers \
        with it; otherwise 409.",
    security(("legacy_x_signature" = [])), request_body = CreateBankBody,
    responses((status = 200, description = "The disbursement.", body = LegacySuccessBody<LegacyDisbursement>)))]
pub async fn create_bank(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: LegacyBody,
) -> Result<LegacyOk<LegacyDisbursement>, LegacyError> {
    create(&state, &headers, &body, false).await
}

/// POST /api/disbursement/create-ewallet.
#[utoipa::path(post, path = "/api/disbursement/create-ewallet", tag = "Legacy", operation_id = "legacy_create_ewallet_disbursement",
    summary = "Create an e-wallet disbursement (Legacy)",
    security(("legacy_x_signature" = [])), request_body = CreateEwalletBody,
    responses((status = 200, description = "The disbursement.", body = LegacySuccessBody<LegacyDisbursement>)))]
pub async fn create_ewallet(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: LegacyBody,
) -> Result<LegacyOk<LegacyDisbursement>, LegacyError> {
    create(&state, &headers, &body, true).await
}

/// POST /api/disbursement/query.
#[utoipa::path(post, path = "/api/disbursement/query", tag = "Legacy", operation_id = "legacy_query_disbursement",
    summary = "Get a disbursement (Legacy)",
    security(("legacy_x_signature" = [])), request_body = QueryBody,
    responses((status = 200, description = "The disbursement in its current status.", body = LegacySuccessBody<LegacyDisbursement>)))]
pub async fn query(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: LegacyBody,
) -> Result<LegacyOk<LegacyDisbursement>, LegacyError> {
    let merchant = body.merchant(&state)?;
    check_x_signature(&merchant, &headers, &body)?;
    let order_id = body.string("orderId")?;
    let disbursement = state
        .engine
        .disbursements()
        .disbursement_by_idempotency_key(merchant.id, &order_id)?
        .filter(|d| d.source == Source::Legacy)
        .ok_or(LegacyError::from(ErrorKind::DisbursementNotFound))?;
    Ok(LegacyOk(legacy_disbursement(&state, &disbursement)))
}

/// POST /api/disbursement/get-balance: `{clientId, balance}`.
#[utoipa::path(post, path = "/api/disbursement/get-balance", tag = "Legacy", operation_id = "legacy_get_balance",
    summary = "Get the wallet balance (Legacy)",
    security(("legacy_x_signature" = [])), request_body = BalanceBody,
    responses((status = 200, description = "The balance.", body = LegacySuccessBody<LegacyBalance>)))]
pub async fn get_balance(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: LegacyBody,
) -> Result<LegacyOk<LegacyBalance>, LegacyError> {
    let merchant = body.merchant(&state)?;
    check_x_signature(&merchant, &headers, &body)?;
    // A MANUAL merchant's NotWalletMerchant maps to 422 "Merchant Setting Invalid".
    let balance = state.engine.merchants().wallet_balance(merchant.id).await?;
    Ok(LegacyOk(LegacyBalance {
        client_id: merchant.credentials.client_id.clone(),
        balance: balance.to_decimal_string(),
    }))
}
