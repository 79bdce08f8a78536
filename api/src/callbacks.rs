//! `POST /callbacks/{vendor}`: payment and refund outcomes from HTTP payment
//! vendors, signed `X-Paygate-Signature: sha256=<hex HMAC-SHA256(vendor
//! secret, raw body)>` (the protocol is in `paygate_engine::vendor::payment`).

use crate::error::V1Error;
use crate::wire::{Data, DataBody};
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::Serialize;
use utoipa::ToSchema;

/// The answer to a callback.
#[derive(Serialize, ToSchema)]
pub struct CallbackReceipt {
    /// Always `true`.
    received: bool,
    /// The resource's status after the callback.
    status: String,
}

/// POST /callbacks/{vendor}: 200 `{received: true, status}` with the
/// resource's status after the callback; repeats change nothing.
#[utoipa::path(post, path = "/callbacks/{vendor}", tag = "Callbacks", operation_id = "vendor_callback",
    summary = "Receive a vendor's callback",
    description = "An HTTP vendor's outcome of a payment, refund (`type: \"payment\"`, `\"refund\"`) or payout \
        (`type: \"payout\"`), signed with the vendor's shared secret (`X-Paygate-Signature`). Repeats change nothing.",
    security(("vendor_signature" = [])),
    params(("vendor" = String, Path, description = "The vendor's name, as configured.")),
    request_body(content = Object, description = "The vendor's outcome: `type`, the resource's ids and `status`."),
    responses((status = 200, description = "Received.", body = DataBody<CallbackReceipt>)))]
pub async fn vendor_callback(
    State(state): State<AppState>,
    Path(vendor): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Data<CallbackReceipt>, V1Error> {
    let signature = headers.get("x-paygate-signature").and_then(|v| v.to_str().ok());
    let status = state.engine.orders().vendor_callback(&vendor, &body, signature).await?;
    Ok(Data(CallbackReceipt {
        received: true,
        status: status.to_string(),
    }))
}
