//! `POST /callbacks/{vendor}`: payment and refund outcomes from HTTP payment
//! vendors, signed `X-Paygate-Signature: sha256=<hex HMAC-SHA256(vendor
//! secret, raw body)>` (the protocol is in `paygate_engine::vendor::payment`).

use crate::error::V1Error;
use crate::wire::Data;
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde_json::{json, Value};

/// POST /callbacks/{vendor}: 200 `{received: true, status}` with the
/// resource's status after the callback; repeats change nothing.
pub async fn vendor_callback(
    State(state): State<AppState>,
    Path(vendor): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Data<Value>, V1Error> {
    let signature = headers.get("x-paygate-signature").and_then(|v| v.to_str().ok());
    let status = state.engine.vendor_callback(&vendor, &body, signature).await?;
    Ok(Data(json!({ "received": true, "status": status })))
}
