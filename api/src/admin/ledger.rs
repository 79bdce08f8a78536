//! `GET /admin/v1/ledger/verify`.

use crate::error::V1Error;
use crate::extract::Admin;
use crate::wire::Data;
use crate::AppState;
use axum::extract::State;
use serde_json::{json, Value};

/// GET /admin/v1/ledger/verify: recomputes every balance from the stored
/// journal entries and checks the invariants of DESIGN.md 2.
pub async fn verify_ledger(State(state): State<AppState>, _admin: Admin) -> Result<Data<Value>, V1Error> {
    let report = state.engine.verify_ledger().await?;
    // A platform-wide total past the i64 range is written as a decimal
    // string: a JSON number that large would lose digits in most clients.
    let accounts: serde_json::Map<String, Value> = report
        .accounts
        .iter()
        .map(|(name, total)| {
            let value = i64::try_from(*total).map_or_else(|_| json!(total.to_string()), |small| json!(small));
            (name.to_string(), value)
        })
        .collect();
    Ok(Data(json!({
        "balanced": report.balanced,
        "entries": report.entries,
        "merchants": report.merchants,
        "problems": report.problems,
        "accounts": accounts,
    })))
}
