//! Reference codes `PFX-yymmddHHMMSS-XXXX` (DESIGN.md 5), unique across the
//! platform: at high rates one second holds thousands, so the codes handed
//! out in the current second are remembered and storage is asked too.

use chrono::{DateTime, FixedOffset, Utc};
use rand::Rng;
use std::collections::HashSet;
use std::sync::Mutex;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Hands out unique reference codes.
#[derive(Default)]
pub struct RefCodes {
    // The current WIB second's stamp and the codes handed out in it.
    issued: Mutex<(String, HashSet<String>)>,
}

impl RefCodes {
    /// A fresh code `prefix-yymmddHHMMSS-XXXX` for `now` (in WIB) that is
    /// neither handed out this second nor `taken` in storage.
    pub fn next(&self, prefix: &str, now: DateTime<Utc>, taken: impl Fn(&str) -> bool) -> String {
        let wib = FixedOffset::east_opt(7 * 3600).expect("UTC+7 is a valid offset");
        let stamp = format!("{prefix}-{}", now.with_timezone(&wib).format("%y%m%d%H%M%S"));
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
            if !issued.1.contains(&code) && !taken(&code) {
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
}
