//! The `paygate` binary: parse config -> open the engine -> serve HTTP;
//! benchmark disbursements against the same server started in process; or
//! verify (and, as a last resort, repair) a data dir offline.

mod allocator;
mod benchmark;
mod cluster;
mod config;
mod cpu_priority;
mod deliveries;
mod node;
mod process_stats;
mod repair;
mod server;
mod verify;

use clap::Parser;
use config::{Cli, Command, Settings};
use std::io::Write;

fn main() -> anyhow::Result<()> {
    allocator::keep_freed_memory();
    let cli = Cli::parse();
    let command = cli.command.unwrap_or_default();
    // The benchmark prints figures on stdout: the server's routine logs
    // would bury them, so by default it logs warnings only.
    let default_filter = match command {
        Command::Serve(_) => "info,sled=warn",
        Command::Benchmark(_) | Command::Verify(_) | Command::Repair(_) | Command::Openapi | Command::Cluster(_) => {
            "warn"
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PAYGATE_LOG").unwrap_or_else(|_| default_filter.into()),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not in log files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match command {
        Command::Serve(args) => {
            let settings = Settings::resolve(*args)?;
            // A cluster node opens its shards, journal threads and all, from
            // worker threads, which would pass a lowered priority on to them
            // (see `cpu_priority`); its workers keep the ordinary one.
            let lower_request_workers = settings.cluster.is_none();
            runtime(lower_request_workers)?.block_on(serve(settings))
        }
        Command::Benchmark(args) => runtime(true)?.block_on(benchmark::run(args)),
        Command::Repair(args) => repair::run(args),
        Command::Openapi => {
            let document = serde_json::to_string_pretty(&paygate_api::document_json())?;
            println!("{document}");
            Ok(())
        }
        Command::Cluster(command) => runtime(false)?.block_on(cluster::run(command)),
        Command::Verify(args) => {
            let clean = runtime(false)?.block_on(verify::run(args))?;
            if !clean {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

/// The main runtime. With `lower_request_workers`, its worker threads,
/// which answer requests, yield the CPU to the threads that finish work
/// already accepted (see `cpu_priority`).
fn runtime(lower_request_workers: bool) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if lower_request_workers {
        builder.on_thread_start(cpu_priority::lower_to_request_worker_priority);
    }
    builder.enable_all().build()
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    // Taken before anything starts: a SIGTERM that comes while the engine
    // opens, or right after the address is printed, must stop the server
    // gracefully once it is up. Caught only later, it would meet the
    // inherited disposition instead: death without the final checkpoint by
    // default, or, where the parent ignores SIGTERM, no effect at all.
    let mut stop_requested = StopSignals::install()?;
    let server = server::start(&settings).await?;
    let address = server.address;
    // Tests and scripts read this line to learn the port chosen for :0.
    println!("paygate listening on http://{address}");
    std::io::stdout().flush()?;
    tracing::info!(%address, mode = ?settings.mode, data_dir = %settings.data_dir.display(), "serving");
    stop_requested.received().await;
    tracing::info!("stopping; a second SIGTERM or SIGINT stops at once");
    // A graceful stop waits for requests and disbursement messages in
    // progress (up to about 40 s). Cutting it short is safe: every answered
    // change is in the journal, which the next start replays, as after a crash.
    tokio::select! {
        stopped = server.stop() => stopped,
        _ = stop_requested.received() => {
            tracing::warn!("stopped at once on a second signal; the next start replays the journal");
            std::process::exit(1);
        }
    }
}

/// SIGTERM and SIGINT, caught from the moment `install` returns; one
/// received before `received` is awaited is kept, not lost. The first
/// asks for a graceful stop, a second for an immediate one.
struct StopSignals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn install() -> anyhow::Result<StopSignals> {
        use anyhow::Context;
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignals {
            terminate: signal(SignalKind::terminate()).context("catching SIGTERM")?,
            interrupt: signal(SignalKind::interrupt()).context("catching SIGINT")?,
        })
    }

    async fn received(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}
