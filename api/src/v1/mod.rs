//! The V1 merchant API routes (SPEC.md 4): authenticated by `X-API-Key`.

mod balance;
mod catalog;

use crate::AppState;
use axum::routing::get;
use axum::Router;

pub use catalog::EwalletCache;

/// Every `/v1/` route.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/balance", get(balance::get_balance))
        .route("/v1/banks", get(catalog::list_banks))
        .route("/v1/ewallets", get(catalog::list_ewallets))
}
