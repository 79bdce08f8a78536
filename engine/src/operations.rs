//! `Operations`: what an operator and the server's own machinery ask of an
//! engine beyond its domains: whether storage takes writes, checkpoints and
//! snapshots (`checkpoints`), metrics (`metrics`), and the settings it runs
//! with.

use crate::clock::SharedClock;
use crate::core::Core;
use crate::error::EngineError;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The operations handle; cheap to clone.
#[derive(Clone)]
pub struct Operations {
    pub(crate) core: Arc<Core>,
}

impl Operations {
    pub(crate) fn new(core: Arc<Core>) -> Operations {
        Operations { core }
    }

    /// Whether writes are taken now: the journal's disk takes its writes
    /// and no checkpoint has failed.
    pub fn storage_writable(&self) -> bool {
        self.core.storage_writable()
    }

    /// Whether the shard this engine serves was taken by another node: it
    /// writes nothing more and is to be given up.
    pub fn is_fenced(&self) -> bool {
        self.core.is_fenced()
    }

    /// Refuses a write while storage cannot take it (a full or failing
    /// disk, a failed checkpoint).
    pub fn ensure_writable(&self) -> Result<(), EngineError> {
        self.core.ensure_writable()
    }

    /// The engine's clock.
    pub fn clock(&self) -> &SharedClock {
        self.core.clock()
    }

    /// The shard this engine holds, in a cluster.
    pub fn shard(&self) -> Option<u16> {
        self.core.shard()
    }

    /// Where its storage (sled) lives: `state/` in the data dir.
    pub fn state_dir(&self) -> PathBuf {
        self.core.state_dir()
    }

    /// Whether notify URLs may name private hosts (sandbox mode).
    pub fn allows_private_notify_urls(&self) -> bool {
        self.core.allows_private_notify_urls()
    }

    /// Sandbox mode's refund delay; `None` in live mode.
    pub fn sandbox_refund_delay(&self) -> Option<Duration> {
        self.core.sandbox_refund_delay()
    }
}
