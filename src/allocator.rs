//! The process allocator: mimalloc, keeping freed memory for a minute before
//! it goes back to the operating system. Shared by the binary and the benches
//! (`#[path]`), so a benchmark measures the allocator the server runs with.

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};
use std::os::raw::c_long;

// glibc malloc spent a third of the engine's CPU under load (many small
// allocations freed on other threads); mimalloc is built for that pattern.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (libmimalloc-sys
/// names no constant for it).
const MI_OPTION_PURGE_DELAY: mi_option_t = 15;

/// How long freed memory stays with mimalloc before it is returned. Its
/// default (1 s) returned pages that the next second of a steady load took
/// back: 250,000 page faults, many of them zeroing 2 MiB huge pages, in a
/// 10 s disbursement benchmark, against 1,500 with a minute. An idle server
/// still gives its memory back, a minute later.
const PURGE_DELAY_MS: c_long = 60_000;

/// Sets the purge delay, unless the operator chose one (`MIMALLOC_PURGE_DELAY`).
pub fn keep_freed_memory_a_minute() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mimalloc's options may be set at any time, from any thread.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// The purge delay in effect, in ms.
#[allow(dead_code)] // read by the test and the benches' reports only
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
        super::keep_freed_memory_a_minute();
        assert_eq!(super::purge_delay_ms(), 60_000);
    }
}
