//! The dashboard's overview: the wallet's balance, today's paid volume and
//! count, and the last 14 days' paid volume as a bar chart drawn in SVG on
//! the server.

use super::answers::PageAnswers;
use super::{layout, page_response, rupiah, SignedIn};
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use paygate_engine::domain::disbursement::wib_day;
use paygate_engine::domain::SettlementType;
use paygate_engine::input::CreatedBetween;
use paygate_engine::orders::OrderFilter;

/// Days the chart covers, today included.
const CHART_DAYS: usize = 14;
/// Orders read at most for the figures: a page stays quick for the largest
/// merchants, and says when it counted only the newest.
const ORDERS_READ_MAX: usize = 5_000;
const PAGE: usize = 50;

/// Paid volume and count per WIB day, oldest first, and whether the orders
/// read stopped at `ORDERS_READ_MAX`.
fn paid_by_day(state: &AppState, merchant_id: uuid::Uuid, now_ms: i64) -> (Vec<(i64, i64, u64)>, bool) {
    let today = wib_day(now_ms);
    let first_day = today - CHART_DAYS as i64 + 1;
    let mut days: Vec<(i64, i64, u64)> = (first_day..=today).map(|day| (day, 0, 0)).collect();
    // An order is paid after it is made: one made a day before the window
    // may still have been paid inside it.
    let filter = OrderFilter {
        created: CreatedBetween::since(now_ms - (CHART_DAYS as i64 + 1) * 86_400_000),
        ..Default::default()
    };
    let mut read = 0;
    let mut page = 1;
    loop {
        let Ok((orders, total)) = state.engine.orders().list_orders(merchant_id, &filter, page, PAGE) else {
            break;
        };
        for order in &orders {
            let Some(paid_at) = order.paid_at_ms else { continue };
            let day = wib_day(paid_at);
            if day >= first_day && day <= today {
                let slot = &mut days[(day - first_day) as usize];
                slot.1 += order.amount.get();
                slot.2 += 1;
            }
        }
        read += orders.len();
        if orders.is_empty() || read >= total {
            return (days, false);
        }
        if read >= ORDERS_READ_MAX {
            return (days, true);
        }
        page += 1;
    }
    (days, false)
}

/// The bar chart: one bar a day, labelled for screen readers by its figures.
fn chart(days: &[(i64, i64, u64)]) -> Markup {
    const WIDTH: i64 = 700;
    const HEIGHT: i64 = 180;
    let highest = days.iter().map(|d| d.1).max().unwrap_or(0).max(1);
    let slot = WIDTH / days.len().max(1) as i64;
    let label = |day: i64| paygate_engine::clock::wib_format(day * 86_400_000 - 7 * 3_600_000, "%d %b");
    html! {
        svg.chart viewBox={"0 0 " (WIDTH) " " (HEIGHT + 24)} role="img"
            aria-label={"Paid volume per day over the last " (CHART_DAYS) " days"} {
            @for (i, (day, volume, count)) in days.iter().enumerate() {
                @let height = (volume * (HEIGHT - 4) / highest).max(if *volume > 0 { 2 } else { 0 });
                @let x = i as i64 * slot + 4;
                g {
                    title { (label(*day)) ": " (rupiah(*volume)) ", " (count) " paid" }
                    rect x=(x) y=(HEIGHT - height) width=(slot - 8) height=(height) {}
                    text x=(x + (slot - 8) / 2) y=(HEIGHT + 16) text-anchor="middle" { (label(*day)) }
                }
            }
        }
    }
}

/// GET /dashboard: the overview.
#[utoipa::path(get, path = "/dashboard", tag = "Pages", operation_id = "dashboard_overview",
    summary = "The dashboard's overview",
    description = "Balance, today's paid volume and count, and a 14-day chart. Without a session: to the sign-in page.",
    security(()),
    responses(PageAnswers))]
pub async fn overview(State(state): State<AppState>, signed_in: SignedIn) -> Response {
    let merchant_id = signed_in.session.merchant_id;
    let merchant = state.engine.merchants().merchant(merchant_id);
    let name = merchant.as_ref().map(|m| m.name.clone()).unwrap_or_default();
    let wallet = merchant
        .as_ref()
        .is_some_and(|m| m.settlement_type == SettlementType::Wallet);
    let balance = if wallet {
        state
            .engine
            .merchants()
            .wallet_balance(merchant_id)
            .await
            .ok()
            .map(|b| b.get())
    } else {
        None
    };
    let now_ms = state.engine.operations().clock().now().timestamp_millis();
    let (days, capped) = paid_by_day(&state, merchant_id, now_ms);
    let (_, today_volume, today_count) = days.last().copied().unwrap_or_default();
    let body = html! {
        h1 { (name) }
        div.figures {
            section.card {
                h2 { "Balance" }
                @if let Some(balance) = balance {
                    p.figure #balance { (rupiah(balance)) }
                } @else {
                    p.figure { "Settled to your bank" }
                    p.note { "A MANUAL merchant has no wallet: paid orders are settled daily." }
                }
            }
            section.card {
                h2 { "Paid today" }
                p.figure #today-volume { (rupiah(today_volume)) }
                p.note #today-count { (today_count) " orders" }
            }
        }
        section.card {
            h2 { "Paid volume, last 14 days" }
            (chart(&days))
            @if capped {
                p.note { "Counted from your newest " (ORDERS_READ_MAX) " orders." }
            }
        }
    };
    page_response(
        StatusCode::OK,
        layout("Overview", Some(&signed_in.session), "/dashboard", body),
    )
}
