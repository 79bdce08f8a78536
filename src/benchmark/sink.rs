//! The webhook sink: a small axum server on loopback standing in for the
//! merchants' endpoints. It checks each delivery's Standard Webhooks
//! signature with its merchant's secret and records when it arrived, for
//! disbursement and order events alike.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use hdrhistogram::Histogram;
use serde::Deserialize;
use standardwebhooks::Webhook;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use uuid::Uuid;

/// A resource's final webhook as received.
pub struct FinalWebhook {
    /// `status` in its body (one `is_final` accepts).
    pub status: &'static str,
}

/// What the sink has seen.
pub struct Receipts {
    /// Final webhooks by resource id (a disbursement's or an order's UUID).
    /// Ids are kept as numbers: the sink's records are part of the
    /// process whose memory the benchmark reads, so they are kept small.
    pub finals: HashMap<u128, FinalWebhook>,
    /// Distinct events by resource id, for orders (a pending one has none).
    pub order_events: HashMap<u128, u32>,
    /// Distinct events received (a retried event counts once).
    pub events: u64,
    /// Events received again after a first delivery was answered 2xx.
    pub duplicates: u64,
    /// Deliveries refused: unknown path, bad signature, or unreadable body.
    pub refused: u64,
    /// The first few reasons for refusals.
    pub refusal_reasons: Vec<String>,
    /// From the event's `event_at` to its receipt, in microseconds.
    pub lag_us: Histogram<u64>,
    /// The same by resource kind (`disbursement`, `order`).
    pub lag_us_by_kind: BTreeMap<String, Histogram<u64>>,
    /// When the first distinct event arrived.
    pub first_at: Option<Instant>,
    /// When the last distinct event arrived.
    pub last_at: Option<Instant>,
    event_ids: HashSet<u128>,
}

/// The sink's shared state.
pub struct Sink {
    /// Each merchant's verifier, by the index in its notify URL; set once the
    /// merchants exist (no webhook can come before).
    verifiers: OnceLock<Vec<Webhook>>,
    receipts: Mutex<Receipts>,
    final_count: AtomicU64,
}

/// The fields of a V1 webhook the benchmark reads.
#[derive(Deserialize)]
struct Event {
    /// `<resource kind>.<status in lower case>`, e.g. `order.paid`.
    event: String,
    event_id: String,
    event_at: String,
    id: String,
    status: String,
}

/// Whether a resource of `kind` never moves again in a benchmark after
/// `status`: a disbursement settled or refused, an order paid (the run
/// refunds none).
pub fn is_final(kind: &str, status: &str) -> bool {
    match kind {
        "disbursement" => matches!(status, "SUCCESS" | "FAILED" | "REJECTED"),
        "order" => status == "PAID",
        _ => false,
    }
}

/// `status` as a final one of `kind` (`is_final`), kept without an allocation.
fn final_status(kind: &str, status: &str) -> Option<&'static str> {
    ["SUCCESS", "FAILED", "REJECTED", "PAID"]
        .into_iter()
        .find(|known| *known == status && is_final(kind, known))
}

/// Refusal reasons kept for the report.
const REASONS_KEPT: usize = 5;

/// Lags in microseconds up to an hour.
fn lag_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

impl Receipts {
    /// Bytes its records of events hold, from their tables' capacities.
    pub fn record_bytes(&self) -> usize {
        table_bytes(self.finals.capacity(), std::mem::size_of::<(u128, FinalWebhook)>())
            + table_bytes(self.order_events.capacity(), std::mem::size_of::<(u128, u32)>())
            + table_bytes(self.event_ids.capacity(), std::mem::size_of::<u128>())
    }
}

/// A hash table's bytes: its buckets (a power of two holding `capacity`
/// at 7/8 load), a slot and a control byte each.
fn table_bytes(capacity: usize, slot: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    (capacity * 8 / 7).next_power_of_two() * (slot + 1)
}

impl Sink {
    /// An empty sink with lag histogram bounds of an hour.
    pub fn new() -> Arc<Sink> {
        Arc::new(Sink {
            verifiers: OnceLock::new(),
            receipts: Mutex::new(Receipts {
                finals: HashMap::new(),
                order_events: HashMap::new(),
                events: 0,
                duplicates: 0,
                refused: 0,
                refusal_reasons: Vec::new(),
                lag_us: lag_histogram(),
                lag_us_by_kind: BTreeMap::new(),
                first_at: None,
                last_at: None,
                event_ids: HashSet::new(),
            }),
            final_count: AtomicU64::new(0),
        })
    }

    /// Sets the merchants' webhook secrets (`whsec_...`), in the order of
    /// the indexes in their notify URLs.
    pub fn set_secrets(&self, secrets: &[&str]) -> anyhow::Result<()> {
        let verifiers = secrets
            .iter()
            .map(|secret| Webhook::new(secret).map_err(|error| anyhow::anyhow!("webhook secret: {error}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        self.verifiers
            .set(verifiers)
            .map_err(|_| anyhow::anyhow!("sink secrets set twice"))
    }

    /// Resources whose final webhook has arrived.
    pub fn final_count(&self) -> u64 {
        self.final_count.load(Ordering::Relaxed)
    }

    /// Runs `read` on what was received.
    pub fn with_receipts<R>(&self, read: impl FnOnce(&Receipts) -> R) -> R {
        read(&self.receipts.lock().expect("sink lock"))
    }

    fn refuse(&self, reason: String) -> StatusCode {
        let mut receipts = self.receipts.lock().expect("sink lock");
        receipts.refused += 1;
        if receipts.refusal_reasons.len() < REASONS_KEPT {
            receipts.refusal_reasons.push(reason);
        }
        StatusCode::BAD_REQUEST
    }
}

/// Serves the sink on a free loopback port; returns its address and the
/// task, which runs until aborted.
pub async fn start(sink: Arc<Sink>) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let app = Router::new()
        .route("/webhooks/{merchant}", post(receive))
        .with_state(sink);
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "webhook sink stopped");
        }
    });
    Ok((address, task))
}

/// The notify URL of merchant `index`.
pub fn notify_url(address: SocketAddr, index: usize) -> String {
    format!("http://{address}/webhooks/{index}")
}

/// POST /webhooks/{merchant}: 204 once the signature is good and the body read.
async fn receive(
    State(sink): State<Arc<Sink>>,
    Path(merchant): Path<usize>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let arrived = Instant::now();
    let arrived_unix_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros() as i64);
    let Some(verifier) = sink.verifiers.get().and_then(|all| all.get(merchant)) else {
        return sink.refuse(format!("webhook for unknown merchant {merchant}"));
    };
    if let Err(error) = verifier.verify(&body, &headers) {
        return sink.refuse(format!("merchant {merchant}: signature refused: {error}"));
    }
    let event: Event = match serde_json::from_slice(&body) {
        Ok(event) => event,
        Err(error) => return sink.refuse(format!("merchant {merchant}: unreadable body: {error}")),
    };
    let Ok(event_at) = chrono::DateTime::parse_from_rfc3339(&event.event_at) else {
        return sink.refuse(format!("event_at {:?} is not RFC 3339", event.event_at));
    };
    let (Ok(event_id), Ok(id)) = (Uuid::parse_str(&event.event_id), Uuid::parse_str(&event.id)) else {
        return sink.refuse(format!(
            "event_id {:?} or id {:?} is not a UUID",
            event.event_id, event.id
        ));
    };
    let (event_id, id) = (event_id.as_u128(), id.as_u128());
    let lag_us = (arrived_unix_us - event_at.timestamp_micros()).max(0) as u64;
    let mut receipts = sink.receipts.lock().expect("sink lock");
    if !receipts.event_ids.insert(event_id) {
        receipts.duplicates += 1;
        return StatusCode::NO_CONTENT;
    }
    receipts.events += 1;
    receipts.lag_us.saturating_record(lag_us);
    let kind = event.event.split('.').next().unwrap_or_default();
    receipts
        .lag_us_by_kind
        .entry(kind.to_string())
        .or_insert_with(lag_histogram)
        .saturating_record(lag_us);
    if kind == "order" {
        *receipts.order_events.entry(id).or_default() += 1;
    }
    receipts.first_at.get_or_insert(arrived);
    receipts.last_at = Some(arrived);
    let status = final_status(kind, &event.status);
    if status.is_some_and(|status| receipts.finals.insert(id, FinalWebhook { status }).is_none()) {
        sink.final_count.fetch_add(1, Ordering::Relaxed);
    }
    StatusCode::NO_CONTENT
}
