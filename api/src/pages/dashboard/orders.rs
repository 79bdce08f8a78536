//! The dashboard's orders: a filtered, paged list, and one order's detail
//! with its status timeline, refunds, webhook deliveries and a refund form
//! (through the engine's own refund call, as `POST /v1/orders/{ref}/refund`).

use super::answers::{BadTokenAnswer, OrderNotFoundAnswer, PageAnswers, SignInAnswer};
use super::{layout, page_response, rupiah, DashboardForm, SignedIn, WithCsrf};
use crate::wire::timestamp;
use crate::AppState;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{html, Markup};
use paygate_engine::domain::{EventResource, Order, OrderStatus};
use paygate_engine::input::{IdempotencyKey, PositiveAmount};
use paygate_engine::orders::{NewRefund, OrderFilter, RefundReason};
use paygate_engine::webhooks::AttemptFilter;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// Orders a list page shows.
const PAGE_SIZE: usize = 20;
/// Recent delivery attempts searched for one order's webhooks.
const ATTEMPTS_SEARCHED: usize = 200;

/// The list's filters.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListFilter {
    /// Only orders in this status.
    status: Option<String>,
    /// 1-based page.
    page: Option<usize>,
}

/// The refund form.
#[derive(Deserialize, ToSchema)]
pub struct RefundForm {
    csrf: String,
    /// Made for each form shown: a form posted twice is one refund.
    nonce: String,
    /// Rupiah, whole or with a decimal comma or point.
    amount: String,
    reason: String,
}

impl WithCsrf for RefundForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// Minor units of a rupiah amount typed by a person: `25000`, `25.000`,
/// `25000,50`.
pub(super) fn parse_rupiah(text: &str) -> Option<i64> {
    let text = text.trim().replace(' ', "");
    let (whole, cents) = match text.rsplit_once(',') {
        Some((whole, cents)) if cents.len() <= 2 => (whole.replace('.', ""), cents.to_string()),
        _ => (text.replace('.', ""), String::new()),
    };
    let whole: i64 = whole.parse().ok()?;
    let cents: i64 = if cents.is_empty() {
        0
    } else {
        format!("{cents:0<2}").parse().ok()?
    };
    whole.checked_mul(100)?.checked_add(cents).filter(|m| *m > 0)
}

fn status_badge(status: &str) -> Markup {
    html! { span.badge data-status=(status) { (status) } }
}

/// GET /dashboard/orders.
#[utoipa::path(get, path = "/dashboard/orders", tag = "Pages", operation_id = "dashboard_orders",
    summary = "The dashboard's orders", security(()), params(ListFilter),
    responses(PageAnswers))]
pub async fn orders_page(
    State(state): State<AppState>,
    signed_in: SignedIn,
    filter: Result<Query<ListFilter>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let filter = filter.map(|Query(f)| f).unwrap_or(ListFilter {
        status: None,
        page: None,
    });
    let status = filter.status.as_deref().and_then(OrderStatus::parse);
    let page = filter.page.unwrap_or(1).max(1);
    let engine_filter = OrderFilter {
        status,
        ..Default::default()
    };
    let (orders, total) = state
        .engine
        .orders()
        .list_orders(signed_in.session.merchant_id, &engine_filter, page, PAGE_SIZE)
        .unwrap_or_default();
    let pages = total.div_ceil(PAGE_SIZE).max(1);
    let query = |page: usize| match status {
        Some(status) => format!("?status={}&page={page}", status.as_str()),
        None => format!("?page={page}"),
    };
    let body = html! {
        h1 { "Orders" }
        form.filters method="get" action="/dashboard/orders" {
            label for="status" { "Status" }
            select #status name="status" {
                option value="" { "All" }
                @for candidate in ["PENDING", "PAID", "PARTIALLY_REFUNDED", "REFUNDED", "EXPIRED", "FAILED"] {
                    option value=(candidate) selected[status.map(|s| s.as_str()) == Some(candidate)] { (candidate) }
                }
            }
            button type="submit" { "Filter" }
        }
        section.card {
            div.table-wrap {
                table {
                    thead { tr { th { "Ref code" } th { "Your id" } th { "Amount" } th { "Method" } th { "Status" } th { "Created" } } }
                    tbody {
                        @for order in &orders {
                            tr {
                                td { a href={"/dashboard/orders/" (order.ref_code)} { (order.ref_code) } }
                                td { (order.merchant_order_id) }
                                td.amount { (rupiah(order.amount.get())) }
                                td { (order.payment_method.as_str()) }
                                td { (status_badge(order.status.as_str())) }
                                td { (timestamp(order.created_at_ms)) }
                            }
                        }
                        @if orders.is_empty() {
                            tr { td colspan="6" { "No orders." } }
                        }
                    }
                }
            }
            p.pager {
                "Page " (page) " of " (pages) " (" (total) " orders) "
                @if page > 1 { a href={"/dashboard/orders" (query(page - 1))} { "Newer" } " " }
                @if page < pages { a href={"/dashboard/orders" (query(page + 1))} { "Older" } }
            }
        }
    };
    page_response(
        StatusCode::OK,
        layout("Orders", Some(&signed_in.session), "/dashboard/orders", body),
    )
}

/// The order's status changes, as far as its fields and refunds tell.
fn timeline(order: &Order, refunds: &[paygate_engine::domain::Refund]) -> Vec<(i64, String)> {
    let mut steps = vec![(order.created_at_ms, "Created (PENDING)".to_string())];
    if let Some(paid) = order.paid_at_ms {
        steps.push((paid, "Paid".into()));
    }
    if matches!(order.status, OrderStatus::Expired | OrderStatus::Failed) {
        steps.push((order.updated_at_ms, order.status.as_str().to_string()));
    }
    for refund in refunds {
        steps.push((
            refund.created_at_ms,
            format!("Refund of {} requested", rupiah(refund.amount.get())),
        ));
        if refund.updated_at_ms != refund.created_at_ms {
            steps.push((refund.updated_at_ms, format!("Refund {}", refund.status.as_str())));
        }
    }
    steps.sort_by_key(|(at, _)| *at);
    steps
}

fn detail(
    state: &AppState,
    signed_in: &SignedIn,
    ref_code: &str,
    status: StatusCode,
    problem: Option<&str>,
) -> Response {
    let merchant_id = signed_in.session.merchant_id;
    let Ok(order) = state.engine.orders().order_for(merchant_id, ref_code) else {
        let body = html! { h1 { "Order not found" } p { a href="/dashboard/orders" { "All orders" } } };
        return page_response(
            StatusCode::NOT_FOUND,
            layout("Order not found", Some(&signed_in.session), "/dashboard/orders", body),
        );
    };
    let refunds = state.engine.orders().order_refunds(order.id).unwrap_or_default();
    let (attempts, _) = state
        .engine
        .webhooks()
        .list_webhook_attempts(merchant_id, &AttemptFilter::default(), 1, ATTEMPTS_SEARCHED)
        .unwrap_or_default();
    let attempts: Vec<_> = attempts
        .into_iter()
        .filter(|attempt| {
            matches!(state.engine.webhooks().webhook_event(attempt.event_id),
                Ok(Some(event)) if matches!(&event.resource, EventResource::Order(o) if o.id == order.id))
        })
        .collect();
    let refundable = matches!(order.status, OrderStatus::Paid | OrderStatus::PartiallyRefunded);
    let body = html! {
        p { a href="/dashboard/orders" { "All orders" } }
        h1 { "Order " (order.ref_code) }
        @if let Some(problem) = problem { p.problem role="alert" { (problem) } }
        section.card {
            dl {
                dt { "Status" } dd { (status_badge(order.status.as_str())) }
                dt { "Amount" } dd { (rupiah(order.amount.get())) }
                dt { "Refunded" } dd { (rupiah(order.refunded_amount.get())) }
                dt { "Your id" } dd { (order.merchant_order_id) }
                dt { "Method" } dd { (order.payment_method.as_str()) }
                @if let Some(name) = &order.customer_name { dt { "Customer" } dd { (name) } }
            }
        }
        section.card {
            h2 { "Timeline" }
            ol.timeline {
                @for (at, what) in timeline(&order, &refunds) { li { time { (timestamp(at)) } " " (what) } }
            }
        }
        section.card {
            h2 { "Webhooks" }
            @if attempts.is_empty() { p.note { "No deliveries among the latest." } }
            ul {
                @for attempt in &attempts {
                    li {
                        code { (attempt.event) } " to " (attempt.url) ": "
                        @match attempt.status_code { Some(code) => { "HTTP " (code) }, None => { "no answer" } }
                        @if attempt.delivered { " (delivered)" }
                    }
                }
            }
        }
        @if refundable {
            section.card {
                h2 { "Refund" }
                form method="post" action={"/dashboard/orders/" (order.ref_code) "/refund"} {
                    input type="hidden" name="csrf" value=(signed_in.session.csrf);
                    input type="hidden" name="nonce" value=(super::session::random_token());
                    label for="amount" { "Amount (Rp)" }
                    input #amount type="text" name="amount" inputmode="decimal" required;
                    label for="reason" { "Reason" }
                    input #reason type="text" name="reason" required;
                    button type="submit" { "Refund" }
                }
            }
        }
    };
    page_response(
        status,
        layout(&order.ref_code, Some(&signed_in.session), "/dashboard/orders", body),
    )
}

/// GET /dashboard/orders/{ref_code}.
#[utoipa::path(get, path = "/dashboard/orders/{ref_code}", tag = "Pages", operation_id = "dashboard_order",
    summary = "One order in the dashboard", security(()),
    params(("ref_code" = String, Path, description = "The order's ref code.")),
    responses(
        (status = 200, description = "The order, its timeline, refunds and webhooks.", content_type = "text/html", body = String),
        SignInAnswer,
        OrderNotFoundAnswer,
    ))]
pub async fn order_page(State(state): State<AppState>, signed_in: SignedIn, Path(ref_code): Path<String>) -> Response {
    state.engine.webhooks().settle_recorded_attempts().await;
    detail(&state, &signed_in, &ref_code, StatusCode::OK, None)
}

/// POST /dashboard/orders/{ref_code}/refund.
#[utoipa::path(post, path = "/dashboard/orders/{ref_code}/refund", tag = "Pages", operation_id = "dashboard_refund",
    summary = "Refund an order from the dashboard", security(()),
    params(("ref_code" = String, Path, description = "The order's ref code.")),
    request_body(content = RefundForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Refund requested: back to the order."),
        (status = 400, description = "Not refunded: the page says why.", content_type = "text/html", body = String),
        BadTokenAnswer,
        OrderNotFoundAnswer,
    ))]
pub async fn refund(
    State(state): State<AppState>,
    Path(ref_code): Path<String>,
    DashboardForm(signed_in, form): DashboardForm<RefundForm>,
) -> Response {
    let Some(amount_minor) = parse_rupiah(&form.amount) else {
        return detail(
            &state,
            &signed_in,
            &ref_code,
            StatusCode::BAD_REQUEST,
            Some("Enter an amount in rupiah."),
        );
    };
    let orders = state.engine.orders();
    let new = orders
        .ensure_refundable_order(signed_in.session.merchant_id, &ref_code)
        .and_then(|()| {
            Ok(NewRefund {
                amount: PositiveAmount::parse(amount_minor)?,
                reason: RefundReason::parse(Some(form.reason), None)?,
                // A form posted twice is one refund: its key is the form's own.
                idempotency_key: IdempotencyKey::parse(format!(
                    "dashboard-{}",
                    form.nonce.chars().take(64).collect::<String>()
                ))?,
            })
        });
    let created = match new {
        Ok(new) => {
            orders
                .create_refund(signed_in.session.merchant_id, &ref_code, new)
                .await
        }
        Err(error) => Err(error),
    };
    match created {
        Ok(_) => Redirect::to(&format!("/dashboard/orders/{ref_code}")).into_response(),
        Err(error) => detail(
            &state,
            &signed_in,
            &ref_code,
            StatusCode::BAD_REQUEST,
            Some(&format!("Not refunded: {error}.")),
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rupiah_as_people_type_it() {
        assert_eq!(super::parse_rupiah("25000"), Some(2_500_000));
        assert_eq!(super::parse_rupiah("25.000"), Some(2_500_000));
        assert_eq!(super::parse_rupiah("25.000,50"), Some(2_500_050));
        assert_eq!(super::parse_rupiah("1,5"), Some(150));
        assert_eq!(super::parse_rupiah("0"), None);
        assert_eq!(super::parse_rupiah("abc"), None);
    }
}
