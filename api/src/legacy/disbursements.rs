//! `POST /api/disbursement/create`, `/create-ewallet`, `/query` and
//! `/get-balance` (SPEC.md 2.9, 4.8, 5.2; DESIGN.md 5): `X-SIGNATURE` over
//! the raw body, whole IDR in, two-decimal strings out.

use super::{check_x_signature, messages, wib, LegacyBody, LegacyError, LegacyOk};
use crate::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::{Destination, Disbursement, Source};
use paygate_engine::EngineError;
use serde::Serialize;
use serde_json::{json, Value};

/// A Legacy disbursement (SPEC.md 2.9).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyDisbursement {
    ref_code: String,
    order_id: String,
    account_number: String,
    account_name: Option<String>,
    bank: Option<LegacyBank>,
    request_amount: String,
    disbursement_fee: String,
    disbursement_amount: String,
    status: &'static str,
    request_at: String,
}

#[derive(Serialize)]
struct LegacyBank {
    name: String,
    code: String,
}

/// A disbursement as Legacy clients see it (answers and webhooks).
pub fn legacy_disbursement(state: &AppState, disbursement: &Disbursement) -> LegacyDisbursement {
    let (account_number, account_name, bank) = match &disbursement.destination {
        Destination::Bank {
            bank_short_code,
            account_number,
            account_name,
            ..
        } => {
            let name = state
                .engine
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

/// A resubmitted `orderId` answers with the existing disbursement when the
/// request describes it (same API, channel, account and amount); otherwise
/// the id is taken.
fn existing_or_conflict(
    state: &AppState,
    existing: &Disbursement,
    wanted: &NewDisbursement,
) -> Result<LegacyOk<LegacyDisbursement>, LegacyError> {
    let same_account = match &existing.destination {
        Destination::Bank {
            bank_short_code,
            account_number,
            ..
        } => {
            wanted.channel.as_deref() == Some("BANK")
                && wanted.bank_short_code.as_deref() == Some(bank_short_code.as_str())
                && wanted.account_number.as_deref() == Some(account_number.as_str())
        }
        Destination::Ewallet { provider, phone } => {
            wanted.channel.as_deref() == Some("EWALLET")
                && wanted.ewallet_provider.as_deref() == Some(provider.as_str())
                && wanted
                    .ewallet_phone
                    .as_deref()
                    .map(paygate_engine::domain::disbursement::normalize_phone)
                    .as_deref()
                    == Some(phone.as_str())
        }
    };
    let same =
        existing.source == Source::Legacy && same_account && Some(existing.request_amount.get()) == wanted.amount_minor;
    if same {
        Ok(LegacyOk(legacy_disbursement(state, existing)))
    } else {
        Err(LegacyError::new(StatusCode::CONFLICT, messages::ORDER_ID_USED))
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
    let mut new = NewDisbursement {
        idempotency_key: Some(order_id.clone()),
        amount_minor: Some(amount_minor),
        notify_url,
        source: Some(Source::Legacy),
        ..Default::default()
    };
    if ewallet {
        let code = body
            .string("ewalletCode")
            .map_err(|_| LegacyError::new(StatusCode::BAD_REQUEST, messages::INVALID_EWALLET_CODE))?;
        new.channel = Some("EWALLET".into());
        new.ewallet_provider = Some(code);
        new.ewallet_phone = Some(account_number);
    } else {
        new.channel = Some("BANK".into());
        new.bank_short_code = Some(body.string("bankCode")?);
        new.account_number = Some(account_number);
        new.account_name = Some(body.string("accountName")?);
    }
    // The idempotency key of a merchant's disbursements is one namespace
    // across both APIs (SPEC.md 9 maps orderId to idempotency_key).
    if let Some(existing) = state.engine.disbursement_by_idempotency_key(merchant.id, &order_id)? {
        return existing_or_conflict(state, &existing, &new);
    }
    match state.engine.create_disbursement(merchant.id, new.clone()).await {
        Ok(disbursement) => Ok(LegacyOk(legacy_disbursement(state, &disbursement))),
        Err(EngineError::DuplicateDisbursement(existing)) => existing_or_conflict(state, &existing, &new),
        Err(error) => Err(error.into()),
    }
}

/// POST /api/disbursement/create (bank).
pub async fn create_bank(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: LegacyBody,
) -> Result<LegacyOk<LegacyDisbursement>, LegacyError> {
    create(&state, &headers, &body, false).await
}

/// POST /api/disbursement/create-ewallet.
pub async fn create_ewallet(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: LegacyBody,
) -> Result<LegacyOk<LegacyDisbursement>, LegacyError> {
    create(&state, &headers, &body, true).await
}

/// POST /api/disbursement/query.
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
        .disbursement_by_idempotency_key(merchant.id, &order_id)?
        .filter(|d| d.source == Source::Legacy)
        .ok_or(LegacyError::new(StatusCode::NOT_FOUND, messages::ORDER_ID_NOT_FOUND))?;
    Ok(LegacyOk(legacy_disbursement(&state, &disbursement)))
}

/// POST /api/disbursement/get-balance: `{clientId, balance}` (DESIGN.md 5).
pub async fn get_balance(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: LegacyBody,
) -> Result<LegacyOk<Value>, LegacyError> {
    let merchant = body.merchant(&state)?;
    check_x_signature(&merchant, &headers, &body)?;
    // A MANUAL merchant's NotWalletMerchant maps to 422 "Merchant Setting Invalid".
    let balance = state.engine.wallet_balance(merchant.id).await?;
    Ok(LegacyOk(json!({
        "clientId": merchant.credentials.client_id,
        "balance": balance.to_decimal_string(),
    })))
}
