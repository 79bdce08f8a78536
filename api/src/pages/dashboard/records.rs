//! The dashboard's lists of saved records: beneficiaries and settlements,
//! read through the engine calls `GET /v1/beneficiaries` and
//! `GET /v1/settlements` use.

use super::answers::PageAnswers;
use super::{layout, page_response, rupiah, SignedIn};
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use paygate_engine::settlements::SettlementFilter;

/// Settlements the page shows.
const PAGE_SIZE: usize = 25;

/// GET /dashboard/beneficiaries.
#[utoipa::path(get, path = "/dashboard/beneficiaries", tag = "Pages", operation_id = "dashboard_beneficiaries",
    summary = "The dashboard's beneficiaries", security(()),
    responses(PageAnswers))]
pub async fn beneficiaries_page(State(state): State<AppState>, signed_in: SignedIn) -> Response {
    let beneficiaries = state
        .engine
        .disbursements()
        .beneficiaries(signed_in.session.merchant_id)
        .unwrap_or_default();
    let body = html! {
        h1 { "Beneficiaries" }
        section.card {
            div.table-wrap {
                table {
                    thead { tr { th { "Label" } th { "Channel" } th { "Verification" } th { "Default" } } }
                    tbody {
                        @for b in &beneficiaries {
                            tr {
                                td { (b.label.clone().unwrap_or_default()) }
                                td { (b.destination.channel().as_str()) }
                                td { (b.verification_status.as_str()) @if let Some(name) = &b.verified_name { " (" (name) ")" } }
                                td { @if b.is_default { "yes" } }
                            }
                        }
                        @if beneficiaries.is_empty() { tr { td colspan="4" { "No beneficiaries." } } }
                    }
                }
            }
        }
    };
    page_response(
        StatusCode::OK,
        layout(
            "Beneficiaries",
            Some(&signed_in.session),
            "/dashboard/beneficiaries",
            body,
        ),
    )
}

/// GET /dashboard/settlements.
#[utoipa::path(get, path = "/dashboard/settlements", tag = "Pages", operation_id = "dashboard_settlements",
    summary = "The dashboard's settlements", security(()),
    responses(PageAnswers))]
pub async fn settlements_page(State(state): State<AppState>, signed_in: SignedIn) -> Response {
    let (settlements, total) = state
        .engine
        .orders()
        .list_settlements(
            signed_in.session.merchant_id,
            &SettlementFilter::default(),
            1,
            PAGE_SIZE,
        )
        .unwrap_or_default();
    let body = html! {
        h1 { "Settlements" }
        section.card {
            h2 { "Latest (" (total) " in all)" }
            div.table-wrap {
                table {
                    thead { tr { th { "Date" } th { "Orders" } th { "Gross" } th { "Net payout" } th { "Status" } } }
                    tbody {
                        @for s in &settlements {
                            tr {
                                td { (s.settlement_date) }
                                td { (s.order_count) }
                                td.amount { (rupiah(s.gross_amount.get())) }
                                td.amount { (rupiah(s.net_payout.get())) }
                                td { span.badge { (s.status.as_str()) } }
                            }
                        }
                        @if settlements.is_empty() { tr { td colspan="5" { "No settlements." } } }
                    }
                }
            }
        }
    };
    page_response(
        StatusCode::OK,
        layout("Settlements", Some(&signed_in.session), "/dashboard/settlements", body),
    )
}
