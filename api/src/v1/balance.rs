//! `GET /v1/balance` (SPEC.md 2.6, 4.4).

use crate::error::V1Error;
use crate::extract::V1Merchant;
use crate::wire::Data;
use crate::AppState;
use axum::extract::State;
use serde_json::{json, Value};

/// GET /v1/balance: a WALLET merchant's durable wallet balance.
pub async fn get_balance(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
) -> Result<Data<Value>, V1Error> {
    let balance = state.engine.wallet_balance(merchant.id).await?;
    Ok(Data(
        json!({ "merchant_id": merchant.id, "balance_minor": balance.get(), "currency": "IDR" }),
    ))
}
