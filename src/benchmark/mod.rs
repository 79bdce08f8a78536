//! `paygate benchmark`: the real server started in this process in sandbox
//! mode, driven over HTTP through whole disbursement or order lifecycles in
//! one or more phases, next to a bare axum baseline measured first in the
//! same process, then checked. Prints throughput, latency, webhook lag, CPU
//! against the baseline and idle memory; exits non-zero if a check fails.

mod baseline;
mod checks;
mod client;
mod floor;
mod load;
mod load_threads;
mod report;
mod sink;
mod thread_sampler;

use crate::config::{self, BenchmarkArgs, Settings, Workload};
use crate::process_stats;
use crate::server;
use anyhow::Context;
use checks::Verdict;
use client::{in_parallel, Gateway};
use load::LoadResult;
use load_threads::LoadThreads;
use paygate_api::Mode;
use report::*;
use sink::Sink;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};
use thread_sampler::ThreadSampler;

/// How long the wait for final webhooks may see none arrive (beyond the
/// vendor's delay) before it gives up and lets the checks say what is missing.
const STALL_LIMIT: Duration = Duration::from_secs(30);
/// How often the wait looks at the sink.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// The idle wait before each resident-memory reading: long enough for
/// checkpoints to take what the load left in memory, so the reading is
/// what an idle server keeps.
const IDLE_WAIT: Duration = paygate_engine::limits::CHECKPOINT_INTERVAL.saturating_mul(3);

/// Runs the benchmark; an error names what failed.
pub async fn run(args: BenchmarkArgs) -> anyhow::Result<()> {
    let count = usize::try_from(args.items)?;
    let merchant_count = usize::try_from(args.merchants)?;
    let connections = usize::try_from(args.connections)?;
    // Every phase has at least one item.
    let phase_count = usize::try_from(args.phases)?.min(count);
    let workload = args.workload;
    let delay_ms = args.sandbox_disbursement_delay_ms;
    let (data_dir, temporary) = match args.data_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            (dir, None)
        }
        None => {
            let temporary = tempfile::Builder::new().prefix("paygate-benchmark-").tempdir()?;
            (temporary.path().to_path_buf(), Some(temporary))
        }
    };
    let admin_token = config::random_token();
    let settings = Settings {
        cluster: None,
        listen: "127.0.0.1:0".into(),
        data_dir: data_dir.clone(),
        mode: Mode::Sandbox,
        admin_token: Some(admin_token.clone()),
        public_url: None,
        webhook_retry_scale: 1.0,
        webhook_retention: paygate_engine::limits::WEBHOOK_RETENTION,
        sandbox_disbursement_delay_ms: delay_ms,
        vendor_retry_scale: 1.0,
        max_connections: paygate_api::serve::ConnectionLimits::default().max_connections,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pace = match args.rate {
        0 => "as fast as answered".to_string(),
        rate => format!("{}/s", thousands(rate)),
    };
    let noun = noun(workload);
    println!(
        "paygate benchmark: {} {noun} ({}) over {} merchants, {} {}, {connections} connections, {pace}, \
         sandbox payouts settle after {delay_ms} ms, {cores} cores",
        thousands(count as u64),
        what_an_item_is(workload),
        thousands(merchant_count as u64),
        phase_count,
        if phase_count == 1 { "phase" } else { "phases" },
    );
    let where_kept = if temporary.is_some() { "temporary" } else { "kept" };
    println!("data dir: {} ({where_kept})", data_dir.display());

    // The load generator and the sink get threads of their own, so the
    // server's CPU is the process's less theirs.
    let load_threads = LoadThreads::start(cores)?;
    let sink = Sink::new();
    let (sink_address, sink_task) = load_threads.run(sink::start(sink.clone())).await?;
    let server = server::start(&settings).await?;
    let http = client::http_client(connections)?;
    let gateway = Arc::new(Gateway::new(server.address, &admin_token, http.clone()));

    let setup_started = Instant::now();
    let made = load_threads.run(set_up_merchants(
        gateway.clone(),
        workload,
        merchant_count,
        count,
        connections,
        sink_address,
    ));
    let merchants = Arc::new(made.await?);
    let secrets: Vec<&str> = merchants.iter().map(|m| m.webhook_secret.as_str()).collect();
    sink.set_secrets(&secrets)?;
    println!(
        "setup: {} WALLET merchants created, funded and given the webhook sink in {:.1} s\n",
        thousands(merchant_count as u64),
        setup_started.elapsed().as_secs_f64()
    );

    // The baseline serves on the server's runtime, as paygate does, and
    // takes as many items as one phase unless told, through the same client.
    let baseline_count = match args.baseline_items {
        Some(items) => usize::try_from(items)?.min(count),
        None => count / phase_count,
    };
    let baseline_items = 0..baseline_count;
    let drive = Drive {
        load_threads: &load_threads,
        merchants: merchants.clone(),
        workload,
        connections,
        rate: args.rate,
    };
    let (baseline_address, baseline_task) = baseline::start().await?;
    let baseline_gateway = Arc::new(Gateway::new(baseline_address, &admin_token, http.clone()));
    let baseline_cpu = CpuMeter::start(&load_threads);
    let baseline_load = drive.items(baseline_gateway, baseline_items.clone(), "baseline").await;
    let baseline_cpu = baseline_cpu.finish(&load_threads);
    baseline_task.abort();
    let baseline_requests = requests_of(workload, baseline_items.clone(), merchant_count);
    print_baseline(&baseline_load, baseline_requests, &baseline_cpu);

    // The floor: the same items through handlers that do only the HTTP
    // their whole life needs (the answer and the webhooks), to a sink of
    // its own, measured until its last webhook came.
    let floor_sink = Sink::new();
    let (floor_sink_address, floor_sink_task) = load_threads.run(sink::start(floor_sink.clone())).await?;
    floor_sink.set_secrets(&secrets)?;
    let keys: Vec<(String, String)> = merchants
        .iter()
        .map(|merchant| (merchant.api_key.clone(), merchant.webhook_secret.clone()))
        .collect();
    let (floor_address, floor_task) = floor::start(floor::FloorWebhooks::new(floor_sink_address, &keys)).await?;
    let floor_gateway = Arc::new(Gateway::new(floor_address, &admin_token, http.clone()));
    let floor_cpu = CpuMeter::start(&load_threads);
    let floor_load = drive.items(floor_gateway, baseline_items.clone(), "floor").await;
    let floor_finals = floor_load.finals_expected();
    let floor_settled = await_finals(&floor_sink, floor_finals, 0).await;
    let floor_cpu = floor_cpu.finish(&load_threads);
    floor_task.abort();
    floor_sink_task.abort();
    let floor_webhooks = floor_sink.with_receipts(|receipts| receipts.events);
    print_floor(
        &floor_load,
        baseline_items.len(),
        floor_webhooks,
        floor_settled.complete,
        &floor_cpu,
    );

    tokio::time::sleep(IDLE_WAIT).await;
    let idle_before_kib = process_stats::memory_kib("VmRSS");
    println!(
        "idle RSS before the load: {} MiB ({} s after the baseline)\n",
        idle_before_kib / 1024,
        IDLE_WAIT.as_secs_f64()
    );

    let mut all = LoadResult::empty(Instant::now());
    let (mut load_seconds, mut end_to_end) = (0.0, Duration::ZERO);
    let (mut finals_expected, mut server_cpu, mut creation_cpu) = (0, CpuUse::default(), CpuUse::default());
    let mut idle_kib = idle_before_kib;
    let mut records = sink.with_receipts(|receipts| receipts.record_bytes());
    let mut last_phase = None;
    for phase in 0..phase_count {
        let indexes = phase_bounds(phase, phase_count, count);
        let cpu = CpuMeter::start(&load_threads);
        let load = drive.items(gateway.clone(), indexes.clone(), "load").await;
        creation_cpu.add(&cpu.used(&load_threads));
        let memory_after_creation_kib = process_stats::memory_kib("VmRSS");
        finals_expected += load.finals_expected();
        let settled = await_finals(&sink, finals_expected, delay_ms).await;
        server_cpu.add(&cpu.finish(&load_threads));
        let last_webhook = sink.with_receipts(|receipts| receipts.last_at);
        let phase_start = load.finished - load.elapsed;
        end_to_end += match last_webhook {
            Some(last) if settled.complete && finals_expected > 0 && last > phase_start => last - phase_start,
            _ => load.elapsed,
        };
        load_seconds += load.elapsed.as_secs_f64();
        tokio::time::sleep(IDLE_WAIT).await;
        let idle_now_kib = process_stats::memory_kib("VmRSS");
        let records_now =
            all.record_bytes() + load.record_bytes() + sink.with_receipts(|receipts| receipts.record_bytes());
        print_phase(
            phase,
            phase_count,
            &indexes,
            &load,
            noun,
            &settled,
            (idle_kib, idle_now_kib),
            (records, records_now),
        );
        (idle_kib, records) = (idle_now_kib, records_now);
        last_phase = Some((load.finished, memory_after_creation_kib, settled));
        all.absorb(load);
    }
    let (load_finished, memory_after_creation_kib, settled) = last_phase.expect("at least one phase");
    all.finished = load_finished;
    println!();
    print_creation(workload, &all, count, load_seconds, &creation_cpu, cores);
    print_lifecycle(
        workload,
        &all,
        &sink,
        &settled,
        end_to_end,
        load_finished,
        phase_count,
        cores,
    );
    let paygate_requests = requests_of(workload, 0..count, merchant_count);
    print_cpu_ratio(
        noun,
        count,
        paygate_requests,
        &server_cpu,
        baseline_requests,
        &baseline_cpu,
        (baseline_items.len(), &floor_cpu),
    );
    print_latency_ratio(&all, &baseline_load, &floor_load);
    println!("memory (VmRSS of this one process: server, load generator and sink)");
    println!(
        "  {} MiB after creation, {} MiB after the lifecycle, peak {} MiB",
        memory_after_creation_kib / 1024,
        process_stats::memory_kib("VmRSS") / 1024,
        process_stats::memory_kib("VmHWM") / 1024
    );
    println!(
        "  idle          {} MiB before the load, {} MiB after the last drain and {} s idle: {} an item",
        idle_before_kib / 1024,
        idle_kib / 1024,
        IDLE_WAIT.as_secs_f64(),
        bytes_an_item(idle_before_kib, idle_kib, count)
    );

    println!("checks");
    let refused: u64 = all.refused.values().sum();
    let with_disbursements = matches!(workload, Workload::Disbursements | Workload::Mixed);
    let with_orders = workload != Workload::Disbursements;
    let created = Arc::new(std::mem::take(&mut all.created));
    let orders = Arc::new(std::mem::take(&mut all.orders));
    let lookups = checks::look_up(&gateway, &merchants, &created, connections).await;
    let order_lookups = checks::look_up_orders(&gateway, &merchants, &orders, connections).await;
    let answered = match workload {
        Workload::Disbursements | Workload::Orders => "every creation answered 201",
        Workload::OrdersPaid | Workload::Mixed => "every item answered 201, and 200 to its payment",
    };
    let mut verdicts = vec![Verdict {
        passed: refused == 0,
        line: format!(
            "{answered}: {} of {}",
            thousands(all.items_done),
            thousands(count as u64)
        ),
    }];
    if with_disbursements {
        verdicts.push(checks::all_found(&created, &lookups));
        verdicts.push(checks::all_succeeded(&created, &lookups));
    }
    if with_orders {
        verdicts.push(checks::orders_found(&orders, &order_lookups, false));
    }
    verdicts.push(checks::balances_match(&gateway, &merchants, &created, &lookups, &orders, connections).await);
    verdicts.push(checks::ledger_balanced(&gateway).await);
    if with_disbursements {
        verdicts.push(checks::webhooks_received(&created, &lookups, &sink));
    }
    if with_orders {
        verdicts.push(checks::order_webhooks_received(&orders, &sink));
    }
    print_verdicts(&verdicts);

    // Without the final checkpoint the next start replays the journal, as
    // after a crash: what was acknowledged must come back from it.
    server.stop_without_checkpoint().await?;
    let restart_started = Instant::now();
    let server = server::start(&settings)
        .await
        .context("restarting on the same data dir")?;
    println!(
        "restart (stopped without a final checkpoint; the journal replayed)\n  listening again after {:.2} s",
        restart_started.elapsed().as_secs_f64()
    );
    let gateway = Arc::new(Gateway::new(server.address, &admin_token, http));
    let mut after_restart = Vec::new();
    let relookups = checks::look_up(&gateway, &merchants, &created, connections).await;
    if with_disbursements {
        after_restart.push(checks::unchanged_after_restart(&created, &lookups, &relookups));
    }
    if with_orders {
        let order_relookups = checks::look_up_orders(&gateway, &merchants, &orders, connections).await;
        after_restart.push(checks::orders_found(&orders, &order_relookups, true));
    }
    after_restart.push(checks::balances_match(&gateway, &merchants, &created, &relookups, &orders, connections).await);
    after_restart.push(checks::ledger_balanced(&gateway).await);
    print_verdicts(&after_restart);
    verdicts.extend(after_restart);
    server.stop().await?;
    sink_task.abort();

    let failed = verdicts.iter().filter(|v| !v.passed).count();
    if failed > 0 {
        if let Some(temporary) = temporary {
            println!("data dir kept for inspection: {}", temporary.keep().display());
        }
        anyhow::bail!("benchmark checks failed: {failed} of {}", verdicts.len());
    }
    println!("all {} checks passed", verdicts.len());
    Ok(())
}

/// What every measured load of a run shares: where it runs, whose items,
/// how many at once, at what pace.
struct Drive<'a> {
    load_threads: &'a LoadThreads,
    merchants: Arc<Vec<client::BenchMerchant>>,
    workload: Workload,
    connections: usize,
    rate: u64,
}

impl Drive<'_> {
    /// Runs items `indexes` through `gateway` on the load threads, with a
    /// progress bar named `label`.
    async fn items(&self, gateway: Arc<Gateway>, indexes: Range<usize>, label: &'static str) -> LoadResult {
        let bar = progress_bar(indexes.len() as u64, label);
        let run = load::run(
            gateway,
            self.merchants.clone(),
            self.workload,
            indexes,
            self.connections,
            self.rate,
            bar.clone(),
        );
        let load = self.load_threads.run(run).await;
        bar.finish_and_clear();
        load
    }
}

/// Items of phase `phase` of `phases` over `count` items: equal shares, the
/// remainder spread over the later ones.
fn phase_bounds(phase: usize, phases: usize, count: usize) -> Range<usize> {
    phase * count / phases..(phase + 1) * count / phases
}

/// The HTTP requests items `indexes` of `workload` take.
fn requests_of(workload: Workload, indexes: Range<usize>, merchants: usize) -> u64 {
    indexes
        .map(|index| load::item_of(workload, index, merchants).requests())
        .sum()
}

/// CPU used while a load ran: the whole process's and the load generator's
/// (its client and the webhook sink); the server's is the difference.
#[derive(Default)]
struct CpuUse {
    process_seconds: f64,
    load_seconds: f64,
    elapsed: Duration,
    /// The server's threads' CPU by thread name (a pool's threads under one
    /// name); a thread that ended meanwhile as last sampled.
    by_thread: BTreeMap<String, f64>,
}

impl CpuUse {
    fn server_seconds(&self) -> f64 {
        (self.process_seconds - self.load_seconds).max(0.0)
    }

    fn add(&mut self, other: &CpuUse) {
        self.process_seconds += other.process_seconds;
        self.load_seconds += other.load_seconds;
        self.elapsed += other.elapsed;
        for (name, seconds) in &other.by_thread {
            *self.by_thread.entry(name.clone()).or_default() += seconds;
        }
    }
}

/// Readings taken when a measurement starts.
struct CpuMeter {
    started: Instant,
    process_seconds: f64,
    load_seconds: f64,
    /// Each live thread's CPU time, by thread id.
    threads: HashMap<u32, f64>,
    /// Every thread's CPU until the measurement is read.
    sampler: ThreadSampler,
}

impl CpuMeter {
    fn start(load_threads: &LoadThreads) -> CpuMeter {
        let sampler = ThreadSampler::start();
        CpuMeter {
            started: Instant::now(),
            process_seconds: process_stats::cpu_seconds(),
            load_seconds: load_threads.cpu_seconds(),
            threads: sampler
                .readings()
                .into_iter()
                .map(|(id, _, seconds)| (id, seconds))
                .collect(),
            sampler,
        }
    }

    /// What was used since `start`, and the sampler stopped.
    fn finish(self, load_threads: &LoadThreads) -> CpuUse {
        self.used(load_threads)
    }

    /// What was used since `start`.
    fn used(&self, load_threads: &LoadThreads) -> CpuUse {
        let mut by_thread = BTreeMap::new();
        for (id, name, seconds) in self.sampler.readings() {
            if !LoadThreads::is_named(&name) && name != thread_sampler::THREAD_NAME {
                let before = self.threads.get(&id).copied().unwrap_or(0.0);
                *by_thread.entry(name).or_default() += (seconds - before).max(0.0);
            }
        }
        CpuUse {
            process_seconds: process_stats::cpu_seconds() - self.process_seconds,
            // The sampler's reads of `/proc` are the measurement's, not the server's.
            load_seconds: load_threads.cpu_seconds() - self.load_seconds + self.sampler.own_cpu_seconds(),
            elapsed: self.started.elapsed(),
            by_thread,
        }
    }
}

/// Creates the run's merchants, merchant `i` funded for the disbursements
/// `load::disbursements_of` gives it, its webhooks going to the sink's `/webhooks/i`.
async fn set_up_merchants(
    gateway: Arc<Gateway>,
    workload: Workload,
    merchant_count: usize,
    count: usize,
    connections: usize,
    sink_address: std::net::SocketAddr,
) -> anyhow::Result<Vec<client::BenchMerchant>> {
    let bar = progress_bar(merchant_count as u64, "merchants");
    let progress = bar.clone();
    let made = in_parallel(merchant_count, connections, move |index| {
        let (gateway, progress) = (gateway.clone(), progress.clone());
        async move {
            let share = load::disbursements_of(workload, index, merchant_count, count) as u64;
            let made = gateway
                .create_merchant(index, &sink::notify_url(sink_address, index), share)
                .await;
            progress.inc(1);
            made
        }
    })
    .await;
    bar.finish_and_clear();
    made.into_iter().collect()
}

/// How the wait for final webhooks ended.
struct Settled {
    /// Resources whose final webhook came, over the run so far.
    finals: u64,
    /// Every one expected came.
    complete: bool,
    /// How long the wait saw none come at its end.
    quiet_for: Duration,
    /// How long it waited.
    waited: Duration,
    /// Cores' worth of CPU the process used while waiting: the load
    /// generator is idle then, so this is the server's delivery work.
    cpu_per_second: f64,
}

/// Waits until `expected` final webhooks came, or none came for
/// `STALL_LIMIT` beyond the vendor's delay.
async fn await_finals(sink: &Sink, expected: u64, delay_ms: u64) -> Settled {
    let bar = progress_bar(expected, "settling");
    let (started, cpu_before) = (Instant::now(), process_stats::cpu_seconds());
    let mut finals = sink.final_count();
    let mut last_progress = Instant::now();
    while finals < expected && last_progress.elapsed() < STALL_LIMIT + Duration::from_millis(delay_ms) {
        tokio::time::sleep(POLL_INTERVAL).await;
        let now = sink.final_count();
        if now != finals {
            (finals, last_progress) = (now, Instant::now());
        }
        bar.set_position(now);
    }
    bar.finish_and_clear();
    Settled {
        finals,
        complete: finals >= expected,
        quiet_for: last_progress.elapsed(),
        waited: started.elapsed(),
        cpu_per_second: (process_stats::cpu_seconds() - cpu_before) / started.elapsed().as_secs_f64().max(1e-6),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_grouped_by_three() {
        assert_eq!(super::report::thousands(0), "0");
        assert_eq!(super::report::thousands(999), "999");
        assert_eq!(super::report::thousands(1_000), "1,000");
        assert_eq!(super::report::thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn durations_switch_to_seconds_at_one() {
        assert_eq!(super::report::duration(1_500), "1.50 ms");
        assert_eq!(super::report::duration(1_230_000), "1.23 s");
    }
}
