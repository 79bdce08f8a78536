//! Table-driven cases: each row runs under its name, so a failing row says
//! which one it was, whatever assertion inside it failed.

use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;

/// Runs one table row; a panic inside it is raised again with the row's
/// name in front, after the original assertion message has been printed.
pub async fn row<F: Future<Output = ()>>(name: &str, case: F) {
    if let Err(panic) = AssertUnwindSafe(case).catch_unwind().await {
        let reason = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        panic!("table row {name:?} failed: {reason}");
    }
}
