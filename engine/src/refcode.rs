//! Reference codes `PFX-yymmddHHMMSS-XXXX` (DESIGN.md 5), unique across the
//! platform: at high rates one second holds thousands, so the codes handed
//! out in the current second are remembered. Storage is asked only when
//! memory cannot know: in the second this process started (an earlier one
//! may have handed out codes in it) and after the clock stepped back.

use chrono::{DateTime, Utc};
use rand::Rng;
use std::collections::HashSet;
use std::sync::Mutex;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Hands out unique reference codes.
pub struct RefCodes {
    // The current WIB second's stamp and the codes handed out in it.
    issued: Mutex<(String, HashSet<String>)>,
    // Unix seconds: when this process started, and the latest second seen.
    started_second: i64,
    latest_second: std::sync::atomic::AtomicI64,
}

impl Default for RefCodes {
    fn default() -> Self {
        RefCodes::starting_at(Utc::now())
    }
}

impl RefCodes {
    /// Codes for a process started at `started` (its clock's now).
    pub fn starting_at(started: DateTime<Utc>) -> RefCodes {
        RefCodes {
            issued: Mutex::default(),
            started_second: started.timestamp(),
            latest_second: std::sync::atomic::AtomicI64::new(started.timestamp()),
        }
    }

    /// A fresh code `prefix-yymmddHHMMSS-XXXX` for `now` (in WIB) that is
    /// neither handed out this second nor `taken` in storage.
    pub fn next(&self, prefix: &str, now: DateTime<Utc>, taken: impl Fn(&str) -> bool) -> String {
        use std::sync::atomic::Ordering;
        let second = now.timestamp();
        let latest = self.latest_second.fetch_max(second, Ordering::AcqRel);
        // Codes of seconds this process fully owns are all in memory.
        let ask_storage = second <= self.started_second || second < latest;
        let stamp = format!(
            "{prefix}-{}",
            crate::clock::wib_format(now.timestamp_millis(), "%y%m%d%H%M%S")
        );
        let mut issued = self.issued.lock().expect("ref code lock");
        if issued.0 != stamp {
            *issued = (stamp.clone(), HashSet::new());
        }
        let mut rng = rand::thread_rng();
        loop {
            let suffix: String = (0..4)
                .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
                .collect();
            let code = format!("{stamp}-{suffix}");
            let known_taken = issued.1.contains(&code) || (ask_storage && taken(&code));
            if !known_taken {
                issued.1.insert(code.clone());
                return code;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_the_wib_shape_and_do_not_repeat() {
        let codes = RefCodes::default();
        let now = DateTime::parse_from_rfc3339("2026-11-21T17:30:05Z")
            .unwrap()
            .with_timezone(&Utc);
        let mut seen = HashSet::new();
        for _ in 0..5000 {
            let code = codes.next("DSB", now, |_| false);
            assert!(code.starts_with("DSB-261122003005-"), "{code}");
            assert_eq!(code.len(), "DSB-261122003005-XXXX".len());
            assert!(seen.insert(code));
        }
    }

    #[test]
    fn storage_is_asked_only_when_memory_cannot_know() {
        let start = DateTime::parse_from_rfc3339("2026-11-21T17:30:05Z")
            .unwrap()
            .with_timezone(&Utc);
        let codes = RefCodes::starting_at(start);
        let asked = std::cell::Cell::new(0);
        let taken = |_: &str| {
            asked.set(asked.get() + 1);
            false
        };
        codes.next("ORD", start, taken);
        assert_eq!(asked.get(), 1, "the start second may hold an earlier process's codes");
        codes.next("ORD", start + chrono::Duration::seconds(1), taken);
        assert_eq!(asked.get(), 1, "a later second is this process's alone");
        codes.next("ORD", start + chrono::Duration::seconds(2), taken);
        codes.next("ORD", start + chrono::Duration::seconds(1), taken);
        assert_eq!(asked.get(), 2, "the clock stepped back");
    }
}
