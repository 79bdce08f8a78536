//! Which threads get the CPU first when the cores are all busy: work the
//! server already accepted (its journal, the webhooks it owes) before new
//! requests.
//!
//! At saturation the cores are shared among every runnable thread. With
//! equal shares, the request workers take in more work than the webhook
//! thread can send, and every new disbursement's webhooks wait behind a
//! backlog that grows for as long as the load lasts. The request workers
//! therefore run at a lower priority (a higher nice value): whenever the
//! webhook thread, the journal writer or its applier has work, it runs
//! first, and new requests take what is left. The intake then settles at
//! the rate the whole life can be finished, and webhooks keep up. When
//! cores are idle, nice changes nothing: a lowered thread still runs at
//! once on a free core.
//!
//! Linux threads inherit their creator's nice value and an unprivileged
//! process cannot lower it again, so a thread that must run first is
//! started from one that was never lowered (the main thread), never from a
//! request worker.

/// The nice value of the request workers (the main runtime's threads).
/// Nice 10 weighs a thread at about a ninth of a nice-0 one; with autogroup
/// or a service's cgroup, that weight counts only against this process's own
/// threads, not against other programs on the machine.
const REQUEST_WORKER_NICE: i32 = 10;

/// Lowers the calling thread to the request workers' priority: for a
/// runtime's `on_thread_start`.
pub fn lower_to_request_worker_priority() {
    lower_this_thread(REQUEST_WORKER_NICE);
}

/// Lowers the calling thread's priority to `nice` (higher is lower). A
/// failure is logged and changes nothing else: the server runs as before,
/// with webhooks lagging under saturation.
fn lower_this_thread(nice: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on the calling thread's own id.
        let result = unsafe {
            let tid = libc::gettid() as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, nice)
        };
        if result != 0 {
            tracing::warn!(error = %std::io::Error::last_os_error(), nice, "lowering a thread's priority failed");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// The calling thread's nice value, as the kernel reports it.
#[cfg(all(test, target_os = "linux"))]
fn this_thread_nice() -> i32 {
    // SAFETY: a plain system call on the calling thread's own id.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn lowering_a_thread_leaves_the_others_as_they_were() {
        let before = this_thread_nice();
        let lowered = std::thread::spawn(move || {
            lower_this_thread((before + 3).min(19));
            this_thread_nice()
        })
        .join()
        .expect("thread");
        assert_eq!(lowered, (before + 3).min(19));
        assert_eq!(this_thread_nice(), before);
    }
}
