//! The payer's checkout page, `/checkout/{order id}`: the
//! order's UUID is the capability, so no key is asked. The page is rendered
//! on the server (`view`, in the words of `text`); `checkout.js` polls
//! `/checkout/{id}/status` to keep it live.

mod text;
mod view;

use crate::error::V1Error;
use crate::openapi::names::OrderStatusName;
use crate::pages::html;
use crate::pages::language::Language;
use crate::wire::timestamp;
use crate::AppState;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use paygate_engine::domain::{Order, OrderStatus};
use paygate_engine::EngineError;
use serde::Serialize;
use std::collections::HashMap;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Seconds the paid page waits before sending the payer to `return_url`:
/// time to read the success, well within the 5 s by which the payer must be
/// on the way.
pub const REDIRECT_SECONDS: u32 = 3;

/// The checkout routes.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(checkout_page))
        .routes(routes!(checkout_status))
}

/// What the payer is told, from the order's status. Refunds come after a
/// payment, so a refunded order still reads as paid on this page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Waiting for the payment.
    Pending,
    /// Paid (refunded in part or in full included).
    Paid,
    /// Not paid in time.
    Expired,
    /// The payment failed.
    Failed,
}

impl Outcome {
    /// The outcome of `status`.
    pub fn of(status: OrderStatus) -> Outcome {
        match status {
            OrderStatus::Pending => Outcome::Pending,
            OrderStatus::Paid | OrderStatus::PartiallyRefunded | OrderStatus::Refunded => Outcome::Paid,
            OrderStatus::Expired => Outcome::Expired,
            OrderStatus::Failed => Outcome::Failed,
        }
    }

    /// The name the page's markup and script use.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pending => "pending",
            Outcome::Paid => "paid",
            Outcome::Expired => "expired",
            Outcome::Failed => "failed",
        }
    }
}

/// The order's `return_url` if it is http(s). The engine accepts nothing
/// else, but the page navigates to it, so a `javascript:` URL must never
/// get that far whatever stored it.
pub fn safe_return_url(order: &Order) -> Option<&str> {
    order
        .return_url
        .as_deref()
        .filter(|url| url.starts_with("https://") || url.starts_with("http://"))
}

/// The order an id names: `Ok(None)` for an unknown or malformed id.
fn find_order(state: &AppState, id: &str) -> Result<Option<Order>, EngineError> {
    match Uuid::parse_str(id) {
        Ok(id) => state.engine.orders().stored_order(id),
        Err(_) => Ok(None),
    }
}

/// GET /checkout/{id}: the page the payer pays on.
#[utoipa::path(get, path = "/checkout/{id}", tag = "Pages", operation_id = "checkout_page",
    summary = "The checkout page",
    description = "The hosted page an order's `checkout_url` names: the merchant, the amount, the QRIS image or the \
        virtual account, the time left and the live status; on payment it sends the payer to the order's \
        `return_url`. Bahasa Indonesia unless `?lang=en` or `Accept-Language` prefers English. No key: the order's \
        id is the capability.",
    security(()),
    params(
        ("id" = String, Path, description = "The order's id (a UUID)."),
        ("lang" = Option<String>, Query, description = "`id` or `en`: the page's language, over `Accept-Language`. \
            Other values are ignored."),
        ("Accept-Language" = Option<String>, Header, description = "English when it prefers `en` to `id`."),
    ),
    responses(
        (status = 200, description = "The page.", content_type = "text/html", body = String),
        (status = 404, description = "No order has this id: a page saying so.", content_type = "text/html", body = String),
        (status = 500, description = "The order could not be read: a page saying so.", content_type = "text/html", body = String),
    ))]
pub async fn checkout_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let accept_language = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
    let language = Language::choose(query.get("lang").map(String::as_str), accept_language);
    // The problem pages' language switch: the same path, the other language.
    let other_path = |language: Language| format!("?lang={}", language.other().tag());
    let mut response = match find_order(&state, &id) {
        Ok(Some(order)) => {
            let merchant = state.engine.merchants().merchant(order.merchant_id);
            let checkout = view::Checkout {
                order: &order,
                merchant_name: merchant.as_ref().map_or("", |m| m.name.as_str()),
                now_ms: state.engine.operations().clock().now().timestamp_millis(),
                language,
            };
            html::page(StatusCode::OK, view::page(&checkout))
        }
        Ok(None) => html::page(
            StatusCode::NOT_FOUND,
            view::problem(language, true, &other_path(language)),
        ),
        Err(error) => {
            tracing::error!(%error, "checkout page: order not read");
            html::page(
                StatusCode::INTERNAL_SERVER_ERROR,
                view::problem(language, false, &other_path(language)),
            )
        }
    };
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept-Language"));
    response
}

/// What the checkout page polls: the order's status and what follows it.
#[derive(Serialize, ToSchema)]
pub struct CheckoutStatusView {
    #[schema(value_type = OrderStatusName)]
    status: &'static str,
    /// True once the order is paid, refunded or not: the payer's part is done.
    paid: bool,
    /// When the order expires unpaid; null if it has no expiry.
    #[schema(format = DateTime)]
    expires_at: Option<String>,
    /// Where the page sends the payer once paid; null if nowhere.
    return_url: Option<String>,
}

/// GET /checkout/{id}/status: the order's status for the page's script.
#[utoipa::path(get, path = "/checkout/{id}/status", tag = "Pages", operation_id = "checkout_status",
    summary = "The checkout page's live status",
    description = "What the checkout page polls every 2 s. No key: the order's id is the capability.",
    security(()),
    params(("id" = String, Path, description = "The order's id (a UUID).")),
    responses((status = 200, description = "The order's status.", body = CheckoutStatusView)))]
pub async fn checkout_status(State(state): State<AppState>, Path(id): Path<String>) -> Result<Response, V1Error> {
    let order = find_order(&state, &id)?.ok_or(EngineError::OrderNotFound)?;
    let view = CheckoutStatusView {
        status: order.status.as_str(),
        paid: Outcome::of(order.status) == Outcome::Paid,
        expires_at: order.expires_at_ms.map(timestamp),
        return_url: safe_return_url(&order).map(str::to_string),
    };
    Ok((
        [
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        Json(view),
    )
        .into_response())
}
