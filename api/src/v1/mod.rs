//! The V1 merchant API routes (SPEC.md 4): authenticated by `X-API-Key`.

mod balance;
mod beneficiaries;
mod catalog;
mod disbursement_batches;
mod disbursements;
mod history;
mod orders;
pub mod pagination;
mod settlements;
mod webhooks;

use crate::extract::BodyBytesMax;
use crate::AppState;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};
use axum::{Extension, Router};
use disbursement_batches::BATCH_BODY_BYTES_MAX;
use std::convert::Infallible;

pub use catalog::EwalletCache;

/// Every `/v1/` route.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/balance", get(balance::get_balance))
        .route("/v1/balance/history", get(history::balance_history))
        .route("/v1/banks", get(catalog::list_banks))
        .route("/v1/ewallets", get(catalog::list_ewallets))
        .route(
            "/v1/disbursements",
            post(disbursements::create_disbursement).get(disbursements::list_disbursements),
        )
        .route("/v1/disbursements/{id}", get(disbursements::get_disbursement))
        .route(
            "/v1/disbursements/batch",
            post(disbursement_batches::create_disbursement_batch)
                .layer::<_, Infallible>(DefaultBodyLimit::max(BATCH_BODY_BYTES_MAX))
                .layer::<_, Infallible>(Extension(BodyBytesMax(BATCH_BODY_BYTES_MAX))),
        )
        .route(
            "/v1/disbursements/batch/{id}",
            get(disbursement_batches::get_disbursement_batch),
        )
        .route(
            "/v1/beneficiaries",
            post(beneficiaries::create_beneficiary).get(beneficiaries::list_beneficiaries),
        )
        .route("/v1/beneficiaries/{id}", delete(beneficiaries::delete_beneficiary))
        .route(
            "/v1/sandbox/disbursements/{id}/complete",
            post(disbursements::complete_disbursement),
        )
        .route("/v1/settlements", get(settlements::list_settlements))
        .route("/v1/settlements/{id}", get(settlements::get_settlement))
        .route("/v1/webhooks/deliveries", get(webhooks::list_deliveries))
        .route("/v1/webhooks/deliveries/{event_id}/resend", post(webhooks::resend))
        .route("/v1/orders", post(orders::create_order).get(orders::list_orders))
        .route("/v1/orders/{ref_code}", get(orders::get_order))
        .route("/v1/orders/{ref_code}/qr.png", get(orders::qr_png))
        .route("/v1/orders/{ref_code}/refund", post(orders::create_refund))
        .route("/v1/orders/{ref_code}/refunds", get(orders::list_refunds))
        .route("/v1/sandbox/orders/{ref_code}/pay", post(orders::sandbox_pay))
        .route("/v1/sandbox/orders/{ref_code}/expire", post(orders::sandbox_expire))
        .route("/v1/sandbox/orders/{ref_code}/fail", post(orders::sandbox_fail))
        .route(
            "/v1/sandbox/refunds/{id}/complete",
            post(orders::sandbox_complete_refund),
        )
}
