//! Every thread's CPU time, sampled while a measurement runs, so a server
//! thread that ends before the measurement is read still counts under its
//! name: a runtime's worker that `block_in_place` handed its place to (a
//! read waiting on a sled reopen does that), then idle in the blocking pool
//! until it ended, or a blocking-pool thread gone idle.

use crate::process_stats;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The sampler's own thread name: the load generator's side, as its reads
/// of `/proc` are the measurement's cost, not the server's.
pub const THREAD_NAME: &str = "bench-sampler";

/// How often every thread is read. An ended thread's last stretch before it
/// ended (at most this) is missed; one that ends idle loses nothing.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Each thread seen since the sampler started: its name and its latest CPU.
type Seen = HashMap<u32, (String, f64)>;

/// Reads every thread's CPU until dropped.
pub struct ThreadSampler {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    /// The sampler thread's own CPU time so far, in ns.
    own_cpu_ns: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl ThreadSampler {
    /// Takes a first reading now and starts sampling.
    pub fn start() -> ThreadSampler {
        let seen = Arc::new(Mutex::new(Seen::new()));
        record(&seen, process_stats::threads_cpu());
        let stop = Arc::new(AtomicBool::new(false));
        let own_cpu_ns = Arc::new(AtomicU64::new(0));
        let thread = {
            let (seen, stop, own_cpu_ns) = (seen.clone(), stop.clone(), own_cpu_ns.clone());
            std::thread::Builder::new()
                .name(THREAD_NAME.into())
                .spawn(move || {
                    while !stop.load(Ordering::Acquire) {
                        std::thread::park_timeout(SAMPLE_EVERY);
                        record(&seen, process_stats::threads_cpu());
                        own_cpu_ns.store(this_thread_cpu_ns(), Ordering::Release);
                    }
                })
                .ok()
        };
        ThreadSampler {
            seen,
            stop,
            own_cpu_ns,
            thread,
        }
    }

    /// The CPU the sampling itself has cost, in seconds.
    pub fn own_cpu_seconds(&self) -> f64 {
        self.own_cpu_ns.load(Ordering::Acquire) as f64 / 1e9
    }

    /// Every thread seen since the start, the live ones as they are now and
    /// the ended ones as last sampled: id, name (a pool's under one) and CPU.
    pub fn readings(&self) -> Vec<(u32, String, f64)> {
        record(&self.seen, process_stats::threads_cpu());
        let seen = self.seen.lock().expect("sampler lock");
        seen.iter()
            .map(|(id, (name, seconds))| (*id, name.clone(), *seconds))
            .collect()
    }
}

impl Drop for ThreadSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// The calling thread's CPU time, in ns.
fn this_thread_cpu_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return 0;
    }
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Notes each thread's latest reading (Linux hands thread ids out in
/// rising order, so within a run an id is one thread).
fn record(seen: &Mutex<Seen>, live: Vec<(u32, String, f64)>) {
    let mut seen = seen.lock().expect("sampler lock");
    for (id, name, seconds) in live {
        seen.insert(id, (name, seconds));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread that ends while the sampler runs keeps its CPU under its
    /// name; live threads are read as they are at the reading.
    #[test]
    fn a_thread_that_ended_is_counted_as_last_sampled() {
        let sampler = ThreadSampler::start();
        let worker = std::thread::Builder::new()
            .name("sampled-worker".into())
            .spawn(|| {
                let started = std::time::Instant::now();
                let mut spin = 0u64;
                while started.elapsed() < Duration::from_millis(300) {
                    spin = spin.wrapping_add(1);
                }
                std::hint::black_box(spin);
                std::thread::sleep(SAMPLE_EVERY * 3);
            })
            .unwrap();
        worker.join().unwrap();
        let ended: f64 = sampler
            .readings()
            .into_iter()
            .filter(|(_, name, _)| name == "sampled-worker")
            .map(|(_, _, seconds)| seconds)
            .sum();
        assert!(ended >= 0.1, "the ended thread's CPU is kept: {ended} s");
        assert!(
            process_stats::threads_cpu()
                .iter()
                .all(|(_, name, _)| name != "sampled-worker"),
            "the thread did end"
        );
    }
}
