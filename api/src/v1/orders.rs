//! V1 orders (`/v1/orders`): create, get, list, refund and the QR image.

use super::pagination::ListQuery;
use crate::commands::{key_and_amount, OrderFields};
use crate::error::{order_error, V1Error};
use crate::extract::{SignedBody, SignedJson, V1Merchant};
use crate::openapi::names::OrderStatusName;
use crate::openapi::names::PaymentMethodName;
use crate::openapi::values::{CustomerPhoneText, EmailText, HttpUrlText, IdempotencyKeyText};
use crate::wire::{order_view, refund_view, Created, Data, DataBody, OrderView, PageBody, RefundView};
use crate::AppState;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use paygate_engine::domain::Source;
use paygate_engine::orders::{Creation, NewRefund, RefundReason};
use paygate_engine::EngineError;
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::Digest;
use utoipa::ToSchema;

/// The `ref_code` path parameter of the order routes.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct RefCode {
    /// The order's ref code, as created.
    #[allow(dead_code)]
    ref_code: String,
}

/// Body of `POST /v1/orders`.
#[derive(Deserialize, ToSchema)]
pub struct CreateOrder {
    /// Your id of the order, unique per merchant.
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
    )]
    merchant_order_id: String,
    /// In minor units (IDR x 100).
    #[schema(minimum = 1, maximum = 999_999_999_999i64)]
    amount_minor: i64,
    #[schema(value_type = PaymentMethodName)]
    payment_method: String,
    #[schema(max_length = 255)]
    customer_name: Option<String>,
    #[schema(value_type = Option<EmailText>)]
    customer_email: Option<String>,
    /// An Indonesian number; stored as `62...`.
    #[schema(value_type = Option<CustomerPhoneText>)]
    customer_phone: Option<String>,
    /// Where this order's webhooks go; else the merchant's default.
    #[schema(value_type = Option<HttpUrlText>)]
    notify_url: Option<String>,
    /// Where the checkout page sends the payer after payment.
    #[schema(value_type = Option<HttpUrlText>)]
    return_url: Option<String>,
    /// Minutes until the order expires unpaid: 60 by default.
    #[schema(minimum = 1, maximum = 1440)]
    expire_minutes: Option<i64>,
    /// Any JSON object, returned byte for byte.
    #[schema(value_type = Option<Object>)]
    metadata: Option<Box<RawValue>>,
}

/// POST /v1/orders: 201 with the order; an `Idempotency-Key` seen with the
/// same body replays the first answer.
#[utoipa::path(post, path = "/v1/orders", tag = "Orders", operation_id = "create_order",
    summary = "Create an order",
    description = "Creates a QRIS or bank-transfer order. An `Idempotency-Key` seen before with the same body \
        replays the first answer (with `Idempotent-Replayed: true`); with another body it is 422.",
    security(("api_key" = []), ("api_key" = [], "v1_signature" = [])),
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$",
        description = "Makes a retry safe: the same key and body replay the first answer. 1 to 255 characters, none a control character.")),
    request_body = CreateOrder,
    responses((status = 201, description = "The order, PENDING.", body = DataBody<OrderView>,
        headers(("Idempotent-Replayed" = String, description = "`true` when this answer replays an earlier one.")))))]
pub async fn create_order(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    headers: HeaderMap,
    SignedBody(body, raw): SignedBody<CreateOrder>,
) -> Result<Response, V1Error> {
    let public_url = &state.config.public_url;
    let idempotency_key = match headers.get("idempotency-key") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| V1Error::invalid_body("Idempotency-Key: must be printable ASCII"))?
                .to_string(),
        ),
    };
    if let Some(metadata) = &body.metadata {
        if !metadata.get().trim_start().starts_with('{') {
            return Err(V1Error::invalid_body("metadata: must be a JSON object"));
        }
    }
    let new = OrderFields {
        merchant_order_id: &body.merchant_order_id,
        amount_minor: body.amount_minor,
        payment_method: &body.payment_method,
        customer_name: body.customer_name.as_deref(),
        customer_email: body.customer_email.as_deref(),
        customer_phone: body.customer_phone.as_deref(),
        notify_url: body.notify_url.as_deref(),
        return_url: body.return_url.as_deref(),
        expire_minutes: body.expire_minutes,
    }
    .command(
        Source::Api,
        body.metadata.as_ref().map(|raw| raw.get().to_string()),
        idempotency_key
            .as_deref()
            .map(|key| (key, sha2::Sha256::digest(&raw).into())),
    )?;
    let (order, creation) = state
        .engine
        .orders()
        .create_order(merchant.id, new)
        .await
        .map_err(|error| order_error(error, public_url))?;
    let view = order_view(&order, public_url);
    let mut response = Created(view).into_response();
    if creation == Creation::Replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", header::HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// GET /v1/orders/{ref_code}.
#[utoipa::path(get, path = "/v1/orders/{ref_code}", tag = "Orders", operation_id = "get_order",
    summary = "Get an order", security(("api_key" = [])), params(RefCode),
    responses((status = 200, description = "The order.", body = DataBody<OrderView>)))]
pub async fn get_order(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(ref_code): Path<String>,
) -> Result<Data<OrderView>, V1Error> {
    let order = state.engine.orders().order_for(merchant.id, &ref_code)?;
    Ok(Data(order_view(&order, &state.config.public_url)))
}

status_list_route! {
    /// GET /v1/orders: newest first, paginated, filterable.
    list_orders: GET "/v1/orders", tag = "Orders",
    summary = "List orders", description = "Newest first. `status` is an order status.",
    params(ListQuery<OrderStatusName>), answer = ("A page of orders.", PageBody<OrderView>),
    listed_by = orders().list_orders,
    shown_by = |state: &AppState, order| order_view(order, &state.config.public_url),
}

/// GET /v1/orders/{ref_code}/qr.png: the QRIS as a PNG, no key needed (the
/// ref code is the secret).
#[utoipa::path(get, path = "/v1/orders/{ref_code}/qr.png", tag = "Orders", operation_id = "qr_png",
    summary = "The QRIS image", description = "The order's QRIS as a PNG. No key needed: the ref code is the secret.",
    security(()), params(RefCode),
    responses((status = 200, description = "The QR code.", content_type = "image/png")))]
pub async fn qr_png(State(state): State<AppState>, Path(ref_code): Path<String>) -> Result<Response, V1Error> {
    let qris = state
        .engine
        .orders()
        .order_by_ref(&ref_code)?
        .and_then(|order| order.qris_string)
        .ok_or(paygate_engine::EngineError::OrderNotFound)?;
    let png = tokio::task::spawn_blocking(move || paygate_engine::qris::render_png(&qris))
        .await
        .map_err(V1Error::internal)?
        .map_err(V1Error::internal)?;
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "private, max-age=3600"),
        ],
        png,
    )
        .into_response())
}

/// Body of `POST /v1/orders/{ref_code}/refund`: every field optional here
/// so that each missing one gets its own message.
#[derive(Deserialize, ToSchema)]
pub struct CreateRefund {
    /// At most what is left to refund, in minor units.
    #[schema(required = true, value_type = i64, minimum = 1)]
    amount_minor: Option<i64>,
    /// A category, e.g. `CUSTOMER_REQUEST` (the default): 1 to 64 characters, none a control character.
    #[schema(required = true, value_type = String, min_length = 1, max_length = 64, pattern = r"^[^\u0000-\u001F\u007F-\u009F]+$")]
    reason: Option<String>,
    /// Free text, at most 1,024 characters.
    #[schema(max_length = 1024)]
    reason_detail: Option<String>,
    /// Makes a retry safe: a key used before answers 409 with that refund.
    #[schema(required = true, value_type = IdempotencyKeyText)]
    idempotency_key: Option<String>,
}

impl CreateRefund {
    /// The refund this body asks for, every value checked, in the order
    /// the fields are documented.
    fn command(self) -> Result<NewRefund, EngineError> {
        let (idempotency_key, amount) = key_and_amount(self.idempotency_key, self.amount_minor)?;
        Ok(NewRefund {
            amount,
            reason: RefundReason::parse(self.reason, self.reason_detail)?,
            idempotency_key,
        })
    }
}

/// POST /v1/orders/{ref_code}/refund: 201 with the refund, PENDING.
#[utoipa::path(post, path = "/v1/orders/{ref_code}/refund", tag = "Refunds", operation_id = "create_refund",
    summary = "Refund an order", description = "Refunds a PAID or PARTIALLY_REFUNDED order, in part or in full.",
    security(("api_key" = []), ("api_key" = [], "v1_signature" = [])), params(RefCode),
    request_body = CreateRefund,
    responses((status = 201, description = "The refund, PENDING.", body = DataBody<RefundView>)))]
pub async fn create_refund(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(ref_code): Path<String>,
    SignedJson(body): SignedJson<CreateRefund>,
) -> Result<Created<RefundView>, V1Error> {
    let orders = state.engine.orders();
    // Which order comes before what the body says about refunding it.
    orders.ensure_refundable_order(merchant.id, &ref_code)?;
    let refund = orders.create_refund(merchant.id, &ref_code, body.command()?).await?;
    Ok(Created(refund_view(&refund)))
}

/// GET /v1/orders/{ref_code}/refunds: the order's refunds, oldest first.
#[utoipa::path(get, path = "/v1/orders/{ref_code}/refunds", tag = "Refunds", operation_id = "list_refunds",
    summary = "List an order's refunds", description = "Oldest first.",
    security(("api_key" = [])), params(RefCode),
    responses((status = 200, description = "The order's refunds.", body = DataBody<Vec<RefundView>>)))]
pub async fn list_refunds(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(ref_code): Path<String>,
) -> Result<Data<Vec<RefundView>>, V1Error> {
    let order = state.engine.orders().order_for(merchant.id, &ref_code)?;
    let refunds = state.engine.orders().order_refunds(order.id)?;
    Ok(Data(refunds.iter().map(refund_view).collect()))
}
