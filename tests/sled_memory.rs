//! What opening sled costs a process in resident memory, under the server's
//! own allocator, in a test binary of its own so no other test allocates
//! meanwhile.
//!
//! sled keeps 41 latency histograms in a process-wide table made on first
//! use. Unpatched, each holds 65,536 zeroed buckets, 21 MiB in all, although
//! under the `no_metrics` feature paygate builds with nothing ever reads or
//! writes them (`vendor/sled/PATCHED.md`). A server's idle memory pays that
//! on every start, so this holds the patch in place.

use std::time::Duration;

// The server's allocator: under it the buckets are resident, where glibc's
// malloc leaves their pages untouched and would hide the cost.
#[allow(dead_code)]
#[path = "../src/allocator.rs"]
mod allocator;

/// Resident memory of this process, in bytes (`/proc/self/statm`).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm is readable");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .expect("resident field")
        .parse()
        .expect("a number");
    pages * 4096
}

#[test]
fn opening_sled_leaves_no_histogram_buckets_resident() {
    let dir = tempfile::tempdir().unwrap();
    let before = resident_bytes();
    let db = sled::Config::new()
        .path(dir.path())
        .cache_capacity(1024 * 1024)
        .open()
        .unwrap();
    // Writes, a flush and a read touch every path that reaches the metrics table.
    for n in 0u32..2_000 {
        db.insert(n.to_be_bytes(), vec![7u8; 64]).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.get(7u32.to_be_bytes()).unwrap().unwrap().len(), 64);
    std::thread::sleep(Duration::from_millis(100));
    let grown = resident_bytes().saturating_sub(before);
    // sled's own tables, a 1 MiB cache and mimalloc's first segments take
    // about 12 MiB; unpatched, the buckets add 41 × 512 KiB = 20.5 MiB.
    assert!(
        grown < 24 * 1024 * 1024,
        "opening sled grew resident memory by {} KiB",
        grown / 1024
    );
    drop(db);
}
