//! `POST /api/order/create` and `/api/order/query` (SPEC.md 2.8, 4.8, 5.2):
//! signed with SHA-512 in the body, amounts in whole IDR.

use super::{messages, wib, LegacyBody, LegacyError, LegacyOk};
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use paygate_engine::domain::{Order, OrderStatus, PaymentMethod, Source};
use paygate_engine::orders::NewOrder;
use paygate_engine::signing::sha512_hex;
use paygate_engine::EngineError;
use serde::Serialize;
use subtle::ConstantTimeEq;

/// A Legacy order (SPEC.md 2.8) plus `virtualAccount` (DESIGN.md 5).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyOrder {
    ref_code: String,
    transaction_time: String,
    order_id: String,
    total_amount: i64,
    customer_name: Option<String>,
    customer_email: Option<String>,
    customer_phone: Option<String>,
    notify_url: Option<String>,
    return_url: Option<String>,
    status: &'static str,
    paid_at: Option<String>,
    qr_string: Option<String>,
    virtual_account: Option<LegacyVirtualAccount>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LegacyVirtualAccount {
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
        Err(LegacyError::new(StatusCode::CONFLICT, messages::ORDER_ID_USED))
    }
}

/// POST /api/order/create.
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
        return Err(LegacyError::new(StatusCode::UNAUTHORIZED, messages::INVALID_SIGNATURE));
    }
    let method = PaymentMethod::parse(&payment_type).ok_or_else(LegacyError::invalid_parameters)?;
    let amount_minor = total_amount
        .checked_mul(100)
        .ok_or_else(LegacyError::invalid_parameters)?;
    if let Some(existing) = state
        .engine
        .order_by_merchant_order_id(merchant.id, Source::Legacy, &order_id)?
    {
        return existing_or_conflict(existing, amount_minor, method);
    }
    let notify_url = body.optional_string("notifyUrl")?;
    let new = NewOrder {
        merchant_order_id: order_id,
        amount_minor,
        payment_method: payment_type,
        customer_name: body.optional_string("customerName")?,
        customer_email: body.optional_string("customerEmail")?,
        customer_phone: body.optional_string("customerPhone")?,
        notify_url,
        return_url: body.optional_string("returnUrl")?,
        expire_minutes: None,
        metadata: None,
        source: Some(Source::Legacy),
        idempotency: None,
    };
    match state.engine.create_order(merchant.id, new).await {
        Ok((order, _)) => Ok(LegacyOk(legacy_order(&order))),
        // A concurrent submission of the same orderId won.
        Err(EngineError::DuplicateOrder(existing)) => existing_or_conflict(*existing, amount_minor, method),
        Err(error) => Err(error.into()),
    }
}

/// POST /api/order/query.
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
        return Err(LegacyError::new(StatusCode::UNAUTHORIZED, messages::INVALID_SIGNATURE));
    }
    let order = state
        .engine
        .order_by_merchant_order_id(merchant.id, Source::Legacy, &order_id)?
        .ok_or(LegacyError::new(StatusCode::NOT_FOUND, messages::ORDER_ID_NOT_FOUND))?;
    Ok(LegacyOk(legacy_order(&order)))
}
