//! This process's CPU time (whole, or of some named threads) and memory,
//! read from `/proc/self` (Linux): for `paygate benchmark` and the engine
//! benches, which include this file.

/// A `/proc/self/status` figure in KiB (`VmRSS`, `VmHWM`); 0 if unreadable.
pub fn memory_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// User and system CPU time this process has used, in seconds.
pub fn cpu_seconds() -> f64 {
    stat_cpu_seconds(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
}

/// User and system CPU time used by this process's live threads whose name
/// (less a pool's `-<number>`) starts with `name_prefix`, in seconds.
/// Threads that ended are not counted: name only threads that outlive the
/// measurement.
pub fn threads_cpu_seconds(name_prefix: &str) -> f64 {
    threads_cpu()
        .iter()
        .filter(|(_, name, _)| name.starts_with(name_prefix))
        .map(|(_, _, seconds)| seconds)
        .sum()
}

/// Each live thread of this process: its id, its name without a trailing
/// `-<number>` (so a pool's threads share one), and its CPU time so far in
/// seconds.
pub fn threads_cpu() -> Vec<(u32, String, f64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let id = task.file_name().to_str()?.parse().ok()?;
            let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
            let name = name.trim_end();
            let pool = match name.rsplit_once('-') {
                Some((pool, number)) if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) => pool,
                _ => name,
            };
            let seconds = stat_cpu_seconds(&std::fs::read_to_string(task.path().join("stat")).ok()?);
            Some((id, pool.to_string(), seconds))
        })
        .collect()
}

/// utime + stime of a `/proc/.../stat` line, in seconds.
fn stat_cpu_seconds(stat: &str) -> f64 {
    // Fields after the command name (which may hold spaces) start at the
    // state, field 3; utime and stime are fields 14 and 15, in USER_HZ,
    // which Linux fixes at 100 for user space.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |index: usize| fields.get(index).and_then(|t| t.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) as f64 / 100.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_has_a_resident_size_and_cpu_time() {
        assert!(super::memory_kib("VmRSS") > 0);
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(30) {}
        assert!(super::cpu_seconds() > 0.0);
    }

    #[test]
    fn a_named_thread_has_its_own_cpu_time_and_an_unknown_name_none() {
        let spinner = std::thread::Builder::new()
            .name("stats-spinner".into())
            .spawn(|| {
                let spin = std::time::Instant::now();
                while spin.elapsed() < std::time::Duration::from_millis(50) {}
                super::threads_cpu_seconds("stats-spinner")
            })
            .unwrap();
        assert!(spinner.join().unwrap() > 0.0);
        assert_eq!(super::threads_cpu_seconds("no-such-thread"), 0.0);
    }

    #[test]
    fn threads_of_a_pool_share_its_name() {
        let (ready, wait) = std::sync::mpsc::channel();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::Builder::new()
            .name("stats-pool-12".into())
            .spawn(move || {
                let spin = std::time::Instant::now();
                while spin.elapsed() < std::time::Duration::from_millis(50) {}
                ready.send(()).unwrap();
                stopped.recv().ok();
            })
            .unwrap();
        wait.recv().unwrap();
        let threads = super::threads_cpu();
        let pool: Vec<_> = threads.iter().filter(|(_, name, _)| name == "stats-pool").collect();
        assert_eq!(pool.len(), 1, "{threads:?}");
        assert!(pool[0].2 > 0.0, "{threads:?}");
        assert!(!threads.iter().any(|(_, name, _)| name == "stats-pool-12"));
        drop(stop);
        spinner.join().unwrap();
    }
}
