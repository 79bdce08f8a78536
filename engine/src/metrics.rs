//! The engine's own figures, as Prometheus text.

use crate::operations::Operations;

/// Prometheus text of figures written one to a row, `kind name = value,
/// "help";`, each value a `u64`, in the order given.
macro_rules! prometheus_text {
    ($($kind:ident $name:ident = $value:expr, $help:literal;)*) => {{
        let mut out = String::new();
        $(
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n",
                name = stringify!($name),
                help = $help,
                kind = stringify!($kind),
                value = $value,
            ));
        )*
        out
    }};
}

impl Operations {
    /// How many merchant actors are running now.
    pub fn live_merchant_actors(&self) -> usize {
        self.core.merchant_handle().live_count()
    }

    /// Prometheus text for the engine's own counters.
    pub fn metrics_text(&self) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        let stats = self.core.journal().stats();
        prometheus_text! {
            counter paygate_journal_syncs_total = stats.syncs.load(Relaxed),
                "Journal fdatasync calls.";
            counter paygate_journal_records_total = stats.records.load(Relaxed),
                "Journal records made durable.";
            counter paygate_journal_bytes_total = stats.bytes.load(Relaxed),
                "Journal bytes made durable.";
            counter paygate_journal_sync_microseconds_total = stats.sync_micros.load(Relaxed),
                "Microseconds successful journal writes took to be durable (fdatasync, or a shard's commit in the cluster's database); divided by the syncs, the mean commit latency.";
            gauge paygate_journal_writable = u64::from(self.core.journal().is_writable()),
                "1 while the journal's disk takes its writes; 0 while it refuses them (full or failing) and writes answer 503.";
            counter paygate_journal_failed_writes_total = stats.failed_writes.load(Relaxed),
                "Journal writes or syncs the disk refused (each is tried again until it succeeds).";
            gauge paygate_checkpoint_postponed = u64::from(self.core.storage().checkpoint_postponed()),
                "1 while checkpoints wait for free space on the data dir.";
            gauge paygate_state_store_failed = u64::from(self.core.storage().state_store_failed()),
                "1 after a checkpoint failed: writes answer 503 until a restart.";
            counter paygate_state_store_reopens_total = self.core.storage().sled_reopens.load(Relaxed),
                "Times the checkpointer closed and reopened sled, so a start after a crash reads little of its log.";
            counter paygate_state_store_reopen_wait_ms_total = self.core.storage().sled_reopen_wait_ms.load(Relaxed),
                "Milliseconds storage reads waited on those reopens.";
            gauge paygate_journal_durable_seq = self.core.journal().durable_seq(),
                "Highest durable journal sequence.";
            gauge paygate_merchant_actors_live = self.core.merchant_handle().live_count() as u64,
                "Merchant actors running.";
            gauge paygate_order_actors_live = self.core.order_context().actors.len() as u64,
                "Order actors running (bounded: past 1,000,000, work needing a new one is 503).";
            gauge paygate_disbursement_hosts_busy = self.core.disbursement_host().busy_merchants() as u64,
                "Merchants whose disbursement actors have work in hand.";
            gauge paygate_disbursements_awaiting_first_step = self.core.disbursement_host().starts_unhandled() as u64,
                "New disbursements not yet reviewed or handed to a vendor.";
            gauge paygate_timers_pending = self.core.timers().pending() as u64,
                "Wake-ups scheduled and not yet due (settlements, inquiries, retries).";
            gauge paygate_disbursements_open = crate::disbursements::Disbursements::new(self.core.clone()).open_disbursement_count() as u64,
                "Durable disbursements not yet in a final status.";
            gauge paygate_merchants = self.core.store().directory().len() as u64,
                "Merchants known.";
        }
    }
}
