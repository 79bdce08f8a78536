//! The baseline measured before paygate in the same run: bare axum handlers
//! on loopback in this process that take the workload's requests (the JSON
//! body parsed), answer a small JSON object with what the load reads, and
//! keep nothing. What paygate spends beyond it is its work: checks,
//! durability, settlement and webhooks.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Numbers the ids answered, so each answer differs as paygate's do.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Serves the baseline on a free loopback port on the current runtime;
/// returns its address and the task, which runs until aborted.
pub async fn start() -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let app = Router::new()
        .route("/v1/disbursements", post(create_disbursement))
        .route("/v1/orders", post(create_order))
        .route("/v1/sandbox/orders/{ref_code}/pay", post(pay_order));
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "baseline server stopped");
        }
    });
    Ok((address, task))
}

/// POST /v1/disbursements: 201 with an id and `final_amount_minor` (the
/// amount asked plus the benchmark's fee), nothing stored.
async fn create_disbursement(Json(body): Json<Value>) -> (StatusCode, Json<Value>) {
    let amount = body["amount_minor"].as_i64().unwrap_or(0);
    let data = json!({
        "id": uuid::Uuid::new_v4(),
        "status": "PENDING",
        "final_amount_minor": amount.saturating_add(super::client::FEE_MINOR),
    });
    (StatusCode::CREATED, Json(json!({ "success": true, "data": data })))
}

/// POST /v1/orders: 201 with an id and a ref code, nothing stored.
async fn create_order(Json(body): Json<Value>) -> (StatusCode, Json<Value>) {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let data = json!({
        "id": uuid::Uuid::new_v4(),
        "ref_code": format!("ORD-BASELINE-{id}"),
        "merchant_order_id": body["merchant_order_id"],
        "status": "PENDING",
    });
    (StatusCode::CREATED, Json(json!({ "success": true, "data": data })))
}

/// POST /v1/sandbox/orders/{ref_code}/pay: 200, nothing looked up.
async fn pay_order(Path(ref_code): Path<String>) -> Json<Value> {
    Json(json!({ "success": true, "data": { "ref_code": ref_code, "status": "PAID" } }))
}
