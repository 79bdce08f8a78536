//! The operator API under `/admin/v1/` (DESIGN.md 7), bearer-token protected,
//! in the V1 envelopes.

mod catalog;
mod disbursements;
mod ledger;
mod merchants;
mod settlements;
mod vendors;

use crate::error::V1Error;
use crate::AppState;
use axum::routing::{get, post, put};
use axum::Router;
use uuid::Uuid;

/// Every `/admin/v1/` route.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/v1/merchants", post(merchants::create_merchant))
        .route(
            "/admin/v1/merchants/{id}",
            get(merchants::get_merchant).patch(merchants::update_merchant),
        )
        .route("/admin/v1/merchants/{id}/public-key", put(merchants::set_public_key))
        .route(
            "/admin/v1/merchants/{id}/rotate-credentials",
            post(merchants::rotate_credentials),
        )
        .route("/admin/v1/merchants/{id}/wallet/credit", post(merchants::credit_wallet))
        .route("/admin/v1/ledger/verify", get(ledger::verify_ledger))
        .route(
            "/admin/v1/disbursements/{id}/approve",
            post(disbursements::approve_disbursement),
        )
        .route(
            "/admin/v1/disbursements/{id}/reject",
            post(disbursements::reject_disbursement),
        )
        .route("/admin/v1/organizations", post(catalog::create_organization))
        .route("/admin/v1/banks/{code}", put(catalog::save_bank))
        .route("/admin/v1/ewallets/{code}", put(catalog::save_ewallet))
        .route("/admin/v1/vendors/{name}", put(vendors::save_vendor))
        .route("/admin/v1/settlements/run", post(settlements::run_settlements))
        .route(
            "/admin/v1/organizations/{id}/vendors/{payment_method}",
            put(vendors::save_routing),
        )
        .route(
            "/admin/v1/organizations/{id}/payout-vendors/{channel}",
            put(vendors::save_payout_routing),
        )
}

/// Parses a path id: 400 `INVALID_ID` when it is not a UUID.
fn parse_id(raw: &str) -> Result<Uuid, V1Error> {
    Uuid::parse_str(raw).map_err(|_| V1Error::invalid_id())
}
