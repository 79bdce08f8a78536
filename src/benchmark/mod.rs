//! `paygate benchmark`: the real server started in this process in sandbox
//! mode, driven over HTTP through whole disbursement lifecycles, then checked.
//! Prints throughput, latency, webhook lag and memory; exits non-zero if a check fails.

mod checks;
mod client;
mod load;
mod sink;

use crate::config::{self, BenchmarkArgs, Settings};
use crate::process_stats;
use crate::server;
use anyhow::Context;
use checks::Verdict;
use client::{in_parallel, Gateway};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use paygate_api::Mode;
use sink::Sink;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the wait for final webhooks may see none arrive (beyond the
/// vendor's delay) before it gives up and lets the checks say what is missing.
const STALL_LIMIT: Duration = Duration::from_secs(30);
/// How often the wait looks at the sink.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Runs the benchmark; an error names what failed.
pub async fn run(args: BenchmarkArgs) -> anyhow::Result<()> {
    let count = usize::try_from(args.disbursements)?;
    let merchant_count = usize::try_from(args.merchants)?;
    let connections = usize::try_from(args.connections)?;
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
        listen: "127.0.0.1:0".into(),
        data_dir: data_dir.clone(),
        mode: Mode::Sandbox,
        admin_token: Some(admin_token.clone()),
        public_url: None,
        webhook_retry_scale: 1.0,
        sandbox_disbursement_delay_ms: delay_ms,
        vendor_retry_scale: 1.0,
        max_connections: paygate_api::serve::ConnectionLimits::default().max_connections,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pace = match args.rate {
        0 => "as fast as answered".to_string(),
        rate => format!("{}/s", thousands(rate)),
    };
    println!(
        "paygate benchmark: {} disbursements over {} merchants, {connections} connections, {pace}, \
         sandbox payouts settle after {delay_ms} ms, {cores} cores",
        thousands(count as u64),
        thousands(merchant_count as u64)
    );
    let where_kept = if temporary.is_some() { "temporary" } else { "kept" };
    println!("data dir: {} ({where_kept})", data_dir.display());

    let sink = Sink::new();
    let (sink_address, sink_task) = sink::start(sink.clone()).await?;
    let server = server::start(&settings).await?;
    let gateway = Arc::new(Gateway::new(server.address, &admin_token, connections)?);

    let setup_started = Instant::now();
    let merchants = Arc::new(set_up_merchants(&gateway, merchant_count, count, connections, sink_address).await?);
    let secrets: Vec<&str> = merchants.iter().map(|m| m.webhook_secret.as_str()).collect();
    sink.set_secrets(&secrets)?;
    println!(
        "setup: {} WALLET merchants created, funded and given the webhook sink in {:.1} s\n",
        thousands(merchant_count as u64),
        setup_started.elapsed().as_secs_f64()
    );

    let bar = progress_bar(count as u64, "creating");
    let cpu_before = process_stats::cpu_seconds();
    let load = load::create_disbursements(
        gateway.clone(),
        merchants.clone(),
        count,
        connections,
        args.rate,
        bar.clone(),
    )
    .await;
    bar.finish_and_clear();
    let cpu_per_second = (process_stats::cpu_seconds() - cpu_before) / load.elapsed.as_secs_f64();
    let memory_after_creation = process_stats::memory_kib("VmRSS");
    let settled = await_finals(&sink, load.created.len() as u64, delay_ms).await;
    print_creation(&load, cpu_per_second, cores);
    print_lifecycle(&load, &sink, &settled, cores);
    println!("memory (VmRSS of this one process: server, load generator and sink)");
    println!(
        "  {} MiB after creation, {} MiB after the lifecycle, peak {} MiB",
        memory_after_creation / 1024,
        process_stats::memory_kib("VmRSS") / 1024,
        process_stats::memory_kib("VmHWM") / 1024
    );

    println!("checks");
    let created = Arc::new(load.created);
    let refused: u64 = load.refused.values().sum();
    let lookups = checks::look_up(&gateway, &merchants, &created, connections).await;
    let mut verdicts = vec![
        Verdict {
            passed: refused == 0,
            line: format!(
                "every creation answered 201: {} of {}",
                thousands(created.len() as u64),
                thousands(count as u64)
            ),
        },
        checks::all_found(&created, &lookups),
        checks::all_succeeded(&created, &lookups),
        checks::balances_match(&gateway, &merchants, &created, &lookups, connections).await,
        checks::ledger_balanced(&gateway).await,
        checks::webhooks_received(&created, &lookups, &sink),
    ];
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
    let gateway = Arc::new(Gateway::new(server.address, &admin_token, connections)?);
    let relookups = checks::look_up(&gateway, &merchants, &created, connections).await;
    let after_restart = vec![
        checks::unchanged_after_restart(&created, &lookups, &relookups),
        checks::balances_match(&gateway, &merchants, &created, &relookups, connections).await,
        checks::ledger_balanced(&gateway).await,
    ];
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

/// Creates the run's merchants, merchant `i` funded for the disbursements
/// `load::merchant_of` gives it, its webhooks going to the sink's `/webhooks/i`.
async fn set_up_merchants(
    gateway: &Arc<Gateway>,
    merchant_count: usize,
    count: usize,
    connections: usize,
    sink_address: std::net::SocketAddr,
) -> anyhow::Result<Vec<client::BenchMerchant>> {
    let bar = progress_bar(merchant_count as u64, "merchants");
    let (gateway, progress) = (gateway.clone(), bar.clone());
    let made = in_parallel(merchant_count, connections, move |index| {
        let (gateway, progress) = (gateway.clone(), progress.clone());
        async move {
            let share = load::share_of(index, merchant_count, count) as u64;
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
    /// Disbursements whose final webhook came.
    finals: u64,
    /// Every created one's came.
    complete: bool,
    /// How long the wait saw none come at its end.
    quiet_for: Duration,
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
        cpu_per_second: (process_stats::cpu_seconds() - cpu_before) / started.elapsed().as_secs_f64(),
    }
}

fn print_creation(load: &load::LoadResult, cpu_per_second: f64, cores: usize) {
    let created = load.created.len() as u64;
    let seconds = load.elapsed.as_secs_f64();
    println!("creation (POST /v1/disbursements, each answered 201 once durable)");
    println!(
        "  created       {} in {seconds:.2} s: {} disbursements/s (process CPU {cpu_per_second:.1} of {cores} cores)",
        thousands(created),
        thousands((created as f64 / seconds) as u64),
    );
    println!("  latency       {}", quantiles(&load.latency_us, true));
    if !load.refused.is_empty() {
        let refused: u64 = load.refused.values().sum();
        let reasons: Vec<String> = load.refused.iter().map(|(r, n)| format!("{n}: {r}")).collect();
        println!("  not created   {} ({})", thousands(refused), reasons.join("; "));
    }
}

fn print_lifecycle(load: &load::LoadResult, sink: &Sink, settled: &Settled, cores: usize) {
    let created = load.created.len() as u64;
    println!("lifecycle (creation, the sandbox vendor's payout, webhooks to the sink)");
    let (first_webhook, last_webhook, events, duplicates, lag) = sink.with_receipts(|receipts| {
        let lag = quantiles(&receipts.lag_us, false);
        (
            receipts.first_at,
            receipts.last_at,
            receipts.events,
            receipts.duplicates,
            lag,
        )
    });
    let first_creation = load.finished - load.elapsed;
    match last_webhook {
        Some(last) if settled.complete => {
            let seconds = (last - first_creation).as_secs_f64();
            println!(
                "  all final     {} in {seconds:.2} s from the first creation: {} disbursements/s end to end",
                thousands(created),
                thousands((created as f64 / seconds) as u64)
            );
        }
        _ => println!(
            "  all final     no: {} of {} final webhooks came; none for {} s",
            thousands(settled.finals),
            thousands(created),
            settled.quiet_for.as_secs()
        ),
    }
    // The sink's own rate: how fast the dispatcher delivered, whatever
    // the creations before it.
    let webhook_rate = match (first_webhook, last_webhook) {
        (Some(first), Some(last)) if last > first => (events as f64 / (last - first).as_secs_f64()) as u64,
        _ => 0,
    };
    println!(
        "  webhooks      {} events ({} repeated) at {}/s, lag from event_at to receipt: {lag}",
        thousands(events),
        thousands(duplicates),
        thousands(webhook_rate)
    );
    if let Some(last) = last_webhook {
        println!(
            "  last webhook  {:.2} s after the last creation (process CPU {:.1} of {cores} cores meanwhile)",
            last.saturating_duration_since(load.finished).as_secs_f64(),
            settled.cpu_per_second
        );
    }
}

fn print_verdicts(verdicts: &[Verdict]) {
    for verdict in verdicts {
        println!("  {}  {}", if verdict.passed { "ok  " } else { "FAIL" }, verdict.line);
    }
}

/// A bar on stderr; indicatif draws nothing when stderr is not a terminal,
/// so logs and tests see only the report.
fn progress_bar(length: u64, label: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(length);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>9} [{bar:40}] {pos}/{len} {per_sec} {elapsed}")
            .expect("valid progress template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label);
    bar
}

/// `p50 … p99 … [p999 …] max …` of a histogram of microseconds.
fn quantiles(histogram: &Histogram<u64>, with_p999: bool) -> String {
    if histogram.is_empty() {
        return "none recorded".into();
    }
    let at = |q: f64| duration(histogram.value_at_quantile(q));
    let p999 = if with_p999 {
        format!("  p999 {}", at(0.999))
    } else {
        String::new()
    };
    format!(
        "p50 {}  p99 {}{p999}  max {}",
        at(0.50),
        at(0.99),
        duration(histogram.max())
    )
}

/// Microseconds as ms below a second, else s.
fn duration(micros: u64) -> String {
    if micros < 1_000_000 {
        format!("{:.2} ms", micros as f64 / 1000.0)
    } else {
        format!("{:.2} s", micros as f64 / 1_000_000.0)
    }
}

/// 1234567 as "1,234,567".
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_grouped_by_three() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1_000), "1,000");
        assert_eq!(super::thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn durations_switch_to_seconds_at_one() {
        assert_eq!(super::duration(1_500), "1.50 ms");
        assert_eq!(super::duration(1_230_000), "1.23 s");
    }
}
