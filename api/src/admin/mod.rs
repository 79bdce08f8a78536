//! The operator API under `/admin/v1/`, bearer-token protected,
//! in the V1 envelopes.

mod catalog;
mod disbursements;
mod ledger;
mod merchants;
mod settings;
mod settlements;
mod vendors;

use crate::error::V1Error;
use crate::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Every `/admin/v1/` route, each with its entry in the document.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(merchants::create_merchant))
        .routes(routes!(merchants::get_merchant, merchants::update_merchant))
        .routes(routes!(merchants::set_public_key))
        .routes(routes!(merchants::rotate_credentials))
        .routes(routes!(merchants::credit_wallet))
        .routes(routes!(merchants::create_user))
        .routes(routes!(ledger::verify_ledger))
        .routes(routes!(disbursements::approve_disbursement))
        .routes(routes!(disbursements::reject_disbursement))
        .routes(routes!(catalog::create_organization))
        .routes(routes!(catalog::save_bank))
        .routes(routes!(catalog::save_ewallet))
        .routes(routes!(vendors::save_vendor))
        .routes(routes!(settlements::run_settlements))
        .routes(routes!(vendors::save_routing))
        .routes(routes!(vendors::save_payout_routing))
}

/// Parses a path id: 400 `INVALID_ID` when it is not a UUID.
fn parse_id(raw: &str) -> Result<Uuid, V1Error> {
    Uuid::parse_str(raw).map_err(|_| V1Error::invalid_id())
}
