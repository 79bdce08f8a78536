//! Dashboard sessions: a random token in an HttpOnly,
//! SameSite=Lax cookie (Secure behind https), the server keeping only its
//! SHA-256, with the signed-in user, the merchant and the CSRF token every
//! form of the session carries. Sign-out ends the session here, not just in
//! the browser; a credential rotation ends the merchant's other sessions.
//! Failed sign-ins are counted per email: after 10 within 15 minutes,
//! sign-in answers 429 until the oldest ages out.

use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;
use uuid::Uuid;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "paygate_session";
/// The sign-in form's CSRF cookie (before there is a session).
pub const SIGN_IN_COOKIE: &str = "paygate_sign_in";
/// A session unused this long is over.
const IDLE_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Sessions held at most; past it the least recently used one ends.
const SESSIONS_MAX: usize = 100_000;
/// Failed sign-ins of one email that lock it out...
const FAILURES_MAX: usize = 10;
/// ...within this window.
const FAILURE_WINDOW: Duration = Duration::from_secs(15 * 60);
/// Emails whose failures are remembered at most (oldest forgotten first).
const FAILING_EMAILS_MAX: usize = 100_000;

/// A random token, URL-safe.
pub fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether two tokens are equal, in time independent of where they differ.
pub fn tokens_match(presented: &str, expected: &str) -> bool {
    !expected.is_empty() && bool::from(presented.as_bytes().ct_eq(expected.as_bytes()))
}

/// A signed-in session.
#[derive(Clone, Debug)]
pub struct Session {
    /// The signed-in user.
    pub user_id: Uuid,
    /// Their merchant.
    pub merchant_id: Uuid,
    /// Their email, shown in the header.
    pub email: String,
    /// Every state-changing form of the session carries it.
    pub csrf: String,
    last_used: Instant,
}

/// The live sessions and the sign-in failures.
#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<[u8; 32], Session>>,
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl Sessions {
    /// Starts a session; returns its token (for the cookie, never stored).
    /// In a cluster the token routes to `shard` (the merchant's), so any
    /// node sends the session's requests to the node that holds it.
    pub fn start(&self, shard: Option<u16>, user_id: Uuid, merchant_id: Uuid, email: &str) -> String {
        let token = paygate_engine::cluster::in_shard(shard, random_token, |token| {
            paygate_engine::cluster::shard_of_credential(token)
        });
        let session = Session {
            user_id,
            merchant_id,
            email: email.to_string(),
            csrf: random_token(),
            last_used: Instant::now(),
        };
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.retain(|_, s| s.last_used.elapsed() < IDLE_LIFETIME);
        if live.len() >= SESSIONS_MAX {
            if let Some(oldest) = live.iter().min_by_key(|(_, s)| s.last_used).map(|(k, _)| *k) {
                live.remove(&oldest);
            }
        }
        live.insert(digest(&token), session);
        token
    }

    /// The session of `token`, if live (and marks it used).
    pub fn get(&self, token: &str) -> Option<Session> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let key = digest(token);
        let session = live.get_mut(&key)?;
        if session.last_used.elapsed() >= IDLE_LIFETIME {
            live.remove(&key);
            return None;
        }
        session.last_used = Instant::now();
        Some(session.clone())
    }

    /// Ends the session of `token`.
    pub fn end(&self, token: &str) {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&digest(token));
    }

    /// Ends every session of `merchant_id` but the one of `keep` (a
    /// credential rotation: whoever rotated sees the new secrets once).
    pub fn end_merchant(&self, merchant_id: Uuid, keep: Option<&str>) {
        let keep = keep.map(digest);
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|key, s| s.merchant_id != merchant_id || Some(*key) == keep);
    }

    /// Seconds until `email` may try again, when it is locked out.
    pub fn locked_out_for(&self, email: &str) -> Option<u64> {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let times = failures.get_mut(&email.trim().to_lowercase())?;
        while times.front().is_some_and(|t| t.elapsed() >= FAILURE_WINDOW) {
            times.pop_front();
        }
        if times.len() < FAILURES_MAX {
            return None;
        }
        let oldest = *times.front()?;
        Some(FAILURE_WINDOW.saturating_sub(oldest.elapsed()).as_secs().max(1))
    }

    /// Counts a failed sign-in of `email`.
    pub fn failed(&self, email: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if failures.len() >= FAILING_EMAILS_MAX {
            failures.retain(|_, times| times.back().is_some_and(|t| t.elapsed() < FAILURE_WINDOW));
        }
        if failures.len() >= FAILING_EMAILS_MAX {
            return;
        }
        let times = failures.entry(email.trim().to_lowercase()).or_default();
        times.push_back(Instant::now());
        while times.len() > FAILURES_MAX {
            times.pop_front();
        }
    }

    /// Forgets `email`'s failures (a successful sign-in).
    pub fn succeeded(&self, email: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&email.trim().to_lowercase());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_start_end_and_end_with_their_merchants_rotation() {
        let sessions = Sessions::default();
        let merchant = Uuid::new_v4();
        let a = sessions.start(None, Uuid::new_v4(), merchant, "a@toko.id");
        let b = sessions.start(None, Uuid::new_v4(), merchant, "b@toko.id");
        let other = sessions.start(Some(5), Uuid::new_v4(), Uuid::new_v4(), "c@lain.id");
        assert_eq!(sessions.get(&a).unwrap().email, "a@toko.id");
        sessions.end_merchant(merchant, Some(&a));
        assert!(sessions.get(&a).is_some(), "the rotating session stays");
        assert!(sessions.get(&b).is_none(), "the merchant's other sessions end");
        assert!(sessions.get(&other).is_some(), "other merchants' sessions stay");
        sessions.end(&a);
        assert!(sessions.get(&a).is_none());
        assert!(sessions.get("not a token").is_none());
    }

    #[test]
    fn ten_failures_lock_an_email_out() {
        let sessions = Sessions::default();
        for _ in 0..9 {
            sessions.failed("Ops@Toko.id");
        }
        assert_eq!(sessions.locked_out_for("ops@toko.id"), None);
        sessions.failed("ops@toko.id");
        let wait = sessions.locked_out_for("OPS@toko.id").expect("locked out");
        assert!((1..=900).contains(&wait), "{wait}");
        assert_eq!(sessions.locked_out_for("someone@else.id"), None);
        sessions.succeeded("ops@toko.id");
        assert_eq!(sessions.locked_out_for("ops@toko.id"), None);
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(tokens_match("abc", "abc"));
        assert!(!tokens_match("abd", "abc"));
        assert!(!tokens_match("", ""));
    }
}
