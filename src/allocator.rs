//! The process allocator: mimalloc, keeping the memory it frees for reuse
//! instead of returning it to the operating system. Shared by the binary and
//! the benches (`#[path]`), so a benchmark measures what the server runs.

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};
use std::os::raw::c_long;

// The engine makes many small allocations that other threads free, a
// pattern glibc malloc handles at a high CPU cost and mimalloc is built for.
// The `system-allocator` feature leaves the system's malloc in place, so
// heap profilers that interpose malloc (heaptrack, valgrind) see every
// allocation.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (libmimalloc-sys
/// names no constant for it).
const MI_OPTION_PURGE_DELAY: mi_option_t = 15;

/// Never: mimalloc's default (return freed pages after 1 s) hands back pages
/// that the next second of a steady load takes again: a page fault for each
/// (often one zeroing a 2 MiB huge page), and lower throughput.
/// The server's heap mostly grows (its indexes); what it frees is reused.
/// A delay set here instead of -1 still lets purges through: a delay only
/// takes full effect from the environment.
const PURGE_DELAY_MS: c_long = -1;

/// Turns purging off, unless the operator chose a delay (`MIMALLOC_PURGE_DELAY`).
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mimalloc's options may be set at any time, from any thread.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// The purge delay in effect, in ms.
#[allow(dead_code)] // read by the test only
pub fn purge_delay_ms() -> c_long {
    // SAFETY: reading an option is always allowed.
    unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // mimalloc v3's default purge delay: 1000 ms. No other option of
        // v3 defaults to 1000, so this holds the index to the right option.
        assert_eq!(super::purge_delay_ms(), 1000);
        super::keep_freed_memory();
        assert_eq!(super::purge_delay_ms(), -1);
    }
}
