//! A cluster node (ARCHITECTURE.md, A cluster): the lease keeper, the
//! engines of the shards it holds, each shard's own router and webhook
//! dispatcher, and the front door that serves or forwards each request by
//! its merchant's shard.
//!
//! Each shard's API state and dispatcher live exactly as long as this node
//! serves the shard under one lease epoch: a shard lost or released stops
//! being routed to at once (the keeper's serving set is read on every
//! request) and its dispatcher is stopped on the next look.

use crate::config::{ClusterSettings, Settings};
use crate::deliveries::{DeliveryRuntime, Dispatchers};
use axum::Router;
use paygate_api::cluster::CatalogLookup;
use paygate_api::cluster::{ClusterFront, ShardDirectory};
use paygate_api::{router, ApiConfig, AppState};
use paygate_engine::clock::SystemClock;
use paygate_engine::cluster::{Database, KeeperHandle, Leases, ShardRecords, SharedCatalog};
use paygate_engine::shards::{ShardConfig, ShardHost, SnapshotPolicy};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// How often the node reads who owns the other shards.
const OWNERS_EVERY: Duration = Duration::from_millis(250);
/// How often the node looks for shards it gained or lost, besides each
/// change the keeper announces.
const RECONCILE_EVERY: Duration = Duration::from_millis(250);

/// A running cluster node, less its HTTP listener.
pub struct ClusterNode {
    keeper: KeeperHandle,
    host: Arc<ShardHost>,
    directory: Arc<NodeDirectory>,
    tasks: Vec<JoinHandle<()>>,
    /// Where every shard's webhook dispatcher runs.
    deliveries: DeliveryRuntime,
}

/// One shard this node serves: its API state and its webhook dispatcher.
struct ServedShard {
    epoch: i64,
    router: Router,
    stop_dispatcher: watch::Sender<bool>,
    dispatcher: JoinHandle<()>,
}

/// What the front door asks of the node.
struct NodeDirectory {
    node_id: String,
    host: Arc<ShardHost>,
    serving: watch::Receiver<BTreeMap<u16, i64>>,
    served: RwLock<BTreeMap<u16, ServedShard>>,
    /// The other nodes' shards: their base URL and when their lease, as
    /// last read, runs out.
    owners: RwLock<BTreeMap<u16, (String, Instant)>>,
    lease_counts: Box<dyn Fn() -> (u64, u64) + Send + Sync>,
    /// The cluster's catalog: which merchant each dashboard email is.
    catalog: SharedCatalog,
}

/// The catalog kind of a dashboard user's email; its body is the merchant id.
const USER_EMAIL: &str = "user-email";

impl ClusterNode {
    /// Joins the cluster of `cluster`: connects to its database (bringing
    /// its schema up to date), starts holding shards and serving them.
    /// `advertise_url` is how the other nodes reach this one.
    pub async fn start(
        settings: &Settings,
        cluster: &ClusterSettings,
        api_config: ApiConfig,
        advertise_url: String,
    ) -> anyhow::Result<(ClusterNode, Router)> {
        let database = Database::connect(&cluster.url).await?;
        let node_id = cluster.node_id.clone();
        let engine_settings = settings.clone();
        let config: ShardConfig = Arc::new(move |dir: &Path| engine_settings.engine_config(dir));
        let host = Arc::new(
            ShardHost::new(
                settings.data_dir.join("shards"),
                ShardRecords::new(database.clone(), node_id.clone()),
                config,
                Arc::new(SystemClock),
            )
            .with_shared_catalog(SharedCatalog::new(database.clone())),
        );
        let snapshots = host.start_snapshots(SnapshotPolicy::default());
        let catalog_follower = host.start_catalog_follower().expect("the host has a shared catalog");
        let keeper = KeeperHandle::start(
            Leases::new(database.clone(), node_id.clone()),
            advertise_url,
            host.clone(),
        );
        let counts = keeper.counts_reader();
        let deliveries = DeliveryRuntime::new()?;
        let directory = Arc::new(NodeDirectory {
            node_id,
            host: host.clone(),
            serving: keeper.subscribe(),
            served: RwLock::new(BTreeMap::new()),
            owners: RwLock::new(BTreeMap::new()),
            lease_counts: Box::new(counts),
            catalog: SharedCatalog::new(database.clone()),
        });
        let tasks = vec![
            snapshots,
            catalog_follower,
            tokio::spawn(reconcile_loop(
                directory.clone(),
                api_config.clone(),
                deliveries.dispatchers(),
                keeper.subscribe(),
            )),
            tokio::spawn(owners_loop(directory.clone(), Leases::new(database, ""))),
        ];
        let front = ClusterFront::new(directory.clone(), &cluster.secret, &api_config.admin_token);
        Ok((
            ClusterNode {
                keeper,
                host,
                directory,
                tasks,
                deliveries,
            },
            paygate_api::cluster::cluster_router(front),
        ))
    }

    /// Leaves the cluster: the shards released, each after its final
    /// snapshot, so their next owners replay nothing before it.
    pub async fn stop(self) {
        for task in &self.tasks {
            task.abort();
        }
        let served = std::mem::take(&mut *self.directory.served.write().expect("served lock"));
        for shard in served.into_values() {
            stop_shard(shard).await;
        }
        self.deliveries.shut_down();
        self.keeper.shutdown().await;
        self.host.shutdown().await;
    }
}

/// Keeps `served` in step with the shards the keeper serves.
async fn reconcile_loop(
    directory: Arc<NodeDirectory>,
    api_config: ApiConfig,
    dispatchers: Dispatchers,
    mut changes: watch::Receiver<BTreeMap<u16, i64>>,
) {
    loop {
        let serving = changes.borrow_and_update().clone();
        // A shard whose append failed on the epoch is another node's: its
        // engine is dropped now, not at the keeper's next renewal.
        for (shard, (epoch, engine)) in directory.host.held() {
            if engine.operations().is_fenced() {
                tracing::warn!(shard, epoch, "shard fenced: another node owns it now; dropped");
                paygate_engine::cluster::ShardOwner::lost(directory.host.as_ref(), shard);
            }
        }
        let engines = directory.host.held();
        let stale: Vec<ServedShard> = {
            let mut served = directory.served.write().expect("served lock");
            let gone: Vec<u16> = served
                .iter()
                .filter(|(shard, entry)| {
                    serving.get(shard) != Some(&entry.epoch)
                        || engines.get(shard).map(|(epoch, _)| epoch) != Some(&entry.epoch)
                })
                .map(|(shard, _)| *shard)
                .collect();
            let stale = gone.iter().filter_map(|shard| served.remove(shard)).collect();
            for (&shard, &epoch) in &serving {
                if served.contains_key(&shard) {
                    continue;
                }
                let Some((engine_epoch, engine)) = engines.get(&shard) else {
                    continue;
                };
                if *engine_epoch != epoch {
                    continue;
                }
                let state = AppState::new(engine.clone(), api_config.clone());
                let (stop_dispatcher, stopped) = watch::channel(false);
                let dispatcher = dispatchers.start(state.clone(), stopped);
                served.insert(
                    shard,
                    ServedShard {
                        epoch,
                        router: router(state),
                        stop_dispatcher,
                        dispatcher,
                    },
                );
                tracing::info!(shard, epoch, "serving shard");
            }
            stale
        };
        for shard in stale {
            stop_shard(shard).await;
        }
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(RECONCILE_EVERY) => {}
        }
    }
}

async fn stop_shard(shard: ServedShard) {
    shard.stop_dispatcher.send_replace(true);
    let _ = shard.dispatcher.await;
}

/// Reads who owns the other shards, so requests for them are forwarded.
async fn owners_loop(directory: Arc<NodeDirectory>, leases: Leases) {
    let mut tick = tokio::time::interval(OWNERS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let read_at = Instant::now();
        let status = match leases.status().await {
            Ok(status) => status,
            Err(error) => {
                // The last read stands until its leases run out.
                tracing::debug!(%error, "could not read the shards' owners");
                continue;
            }
        };
        let urls: BTreeMap<&str, &str> = status
            .nodes
            .iter()
            .map(|node| (node.node_id.as_str(), node.advertise_url.as_str()))
            .collect();
        let owners = status
            .shards
            .iter()
            .filter(|shard| shard.expires_in_s > 0.0)
            .filter_map(|shard| {
                let node = shard.node_id.as_deref()?;
                if node == directory.node_id {
                    return None;
                }
                let url = urls.get(node)?;
                Some((
                    shard.shard,
                    (url.to_string(), read_at + Duration::from_secs_f64(shard.expires_in_s)),
                ))
            })
            .collect();
        *directory.owners.write().expect("owners lock") = owners;
    }
}

impl ShardDirectory for NodeDirectory {
    fn node_id(&self) -> &str {
        &self.node_id
    }

    fn local(&self, shard: u16) -> Option<Router> {
        let epoch = *self.serving.borrow().get(&shard)?;
        // A fenced shard is another node's already: requests go to it (or
        // wait for it) from the moment an append fails on the epoch, not
        // from the keeper's next renewal.
        if self
            .host
            .engine(shard)
            .is_none_or(|engine| engine.operations().is_fenced())
        {
            return None;
        }
        let served = self.served.read().expect("served lock");
        let entry = served.get(&shard).filter(|entry| entry.epoch == epoch)?;
        Some(entry.router.clone())
    }

    fn owner_url(&self, shard: u16) -> Option<String> {
        let owners = self.owners.read().expect("owners lock");
        let (url, until) = owners.get(&shard)?;
        (Instant::now() < *until).then(|| url.clone())
    }

    fn shards(&self) -> Vec<u16> {
        let serving = self.serving.borrow();
        let served = self.served.read().expect("served lock");
        serving
            .iter()
            .filter(|(shard, epoch)| served.get(shard).is_some_and(|entry| entry.epoch == **epoch))
            .map(|(shard, _)| *shard)
            .filter(|shard| {
                self.host
                    .engine(*shard)
                    .is_some_and(|engine| !engine.operations().is_fenced())
            })
            .collect()
    }

    fn writable(&self) -> bool {
        self.host
            .held()
            .values()
            .all(|(_, engine)| engine.operations().storage_writable())
    }

    fn user_merchant<'a>(&'a self, email: &'a str) -> CatalogLookup<'a, Option<Uuid>> {
        Box::pin(async move {
            let entry = self.catalog.get(USER_EMAIL, email).await.map_err(|e| e.to_string())?;
            Ok(entry.and_then(|entry| merchant_of(entry.body?.as_slice())))
        })
    }

    fn claim_user<'a>(&'a self, email: &'a str, merchant: Uuid) -> CatalogLookup<'a, Option<Uuid>> {
        Box::pin(async move {
            let standing = self
                .catalog
                .claim(USER_EMAIL, email, merchant.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            Ok(standing.and_then(|body| merchant_of(&body)))
        })
    }

    fn release_user<'a>(&'a self, email: &'a str) -> CatalogLookup<'a, ()> {
        Box::pin(async move {
            self.catalog
                .delete(USER_EMAIL, email)
                .await
                .map_err(|e| e.to_string())?;
            Ok(())
        })
    }

    fn node_metrics(&self) -> String {
        let (renewals, losses) = (self.lease_counts)();
        let owned = self.shards().len();
        format!(
            "# HELP paygate_cluster_shards_owned Shards this node serves now.\n\
             # TYPE paygate_cluster_shards_owned gauge\n\
             paygate_cluster_shards_owned {owned}\n\
             # HELP paygate_cluster_lease_renewals_total Lease renewals that succeeded.\n\
             # TYPE paygate_cluster_lease_renewals_total counter\n\
             paygate_cluster_lease_renewals_total {renewals}\n\
             # HELP paygate_cluster_lease_losses_total Leases lost: not renewed in time, or taken by another node.\n\
             # TYPE paygate_cluster_lease_losses_total counter\n\
             paygate_cluster_lease_losses_total {losses}\n"
        )
    }
}

/// The merchant id an email's catalog entry holds.
fn merchant_of(body: &[u8]) -> Option<Uuid> {
    Uuid::from_slice(body).ok()
}
