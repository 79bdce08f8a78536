//! `POST /api/order/create` and `/api/order/query`:
//! signed with SHA-512 in the body, amounts in whole IDR.

use super::LegacySuccessBody;
use super::{wib, LegacyBody, LegacyError, LegacyOk};
use crate::commands::OrderFields;
use crate::error::ErrorKind;
use crate::openapi::values::NonBlankText;
use crate::AppState;
use axum::extract::State;
use paygate_engine::domain::{Order, OrderStatus, PaymentMethod, Source};
use paygate_engine::signing::sha512_hex;
use paygate_engine::EngineError;
use serde::Serialize;
use subtle::ConstantTimeEq;
use utoipa::ToSchema;

/// A Legacy order, with `virtualAccount` for a bank transfer.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyOrder {
    ref_code: String,
    /// `YYYY-MM-DD HH:MM:SS`, WIB.
    transaction_time: String,
    order_id: String,
    /// Whole rupiah.
    total_amount: i64,
    customer_name: Option<String>,
    customer_email: Option<String>,
    customer_phone: Option<String>,
    notify_url: Option<String>,
    return_url: Option<String>,
    /// PENDING, PAID or FAILED.
    #[schema(pattern = "^(PENDING|PAID|FAILED)$")]
    status: &'static str,
    /// `YYYY-MM-DD HH:MM:SS`, WIB.
    paid_at: Option<String>,
    /// The QRIS payload while the order can be paid.
    qr_string: Option<String>,
    virtual_account: Option<LegacyVirtualAccount>,
}

/// Where the payer of a BANK_TRANSFER order transfers to.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyVirtualAccount {
    bank_short_code: String,
    account_number: String,
}

/// An order as Legacy clients see it: WIB times, whole IDR, Legacy statuses.
pub fn legacy_order(order: &Order) -> LegacyOrder {
    LegacyOrder {
        ref_code: order.ref_code.clone(),
        transaction_time: wib(order.created_at_ms),
        order_id: order.merchant_order_id.clone(),
        // Legacy orders are created from whole IDR, so this is exact.
        total_amount: order.amount.get() / 100,
        customer_name: order.customer_name.clone(),
        customer_email: order.customer_email.clone(),
        customer_phone: order.customer_phone.clone(),
        notify_url: order.notify_url.clone(),
        return_url: order.return_url.clone(),
        status: order.status.legacy_str(),
        paid_at: order.paid_at_ms.map(wib),
        // The code is only worth showing while it can still be paid.
        qr_string: order
            .qris_string
            .clone()
            .filter(|_| order.status == OrderStatus::Pending),
        virtual_account: order.virtual_account.as_ref().map(|va| LegacyVirtualAccount {
            bank_short_code: va.bank_short_code.clone(),
            account_number: va.account_number.clone(),
        }),
    }
}

fn signature_matches(presented: &str, expected_hex: &str) -> bool {
    let presented = presented.trim().to_ascii_lowercase();
    bool::from(presented.as_bytes().ct_eq(expected_hex.as_bytes()))
}

/// A resubmitted `orderId` answers with the existing order, but only if
/// the request describes that order; otherwise the id is taken.
fn existing_or_conflict(
    existing: Order,
    amount_minor: i64,
    method: PaymentMethod,
) -> Result<LegacyOk<LegacyOrder>, LegacyError> {
    if existing.amount.get() == amount_minor && existing.payment_method == method {
        Ok(LegacyOk(legacy_order(&existing)))
    } else {
        Err(LegacyError::from(ErrorKind::DuplicateOrder))
    }
}

/// The body of `POST /api/order/create`, as the handler reads it.
#[derive(serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LegacyCreateOrder)]
#[allow(dead_code)]
pub struct CreateOrderBody {
    #[schema(value_type = NonBlankText)]
    client_id: String,
    /// Your id of the order.
    #[schema(value_type = NonBlankText)]
    order_id: String,
    /// Whole rupiah, at least 1.
    #[schema(minimum = 1)]
    total_amount: i64,
    /// QRIS or BANK_TRANSFER.
    #[schema(pattern = "^(QRIS|BANK_TRANSFER)$")]
    payment_type: String,
    customer_name: Option<String>,
    customer_email: Option<String>,
    customer_phone: Option<String>,
    notify_url: Option<String>,
    return_url: Option<String>,
    /// Lowercase hex SHA-512 of `clientId|orderId|totalAmount|clientSecret`.
    #[schema(value_type = NonBlankText)]
    signature: String,
}

/// The body of `POST /api/order/query`, as the handler reads it.
#[derive(serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = LegacyQueryOrder)]
#[allow(dead_code)]
pub struct QueryOrderBody {
    #[schema(value_type = NonBlankText)]
    client_id: String,
    #[schema(value_type = NonBlankText)]
    order_id: String,
    /// Lowercase hex SHA-512 of `clientId|orderId|clientSecret`.
    #[schema(value_type = NonBlankText)]
    signature: String,
}

/// POST /api/order/create.
#[utoipa::path(post, path = "/api/order/create", tag = "Legacy", operation_id = "legacy_create_order",
    summary = "Create an order (Legacy)",
    description = "Whole rupiah; signed in the body. The same `orderId` with the same amount and payment type answers \
        with the existing order; with others it is 409.",
    security(("legacy_body_signature" = [])), request_body = CreateOrderBody,
    responses((status = 200, description = "The order.", body = LegacySuccessBody<LegacyOrder>)))]
pub async fn create_order(
    State(state): State<AppState>,
    body: LegacyBody,
) -> Result<LegacyOk<LegacyOrder>, LegacyError> {
    let merchant = body.merchant(&state)?;
    let order_id = body.string("orderId")?;
    let total_amount = body.rupiah("totalAmount")?;
    let payment_type = body.string("paymentType")?;
    let signature = body.string("signature")?;
    let expected = sha512_hex(&format!(
        "{}|{order_id}|{total_amount}|{}",
        merchant.credentials.client_id, merchant.credentials.client_secret
    ));
    if !signature_matches(&signature, &expected) {
        return Err(LegacyError::from(ErrorKind::InvalidSignature));
    }
    let method = PaymentMethod::parse(&payment_type).ok_or_else(LegacyError::invalid_parameters)?;
    let amount_minor = total_amount
        .checked_mul(100)
        .ok_or_else(LegacyError::invalid_parameters)?;
    if let Some(existing) = state
        .engine
        .orders()
        .order_by_merchant_order_id(merchant.id, Source::Legacy, &order_id)?
    {
        return existing_or_conflict(existing, amount_minor, method);
    }
    let notify_url = body.optional_string("notifyUrl")?;
    let (customer_name, customer_email, customer_phone, return_url) = (
        body.optional_string("customerName")?,
        body.optional_string("customerEmail")?,
        body.optional_string("customerPhone")?,
        body.optional_string("returnUrl")?,
    );
    let new = OrderFields {
        merchant_order_id: &order_id,
        amount_minor,
        payment_method: &payment_type,
        customer_name: customer_name.as_deref(),
        customer_email: customer_email.as_deref(),
        customer_phone: customer_phone.as_deref(),
        notify_url: notify_url.as_deref(),
        return_url: return_url.as_deref(),
        expire_minutes: None,
    }
    .command(Source::Legacy, None, None)?;
    match state.engine.orders().create_order(merchant.id, new).await {
        Ok((order, _)) => Ok(LegacyOk(legacy_order(&order))),
        // A concurrent submission of the same orderId won.
        Err(EngineError::DuplicateOrder(existing)) => existing_or_conflict(*existing, amount_minor, method),
        Err(error) => Err(error.into()),
    }
}

/// POST /api/order/query.
#[utoipa::path(post, path = "/api/order/query", tag = "Legacy", operation_id = "legacy_query_order",
    summary = "Get an order (Legacy)", security(("legacy_body_signature" = [])), request_body = QueryOrderBody,
    responses((status = 200, description = "The order in its current status.", body = LegacySuccessBody<LegacyOrder>)))]
pub async fn query_order(
    State(state): State<AppState>,
    body: LegacyBody,
) -> Result<LegacyOk<LegacyOrder>, LegacyError> {
    let merchant = body.merchant(&state)?;
    let order_id = body.string("orderId")?;
    let signature = body.string("signature")?;
    let expected = sha512_hex(&format!(
        "{}|{order_id}|{}",
        merchant.credentials.client_id, merchant.credentials.client_secret
    ));
    if !signature_matches(&signature, &expected) {
        return Err(LegacyError::from(ErrorKind::InvalidSignature));
    }
    let order = state
        .engine
        .orders()
        .order_by_merchant_order_id(merchant.id, Source::Legacy, &order_id)?
        .ok_or(LegacyError::from(ErrorKind::OrderNotFound))?;
    Ok(LegacyOk(legacy_order(&order)))
}
