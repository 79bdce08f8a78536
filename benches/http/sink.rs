//! The healthy webhook receiver of `benches/http/run.sh`: answers every POST
//! 200 at once and notes how late each event arrived, from its `event_at`
//! (the change that caused it) to its receipt here. `GET /stats` gives the
//! count and the lag quantiles so far.
//!
//! Run: `cargo run --release --example webhook_sink -- 127.0.0.1:0`; prints
//! `webhook_sink listening on http://ADDR`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Lags in milliseconds, one per event received, and the bodies that had
/// no readable `event_at`.
#[derive(Default)]
struct Received {
    lags_ms: Vec<u64>,
    unreadable: u64,
}

type Shared = Arc<Mutex<Received>>;

async fn receive(State(received): State<Shared>, body: Bytes) -> StatusCode {
    let now_ms = Utc::now().timestamp_millis();
    let event_at = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|body| body.get("event_at")?.as_str().map(str::to_owned))
        .and_then(|at| DateTime::parse_from_rfc3339(&at).ok());
    let mut received = received.lock().expect("sink lock");
    match event_at {
        Some(at) => received
            .lags_ms
            .push(now_ms.saturating_sub(at.timestamp_millis()).max(0) as u64),
        None => received.unreadable += 1,
    }
    StatusCode::OK
}

async fn stats(State(received): State<Shared>) -> Json<serde_json::Value> {
    let received = received.lock().expect("sink lock");
    let mut lags = received.lags_ms.clone();
    lags.sort_unstable();
    let quantile = |q: f64| -> u64 {
        if lags.is_empty() {
            return 0;
        }
        lags[((lags.len() - 1) as f64 * q).round() as usize]
    };
    Json(serde_json::json!({
        "received": lags.len() as u64 + received.unreadable,
        "unreadable": received.unreadable,
        "lag_p50_ms": quantile(0.5),
        "lag_p99_ms": quantile(0.99),
        "lag_max_ms": lags.last().copied().unwrap_or(0),
    }))
}

fn main() {
    let address = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".into());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&address).await.expect("bind");
        println!(
            "webhook_sink listening on http://{}",
            listener.local_addr().expect("address")
        );
        std::io::stdout().flush().expect("stdout");
        let app = Router::new()
            .route("/stats", get(stats))
            .route("/{*path}", post(receive))
            .with_state(Shared::default());
        axum::serve(listener, app).await.expect("serve");
    });
}
