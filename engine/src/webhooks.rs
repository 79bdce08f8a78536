//! The engine's side of webhooks: the outbox of events (written by the
//! merchant actor with the changes that cause them), due deliveries, and
//! the durable record of every attempt with the next retry.
//! Delivery itself (HTTP, signing, bodies) is the API layer's dispatcher.

use crate::core::Core;
use crate::domain::webhook::retry_delay;
use crate::domain::{WebhookAttempt, WebhookEvent};
use crate::error::EngineError;
use crate::store::record::JournalRecord;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// `Webhooks::settle_recorded_attempts` waits no longer than this: well past
/// `limits::JOURNAL_BACKGROUND_WAIT` and a sync, short of holding a page up.
const ATTEMPTS_SETTLE_WAIT_MAX: Duration = Duration::from_millis(250);

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

/// Which attempts by how they ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Delivery {
    /// Every attempt.
    #[default]
    Any,
    /// Attempts the endpoint took.
    Delivered,
    /// Attempts that failed.
    Failed,
}

impl Delivery {
    fn admits(self, delivered: bool) -> bool {
        match self {
            Delivery::Any => true,
            Delivery::Delivered => delivered,
            Delivery::Failed => !delivered,
        }
    }
}

/// Filters of `GET /v1/webhooks/deliveries`.
#[derive(Clone, Debug, Default)]
pub struct AttemptFilter {
    /// One event's attempts; every event's when `None`.
    pub event_id: Option<Uuid>,
    /// How they ended.
    pub delivery: Delivery,
}

/// The webhooks handle: the outbox of events and delivery attempts; cheap to clone.
#[derive(Clone)]
pub struct Webhooks {
    pub(crate) core: Arc<Core>,
}

impl Webhooks {
    pub(crate) fn new(core: Arc<Core>) -> Webhooks {
        Webhooks { core }
    }
}

impl Webhooks {
    /// Events due for an attempt at or before `now_ms`, with when each was due.
    pub fn due_webhooks(
        &self,
        after: Option<(i64, Uuid)>,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, Uuid)>, EngineError> {
        Ok(self.core.store().webhooks_due(after, now_ms, limit)?)
    }

    /// An event by id.
    pub fn webhook_event(&self, id: Uuid) -> Result<Option<WebhookEvent>, EngineError> {
        Ok(self.core.store().webhook_event(&id)?)
    }

    /// A merchant's event by id.
    pub fn webhook_event_for(&self, merchant_id: Uuid, id: Uuid) -> Result<WebhookEvent, EngineError> {
        self.webhook_event(id)?
            .filter(|e| e.merchant_id == merchant_id)
            .ok_or(EngineError::EventNotFound)
    }

    /// Records an attempt at `event` durably with the event's next retry
    /// (`RETRY_SCHEDULE` scaled by `retry_scale`), or none once delivered or
    /// the schedule is spent. A manual resend leaves the schedule as it was.
    pub async fn record_webhook_attempt(
        &self,
        event: &WebhookEvent,
        outcome: AttemptOutcome,
        retry_scale: f64,
    ) -> Result<WebhookAttempt, EngineError> {
        let event_id = event.id;
        // One attempt record per event at a time, so each starts from the last.
        let _guard = self.core.webhook_lock(event_id).lock().await;
        // Of an event, only its delivery changes once it is made, and the
        // newest attempt's record holds it; before any, it stands as
        // written, as `event` has it. So the event and its resource are not
        // read again here.
        let mut delivery = match self.core.store().event_delivery(&event_id)? {
            Some(delivery) => delivery,
            None => event.delivery(),
        };
        let previously_due_ms = delivery.next_attempt_at_ms;
        let delivered = outcome.status_code.is_some_and(|code| (200..300).contains(&code));
        delivery.attempts += 1;
        delivery.delivered |= delivered;
        delivery.next_attempt_at_ms = if delivery.delivered {
            None
        } else if outcome.manual {
            previously_due_ms
        } else {
            retry_delay(delivery.attempts, retry_scale)
                .map(|wait| outcome.attempted_at_ms + outcome.latency_ms as i64 + wait.as_millis() as i64)
        };
        let attempt = WebhookAttempt {
            event_id,
            merchant_id: event.merchant_id,
            event: event.event.clone(),
            url: outcome.url,
            attempt: delivery.attempts,
            status_code: outcome.status_code,
            latency_ms: outcome.latency_ms,
            error: outcome.error,
            next_retry_at_ms: delivery.next_attempt_at_ms,
            delivered,
            attempted_at_ms: outcome.attempted_at_ms,
            manual: outcome.manual,
        };
        let record = JournalRecord::WebhookAttemptRecorded {
            event_id,
            delivery,
            previously_due_ms,
            attempt: Box::new(attempt.clone()),
        };
        // A resend's caller waits for its answer; the schedule's attempts
        // may wait a little to share a sync (reads of attempts sync first).
        if outcome.manual {
            self.core.write(record).await?;
        } else {
            self.core.write_background(record).await?;
        }
        Ok(attempt)
    }

    /// Waits, a bounded while, until the attempts already recorded are
    /// durable and readable. The schedule's attempts may wait a few
    /// milliseconds in the journal to share a sync
    /// (`Journal::queue_append`); a listing that settles first shows
    /// every attempt made before it. A journal that cannot write is not
    /// waited on: the listing then shows what is readable.
    pub async fn settle_recorded_attempts(&self) {
        let journal = self.core.journal();
        if journal.is_writable() {
            let _ = tokio::time::timeout(ATTEMPTS_SETTLE_WAIT_MAX, journal.sync_point()).await;
        }
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
        Ok(self.core.store().merchant_webhook_attempts(
            &merchant_id,
            self.core.webhook_retention_cutoff_ms().unwrap_or(i64::MIN),
            |a| filter.event_id.is_none_or(|id| a.event_id == id) && filter.delivery.admits(a.delivered),
            offset,
            limit,
        )?)
    }
}
