//! The floor, measured beside the baseline in the same run: the HTTP an
//! item's whole life cannot do without, and nothing else. Bare axum
//! handlers answer as the baseline's do and, for each change paygate
//! notifies, send one webhook through paygate's own delivery client: a body
//! of the real shape, signed as paygate signs (Standard Webhooks and
//! `X-Signature`), a resource's events one after another, to a sink that
//! checks each signature. No engine, journal, store or outbox: what paygate
//! spends beyond the floor is theirs.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use paygate_api::webhooks::delivery::signed_post;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use uuid::Uuid;

/// Where the floor's webhooks go, and how they are signed.
pub struct FloorWebhooks {
    /// paygate's delivery client, as the dispatcher uses it.
    client: reqwest::Client,
    /// Each merchant's notify URL (parsed once, as paygate keeps its
    /// endpoints') and webhook secret, by API key.
    merchants: HashMap<String, (reqwest::Url, String)>,
}

impl FloorWebhooks {
    /// Webhooks to `sink` for merchants given as (API key, webhook secret)
    /// in the order of their notify URLs.
    pub fn new(sink: SocketAddr, merchants: &[(String, String)]) -> Arc<FloorWebhooks> {
        let merchants = merchants
            .iter()
            .enumerate()
            .map(|(index, (api_key, secret))| {
                let url = reqwest::Url::parse(&super::sink::notify_url(sink, index)).expect("the sink's URL parses");
                (api_key.clone(), (url, secret.clone()))
            })
            .collect();
        Arc::new(FloorWebhooks {
            client: paygate_api::webhooks::client(true),
            merchants,
        })
    }

    /// Sends `bodies` one after another to the merchant of `headers`' API
    /// key, in a task of its own (the request is answered first).
    fn send_after_answer(self: &Arc<Self>, headers: &HeaderMap, bodies: Vec<Value>) {
        let api_key = headers
            .get("x-api-key")
            .and_then(|key| key.to_str().ok())
            .unwrap_or_default();
        let Some((url, secret)) = self.merchants.get(api_key).cloned() else {
            tracing::error!("floor: a request with an unknown API key");
            return;
        };
        let webhooks = self.clone();
        tokio::spawn(async move {
            for mut body in bodies {
                let id = Uuid::now_v7().to_string();
                body["event_id"] = json!(id);
                body["event_at"] = json!(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
                let body = serde_json::to_vec(&body).expect("JSON encodes");
                let timestamp = chrono::Utc::now().timestamp();
                let sent = signed_post(&webhooks.client, url.clone(), &id, &secret, timestamp, body)
                    .send()
                    .await;
                if let Err(error) = sent {
                    tracing::error!(%error, "floor: a webhook was not delivered");
                }
            }
        });
    }
}

/// Serves the floor on a free loopback port on the current runtime (the
/// server's); returns its address and the task, which runs until aborted.
pub async fn start(webhooks: Arc<FloorWebhooks>) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let app = Router::new()
        .route("/v1/disbursements", post(create_disbursement))
        .route("/v1/orders", post(create_order))
        .route("/v1/sandbox/orders/{ref_code}/pay", post(pay_order))
        .with_state(webhooks);
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "floor server stopped");
        }
    });
    Ok((address, task))
}

/// POST /v1/disbursements: 201, then `disbursement.on_process` and
/// `disbursement.success`, as the sandbox vendor's payout makes them.
async fn create_disbursement(
    State(webhooks): State<Arc<FloorWebhooks>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let amount = body["amount_minor"].as_i64().unwrap_or(0);
    let id = Uuid::new_v4().to_string();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let disbursement = json!({
        "id": id,
        "idempotency_key": body["idempotency_key"],
        "channel": body["channel"],
        "bank_short_code": body["bank_short_code"],
        "account_number": body["account_number"],
        "account_name": body["account_name"],
        "ewallet_provider": null,
        "ewallet_phone": null,
        "request_amount_minor": amount,
        "fee_minor": super::client::FEE_MINOR,
        "final_amount_minor": amount.saturating_add(super::client::FEE_MINOR),
        "currency": "IDR",
        "description": body["description"],
        "notify_url": null,
        "vendor_disbursement_id": format!("SBX-{id}"),
        "failure_reason": null,
        "created_at": now,
        "updated_at": now,
    });
    let bodies = ["ON_PROCESS", "SUCCESS"]
        .into_iter()
        .map(|status| {
            let mut event = disbursement.clone();
            event["event"] = json!(format!("disbursement.{}", status.to_ascii_lowercase()));
            event["status"] = json!(status);
            event
        })
        .collect();
    webhooks.send_after_answer(&headers, bodies);
    let data = json!({
        "id": id,
        "status": "PENDING",
        "final_amount_minor": amount.saturating_add(super::client::FEE_MINOR),
    });
    (StatusCode::CREATED, Json(json!({ "success": true, "data": data })))
}

/// POST /v1/orders: 201 with an id and a ref code; creation notifies nothing.
async fn create_order(Json(body): Json<Value>) -> (StatusCode, Json<Value>) {
    let id = Uuid::new_v4();
    let data = json!({
        "id": id,
        "ref_code": format!("ORD-FLOOR-{}", id.simple()),
        "merchant_order_id": body["merchant_order_id"],
        "status": "PENDING",
    });
    (StatusCode::CREATED, Json(json!({ "success": true, "data": data })))
}

/// POST /v1/sandbox/orders/{ref_code}/pay: 200, then `order.paid`.
async fn pay_order(
    State(webhooks): State<Arc<FloorWebhooks>>,
    headers: HeaderMap,
    Path(ref_code): Path<String>,
) -> Json<Value> {
    let id = ref_code.strip_prefix("ORD-FLOOR-").unwrap_or(&ref_code).to_string();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let order = json!({
        "event": "order.paid",
        "id": id,
        "ref_code": ref_code,
        "merchant_order_id": format!("floor-{id}"),
        "amount_minor": 1_000_000,
        "fee_minor": 7_000,
        "net_amount_minor": 993_000,
        "currency": "IDR",
        "payment_method": "QRIS",
        "status": "PAID",
        "refunded_amount_minor": 0,
        "vendor_rrn": format!("RRN{}", &id[..12.min(id.len())]),
        "paid_at": now,
        "expires_at": now,
        "created_at": now,
        "updated_at": now,
        "metadata": null,
    });
    webhooks.send_after_answer(&headers, vec![order]);
    Json(json!({ "success": true, "data": { "ref_code": ref_code, "status": "PAID" } }))
}
