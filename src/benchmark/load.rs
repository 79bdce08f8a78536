//! The measured load: `POST /v1/disbursements` from a fixed number of
//! keep-alive connections, each worker taking the next disbursement as soon
//! as its previous one is answered (or, at a set rate, once it is due),
//! every answer's latency recorded.

use super::client::{BenchMerchant, Gateway, AMOUNT_MINOR};
use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use reqwest::StatusCode;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tries per disbursement: a request whose outcome is unknown (no answer,
/// 5xx) is sent again with the same idempotency key, which either creates
/// it or answers 409 with the one already made, so no debit goes uncounted.
const ATTEMPTS_MAX: u32 = 5;
/// Pause before trying again.
const RETRY_PAUSE: Duration = Duration::from_millis(200);
/// Latencies are recorded in microseconds up to a minute.
const LATENCY_US_MAX: u64 = 60_000_000;

/// A disbursement the server took (201, or 409 carrying it after a retry).
pub struct Created {
    /// Its UUID.
    pub id: String,
    /// Index of its merchant in the run's list.
    pub merchant: usize,
    /// `final_amount_minor`: what its creation debited.
    pub final_amount_minor: i64,
}

/// What the creation phase measured.
pub struct LoadResult {
    /// Every disbursement the server took, in creation order per worker.
    pub created: Vec<Created>,
    /// Latency of every answered request, in microseconds.
    pub latency_us: Histogram<u64>,
    /// Disbursements not created, by reason.
    pub refused: BTreeMap<String, u64>,
    /// From the first request to the last answer.
    pub elapsed: Duration,
    /// When the last answer came.
    pub finished: Instant,
}

/// A new latency histogram (3 significant figures).
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("valid histogram bounds")
}

/// Disbursement `index` goes to merchant `index % merchants`.
pub fn merchant_of(index: usize, merchants: usize) -> usize {
    index % merchants
}

/// How many of `count` disbursements `merchant_of` gives `merchant`.
pub fn share_of(merchant: usize, merchants: usize, count: usize) -> usize {
    count / merchants + usize::from(merchant < count % merchants)
}

/// When disbursement `index` is due at `rate` a second from `started`
/// (`None` at rate 0: at once).
pub fn scheduled_at(started: Instant, index: usize, rate: u64) -> Option<Instant> {
    (rate > 0).then(|| started + Duration::from_secs_f64(index as f64 / rate as f64))
}

/// Creates `count` disbursements over `connections` concurrent connections,
/// `rate` a second (0: as fast as they are answered).
pub async fn create_disbursements(
    gateway: Arc<Gateway>,
    merchants: Arc<Vec<BenchMerchant>>,
    count: usize,
    connections: usize,
    rate: u64,
    progress: ProgressBar,
) -> LoadResult {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..connections.min(count) {
        let (gateway, merchants, next, progress) = (gateway.clone(), merchants.clone(), next.clone(), progress.clone());
        workers.spawn(async move {
            let mut mine = WorkerResult {
                created: Vec::new(),
                latency_us: latency_histogram(),
                refused: BTreeMap::new(),
            };
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return mine;
                }
                let merchant = merchant_of(index, merchants.len());
                let scheduled = scheduled_at(started, index, rate);
                if let Some(due) = scheduled {
                    tokio::time::sleep_until(due.into()).await;
                }
                match create_one(&gateway, &merchants[merchant], index, scheduled, &mut mine.latency_us).await {
                    Ok((id, final_amount_minor)) => mine.created.push(Created {
                        id,
                        merchant,
                        final_amount_minor,
                    }),
                    Err(reason) => *mine.refused.entry(reason).or_default() += 1,
                }
                progress.inc(1);
            }
        });
    }
    let mut result = LoadResult {
        created: Vec::with_capacity(count),
        latency_us: latency_histogram(),
        refused: BTreeMap::new(),
        elapsed: Duration::ZERO,
        finished: started,
    };
    while let Some(done) = workers.join_next().await {
        let mine = done.expect("a load worker panicked");
        result.created.extend(mine.created);
        result
            .latency_us
            .add(&mine.latency_us)
            .expect("histograms of one shape add up");
        for (reason, n) in mine.refused {
            *result.refused.entry(reason).or_default() += n;
        }
    }
    result.finished = Instant::now();
    result.elapsed = result.finished - started;
    result
}

struct WorkerResult {
    created: Vec<Created>,
    latency_us: Histogram<u64>,
    refused: BTreeMap<String, u64>,
}

/// Sends disbursement `index`; its id and final amount, or why it was not
/// made. Its latency counts from `scheduled` when it had a due time.
async fn create_one(
    gateway: &Gateway,
    merchant: &BenchMerchant,
    index: usize,
    scheduled: Option<Instant>,
    latency_us: &mut Histogram<u64>,
) -> Result<(String, i64), String> {
    // Account numbers vary so the vendor sees distinct payees; the key is
    // unique per merchant within the run (its merchants are new).
    let body = format!(
        r#"{{"idempotency_key":"benchmark-{index}","channel":"BANK","bank_short_code":"BCA","account_number":"{:010}","account_name":"Budi Santoso","amount_minor":{AMOUNT_MINOR}}}"#,
        1_000_000_000 + index as u64
    );
    let url = format!("{}/v1/disbursements", gateway.base);
    let mut last_failure = String::new();
    for attempt in 1..=ATTEMPTS_MAX {
        if attempt > 1 {
            tokio::time::sleep(RETRY_PAUSE).await;
        }
        let sent = Instant::now();
        let response = gateway
            .http
            .post(&url)
            .header("X-API-Key", &merchant.api_key)
            .header("Content-Type", "application/json")
            .body(body.clone())
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                last_failure = format!("no answer: {error}");
                continue;
            }
        };
        let status = response.status();
        let answer: Value = match response.bytes().await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            Err(error) => {
                last_failure = format!("answer cut short: {error}");
                continue;
            }
        };
        let counted_from = if attempt == 1 { scheduled.unwrap_or(sent) } else { sent };
        latency_us.saturating_record(counted_from.elapsed().as_micros() as u64);
        let code = answer["error"]["code"].as_str().unwrap_or("").to_string();
        let taken = status == StatusCode::CREATED
            || (status == StatusCode::CONFLICT && attempt > 1 && code == "DUPLICATE_IDEMPOTENCY_KEY");
        if taken {
            let data = &answer["data"];
            return match (data["id"].as_str(), data["final_amount_minor"].as_i64()) {
                (Some(id), Some(final_amount)) => Ok((id.to_string(), final_amount)),
                _ => Err(format!("HTTP {status} without id and final_amount_minor")),
            };
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
    use std::time::{Duration, Instant};

    #[test]
    fn a_paced_run_spreads_its_disbursements_evenly_and_an_unpaced_one_sends_at_once() {
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
        for (merchants, count) in [(1, 1), (3, 300), (3, 301), (7, 5), (1000, 50_000), (1000, 49_999)] {
            let mut counted = vec![0; merchants];
            for index in 0..count {
                counted[super::merchant_of(index, merchants)] += 1;
            }
            for (merchant, counted) in counted.into_iter().enumerate() {
                assert_eq!(
                    super::share_of(merchant, merchants, count),
                    counted,
                    "{merchants} {count}"
                );
            }
        }
    }
}
