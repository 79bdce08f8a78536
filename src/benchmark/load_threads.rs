//! The load generator's own runtime: the benchmark's HTTP client and the
//! webhook sink run on threads of one name, so their CPU can be told from
//! the server's although both are in this process.

use crate::{cpu_priority, process_stats};
use std::future::Future;
use std::time::Duration;

/// The threads' name, as `/proc/self/task/*/comm` shows it.
const THREAD_NAME: &str = "bench-load";

/// A runtime apart from the server's; dropping it stops its tasks.
pub struct LoadThreads {
    runtime: Option<tokio::runtime::Runtime>,
}

impl LoadThreads {
    /// Starts `threads` worker threads.
    pub fn start(threads: usize) -> anyhow::Result<LoadThreads> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name(THREAD_NAME)
            // The load stands in for clients on other machines: it weighs
            // what the server's request workers weigh, so it takes no CPU
            // from the work the server already accepted.
            .on_thread_start(cpu_priority::lower_to_request_worker_priority)
            // A thread that ends takes its CPU time out of the count: keep
            // any blocking thread for the whole run.
            .thread_keep_alive(Duration::from_secs(24 * 3600))
            .enable_all()
            .build()?;
        Ok(LoadThreads { runtime: Some(runtime) })
    }

    /// Runs `work` on these threads; what it returns. Tasks it spawns stay
    /// here, as do the connections its HTTP requests open.
    pub async fn run<R: Send + 'static>(&self, work: impl Future<Output = R> + Send + 'static) -> R {
        let runtime = self.runtime.as_ref().expect("load runtime until dropped");
        match runtime.spawn(work).await {
            Ok(value) => value,
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        }
    }

    /// Whether `name` (a pool's name, as `process_stats::threads_cpu`
    /// gives it) is these threads'.
    pub fn is_named(name: &str) -> bool {
        name == THREAD_NAME
    }

    /// CPU time these threads have used, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        process_stats::threads_cpu_seconds(THREAD_NAME)
    }
}

impl Drop for LoadThreads {
    fn drop(&mut self) {
        // A runtime dropped the ordinary way inside another's task panics.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
