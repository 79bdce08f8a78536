//! `paygate repair --data-dir D --cut-journal-at SEGMENT:BYTE`: the last
//! resort for a journal damaged in the middle, which a start refuses (and
//! `paygate verify` reports) with the segment and byte. The segment is cut
//! at that byte and every later segment set aside, so the journal ends
//! before the damage and the next start replays what precedes it.
//!
//! What is cut is lost to the ledger: acknowledged records among it are
//! gone from balances and resources. Nothing is deleted: the cut bytes and
//! segments are moved into `<data-dir>/journal-cut/` for whoever must
//! reconcile them. Restoring a backup, when there is one, loses less.

use crate::config::RepairArgs;
use anyhow::{bail, Context};
use paygate_engine::list_segments;
use std::fs::{self, OpenOptions};
use std::io::Write;

pub fn run(args: RepairArgs) -> anyhow::Result<()> {
    let (name, byte) = args
        .cut_journal_at
        .rsplit_once(':')
        .context("--cut-journal-at takes SEGMENT:BYTE, e.g. journal-00000000000000000001.log:40960")?;
    // A full path, as `verify` prints it, names its segment by its file name.
    let name = std::path::Path::new(name)
        .file_name()
        .context("--cut-journal-at names no segment")?
        .to_string_lossy()
        .into_owned();
    let byte: u64 = byte.parse().context("--cut-journal-at: the byte must be a number")?;
    let journal = args.data_dir.join("journal");
    let segments = list_segments(&journal).with_context(|| format!("reading {}", journal.display()))?;
    let Some(index) = segments
        .iter()
        .position(|(_, path)| path.file_name().is_some_and(|n| *n == *name))
    else {
        bail!("no journal segment {name} in {}", journal.display());
    };
    let damaged = &segments[index].1;
    let length = fs::metadata(damaged)?.len();
    if byte > length {
        bail!("{name} has {length} bytes: there is no byte {byte} to cut at");
    }
    let aside = args.data_dir.join("journal-cut");
    fs::create_dir_all(&aside)?;
    let mut tail = fs::read(damaged)?.split_off(byte as usize);
    let tail_path = aside.join(format!("{name}.from-{byte}"));
    let mut kept = OpenOptions::new().create_new(true).write(true).open(&tail_path)?;
    kept.write_all(&tail)?;
    kept.sync_all()?;
    let cut_bytes = tail.len();
    tail.clear();
    let mut set_aside = Vec::new();
    for (_, later) in &segments[index + 1..] {
        let target = aside.join(later.file_name().context("a segment has a name")?);
        fs::rename(later, &target)?;
        set_aside.push(target);
    }
    let file = OpenOptions::new().write(true).open(damaged)?;
    file.set_len(byte)?;
    file.sync_all()?;
    fs::File::open(&journal)?.sync_all()?;
    println!(
        "cut {name} at byte {byte}: {cut_bytes} bytes kept in {}, {} later segment(s) moved to {}",
        tail_path.display(),
        set_aside.len(),
        aside.display()
    );
    println!(
        "the records in them are no longer in the ledger; run `paygate verify --data-dir {}` next",
        args.data_dir.display()
    );
    Ok(())
}
