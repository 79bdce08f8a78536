//! The benchmark's side of HTTP: merchant setup through the admin API, the
//! V1 reads the checks make, and a pool of workers sharing a list of jobs.
//! One client serves the baseline and paygate alike.

use anyhow::{bail, Context};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Request amount of every disbursement: IDR 10,000.
pub const AMOUNT_MINOR: i64 = 1_000_000;
/// Bank disbursement fee, set on each merchant so the expected debits are known.
pub const FEE_MINOR: i64 = 250_000;
/// Amount of every order: IDR 25,000.
pub const ORDER_AMOUNT_MINOR: i64 = 2_500_000;
/// QRIS MDR set on each merchant (0.7%, the service's default), so what a
/// paid order credits is known; no platform or aggregator fee.
const QRIS_MDR_BPS: i64 = 70;
// The MDR of an order divides exactly: no rounding rule to repeat here.
const _: () = assert!(ORDER_AMOUNT_MINOR * QRIS_MDR_BPS % 10_000 == 0);
/// What a paid order credits a WALLET merchant: its amount less the MDR.
pub const ORDER_NET_MINOR: i64 = ORDER_AMOUNT_MINOR - ORDER_AMOUNT_MINOR * QRIS_MDR_BPS / 10_000;
/// Left in every wallet beyond its share of disbursements: IDR 1,000,000.
const FUNDING_MARGIN_MINOR: i64 = 100_000_000;
/// The daily limit counts request amounts; this one no run reaches.
const DAILY_LIMIT_MINOR: i64 = 1_000_000_000_000_000_000;
/// The highest rate limits the engine accepts: the load, not a limiter, is measured.
const RATE_LIMIT_MAX: i64 = 1_000_000;
/// One request's time limit: far above any answer of a healthy server.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The ledger check's time limit: it reads every entry the run made, and a
/// run of ten million items makes ten million entries (about a minute).
const VERIFY_TIMEOUT: Duration = Duration::from_secs(900);

/// A merchant made for the run.
pub struct BenchMerchant {
    /// Its UUID.
    pub id: String,
    /// `X-API-Key`.
    pub api_key: String,
    /// `whsec_...`, for the sink to check signatures.
    pub webhook_secret: String,
    /// What the operator credited.
    pub funding_minor: i64,
}

/// A server's base URL, the admin token and the run's keep-alive client.
pub struct Gateway {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    admin_token: String,
    /// Pooled, HTTP/1.1, connections kept alive between requests.
    pub http: reqwest::Client,
}

/// The run's HTTP client: pooled, keeping up to `connections` idle
/// connections per server, so each load worker keeps its own.
pub fn http_client(connections: usize) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .timeout(REQUEST_TIMEOUT)
        .tcp_nodelay(true)
        .build()?)
}

impl Gateway {
    /// The server at `address` through `http` (a clone shares its pool).
    pub fn new(address: SocketAddr, admin_token: &str, http: reqwest::Client) -> Gateway {
        Gateway {
            base: format!("http://{address}"),
            admin_token: admin_token.to_string(),
            http,
        }
    }

    /// An admin call that must answer `expected`; its `data`.
    async fn admin(&self, request: reqwest::RequestBuilder, expected: StatusCode, what: &str) -> anyhow::Result<Value> {
        let response = request
            .bearer_auth(&self.admin_token)
            .send()
            .await
            .with_context(|| what.to_string())?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status != expected {
            bail!("{what}: HTTP {status}: {body}");
        }
        Ok(body["data"].clone())
    }

    /// Creates a WALLET merchant whose webhooks go to `notify_url`, with
    /// limits out of the load's way and known fees, and credits it enough
    /// for `disbursements` of them.
    pub async fn create_merchant(
        &self,
        index: usize,
        notify_url: &str,
        disbursements: u64,
    ) -> anyhow::Result<BenchMerchant> {
        let body = json!({
            "name": format!("Benchmark merchant {index}"),
            "settlement_type": "WALLET",
            "fees": {
                "disbursement_fee_bank_minor": FEE_MINOR,
                "qris_mdr_bps": QRIS_MDR_BPS,
                "platform_fee_minor": 0,
                "aggregator_fee_minor": 0,
            },
            "limits": {
                "daily_minor": DAILY_LIMIT_MINOR,
                "rate_limit_per_second": RATE_LIMIT_MAX,
                "rate_limit_burst": RATE_LIMIT_MAX,
            },
            "default_notify_url": notify_url,
        });
        let post = self.http.post(format!("{}/admin/v1/merchants", self.base)).json(&body);
        let data = self.admin(post, StatusCode::CREATED, "creating a merchant").await?;
        let text = |value: &Value| {
            value
                .as_str()
                .map(str::to_string)
                .context("merchant answer without a field")
        };
        let id = text(&data["merchant"]["id"])?;
        let funding_minor = i64::try_from(disbursements)?
            .checked_mul(AMOUNT_MINOR + FEE_MINOR)
            .and_then(|share| share.checked_add(FUNDING_MARGIN_MINOR))
            .context("funding out of range")?;
        let credit = self
            .http
            .post(format!("{}/admin/v1/merchants/{id}/wallet/credit", self.base))
            .json(&json!({ "amount_minor": funding_minor, "reason": "benchmark funding" }));
        let credited = self.admin(credit, StatusCode::OK, "funding a merchant").await?;
        if credited["balance_minor"].as_i64() != Some(funding_minor) {
            bail!(
                "merchant {id} funded with {funding_minor} but its balance is {}",
                credited["balance_minor"]
            );
        }
        Ok(BenchMerchant {
            id,
            api_key: text(&data["credentials"]["api_key"])?,
            webhook_secret: text(&data["credentials"]["webhook_secret"])?,
            funding_minor,
        })
    }

    /// `GET /admin/v1/ledger/verify`'s data.
    pub async fn verify_ledger(&self) -> anyhow::Result<Value> {
        let get = self
            .http
            .get(format!("{}/admin/v1/ledger/verify", self.base))
            .timeout(VERIFY_TIMEOUT);
        self.admin(get, StatusCode::OK, "verifying the ledger").await
    }

    /// `GET /v1/disbursements/{id}`'s data; `None` for a 404.
    pub async fn disbursement(&self, api_key: &str, id: &str) -> anyhow::Result<Option<Value>> {
        self.v1_get(api_key, &format!("/v1/disbursements/{id}")).await
    }

    /// `GET /v1/orders/{ref_code}`'s data; `None` for a 404.
    pub async fn order(&self, api_key: &str, ref_code: &str) -> anyhow::Result<Option<Value>> {
        self.v1_get(api_key, &format!("/v1/orders/{ref_code}")).await
    }

    async fn v1_get(&self, api_key: &str, path: &str) -> anyhow::Result<Option<Value>> {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .header("X-API-Key", api_key)
            .send()
            .await
            .with_context(|| format!("GET {path}"))?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        match status {
            StatusCode::OK => Ok(Some(body["data"].clone())),
            StatusCode::NOT_FOUND => Ok(None),
            other => bail!("GET {path}: HTTP {other}: {body}"),
        }
    }

    /// `GET /v1/balance`: the wallet balance in minor units.
    pub async fn balance(&self, api_key: &str) -> anyhow::Result<i64> {
        let response = self
            .http
            .get(format!("{}/v1/balance", self.base))
            .header("X-API-Key", api_key)
            .send()
            .await
            .context("GET /v1/balance")?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        match body["data"]["balance_minor"].as_i64() {
            Some(balance) if status == StatusCode::OK => Ok(balance),
            _ => bail!("GET /v1/balance: HTTP {status}: {body}"),
        }
    }
}

/// Runs `job(index)` for every index below `count` on `workers` tasks, each
/// taking the next index when it is done with one; the results in index order.
pub async fn in_parallel<R, F, Fut>(count: usize, workers: usize, job: F) -> Vec<R>
where
    R: Send + 'static,
    F: Fn(usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = R> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.clamp(1, count.max(1)) {
        let (next, job) = (next.clone(), job.clone());
        tasks.spawn(async move {
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return done;
                }
                done.push((index, job(index).await));
            }
        });
    }
    let mut results: Vec<(usize, R)> = Vec::with_capacity(count);
    while let Some(done) = tasks.join_next().await {
        results.extend(done.expect("a benchmark worker panicked"));
    }
    results.sort_unstable_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}
