//! `GET /v1/balance`: a WALLET merchant's balance (any other merchant: 403
//! `NOT_WALLET_MERCHANT`).

use crate::error::V1Error;
use crate::extract::V1Merchant;
use crate::wire::Data;
use crate::wire::DataBody;
use crate::AppState;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// A WALLET merchant's balance.
#[derive(Serialize, ToSchema)]
pub struct BalanceView {
    merchant_id: Uuid,
    /// Durable balance, in minor units.
    balance_minor: i64,
    /// Always `IDR`.
    currency: &'static str,
}

/// GET /v1/balance: a WALLET merchant's durable wallet balance.
#[utoipa::path(get, path = "/v1/balance", tag = "Balance", operation_id = "get_balance",
    summary = "Get the wallet balance", description = "The durable balance of a WALLET merchant's wallet.",
    security(("api_key" = [])),
    responses((status = 200, description = "The balance.", body = DataBody<BalanceView>)))]
pub async fn get_balance(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
) -> Result<Data<BalanceView>, V1Error> {
    let balance = state.engine.merchants().wallet_balance(merchant.id).await?;
    Ok(Data(BalanceView {
        merchant_id: merchant.id,
        balance_minor: balance.get(),
        currency: "IDR",
    }))
}
