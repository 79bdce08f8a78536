//! The measured load: items (a disbursement, an order, an order and its
//! payment) from a fixed number of keep-alive connections, each worker
//! taking the next item as soon as its previous one is done (or, at a set
//! rate, once it is due), every answer's latency recorded.

use super::client::{BenchMerchant, Gateway, AMOUNT_MINOR, ORDER_AMOUNT_MINOR};
use crate::config::Workload;
use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use reqwest::StatusCode;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Tries per request: a request whose outcome is unknown (no answer, 5xx)
/// is sent again with the same idempotency key, which either makes the
/// change or answers with the one already made, so none goes uncounted.
const ATTEMPTS_MAX: u32 = 5;
/// Pause before trying again.
const RETRY_PAUSE: Duration = Duration::from_millis(200);
/// Latencies are recorded in microseconds up to a minute.
const LATENCY_US_MAX: u64 = 60_000_000;

/// What one item of a workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// `POST /v1/disbursements`, settled by the sandbox vendor.
    Disbursement,
    /// `POST /v1/orders`, left PENDING.
    PendingOrder,
    /// `POST /v1/orders`, then `POST /v1/sandbox/orders/{ref_code}/pay`.
    PaidOrder,
}

impl Item {
    /// The HTTP requests it takes.
    pub fn requests(self) -> u64 {
        match self {
            Item::Disbursement | Item::PendingOrder => 1,
            Item::PaidOrder => 2,
        }
    }

    /// The webhook events it makes for a merchant with a notify URL: a
    /// disbursement's hand-over (ON_PROCESS) and its final status, a paid
    /// order's `order.paid`; a pending order none.
    pub fn webhooks(self) -> u64 {
        match self {
            Item::Disbursement => 2,
            Item::PendingOrder => 0,
            Item::PaidOrder => 1,
        }
    }
}

/// Item `index` of `workload` over `merchants`. A mixed load alternates
/// both across consecutive items and within each merchant's own items, so
/// every merchant pays out and is paid whatever the number of merchants.
pub fn item_of(workload: Workload, index: usize, merchants: usize) -> Item {
    match workload {
        Workload::Disbursements => Item::Disbursement,
        Workload::Orders => Item::PendingOrder,
        Workload::OrdersPaid => Item::PaidOrder,
        Workload::Mixed if (index % merchants + index / merchants) % 2 == 0 => Item::Disbursement,
        Workload::Mixed => Item::PaidOrder,
    }
}

/// Item `index` goes to merchant `index % merchants`.
pub fn merchant_of(index: usize, merchants: usize) -> usize {
    index % merchants
}

/// How many of items `0..count` are disbursements of `merchant`: what it
/// is funded for.
pub fn disbursements_of(workload: Workload, merchant: usize, merchants: usize, count: usize) -> usize {
    (merchant..count)
        .step_by(merchants)
        .filter(|&index| item_of(workload, index, merchants) == Item::Disbursement)
        .count()
}

/// When the item `offset` places into a load is due at `rate` a second
/// from `started` (`None` at rate 0: at once).
pub fn scheduled_at(started: Instant, offset: usize, rate: u64) -> Option<Instant> {
    (rate > 0).then(|| started + Duration::from_secs_f64(offset as f64 / rate as f64))
}

/// A disbursement the server took (201, or 409 carrying it after a retry).
pub struct Created {
    /// Its UUID.
    pub id: Uuid,
    /// Index of its merchant in the run's list.
    pub merchant: usize,
    /// `final_amount_minor`: what its creation debited.
    pub final_amount_minor: i64,
}

/// An order the server created.
pub struct CreatedOrder {
    /// Its UUID, as its webhooks carry it.
    pub id: Uuid,
    /// What it is looked up by.
    pub ref_code: Box<str>,
    /// Index of its merchant in the run's list.
    pub merchant: usize,
    /// Its payment was answered 200.
    pub paid: bool,
}

/// What a load measured.
pub struct LoadResult {
    /// Every disbursement the server took, in creation order per worker.
    pub created: Vec<Created>,
    /// Every order the server created, paid or not.
    pub orders: Vec<CreatedOrder>,
    /// Items done whole (created, and paid where they are to be paid).
    pub items_done: u64,
    /// Latency of every answered request, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Items not done whole, by reason.
    pub refused: BTreeMap<String, u64>,
    /// From the first request to the last answer.
    pub elapsed: Duration,
    /// When the last answer came.
    pub finished: Instant,
}

impl LoadResult {
    /// A result with nothing in it yet, its clock at `started`.
    pub fn empty(started: Instant) -> LoadResult {
        LoadResult {
            created: Vec::new(),
            orders: Vec::new(),
            items_done: 0,
            latency_us: latency_histogram(),
            refused: BTreeMap::new(),
            elapsed: Duration::ZERO,
            finished: started,
        }
    }

    /// Adds `other`'s items and latencies; its time is the caller's to count.
    /// Final webhooks its items are owed: one a disbursement, one a paid order.
    pub fn finals_expected(&self) -> u64 {
        self.created.len() as u64 + self.orders.iter().filter(|order| order.paid).count() as u64
    }

    /// Bytes its records of items hold, from their capacities: they live
    /// in the process whose memory the benchmark reads.
    pub fn record_bytes(&self) -> usize {
        let ref_codes: usize = self
            .orders
            .iter()
            .map(|order| order.ref_code.len().next_multiple_of(8))
            .sum();
        self.created.capacity() * std::mem::size_of::<Created>()
            + self.orders.capacity() * std::mem::size_of::<CreatedOrder>()
            + ref_codes
    }

    pub fn absorb(&mut self, other: LoadResult) {
        self.created.extend(other.created);
        self.orders.extend(other.orders);
        self.items_done += other.items_done;
        self.latency_us
            .add(&other.latency_us)
            .expect("histograms of one shape add up");
        for (reason, n) in other.refused {
            *self.refused.entry(reason).or_default() += n;
        }
    }
}

/// A new latency histogram (3 significant figures).
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("valid histogram bounds")
}

/// Runs items `indexes` of `workload` over `connections` concurrent
/// connections, `rate` a second (0: as fast as they are answered).
pub async fn run(
    gateway: Arc<Gateway>,
    merchants: Arc<Vec<BenchMerchant>>,
    workload: Workload,
    indexes: Range<usize>,
    connections: usize,
    rate: u64,
    progress: ProgressBar,
) -> LoadResult {
    let next = Arc::new(AtomicUsize::new(indexes.start));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..connections.min(indexes.len()) {
        let (gateway, merchants, next, progress) = (gateway.clone(), merchants.clone(), next.clone(), progress.clone());
        let (first, end) = (indexes.start, indexes.end);
        workers.spawn(async move {
            let mut mine = LoadResult::empty(started);
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= end {
                    return mine;
                }
                let merchant = merchant_of(index, merchants.len());
                let scheduled = scheduled_at(started, index - first, rate);
                if let Some(due) = scheduled {
                    tokio::time::sleep_until(due.into()).await;
                }
                let item = item_of(workload, index, merchants.len());
                let done = run_item(
                    &gateway,
                    &merchants[merchant],
                    merchant,
                    index,
                    item,
                    scheduled,
                    &mut mine,
                )
                .await;
                match done {
                    Ok(()) => mine.items_done += 1,
                    Err(reason) => *mine.refused.entry(reason).or_default() += 1,
                }
                progress.inc(1);
            }
        });
    }
    let mut result = LoadResult::empty(started);
    while let Some(done) = workers.join_next().await {
        result.absorb(done.expect("a load worker panicked"));
    }
    result.finished = Instant::now();
    result.elapsed = result.finished - started;
    result
}

/// Sends item `index`'s requests, noting what the server made in `mine`;
/// why the item was not done whole, if it was not.
async fn run_item(
    gateway: &Gateway,
    merchant: &BenchMerchant,
    merchant_index: usize,
    index: usize,
    item: Item,
    scheduled: Option<Instant>,
    mine: &mut LoadResult,
) -> Result<(), String> {
    let latency_us = &mut mine.latency_us;
    match item {
        Item::Disbursement => {
            // Account numbers vary so the vendor sees distinct payees; the
            // key is unique per merchant within the run (its merchants are new).
            let call = Call {
                path: "/v1/disbursements".into(),
                api_key: &merchant.api_key,
                idempotency_key: None,
                body: Some(format!(
                    r#"{{"idempotency_key":"benchmark-{index}","channel":"BANK","bank_short_code":"BCA","account_number":"{:010}","account_name":"Budi Santoso","amount_minor":{AMOUNT_MINOR}}}"#,
                    1_000_000_000 + index as u64
                )),
                expected: StatusCode::CREATED,
                // A retry of a request that was taken meets its own key.
                taken_on_retry: "DUPLICATE_IDEMPOTENCY_KEY",
            };
            let data = send(gateway, &call, scheduled, latency_us).await?;
            let id = data["id"].as_str().and_then(|id| Uuid::parse_str(id).ok());
            match (id, data["final_amount_minor"].as_i64()) {
                (Some(id), Some(final_amount_minor)) => {
                    mine.created.push(Created {
                        id,
                        merchant: merchant_index,
                        final_amount_minor,
                    });
                    Ok(())
                }
                _ => Err("disbursement answered without a UUID id and final_amount_minor".into()),
            }
        }
        Item::PendingOrder | Item::PaidOrder => {
            let key = format!("benchmark-order-{index}");
            let call = Call {
                path: "/v1/orders".into(),
                api_key: &merchant.api_key,
                idempotency_key: Some(&key),
                body: Some(format!(
                    r#"{{"merchant_order_id":"{key}","amount_minor":{ORDER_AMOUNT_MINOR},"payment_method":"QRIS","customer_phone":"081234567890"}}"#
                )),
                expected: StatusCode::CREATED,
                // The same key and body replay the first answer, 201 again.
                taken_on_retry: "",
            };
            let data = send(gateway, &call, scheduled, latency_us).await?;
            let id = data["id"].as_str().and_then(|id| Uuid::parse_str(id).ok());
            let (Some(id), Some(ref_code)) = (id, data["ref_code"].as_str()) else {
                return Err("order answered without a UUID id and ref_code".into());
            };
            let mut order = CreatedOrder {
                id,
                ref_code: ref_code.into(),
                merchant: merchant_index,
                paid: false,
            };
            let paid = if item == Item::PaidOrder {
                let pay = Call {
                    path: format!("/v1/sandbox/orders/{ref_code}/pay"),
                    api_key: &merchant.api_key,
                    idempotency_key: None,
                    body: None,
                    expected: StatusCode::OK,
                    // A retry after a payment that was taken finds it PAID.
                    taken_on_retry: "INVALID_STATUS",
                };
                send(gateway, &pay, None, latency_us).await.map(|_| order.paid = true)
            } else {
                Ok(())
            };
            mine.orders.push(order);
            paid.map_err(|reason| format!("payment: {reason}"))
        }
    }
}

/// One request, as sent and sent again while its outcome is unknown.
struct Call<'a> {
    path: String,
    api_key: &'a str,
    idempotency_key: Option<&'a str>,
    body: Option<String>,
    expected: StatusCode,
    /// The error code that, answering a retry, says the first try was taken.
    taken_on_retry: &'static str,
}

/// Sends `call` until it is answered for good; its answer's `data`, or why
/// it failed. Its first latency counts from `scheduled` when it had a due time.
async fn send(
    gateway: &Gateway,
    call: &Call<'_>,
    scheduled: Option<Instant>,
    latency_us: &mut Histogram<u64>,
) -> Result<Value, String> {
    let url = format!("{}{}", gateway.base, call.path);
    let mut last_failure = String::new();
    for attempt in 1..=ATTEMPTS_MAX {
        if attempt > 1 {
            tokio::time::sleep(RETRY_PAUSE).await;
        }
        let sent = Instant::now();
        let mut request = gateway.http.post(&url).header("X-API-Key", call.api_key);
        if let Some(key) = call.idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        if let Some(body) = &call.body {
            request = request.header("Content-Type", "application/json").body(body.clone());
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                last_failure = format!("no answer: {error}");
                continue;
            }
        };
        let status = response.status();
        let mut answer: Value = match response.bytes().await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            Err(error) => {
                last_failure = format!("answer cut short: {error}");
                continue;
            }
        };
        let counted_from = if attempt == 1 { scheduled.unwrap_or(sent) } else { sent };
        latency_us.saturating_record(counted_from.elapsed().as_micros() as u64);
        let code = answer["error"]["code"].as_str().unwrap_or("").to_string();
        let taken_before = attempt > 1 && !call.taken_on_retry.is_empty() && code == call.taken_on_retry;
        if status == call.expected || taken_before {
            return Ok(answer["data"].take());
        }
        last_failure = format!("HTTP {} {code}", status.as_u16());
        if !(status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS) {
            return Err(last_failure);
        }
    }
    Err(format!("{last_failure} ({ATTEMPTS_MAX} attempts)"))
}

#[cfg(test)]
mod tests {
    use super::Item;
    use crate::config::Workload;
    use std::time::{Duration, Instant};

    #[test]
    fn a_paced_run_spreads_its_items_evenly_and_an_unpaced_one_sends_at_once() {
        let started = Instant::now();
        assert_eq!(super::scheduled_at(started, 0, 1000), Some(started));
        assert_eq!(
            super::scheduled_at(started, 2500, 1000),
            Some(started + Duration::from_millis(2500))
        );
        assert_eq!(super::scheduled_at(started, 2500, 0), None);
    }

    #[test]
    fn each_merchant_is_funded_for_exactly_the_disbursements_it_gets() {
        for workload in [Workload::Disbursements, Workload::Mixed, Workload::OrdersPaid] {
            for (merchants, count) in [
                (1, 1),
                (2, 7),
                (3, 300),
                (3, 301),
                (7, 5),
                (1000, 50_000),
                (1000, 49_999),
            ] {
                let mut counted = vec![0; merchants];
                for index in 0..count {
                    if super::item_of(workload, index, merchants) == Item::Disbursement {
                        counted[super::merchant_of(index, merchants)] += 1;
                    }
                }
                for (merchant, counted) in counted.into_iter().enumerate() {
                    assert_eq!(
                        super::disbursements_of(workload, merchant, merchants, count),
                        counted,
                        "{workload:?} {merchants} {count}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_mixed_load_is_half_disbursements_overall_and_for_each_merchant() {
        for merchants in [1, 2, 3, 4, 1000] {
            let count = merchants * 10;
            let mut per_merchant = vec![0; merchants];
            for index in 0..count {
                if super::item_of(Workload::Mixed, index, merchants) == Item::Disbursement {
                    per_merchant[super::merchant_of(index, merchants)] += 1;
                }
            }
            assert!(per_merchant.iter().all(|&n| n == 5), "{merchants}: {per_merchant:?}");
        }
        // Fewer items than merchants still alternate.
        let first: Vec<Item> = (0..4).map(|i| super::item_of(Workload::Mixed, i, 1000)).collect();
        assert_eq!(
            first,
            [Item::Disbursement, Item::PaidOrder, Item::Disbursement, Item::PaidOrder]
        );
    }
}
