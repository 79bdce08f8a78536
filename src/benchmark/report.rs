//! What `paygate benchmark` prints: the baseline, each phase, the
//! creation and the whole lifecycle, CPU against the baseline, the checks'
//! verdicts, and the number formats they share.

use super::checks::Verdict;
use super::load::{Item, LoadResult};
use super::sink::Sink;
use super::IDLE_WAIT;
use super::{CpuUse, Settled};
use crate::config::Workload;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use std::ops::Range;
use std::time::{Duration, Instant};

pub(super) fn print_baseline(load: &LoadResult, requests: u64, cpu: &CpuUse) {
    let seconds = load.elapsed.as_secs_f64();
    println!("baseline (bare axum handlers in this process: the JSON body parsed, a small JSON answer, nothing kept)");
    println!(
        "  requests      {} in {seconds:.2} s: {} requests/s, the same client, connections and pace as paygate's",
        thousands(requests),
        thousands((requests as f64 / seconds) as u64)
    );
    println!("  latency       {}", quantiles(&load.latency_us, true));
    println!(
        "  CPU           server {} a request (process {}, of which the load generator {})",
        micros(cpu.server_seconds(), requests),
        micros(cpu.process_seconds, requests),
        micros(cpu.load_seconds, requests)
    );
    if !load.refused.is_empty() {
        let reasons: Vec<String> = load.refused.iter().map(|(r, n)| format!("{n}: {r}")).collect();
        println!("  not answered  {}", reasons.join("; "));
    }
    println!();
}

/// The floor's run: the items it took, the webhooks its sink checked, and
/// its server CPU an item.
pub(super) fn print_floor(load: &LoadResult, items: usize, webhooks: u64, complete: bool, cpu: &CpuUse) {
    println!(
        "floor (the HTTP an item's whole life needs and nothing else: bare handlers answer, then each change's \
         webhook is signed and sent through paygate's delivery client)"
    );
    println!(
        "  items         {} in {:.2} s, {} webhooks checked by its sink{}",
        thousands(items as u64),
        load.elapsed.as_secs_f64(),
        thousands(webhooks),
        if complete {
            ""
        } else {
            " (NOT all: the figure below is short)"
        }
    );
    println!("  latency       {} (a request)", quantiles(&load.latency_us, true));
    println!(
        "  CPU           server {} an item (process {}, of which the load generator and sink {})",
        micros(cpu.server_seconds(), items as u64),
        micros(cpu.process_seconds, items as u64),
        micros(cpu.load_seconds, items as u64)
    );
    println!();
}

#[allow(clippy::too_many_arguments)]
pub(super) fn print_phase(
    phase: usize,
    phases: usize,
    indexes: &Range<usize>,
    load: &LoadResult,
    noun: &str,
    settled: &Settled,
    (idle_before_kib, idle_after_kib): (u64, u64),
    (records_before, records_after): (usize, usize),
) {
    let seconds = load.elapsed.as_secs_f64();
    let items = indexes.len() as u64;
    println!("phase {} of {phases}: {} {noun}", phase + 1, thousands(items));
    println!(
        "  done          {} in {seconds:.2} s: {} {noun}/s, latency {}",
        thousands(load.items_done),
        thousands((load.items_done as f64 / seconds) as u64),
        quantiles(&load.latency_us, true)
    );
    if settled.complete {
        println!(
            "  drained       {} final webhooks so far, waited {:.2} s after the load",
            thousands(settled.finals),
            settled.waited.as_secs_f64()
        );
    } else {
        println!(
            "  drained       no: {} final webhooks so far; none for {} s",
            thousands(settled.finals),
            settled.quiet_for.as_secs()
        );
    }
    let since = if phase == 0 {
        "before the load".to_string()
    } else {
        format!("phase {}", phase)
    };
    println!(
        "  idle RSS      {} MiB {} s after the drain: {:+} MiB since {since}, {} an item",
        idle_after_kib / 1024,
        IDLE_WAIT.as_secs_f64(),
        (idle_after_kib as i64 - idle_before_kib as i64) / 1024,
        bytes_an_item(idle_before_kib, idle_after_kib, indexes.len())
    );
    // The load generator's and sink's records of items share the process.
    let records_kib = |bytes: usize| (bytes / 1024) as u64;
    let records_grown = records_kib(records_after).saturating_sub(records_kib(records_before));
    println!(
        "  of which      the load generator's and sink's own records {} an item, the rest (the server's) {} an item",
        bytes_an_item(0, records_grown, indexes.len()),
        bytes_an_item(idle_before_kib + records_grown, idle_after_kib, indexes.len())
    );
}

pub(super) fn print_creation(
    workload: Workload,
    all: &LoadResult,
    count: usize,
    seconds: f64,
    cpu: &CpuUse,
    cores: usize,
) {
    let header = match workload {
        Workload::Disbursements => "creation (POST /v1/disbursements, each answered 201 once durable)",
        Workload::Orders => "creation (POST /v1/orders, each answered 201 once durable)",
        Workload::OrdersPaid => "load (POST /v1/orders answered 201, then its payment answered 200, each once durable)",
        Workload::Mixed => "load (disbursements and paid orders, alternating, each answered once durable)",
    };
    let noun = noun(workload);
    let cpu_per_second = cpu.process_seconds / cpu.elapsed.as_secs_f64().max(1e-6);
    println!("{header}");
    println!(
        "  created       {} in {seconds:.2} s: {} {noun}/s (process CPU {cpu_per_second:.1} of {cores} cores)",
        thousands(all.items_done),
        thousands((all.items_done as f64 / seconds) as u64),
    );
    println!("  latency       {} (a request)", quantiles(&all.latency_us, true));
    if !all.refused.is_empty() {
        let refused: u64 = all.refused.values().sum();
        let reasons: Vec<String> = all.refused.iter().map(|(r, n)| format!("{n}: {r}")).collect();
        println!(
            "  not done      {} of {} ({})",
            thousands(refused),
            thousands(count as u64),
            reasons.join("; ")
        );
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn print_lifecycle(
    workload: Workload,
    all: &LoadResult,
    sink: &Sink,
    settled: &Settled,
    end_to_end: Duration,
    load_finished: Instant,
    phases: usize,
    cores: usize,
) {
    let noun = noun(workload);
    let expected_events: u64 = all.created.len() as u64 * Item::Disbursement.webhooks()
        + all.orders.iter().filter(|o| o.paid).count() as u64 * Item::PaidOrder.webhooks();
    let finals_expected = all.finals_expected();
    println!("lifecycle (the sandbox vendor's payouts, webhooks to the sink)");
    let (first_webhook, last_webhook, events, duplicates, lag, lag_by_kind) = sink.with_receipts(|receipts| {
        let by_kind: Vec<String> = receipts
            .lag_us_by_kind
            .iter()
            .map(|(kind, lag)| format!("{kind} {}", quantiles(lag, false)))
            .collect();
        (
            receipts.first_at,
            receipts.last_at,
            receipts.events,
            receipts.duplicates,
            quantiles(&receipts.lag_us, false),
            by_kind,
        )
    });
    let done = all.items_done;
    if finals_expected == 0 {
        println!("  all final     no webhooks expected: orders left PENDING make none");
    } else if settled.complete {
        let seconds = end_to_end.as_secs_f64();
        let idle = if phases > 1 {
            ", idle waits between phases left out"
        } else {
            ""
        };
        println!(
            "  all final     {} in {seconds:.2} s from the first creation{idle}: {} {noun}/s end to end",
            thousands(done),
            thousands((done as f64 / seconds) as u64)
        );
    } else {
        println!(
            "  all final     no: {} of {} final webhooks came; none for {} s",
            thousands(settled.finals),
            thousands(finals_expected),
            settled.quiet_for.as_secs()
        );
    }
    // The sink's own rate: how fast the dispatcher delivered, whatever
    // the creations before it.
    let webhook_rate = match (first_webhook, last_webhook) {
        (Some(first), Some(last)) if last > first => (events as f64 / (last - first).as_secs_f64()) as u64,
        _ => 0,
    };
    let rate_note = if phases > 1 { " (idle waits included)" } else { "" };
    let each = match workload {
        Workload::Disbursements => "2 a disbursement",
        Workload::Orders => "none for a pending order",
        Workload::OrdersPaid => "1 a paid order",
        Workload::Mixed => "2 a disbursement, 1 a paid order",
    };
    println!(
        "  webhooks      {} events ({} repeated; {} expected: {each}) at {}/s{rate_note}, \
         lag from event_at to receipt: {lag}",
        thousands(events),
        thousands(duplicates),
        thousands(expected_events),
        thousands(webhook_rate)
    );
    if lag_by_kind.len() > 1 {
        println!("  lag by kind   {}", lag_by_kind.join("; "));
    }
    if let Some(last) = last_webhook {
        println!(
            "  last webhook  {:.2} s after the last creation (process CPU {:.1} of {cores} cores meanwhile)",
            last.saturating_duration_since(load_finished).as_secs_f64(),
            settled.cpu_per_second
        );
    }
}

/// paygate's server CPU an item against the baseline's a request, the
/// item's requests' worth.
pub(super) fn print_cpu_ratio(
    noun: &str,
    items: usize,
    requests: u64,
    server: &CpuUse,
    baseline_requests: u64,
    baseline: &CpuUse,
    (floor_items, floor): (usize, &CpuUse),
) {
    let requests_an_item = requests as f64 / items as f64;
    let baseline_a_request = baseline.server_seconds() / baseline_requests as f64;
    let paygate_an_item = server.server_seconds() / items as f64;
    let baseline_process_a_request = baseline.process_seconds / baseline_requests as f64;
    let paygate_process_an_item = server.process_seconds / items as f64;
    println!(
        "CPU against the baseline (/proc, this process: the server's is the process's less the threads of \
         the load generator and sink, for paygate and the baseline alike)"
    );
    println!(
        "  paygate       server {} an item ({requests_an_item:.1} requests; from its first request until \
         the drain), process {}",
        micros(server.server_seconds(), items as u64),
        micros(server.process_seconds, items as u64)
    );
    println!("  by thread     {}", by_thread(server, items as u64));
    println!(
        "  baseline      server {} a request, process {}",
        micros(baseline.server_seconds(), baseline_requests),
        micros(baseline.process_seconds, baseline_requests)
    );
    println!(
        "  ratio         {} (one of the {noun} against {requests_an_item:.1} baseline requests; whole process {})",
        ratio(paygate_an_item, baseline_a_request * requests_an_item),
        ratio(paygate_process_an_item, baseline_process_a_request * requests_an_item)
    );
    let floor_an_item = floor.server_seconds() / floor_items.max(1) as f64;
    println!(
        "  floor         server {} an item: {} baseline requests' worth; paygate is {} of it",
        micros(floor.server_seconds(), floor_items as u64),
        ratio(floor_an_item, baseline_a_request),
        ratio(paygate_an_item, floor_an_item)
    );
}

/// paygate's p99 against the baseline's, and the floor's against the
/// baseline's: at the same connections and pace, the floor's ratio is what
/// the HTTP of a whole life costs in latency before any engine work.
pub(super) fn print_latency_ratio(paygate: &LoadResult, baseline: &LoadResult, floor: &LoadResult) {
    let p99 = |load: &LoadResult| load.latency_us.value_at_quantile(0.99) as f64;
    let baseline_p99 = p99(baseline);
    println!("latency p99 against the baseline (a request, the same connections and pace)");
    println!(
        "  paygate {} ({}× the baseline); floor {} ({}×); baseline {}",
        duration(p99(paygate) as u64),
        ratio(p99(paygate), baseline_p99),
        duration(p99(floor) as u64),
        ratio(p99(floor), baseline_p99),
        duration(baseline_p99 as u64)
    );
}

/// The server's CPU an item by thread, most first: which part of the
/// server a life's CPU goes to, without a profiler. Threads under 1% of the
/// server's CPU, and those that ended during the load, are summed last.
fn by_thread(cpu: &CpuUse, items: u64) -> String {
    let server = cpu.server_seconds();
    let mut named: Vec<(&String, f64)> = cpu
        .by_thread
        .iter()
        .map(|(name, seconds)| (name, *seconds))
        .filter(|(_, seconds)| *seconds >= server / 100.0)
        .collect();
    named.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rest = (server - named.iter().map(|(_, seconds)| seconds).sum::<f64>()).max(0.0);
    let mut parts: Vec<String> = named
        .iter()
        .map(|(name, seconds)| {
            let what = match name.as_str() {
                "tokio-rt-worker" => " (requests, actors, checkpoints)",
                "webhooks" => " (deliveries)",
                _ => "",
            };
            format!("{name}{what} {}", micros(*seconds, items))
        })
        .collect();
    parts.push(format!("other and ended threads {}", micros(rest, items)));
    parts.join(", ")
}

/// `seconds` over `count`, in µs each.
pub(super) fn micros(seconds: f64, count: u64) -> String {
    format!("{:.1} µs", seconds * 1e6 / count.max(1) as f64)
}

/// `value / baseline`, or why there is none: CPU time comes in 10 ms ticks,
/// which a tiny baseline may not reach.
pub(super) fn ratio(value: f64, baseline: f64) -> String {
    if baseline > 0.0 {
        format!("{:.2}", value / baseline)
    } else {
        "n/a (the baseline used under a CPU tick)".into()
    }
}

pub(super) fn print_verdicts(verdicts: &[Verdict]) {
    for verdict in verdicts {
        println!("  {}  {}", if verdict.passed { "ok  " } else { "FAIL" }, verdict.line);
    }
}

/// A bar on stderr; indicatif draws nothing when stderr is not a terminal,
/// so logs and tests see only the report.
pub(super) fn progress_bar(length: u64, label: &'static str) -> ProgressBar {
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
pub(super) fn quantiles(histogram: &Histogram<u64>, with_p999: bool) -> String {
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
pub(super) fn duration(micros: u64) -> String {
    if micros < 1_000_000 {
        format!("{:.2} ms", micros as f64 / 1000.0)
    } else {
        format!("{:.2} s", micros as f64 / 1_000_000.0)
    }
}

/// 1234567 as "1,234,567".
pub(super) fn thousands(value: u64) -> String {
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

/// The plural an item of `workload` is counted in.
pub(super) fn noun(workload: Workload) -> &'static str {
    match workload {
        Workload::Disbursements => "disbursements",
        Workload::Orders => "orders",
        Workload::OrdersPaid => "paid orders",
        Workload::Mixed => "items",
    }
}

/// What an item of `workload` is, in requests.
pub(super) fn what_an_item_is(workload: Workload) -> &'static str {
    match workload {
        Workload::Disbursements => "POST /v1/disbursements, settled by the sandbox",
        Workload::Orders => "POST /v1/orders, QRIS, left PENDING",
        Workload::OrdersPaid => "POST /v1/orders, then POST /v1/sandbox/orders/{ref_code}/pay",
        Workload::Mixed => "disbursements and paid orders, alternating",
    }
}

/// Resident memory growth from `before_kib` to `after_kib` over `items`, in bytes an item.
pub(super) fn bytes_an_item(before_kib: u64, after_kib: u64, items: usize) -> String {
    let grown_bytes = (after_kib as i64 - before_kib as i64) * 1024;
    let sign = if grown_bytes < 0 { "-" } else { "" };
    format!(
        "{sign}{} bytes",
        thousands(grown_bytes.unsigned_abs() / items.max(1) as u64)
    )
}
