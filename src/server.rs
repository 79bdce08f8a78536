//! The service in this process: the engine on its data dir, the HTTP listener
//! and the webhook dispatcher, started and stopped as one. `paygate serve`
//! and `paygate benchmark` both run it from here.

use crate::config::{self, Settings};
use crate::deliveries::DeliveryRuntime;
use crate::node::ClusterNode;
use anyhow::Context;
use paygate_api::serve::ConnectionLimits;
use paygate_api::{router, ApiConfig, AppState, Mode};
use paygate_engine::clock::SystemClock;
use paygate_engine::domain::SettlementType;
use paygate_engine::{Engine, MinorUnits, NewMerchant};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// Sandbox demo merchant's starting balance: IDR 100,000,000 of test money.
const DEMO_FUNDING_MINOR: i64 = 10_000_000_000;

/// A started service; `stop` ends it.
pub struct RunningServer {
    /// Where it listens (the port chosen for `:0`).
    pub address: SocketAddr,
    stop_http: oneshot::Sender<()>,
    http: JoinHandle<std::io::Result<()>>,
    service: Service,
}

/// What serves behind the listener.
enum Service {
    /// One node: one engine on the data dir, and its webhook dispatcher.
    Single {
        engine: Engine,
        stop_dispatcher: watch::Sender<bool>,
        dispatcher: JoinHandle<()>,
        deliveries: DeliveryRuntime,
    },
    /// A cluster node: an engine per shard it holds.
    Cluster(ClusterNode),
}

/// Opens the engine on `settings.data_dir` (or, in a cluster, joins it),
/// binds `settings.listen` and starts serving HTTP and delivering webhooks.
pub async fn start(settings: &Settings) -> anyhow::Result<RunningServer> {
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("creating data dir {}", settings.data_dir.display()))?;
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .with_context(|| format!("binding {}", settings.listen))?;
    let address = listener.local_addr()?;
    let public_url = settings
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{address}"));
    let api_config = |admin_token: String| ApiConfig {
        mode: settings.mode,
        public_url: public_url.clone(),
        admin_token,
        cdn_url: config::CDN_URL.into(),
        webhook_retry_scale: settings.webhook_retry_scale,
        sandbox_disbursement_delay_ms: settings.sandbox_disbursement_delay_ms,
    };
    let (service, app, connections) = match &settings.cluster {
        None => {
            let engine = Engine::open(settings.engine_config(&settings.data_dir), Arc::new(SystemClock))
                .await
                .with_context(|| format!("opening data dir {}", settings.data_dir.display()))?;
            let admin_token = match &settings.admin_token {
                Some(token) => token.clone(),
                None => load_or_create_admin_token(&settings.data_dir)?,
            };
            // Not "the data dir was new": a start killed before the demo merchant
            // was made would leave a data dir without one for good.
            if settings.mode == Mode::Sandbox && engine.merchants().merchant_ids().is_empty() {
                create_demo_merchant(&engine, settings).await?;
            }
            let state = AppState::new(engine.clone(), api_config(admin_token));
            let (stop_dispatcher, dispatcher_stop) = watch::channel(false);
            let deliveries = DeliveryRuntime::new().context("starting the webhook delivery thread")?;
            let dispatcher = deliveries.dispatchers().start(state.clone(), dispatcher_stop);
            let connections = state.connections.clone();
            let service = Service::Single {
                engine,
                stop_dispatcher,
                dispatcher,
                deliveries,
            };
            (service, router(state), connections)
        }
        Some(cluster) => {
            let admin_token = settings
                .admin_token
                .clone()
                .context("a cluster node needs --admin-token")?;
            let advertise_url = cluster.advertise_url.clone().unwrap_or_else(|| public_url.clone());
            let (node, app) = ClusterNode::start(settings, cluster, api_config(admin_token), advertise_url).await?;
            (Service::Cluster(node), app, Arc::default())
        }
    };
    let (stop_http, http_stop) = oneshot::channel::<()>();
    let limits = ConnectionLimits {
        max_connections: settings.max_connections,
        ..ConnectionLimits::default()
    };
    let http = tokio::spawn(async move {
        let stop = async move {
            let _ = http_stop.await;
        };
        paygate_api::serve::serve(listener, app, limits, connections, stop).await;
        Ok::<(), std::io::Error>(())
    });
    Ok(RunningServer {
        address,
        stop_http,
        http,
        service,
    })
}

impl RunningServer {
    /// Stops serving, then the dispatcher, then the engine with a final checkpoint.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.finish(true).await
    }

    /// As `stop`, but the engine skips its final checkpoint: the next start
    /// recovers by replaying the journal, as after a crash.
    pub async fn stop_without_checkpoint(self) -> anyhow::Result<()> {
        self.finish(false).await
    }

    async fn finish(self, final_checkpoint: bool) -> anyhow::Result<()> {
        let _ = self.stop_http.send(());
        let served = self.http.await.context("HTTP server task")?;
        let (engine, stop_dispatcher, dispatcher, deliveries) = match self.service {
            Service::Single {
                engine,
                stop_dispatcher,
                dispatcher,
                deliveries,
            } => (engine, stop_dispatcher, dispatcher, deliveries),
            Service::Cluster(node) => {
                node.stop().await;
                tracing::info!("stopped");
                return Ok(served?);
            }
        };
        // Deliveries still in flight are not waited for: their events stay due
        // and are delivered after the next start.
        stop_dispatcher.send_replace(true);
        let _ = dispatcher.await;
        deliveries.shut_down();
        if final_checkpoint {
            engine.shutdown().await;
        } else {
            engine.halt_without_checkpoint().await;
        }
        tracing::info!("stopped");
        Ok(served?)
    }
}

/// Writes `contents` to `path` (mode 0600) whole or not at all: written to
/// a temporary file, synced, then renamed over it. A full disk leaves the
/// old file (or none) and an error, never a file cut short that the next
/// start would read as a token.
fn write_private_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = std::path::PathBuf::from(temporary);
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(contents.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.with_context(|| format!("writing {}", path.display()))
}

/// Without `--admin-token` the token is generated once and kept
/// in `<data-dir>/admin-token` (mode 0600).
fn load_or_create_admin_token(data_dir: &Path) -> anyhow::Result<String> {
    let path = data_dir.join("admin-token");
    if let Ok(token) = std::fs::read_to_string(&path) {
        let token = token.trim().to_string();
        if !token.is_empty() {
            return Ok(token);
        }
    }
    let token = config::random_token();
    write_private_file(&path, &format!("{token}\n"))?;
    tracing::info!(path = %path.display(), "generated admin token");
    Ok(token)
}

/// Sandbox first start: a funded WALLET merchant whose credentials land in
/// `<data-dir>/demo-credentials.json` (0600), so the service is usable at once.
async fn create_demo_merchant(engine: &Engine, settings: &Settings) -> anyhow::Result<()> {
    let (merchant, credentials) = engine
        .merchants()
        .create_merchant(NewMerchant::new("Demo Merchant", SettlementType::Wallet))
        .await?;
    engine
        .merchants()
        .credit_wallet(
            merchant.id,
            MinorUnits::new(DEMO_FUNDING_MINOR),
            "sandbox demo funding",
            Some("demo-funding".into()),
        )
        .await?;
    // A dashboard user for the demo merchant, its password made here.
    let dashboard_email = "demo@paygate.test";
    let dashboard_password = {
        use rand::Rng;
        const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
        let mut rng = rand::thread_rng();
        (0..20)
            .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
            .collect::<String>()
    };
    engine
        .merchants()
        .create_merchant_user(merchant.id, dashboard_email, &dashboard_password)
        .await?;
    let document = serde_json::json!({
        "merchant_id": merchant.id,
        "settlement_type": "WALLET",
        "api_key": credentials.api_key,
        "client_id": credentials.client_id,
        "client_secret": credentials.client_secret,
        "webhook_secret": credentials.webhook_secret,
        "dashboard_email": dashboard_email,
        "dashboard_password": dashboard_password,
    });
    let path = settings.data_dir.join("demo-credentials.json");
    write_private_file(&path, &serde_json::to_string_pretty(&document)?)?;
    tracing::info!(path = %path.display(), "created sandbox demo merchant");
    Ok(())
}
