//! The engine's own figures, as Prometheus text.

use crate::operations::Operations;

impl Operations {
    /// How many merchant actors are running now.
    pub fn live_merchant_actors(&self) -> usize {
        self.core.merchant_handle().live_count()
    }

    /// Prometheus text for the engine's own counters.
    pub fn metrics_text(&self) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        let stats = self.core.journal().stats();
        let mut out = String::new();
        for (name, help, kind, value) in [
            (
                "paygate_journal_syncs_total",
                "Journal fdatasync calls.",
                "counter",
                stats.syncs.load(Relaxed),
            ),
            (
                "paygate_journal_records_total",
                "Journal records made durable.",
                "counter",
                stats.records.load(Relaxed),
            ),
            (
                "paygate_journal_bytes_total",
                "Journal bytes made durable.",
                "counter",
                stats.bytes.load(Relaxed),
            ),
            (
                "paygate_journal_sync_microseconds_total",
                "Microseconds successful journal writes took to be durable (fdatasync, or a shard's commit in the cluster's database); divided by the syncs, the mean commit latency.",
                "counter",
                stats.sync_micros.load(Relaxed),
            ),
            (
                "paygate_journal_writable",
                "1 while the journal's disk takes its writes; 0 while it refuses them (full or failing) and writes answer 503.",
                "gauge",
                u64::from(self.core.journal().is_writable()),
            ),
            (
                "paygate_journal_failed_writes_total",
                "Journal writes or syncs the disk refused (each is tried again until it succeeds).",
                "counter",
                stats.failed_writes.load(Relaxed),
            ),
            (
                "paygate_checkpoint_postponed",
                "1 while checkpoints wait for free space on the data dir.",
                "gauge",
                u64::from(self.core.storage().checkpoint_postponed()),
            ),
            (
                "paygate_state_store_failed",
                "1 after a checkpoint failed: writes answer 503 until a restart.",
                "gauge",
                u64::from(self.core.storage().state_store_failed()),
            ),
            (
                "paygate_state_store_reopens_total",
                "Times the checkpointer closed and reopened sled, so a start after a crash reads little of its log.",
                "counter",
                self.core.storage().sled_reopens.load(Relaxed),
            ),
            (
                "paygate_state_store_reopen_wait_ms_total",
                "Milliseconds storage reads waited on those reopens.",
                "counter",
                self.core.storage().sled_reopen_wait_ms.load(Relaxed),
            ),
            (
                "paygate_journal_durable_seq",
                "Highest durable journal sequence.",
                "gauge",
                self.core.journal().durable_seq(),
            ),
            (
                "paygate_merchant_actors_live",
                "Merchant actors running.",
                "gauge",
                self.core.merchant_handle().live_count() as u64,
            ),
            (
                "paygate_order_actors_live",
                "Order actors running (bounded: past 1,000,000, work needing a new one is 503).",
                "gauge",
                self.core.order_context().actors.len() as u64,
            ),
            (
                "paygate_disbursement_hosts_busy",
                "Merchants whose disbursement actors have work in hand.",
                "gauge",
                self.core.disbursement_host().busy_merchants() as u64,
            ),
            (
                "paygate_disbursements_awaiting_first_step",
                "New disbursements not yet reviewed or handed to a vendor.",
                "gauge",
                self.core.disbursement_host().starts_unhandled() as u64,
            ),
            (
                "paygate_timers_pending",
                "Wake-ups scheduled and not yet due (settlements, inquiries, retries).",
                "gauge",
                self.core.timers().pending() as u64,
            ),
            (
                "paygate_disbursements_open",
                "Durable disbursements not yet in a final status.",
                "gauge",
                crate::disbursements::Disbursements::new(self.core.clone()).open_disbursement_count() as u64,
            ),
            (
                "paygate_merchants",
                "Merchants known.",
                "gauge",
                self.core.store().directory().len() as u64,
            ),
        ] {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
        }
        out
    }
}
