//! Command line, `PAYGATE_*` environment and `--config` TOML file, resolved
//! in that order of precedence over the embedded defaults.

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use paygate_api::serve::ConnectionLimits;
use paygate_api::Mode;
use paygate_engine::vendor::SandboxPayoutVendor;
use paygate_engine::EngineConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Base URL of e-wallet logos.
pub const CDN_URL: &str = "https://cdn.paygate.id";

/// paygate: payment gateway for Indonesian merchants.
#[derive(Parser)]
#[command(version, about)]
pub struct Cli {
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Run the HTTP service.
    Serve(Box<ServeArgs>),
    /// Measure disbursements or orders end to end against an in-process
    /// sandbox server, next to a bare axum baseline in the same process.
    Benchmark(BenchmarkArgs),
    /// Check a data dir offline (a backup, or one a crash left): replay its
    /// journal over its checkpoint and check every ledger invariant.
    Verify(VerifyArgs),
    /// Last resort for a journal damaged in the middle (`verify` names the
    /// place): cut it there. Records from the cut on are lost to the
    /// ledger; their bytes are kept aside in `<data-dir>/journal-cut/`.
    Repair(RepairArgs),
    /// Print the API document (OpenAPI 3.1, as `GET /openapi.json` serves
    /// it) to stdout, to generate a client without running the server.
    Openapi,
    /// A cluster's shared state in its PostgreSQL database.
    #[command(subcommand)]
    Cluster(ClusterCommand),
}

/// `paygate cluster` subcommands.
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Print each shard's owner, epoch and lease expiry, and each node's
    /// last heartbeat.
    Status(ClusterStatusArgs),
}

/// Flags of `paygate cluster status`.
#[derive(Args, Debug)]
pub struct ClusterStatusArgs {
    /// The cluster's database, `postgres://user@host:port/database`.
    #[arg(long, env = "PAYGATE_CLUSTER_URL")]
    pub cluster_url: String,
}

/// Flags of `paygate repair`.
#[derive(Args, Debug)]
pub struct RepairArgs {
    /// The data directory to repair (no server may be running on it).
    #[arg(long)]
    pub data_dir: PathBuf,
    /// Where to cut: the damaged segment's file name and byte, as `verify`
    /// printed them, e.g. `journal-00000000000000000001.log:40960`.
    #[arg(long, value_name = "SEGMENT:BYTE")]
    pub cut_journal_at: String,
}

/// Flags of `paygate verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The data directory to check.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// Recover the directory itself, as a start of the server would (a torn
    /// journal tail cut, a checkpoint written), instead of a copy of it.
    #[arg(long)]
    pub in_place: bool,
}

impl Default for Command {
    fn default() -> Self {
        Command::Serve(Box::default())
    }
}

/// Flags of `paygate serve`; each also reads a `PAYGATE_*` variable.
#[derive(Args, Default, Debug)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "PAYGATE_LISTEN")]
    pub listen: Option<String>,
    /// Data directory [default: ./data].
    #[arg(long, env = "PAYGATE_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// sandbox or live [default: sandbox].
    #[arg(long, env = "PAYGATE_MODE")]
    pub mode: Option<String>,
    /// Admin bearer token [default: generated into <data-dir>/admin-token].
    #[arg(long, env = "PAYGATE_ADMIN_TOKEN")]
    pub admin_token: Option<String>,
    /// TOML file with any of these settings (snake_case keys).
    #[arg(long, env = "PAYGATE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Base of absolute URLs given to clients [default: http://<listen address>].
    #[arg(long, env = "PAYGATE_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Multiplier of the webhook retry schedule [default: 1].
    #[arg(long, env = "PAYGATE_WEBHOOK_RETRY_SCALE")]
    pub webhook_retry_scale: Option<f64>,
    /// Days delivered (or given up) webhook events and their attempts are
    /// kept, then dropped; fractions allowed [default: 30].
    #[arg(long, env = "PAYGATE_WEBHOOK_RETENTION_DAYS")]
    pub webhook_retention_days: Option<f64>,
    /// Sandbox vendor's disbursement completion delay [default: 2000].
    #[arg(long, env = "PAYGATE_SANDBOX_DISBURSEMENT_DELAY_MS")]
    pub sandbox_disbursement_delay_ms: Option<u64>,
    /// Multiplier of the payout vendor inquiry schedule [default: 1].
    #[arg(long, env = "PAYGATE_VENDOR_RETRY_SCALE")]
    pub vendor_retry_scale: Option<f64>,
    /// Connections served at once; more are answered 503 and closed [default: 10000].
    #[arg(long, env = "PAYGATE_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// The cluster's PostgreSQL database, `postgres://user@host:port/db`:
    /// turns cluster mode on [default: one node, no cluster].
    #[arg(long, env = "PAYGATE_CLUSTER_URL")]
    pub cluster_url: Option<String>,
    /// This node's id, unique in the cluster [default: the host name].
    #[arg(long, env = "PAYGATE_NODE_ID")]
    pub node_id: Option<String>,
    /// How the other nodes reach this one [default: the public URL].
    #[arg(long, env = "PAYGATE_ADVERTISE_URL")]
    pub advertise_url: Option<String>,
    /// Shared by the cluster's nodes; signs the requests they forward.
    #[arg(long, env = "PAYGATE_CLUSTER_SECRET")]
    pub cluster_secret: Option<String>,
}

/// Flags of `paygate benchmark`.
#[derive(Args, Debug)]
pub struct BenchmarkArgs {
    /// What each item of the load is.
    #[arg(long, value_enum, default_value_t = Workload::Disbursements)]
    pub workload: Workload,
    /// Items to run through the workload, over all phases (`--disbursements`
    /// still works: it named them when disbursements were the only workload).
    #[arg(long, alias = "disbursements", default_value_t = 50_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub items: u64,
    /// Phases of equal size the items run in, each followed by the webhook
    /// drain and an idle wait, with the idle resident memory after each: a
    /// server whose memory is bounded stops growing from one to the next.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000))]
    pub phases: u64,
    /// WALLET merchants the items are spread over.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub merchants: u64,
    /// Concurrent HTTP connections of the load generator.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4_096))]
    pub connections: u64,
    /// Data directory [default: a temporary directory, removed at the end].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Sandbox vendor's completion delay, so payouts settle during the run.
    #[arg(long, alias = "sandbox-delay-ms", default_value_t = 500,
          value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub sandbox_disbursement_delay_ms: u64,
    /// Items started per second, paced; 0: as fast as the connections are
    /// answered. A paced run counts each item's first latency from its
    /// scheduled time, so a server that falls behind shows it.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub rate: u64,
    /// Items the baseline and the floor each take [default: one phase's
    /// items]. A long soak measures memory over many phases; its baseline
    /// needs only enough items for a steady figure, not a phase's worth.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub baseline_items: Option<u64>,
}

/// The items of a `paygate benchmark` load.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `POST /v1/disbursements`, each settled by the sandbox vendor: two webhooks.
    Disbursements,
    /// `POST /v1/orders` (QRIS), left PENDING: no webhook.
    Orders,
    /// Each order created, then paid through the sandbox: one `order.paid` webhook.
    OrdersPaid,
    /// Disbursements and paid orders, alternating.
    Mixed,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    mode: Option<String>,
    admin_token: Option<String>,
    public_url: Option<String>,
    webhook_retry_scale: Option<f64>,
    webhook_retention_days: Option<f64>,
    sandbox_disbursement_delay_ms: Option<u64>,
    vendor_retry_scale: Option<f64>,
    max_connections: Option<usize>,
    cluster_url: Option<String>,
    node_id: Option<String>,
    advertise_url: Option<String>,
    cluster_secret: Option<String>,
}

/// The settings in force.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: String,
    pub data_dir: PathBuf,
    pub mode: Mode,
    pub admin_token: Option<String>,
    pub public_url: Option<String>,
    pub webhook_retry_scale: f64,
    pub webhook_retention: std::time::Duration,
    pub sandbox_disbursement_delay_ms: u64,
    pub vendor_retry_scale: f64,
    pub max_connections: usize,
    /// Set in cluster mode.
    pub cluster: Option<ClusterSettings>,
}

/// A cluster node's settings (ARCHITECTURE.md, A cluster).
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// The cluster's database.
    pub url: String,
    /// This node's id.
    pub node_id: String,
    /// How the other nodes reach this one; `None`: the public URL, known
    /// once the listener is bound.
    pub advertise_url: Option<String>,
    /// Signs forwarded requests.
    pub secret: String,
}

/// The cluster settings, when a cluster URL is given: each node needs the
/// shared secret, and the same admin token (an admin request may be
/// answered by any node), so neither is left to a default.
fn resolve_cluster(
    url: Option<String>,
    node_id: Option<String>,
    advertise_url: Option<String>,
    secret: Option<String>,
    admin_token: Option<&str>,
) -> anyhow::Result<Option<ClusterSettings>> {
    let Some(url) = url.filter(|url| !url.is_empty()) else {
        return Ok(None);
    };
    let secret = secret
        .filter(|secret| secret.len() >= 16)
        .context("--cluster-secret (at least 16 characters, the same on every node) is required with --cluster-url")?;
    if admin_token.is_none() {
        bail!("--admin-token (the same on every node) is required with --cluster-url");
    }
    let node_id = match node_id.filter(|id| !id.is_empty()) {
        Some(id) => id,
        None => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|name| name.trim().to_string())
            .ok()
            .filter(|name| !name.is_empty())
            .context("--node-id is required: the host name could not be read")?,
    };
    if node_id.len() > 64
        || !node_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        bail!("--node-id must be 1 to 64 letters, digits, '-', '_' or '.', not {node_id:?}");
    }
    let advertise_url = advertise_url.map(|u| u.trim_end_matches('/').to_string());
    if let Some(url) = &advertise_url {
        check_public_url(url)
            .map_err(|_| anyhow::anyhow!("--advertise-url must be an absolute http:// URL, not {url:?}"))?;
    }
    Ok(Some(ClusterSettings {
        url,
        node_id,
        advertise_url,
        secret,
    }))
}

impl Settings {
    /// The engine configuration of these settings, on `dir` (the data dir,
    /// or in a cluster a shard's folder of it).
    pub fn engine_config(&self, dir: &Path) -> EngineConfig {
        let mut engine_config = EngineConfig::new(dir);
        engine_config.vendor_retry_scale = self.vendor_retry_scale;
        engine_config.webhook_retention = self.webhook_retention;
        if self.mode == Mode::Sandbox {
            let delay = std::time::Duration::from_millis(self.sandbox_disbursement_delay_ms);
            engine_config.payout_vendor = Some(Arc::new(SandboxPayoutVendor { delay }));
            // Sandbox refunds take as long as sandbox payouts.
            engine_config.sandbox_refund_delay = Some(delay);
            engine_config.allow_private_notify_urls = true;
        }
        engine_config
    }

    /// Flags and env first, then the config file, then defaults.
    pub fn resolve(args: ServeArgs) -> anyhow::Result<Settings> {
        let file: FileSettings = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?
            }
            None => FileSettings::default(),
        };
        let mode = match args.mode.or(file.mode).as_deref().unwrap_or("sandbox") {
            "sandbox" => Mode::Sandbox,
            "live" => Mode::Live,
            other => bail!("--mode must be sandbox or live, not {other:?}"),
        };
        let webhook_retry_scale = args.webhook_retry_scale.or(file.webhook_retry_scale).unwrap_or(1.0);
        if !(webhook_retry_scale.is_finite() && webhook_retry_scale > 0.0) {
            bail!("--webhook-retry-scale must be a positive number");
        }
        let webhook_retention_days = args
            .webhook_retention_days
            .or(file.webhook_retention_days)
            .unwrap_or(paygate_engine::limits::WEBHOOK_RETENTION.as_secs_f64() / 86_400.0);
        if !(webhook_retention_days.is_finite() && (0.0..=WEBHOOK_RETENTION_MAX_DAYS).contains(&webhook_retention_days))
        {
            bail!("--webhook-retention-days must be a number of days from 0 to {WEBHOOK_RETENTION_MAX_DAYS}");
        }
        let webhook_retention = std::time::Duration::from_secs_f64(webhook_retention_days * 86_400.0);
        let vendor_retry_scale = args.vendor_retry_scale.or(file.vendor_retry_scale).unwrap_or(1.0);
        if !(vendor_retry_scale.is_finite() && vendor_retry_scale > 0.0) {
            bail!("--vendor-retry-scale must be a positive number");
        }
        let admin_token = args.admin_token.or(file.admin_token).filter(|t| !t.is_empty());
        // A client sends the token in an HTTP header: only visible ASCII can match.
        if admin_token
            .as_deref()
            .is_some_and(|t| !t.bytes().all(|b| b.is_ascii_graphic()))
        {
            bail!("--admin-token must be visible ASCII characters, without spaces");
        }
        let public_url = args
            .public_url
            .or(file.public_url)
            .map(|u| u.trim_end_matches('/').to_string());
        if let Some(url) = &public_url {
            check_public_url(url)?;
        }
        let sandbox_disbursement_delay_ms = args
            .sandbox_disbursement_delay_ms
            .or(file.sandbox_disbursement_delay_ms)
            .unwrap_or(2000);
        if sandbox_disbursement_delay_ms > SANDBOX_DELAY_MAX_MS {
            bail!("--sandbox-disbursement-delay-ms must be at most {SANDBOX_DELAY_MAX_MS} (24 hours)");
        }
        let max_connections = args
            .max_connections
            .or(file.max_connections)
            .unwrap_or(ConnectionLimits::default().max_connections);
        if max_connections == 0 {
            bail!("--max-connections must be at least 1");
        }
        let cluster = resolve_cluster(
            args.cluster_url.or(file.cluster_url),
            args.node_id.or(file.node_id),
            args.advertise_url.or(file.advertise_url),
            args.cluster_secret.or(file.cluster_secret),
            admin_token.as_deref(),
        )?;
        Ok(Settings {
            cluster,
            max_connections,
            listen: args.listen.or(file.listen).unwrap_or_else(|| "127.0.0.1:8080".into()),
            data_dir: args
                .data_dir
                .or(file.data_dir)
                .unwrap_or_else(|| PathBuf::from("./data")),
            mode,
            admin_token,
            public_url,
            webhook_retry_scale,
            webhook_retention,
            sandbox_disbursement_delay_ms,
            vendor_retry_scale,
        })
    }
}

/// The longest retention: a century, far from the clock's overflow.
const WEBHOOK_RETENTION_MAX_DAYS: f64 = 36_500.0;

/// The longest sandbox completion delay: a day, as the longest wait a
/// sandbox user could mean (and far from the clock's overflow).
const SANDBOX_DELAY_MAX_MS: u64 = 86_400_000;

/// `qr_url` and other links are built on it: it must be an
/// absolute http(s) URL with a host, and no query or fragment to break them.
fn check_public_url(url: &str) -> anyhow::Result<()> {
    let parsed = url::Url::parse(url).map_err(|error| anyhow::anyhow!("--public-url {url:?}: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        bail!("--public-url must be an absolute http:// or https:// URL, not {url:?}");
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        bail!("--public-url must not have a query or fragment: {url:?}");
    }
    Ok(())
}

/// 32 random bytes as hex.
pub fn random_token() -> String {
    use std::fmt::Write;
    let mut bytes = [0u8; 32];
    getrandom_fill(&mut bytes);
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn getrandom_fill(bytes: &mut [u8]) {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(bytes))
        .expect("/dev/urandom readable");
}
