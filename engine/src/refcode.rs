//! Reference codes `PFX-yymmddHHMMSS-XXXX` (the WIB time), unique across the
//! platform: at high rates one second holds thousands, so the codes handed
//! out in the last few seconds are remembered, whatever their prefix.
//! Storage is asked only when memory cannot know: in the second this process
//! started (an earlier one may have handed out codes in it) and for a second
//! older than the latest seen (the clock stepped back, or a caller lags).

use chrono::{DateTime, Utc};
use rand::Rng;
use std::collections::BTreeMap;
use std::sync::Mutex;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// How many seconds before the latest one keep their codes in memory: a
/// caller a little behind must still see what others handed out, since
/// those codes may not be in storage yet.
const REMEMBERED_SECONDS: i64 = 5;

/// Hands out unique reference codes.
/// One second's WIB stamp (`yymmddHHMMSS`, formatted once) and its codes.
#[derive(Default)]
struct Second {
    stamp: String,
    codes: foldhash::HashSet<String>,
}

pub struct RefCodes {
    // Codes handed out (prefix included), by Unix second, for the latest
    // `REMEMBERED_SECONDS` seconds.
    issued: Mutex<BTreeMap<i64, Second>>,
    // Unix seconds: when this process started, and the latest second seen.
    started_second: i64,
    latest_second: std::sync::atomic::AtomicI64,
    /// In a cluster, the shard every code routes to
    /// (`cluster::shard_of_credential`): a node finds a code's shard from
    /// the code alone, and two shards can never hand out the same code.
    shard: Option<u16>,
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
            shard: None,
        }
    }

    /// The same, handing out only codes that route to `shard`.
    pub fn in_shard(self, shard: Option<u16>) -> RefCodes {
        RefCodes { shard, ..self }
    }

    /// A fresh code `prefix-yymmddHHMMSS-XXXX` for `now` (in WIB) that is
    /// neither handed out this second nor `taken` in storage.
    pub fn next(&self, prefix: &str, now: DateTime<Utc>, taken: impl Fn(&str) -> bool) -> String {
        use std::sync::atomic::Ordering;
        let second = now.timestamp();
        let latest = self.latest_second.fetch_max(second, Ordering::AcqRel);
        // Codes of seconds this process fully owns are all in memory.
        let ask_storage = second <= self.started_second || second < latest;
        let mut issued = self.issued.lock().expect("ref code lock");
        let newest = latest.max(second);
        // The second being served stays, however old: a caller far behind
        // must still not repeat its own codes.
        if issued
            .first_key_value()
            .is_some_and(|(oldest, _)| *oldest < newest - REMEMBERED_SECONDS)
        {
            issued.retain(|kept, _| *kept >= newest - REMEMBERED_SECONDS || *kept == second);
        }
        let issued = issued.entry(second).or_insert_with(|| Second {
            // Formatting is the dear part of a code: once a second.
            stamp: crate::clock::wib_format(now.timestamp_millis(), "%y%m%d%H%M%S"),
            codes: Default::default(),
        });
        let mut rng = rand::thread_rng();
        loop {
            let mut code = String::with_capacity(prefix.len() + issued.stamp.len() + 6);
            code.push_str(prefix);
            code.push('-');
            code.push_str(&issued.stamp);
            code.push('-');
            code.extend((0..4).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char));
            if self
                .shard
                .is_some_and(|shard| crate::cluster::shard_of_credential(&code) != shard)
            {
                continue;
            }
            let known_taken = issued.codes.contains(&code) || (ask_storage && taken(&code));
            if !known_taken {
                issued.codes.insert(code.clone());
                return code;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_of_a_shard_route_to_it() {
        let codes = RefCodes::default().in_shard(Some(17));
        for _ in 0..200 {
            let code = codes.next("ORD", Utc::now(), |_| false);
            assert_eq!(crate::cluster::shard_of_credential(&code), 17, "{code}");
        }
    }

    #[test]
    fn codes_have_the_wib_shape_and_do_not_repeat() {
        let now = DateTime::parse_from_rfc3339("2026-11-21T17:30:05Z")
            .unwrap()
            .with_timezone(&Utc);
        // A process started before `now` (with `default()`, the test broke
        // once the wall clock passed the fixed time).
        let codes = RefCodes::starting_at(now - chrono::Duration::seconds(1));
        let mut seen = HashSet::new();
        for _ in 0..5000 {
            let code = codes.next("DSB", now, |_| false);
            assert!(code.starts_with("DSB-261122003005-"), "{code}");
            assert_eq!(code.len(), "DSB-261122003005-XXXX".len());
            assert!(seen.insert(code));
        }
    }

    /// A caller a minute behind the latest second seen still gets no
    /// repeats within its second (its codes used to be forgotten at once,
    /// as older than the remembered seconds).
    #[test]
    fn a_caller_far_behind_does_not_repeat_its_codes() {
        let now = DateTime::parse_from_rfc3339("2026-11-21T17:30:05Z")
            .unwrap()
            .with_timezone(&Utc);
        let codes = RefCodes::starting_at(now + chrono::Duration::seconds(60));
        let mut seen = HashSet::new();
        for _ in 0..5000 {
            assert!(seen.insert(codes.next("DSB", now, |_| false)));
        }
    }

    /// Codes of one second stay remembered when another prefix, or a caller
    /// a second behind, asks in between (both used to wipe them).
    #[test]
    fn codes_of_a_second_survive_other_prefixes_and_late_callers() {
        let start = DateTime::parse_from_rfc3339("2026-11-21T17:30:05Z")
            .unwrap()
            .with_timezone(&Utc);
        let codes = RefCodes::starting_at(start);
        let now = start + chrono::Duration::seconds(2);
        let mut seen = HashSet::new();
        for round in 0..4 {
            for _ in 0..5000 {
                assert!(seen.insert(codes.next("ORD", now, |_| false)), "round {round}");
            }
            codes.next("DSB", now, |_| false);
            codes.next("ORD", now - chrono::Duration::seconds(1), |_| false);
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
