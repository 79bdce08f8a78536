//! `paygate verify --data-dir D`: checks a data dir offline, a backup or
//! one a crash left. It opens the engine on it the way a start would (the
//! journal replayed over the last checkpoint, a torn tail cut, damage
//! anywhere else refused with its file and byte), checks every invariant of
//! the ledger over every stored entry (`Engine::verify_ledger`: balanced
//! entries, gapless sequences, each entry's running wallet balance, no
//! negative wallet, stored books equal to the entries, accounts summing to
//! zero), then prints the balances' summary, or each problem with its
//! place. Exit status 0 when clean, 1 on a problem.
//!
//! By default it works on a copy in the system's temporary directory, so
//! the directory checked is never written (opening cuts a torn tail and
//! checkpoints); `--in-place` recovers the directory itself.

use crate::config::VerifyArgs;
use anyhow::Context;
use paygate_engine::clock::SystemClock;
use paygate_engine::{Engine, EngineConfig};
use std::path::Path;
use std::sync::Arc;

/// Runs the check; `Ok(false)` when it found a problem.
pub async fn run(args: VerifyArgs) -> anyhow::Result<bool> {
    let original = args.data_dir;
    if !original.is_dir() {
        anyhow::bail!("{} is not a directory", original.display());
    }
    let copy;
    let dir = if args.in_place {
        original.clone()
    } else {
        copy = tempfile::Builder::new()
            .prefix("paygate-verify-")
            .tempdir()
            .context("making a scratch directory")?;
        copy_dir(&original, copy.path()).with_context(|| format!("copying {}", original.display()))?;
        copy.path().to_path_buf()
    };
    println!("paygate verify: {}", original.display());
    let mut config = EngineConfig::new(&dir);
    // Recovery only: nothing in flight is taken up, so nothing moves.
    config.resume_work = false;
    let engine = match Engine::open(config, Arc::new(SystemClock)).await {
        Ok(engine) => engine,
        Err(error) => {
            // Name the checked directory's own files, not the scratch copy's.
            let message = error
                .to_string()
                .replace(&*dir.to_string_lossy(), &original.to_string_lossy());
            println!("PROBLEM: the data dir does not open: {message}");
            return Ok(false);
        }
    };
    let report = engine.merchants().verify_ledger().await;
    // Nothing more is written to the copy (or, in place, than a start writes).
    engine.halt_without_checkpoint().await;
    let report = report.context("checking the ledger")?;
    println!("merchants: {}, entries: {}", report.merchants, report.entries);
    println!("account balances over all merchants (minor units):");
    for (account, balance) in &report.accounts {
        println!("  {account:<28} {balance}");
    }
    if report.balanced && report.problems.is_empty() {
        println!("balanced: every invariant holds");
        return Ok(true);
    }
    println!("PROBLEM: {} found", report.problems.len());
    for problem in &report.problems {
        println!("  {problem}");
    }
    Ok(false)
}

/// Copies a directory tree (files and directories only: a data dir holds nothing else).
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
