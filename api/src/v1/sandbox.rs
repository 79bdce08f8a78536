//! The sandbox's `/v1/sandbox/` routes, which play the payment network and
//! the payout vendor: pay, expire or fail an order, and finish a refund or a
//! disbursement. In live mode none of them exists (see [`SandboxMerchant`]).

use super::orders::RefCode;
use crate::error::V1Error;
use crate::extract::{OptionalJson, SandboxMerchant, V1Json};
use crate::wire::{
    disbursement_view, order_view, refund_view, Data, DataBody, DisbursementView, OrderView, RefundView,
};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use paygate_engine::domain::{DisbursementStatus, RefundStatus};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// Optional body of the sandbox payment.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxPay {
    /// The payment's reference number; one is made up when absent.
    vendor_rrn: Option<String>,
}

/// POST /v1/sandbox/orders/{ref_code}/pay: confirms the payment now.
#[utoipa::path(post, path = "/v1/sandbox/orders/{ref_code}/pay", tag = "Sandbox", operation_id = "sandbox_pay",
    summary = "Pay an order (sandbox)", description = "Confirms the order's payment now, as the vendor would.",
    security(("api_key" = [])), params(RefCode), request_body(content = Option<SandboxPay>),
    responses((status = 200, description = "The order, PAID.", body = DataBody<OrderView>)))]
pub async fn sandbox_pay(
    SandboxMerchant(merchant): SandboxMerchant,
    State(state): State<AppState>,
    Path(ref_code): Path<String>,
    OptionalJson(body): OptionalJson<SandboxPay>,
) -> Result<Data<OrderView>, V1Error> {
    let order = state.engine.orders().order_for(merchant.id, &ref_code)?;
    let order = state.engine.orders().pay_order(&order, body.vendor_rrn).await?;
    Ok(Data(order_view(&order, &state.config.public_url)))
}

/// Declares a sandbox route that ends an order without a payment: the
/// routes differ only in their path, wording and the end they ask for, so
/// each is one line below and the handler is written once.
macro_rules! sandbox_end_route {
    ($(#[$doc:meta])* $name:ident, $path:literal, $summary:literal, $answer:literal, $end:expr) => {
        $(#[$doc])*
        #[utoipa::path(post, path = $path, tag = "Sandbox", operation_id = stringify!($name),
            summary = $summary, security(("api_key" = [])), params(RefCode),
            responses((status = 200, description = $answer, body = DataBody<OrderView>)))]
        pub async fn $name(
            SandboxMerchant(merchant): SandboxMerchant,
            State(state): State<AppState>,
            Path(ref_code): Path<String>,
        ) -> Result<Data<OrderView>, V1Error> {
            end_in_sandbox(&state, merchant.id, &ref_code, $end).await
        }
    };
}

sandbox_end_route!(
    /// POST /v1/sandbox/orders/{ref_code}/expire.
    sandbox_expire, "/v1/sandbox/orders/{ref_code}/expire", "Expire an order (sandbox)",
    "The order, EXPIRED.", SandboxEnd::Expire
);
sandbox_end_route!(
    /// POST /v1/sandbox/orders/{ref_code}/fail.
    sandbox_fail, "/v1/sandbox/orders/{ref_code}/fail", "Fail an order (sandbox)",
    "The order, FAILED.", SandboxEnd::Fail
);

/// How the sandbox ends an order without a payment.
enum SandboxEnd {
    Expire,
    Fail,
}

/// The sandbox's expire and fail: the order of `ref_code` ended as `end`.
async fn end_in_sandbox(
    state: &AppState,
    merchant_id: Uuid,
    ref_code: &str,
    end: SandboxEnd,
) -> Result<Data<OrderView>, V1Error> {
    let orders = state.engine.orders();
    let order = orders.order_for(merchant_id, ref_code)?;
    let order = match end {
        SandboxEnd::Expire => orders.expire_order(&order).await?,
        SandboxEnd::Fail => orders.fail_order(&order, "payment failed by sandbox request").await?,
    };
    Ok(Data(order_view(&order, &state.config.public_url)))
}

/// The `status` of a refund's or a disbursement's completion body as
/// `success` or `failed`, the two outcomes a vendor can report for money on
/// its way out; anything else is refused with the same message for both.
fn completion_status<S>(status: &str, success: S, failed: S) -> Result<S, V1Error> {
    match status {
        "SUCCESS" => Ok(success),
        "FAILED" => Ok(failed),
        _ => Err(V1Error::invalid_body("status: must be SUCCESS or FAILED")),
    }
}

/// Body of the sandbox refund completion.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteRefund {
    /// `SUCCESS`, or `FAILED` to give the money back.
    #[schema(value_type = String, pattern = "^(SUCCESS|FAILED)$")]
    status: String,
}

/// POST /v1/sandbox/refunds/{id}/complete: forces a PENDING refund's
/// outcome (SUCCESS, or FAILED with the money given back).
#[utoipa::path(post, path = "/v1/sandbox/refunds/{id}/complete", tag = "Sandbox", operation_id = "sandbox_complete_refund",
    summary = "Finish a refund (sandbox)", description = "Forces a PENDING refund to SUCCESS, or to FAILED with the money given back.",
    security(("api_key" = [])), params(("id" = Uuid, Path, description = "The refund's id.")),
    request_body = CompleteRefund,
    responses((status = 200, description = "The refund.", body = DataBody<RefundView>)))]
pub async fn sandbox_complete_refund(
    SandboxMerchant(merchant): SandboxMerchant,
    State(state): State<AppState>,
    Path(id): Path<String>,
    V1Json(body): V1Json<CompleteRefund>,
) -> Result<Data<RefundView>, V1Error> {
    let id = Uuid::parse_str(&id).map_err(|_| V1Error::invalid_id())?;
    let status = completion_status(&body.status, RefundStatus::Success, RefundStatus::Failed)?;
    let refund = state.engine.orders().refund_for(merchant.id, id)?;
    let refund = state.engine.orders().settle_refund(&refund, status).await?;
    Ok(Data(refund_view(&refund)))
}

/// Body of the sandbox completion.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteDisbursement {
    /// `SUCCESS`, or `FAILED` to give the money back.
    #[schema(pattern = "^(SUCCESS|FAILED)$")]
    status: String,
}

/// POST /v1/sandbox/disbursements/{id}/complete: forces SUCCESS or FAILED.
#[utoipa::path(post, path = "/v1/sandbox/disbursements/{id}/complete", tag = "Sandbox", operation_id = "complete_disbursement",
    summary = "Finish a disbursement (sandbox)",
    description = "Forces a PENDING or ON_PROCESS disbursement to SUCCESS, or to FAILED with the money given back.",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "The disbursement's id or ref code.")),
    request_body = CompleteDisbursement,
    responses((status = 200, description = "The disbursement.", body = DataBody<DisbursementView>)))]
pub async fn complete_disbursement(
    SandboxMerchant(merchant): SandboxMerchant,
    State(state): State<AppState>,
    Path(id): Path<String>,
    V1Json(body): V1Json<CompleteDisbursement>,
) -> Result<Response, V1Error> {
    let status = completion_status(&body.status, DisbursementStatus::Success, DisbursementStatus::Failed)?;
    let disbursements = state.engine.disbursements();
    let disbursement = disbursements.complete_disbursement(merchant.id, &id, status).await?;
    Ok(Data(disbursement_view(&disbursement)).into_response())
}
