//! The connection to the cluster's database: a pool of connections, and
//! the schema brought up to date (refinery migrations in
//! `engine/migrations/`) once per start, one node at a time.

use super::ClusterError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::time::Duration;
use tokio_postgres::NoTls;

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// Connections a node keeps to the database at most.
const POOL_MAX: usize = 16;
/// How long a connection may take to open, or a caller wait for a free one:
/// short, so a database that is away shows as an error well within a lease.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The advisory lock key nodes take while migrating, so two starting at once
/// do not both create the schema.
const MIGRATION_LOCK: i64 = 0x7061_7967_6174_6531; // "paygate1"

/// The cluster's database.
#[derive(Clone)]
pub struct Database {
    pool: Pool,
    /// For connections of their own (a `LISTEN` stays on one).
    config: tokio_postgres::Config,
}

impl Database {
    /// Connects to `url` (`postgres://user@host:port/db`) and migrates the
    /// schema to this build's.
    pub async fn connect(url: &str) -> Result<Database, ClusterError> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|error: tokio_postgres::Error| ClusterError::Database(format!("cluster URL: {error}")))?;
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("paygate");
        migrate(&config).await?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_MAX)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|error| ClusterError::Database(error.to_string()))?;
        Ok(Database { pool, config })
    }

    /// A pooled connection.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, ClusterError> {
        Ok(self.pool.get().await?)
    }

    /// A connection of its own, outside the pool, and the task driving it,
    /// which hands every notification the server sends to `notified`.
    pub(super) async fn listener(
        &self,
        notified: tokio::sync::mpsc::UnboundedSender<tokio_postgres::Notification>,
    ) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), ClusterError> {
        let (client, mut connection) = tokio::time::timeout(CONNECT_TIMEOUT, self.config.connect(NoTls))
            .await
            .map_err(|_| ClusterError::Timeout(CONNECT_TIMEOUT))??;
        let driver = tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(message)) = futures_util::StreamExt::next(&mut messages).await {
                if let tokio_postgres::AsyncMessage::Notification(notification) = message {
                    let _ = notified.send(notification);
                }
            }
        });
        Ok((client, driver))
    }
}

/// Runs the migrations this build carries on a connection of its own,
/// under an advisory lock.
async fn migrate(config: &tokio_postgres::Config) -> Result<(), ClusterError> {
    let (mut client, connection) = config.connect(NoTls).await?;
    let driver = tokio::spawn(connection);
    let result = async {
        client
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        let migrated = embedded::migrations::runner()
            .run_async(&mut client)
            .await
            .map_err(|error| ClusterError::Migration(error.to_string()));
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .await?;
        migrated.map(|_| ())
    }
    .await;
    drop(client);
    let _ = driver.await;
    result
}
