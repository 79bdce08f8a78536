//! The engine's side of webhooks: the outbox of events (written by the
//! merchant actor with the changes that cause them), due deliveries, and
//! the durable record of every attempt with the next retry (DESIGN.md 6).
//! Delivery itself (HTTP, signing, bodies) is the API layer's dispatcher.

use crate::domain::webhook::retry_delay;
use crate::domain::{WebhookAttempt, WebhookEvent};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::store::record::JournalRecord;
use uuid::Uuid;

/// What one delivery attempt found.
#[derive(Clone, Debug)]
pub struct AttemptOutcome {
    /// Where it was sent.
    pub url: String,
    /// The answer's status, if one came.
    pub status_code: Option<u16>,
    /// How long it took.
    pub latency_ms: u64,
    /// Why it failed.
    pub error: Option<String>,
    /// When it started, Unix ms.
    pub attempted_at_ms: i64,
    /// A merchant's resend rather than the schedule.
    pub manual: bool,
}

/// Filters of `GET /v1/webhooks/deliveries`.
#[derive(Clone, Debug, Default)]
pub struct AttemptFilter {
    /// One event's attempts.
    pub event_id: Option<Uuid>,
    /// Only delivered (or only failed) attempts.
    pub delivered: Option<bool>,
}

/// Loopback, private, link-local, unspecified or unique-local: where a live
/// notify URL may not point (SSRF).
pub fn is_private(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified() || v4.is_broadcast()
        }
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_private(std::net::IpAddr::V4(v4)))
        }
    }
}

/// False for a URL naming a private host outright (`localhost`, a private
/// IP literal); names that resolve there are refused at delivery.
fn names_public_host(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    match parsed.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.to_ascii_lowercase();
            name != "localhost" && !name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => !is_private(std::net::IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => !is_private(std::net::IpAddr::V6(ip)),
        None => false,
    }
}

impl Engine {
    /// Checks a notify URL's shape and, unless private addresses are
    /// allowed (sandbox), that it does not name one (DESIGN.md 6).
    pub(crate) fn validate_notify_url(&self, field: &str, url: &str) -> Result<(), EngineError> {
        crate::engine::validate_url(field, url)?;
        if !self.allows_private_notify_urls() && !names_public_host(url) {
            return Err(EngineError::invalid(
                field,
                "must not point to a loopback, private or link-local address",
            ));
        }
        Ok(())
    }

    /// Events due for an attempt at or before `now_ms`, with when each was due.
    pub fn due_webhooks(&self, now_ms: i64, limit: usize) -> Result<Vec<(i64, Uuid)>, EngineError> {
        Ok(self.store().webhooks_due(now_ms, limit)?)
    }

    /// An event by id.
    pub fn webhook_event(&self, id: Uuid) -> Result<Option<WebhookEvent>, EngineError> {
        Ok(self.store().webhook_event(&id)?)
    }

    /// A merchant's event by id.
    pub fn webhook_event_for(&self, merchant_id: Uuid, id: Uuid) -> Result<WebhookEvent, EngineError> {
        self.webhook_event(id)?
            .filter(|e| e.merchant_id == merchant_id)
            .ok_or(EngineError::EventNotFound)
    }

    /// Records an attempt durably with the event's next retry (the schedule
    /// of DESIGN.md 6 scaled by `retry_scale`), or none once delivered or the
    /// schedule is spent. A manual resend leaves the schedule as it was.
    pub async fn record_webhook_attempt(
        &self,
        event_id: Uuid,
        outcome: AttemptOutcome,
        retry_scale: f64,
    ) -> Result<WebhookAttempt, EngineError> {
        // One attempt record per event at a time, so each starts from the last.
        let _guard = self.webhook_lock(event_id).lock().await;
        let mut event = self.webhook_event(event_id)?.ok_or(EngineError::EventNotFound)?;
        let previously_due_ms = event.next_attempt_at_ms;
        let delivered = outcome.status_code.is_some_and(|code| (200..300).contains(&code));
        event.attempts += 1;
        event.delivered |= delivered;
        event.next_attempt_at_ms = if event.delivered {
            None
        } else if outcome.manual {
            previously_due_ms
        } else {
            retry_delay(event.attempts, retry_scale)
                .map(|wait| outcome.attempted_at_ms + outcome.latency_ms as i64 + wait.as_millis() as i64)
        };
        let attempt = WebhookAttempt {
            event_id,
            merchant_id: event.merchant_id,
            event: event.event.clone(),
            url: outcome.url,
            attempt: event.attempts,
            status_code: outcome.status_code,
            latency_ms: outcome.latency_ms,
            error: outcome.error,
            next_retry_at_ms: event.next_attempt_at_ms,
            delivered,
            attempted_at_ms: outcome.attempted_at_ms,
            manual: outcome.manual,
        };
        self.write(JournalRecord::WebhookAttempted {
            event: Box::new(event),
            previously_due_ms,
            attempt: Box::new(attempt.clone()),
        })
        .await?;
        Ok(attempt)
    }

    /// A page of a merchant's delivery attempts, newest first, and the total.
    pub fn list_webhook_attempts(
        &self,
        merchant_id: Uuid,
        filter: &AttemptFilter,
        page: usize,
        limit: usize,
    ) -> Result<(Vec<WebhookAttempt>, usize), EngineError> {
        let offset = page.saturating_sub(1).saturating_mul(limit);
        Ok(self.store().merchant_webhook_attempts(
            &merchant_id,
            |a| {
                filter.event_id.is_none_or(|id| a.event_id == id)
                    && filter.delivered.is_none_or(|delivered| a.delivered == delivered)
            },
            offset,
            limit,
        )?)
    }
}
