//! Time comes from a `Clock` passed in, so tests can move it.

use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Unix ms formatted in WIB (UTC+7), the zone of Legacy times, ref codes
/// and settlement dates.
pub fn wib_format(unix_ms: i64, format: &str) -> String {
    let wib = chrono::FixedOffset::east_opt(crate::domain::disbursement::WIB_OFFSET_SECONDS as i32)
        .expect("UTC+7 is a valid offset");
    DateTime::from_timestamp_millis(unix_ms)
        .unwrap_or_default()
        .with_timezone(&wib)
        .format(format)
        .to_string()
}

/// A source of wall-clock time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The machine's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to: for tests that cross midnight.
#[derive(Debug, Clone)]
pub struct ManualClock {
    millis: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock frozen at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            millis: Arc::new(AtomicI64::new(start.timestamp_millis())),
        }
    }

    /// Moves the clock forward by `millis`.
    pub fn advance_ms(&self, millis: i64) {
        self.millis.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.millis.load(Ordering::SeqCst)).unwrap_or_default()
    }
}

/// The shared handle every component holds.
pub type SharedClock = Arc<dyn Clock>;
