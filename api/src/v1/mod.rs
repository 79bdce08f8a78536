//! The V1 merchant API routes (SPEC.md 4): authenticated by `X-API-Key`.

mod balance;
mod beneficiaries;
mod catalog;
mod disbursements;
pub mod pagination;

use crate::AppState;
use axum::routing::{delete, get, post};
use axum::Router;

pub use catalog::EwalletCache;

/// Every `/v1/` route.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/balance", get(balance::get_balance))
        .route("/v1/banks", get(catalog::list_banks))
        .route("/v1/ewallets", get(catalog::list_ewallets))
        .route(
            "/v1/disbursements",
            post(disbursements::create_disbursement).get(disbursements::list_disbursements),
        )
        .route("/v1/disbursements/{id}", get(disbursements::get_disbursement))
        .route(
            "/v1/beneficiaries",
            post(beneficiaries::create_beneficiary).get(beneficiaries::list_beneficiaries),
        )
        .route("/v1/beneficiaries/{id}", delete(beneficiaries::delete_beneficiary))
        .route(
            "/v1/sandbox/disbursements/{id}/complete",
            post(disbursements::complete_disbursement),
        )
}
