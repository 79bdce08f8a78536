//! Webhook events: every status change of an order, refund or
//! disbursement after its creation is an event `<resource>.<status>`, written
//! in the same journal record as the change, and delivered at least once.

use crate::domain::{Disbursement, Order, Refund};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// The resource as it was right after the change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventResource {
    /// An order.
    Order(Box<Order>),
    /// A refund.
    Refund(Box<Refund>),
    /// A disbursement: the version the merchant actor made, shared, so an
    /// event adds no copy of it to the two it makes in a life.
    Disbursement(Arc<Disbursement>),
}

impl EventResource {
    /// The event of its status: `<resource>.<status>`, lower case.
    pub fn event_name(&self) -> String {
        let (kind, status) = match self {
            EventResource::Order(order) => ("order", order.status.as_str()),
            EventResource::Refund(refund) => ("refund", refund.status.as_str()),
            EventResource::Disbursement(disbursement) => ("disbursement", disbursement.status.as_str()),
        };
        format!("{kind}.{}", status.to_ascii_lowercase())
    }

    /// The resource's id.
    pub fn id(&self) -> Uuid {
        match self {
            EventResource::Order(order) => order.id,
            EventResource::Refund(refund) => refund.id,
            EventResource::Disbursement(disbursement) => disbursement.id,
        }
    }
}

/// One event and the state of its delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookEvent {
    /// `webhook-id`, the same on every attempt.
    pub id: Uuid,
    /// Whose.
    pub merchant_id: Uuid,
    /// `order.paid`, `refund.failed`, `disbursement.success`, ...
    pub event: String,
    /// When the change happened, Unix ms.
    pub occurred_at_ms: i64,
    /// The resource's notify URL, else the merchant's default; none: nothing to send.
    pub url: Option<String>,
    /// The resource after the change.
    pub resource: EventResource,
    /// Attempts made so far.
    pub attempts: u32,
    /// A 2xx was received.
    pub delivered: bool,
    /// When the next attempt is due, Unix ms; none once delivered or given up.
    pub next_attempt_at_ms: Option<i64>,
}

impl WebhookEvent {
    /// A new event, due at once when it has somewhere to go.
    pub fn new(merchant_id: Uuid, occurred_at_ms: i64, url: Option<String>, resource: EventResource) -> WebhookEvent {
        let next_attempt_at_ms = url.as_ref().map(|_| occurred_at_ms);
        WebhookEvent {
            // Time-ordered, and ordered by creation within the process: two
            // events of one resource in the same millisecond still sort in
            // the order they happened (the dispatcher sends them so).
            id: Uuid::now_v7(),
            merchant_id,
            event: resource.event_name(),
            occurred_at_ms,
            url,
            resource,
            attempts: 0,
            delivered: false,
            next_attempt_at_ms,
        }
    }
}

/// Where an event's delivery stands: what an attempt changes of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDelivery {
    /// Attempts made so far.
    pub attempts: u32,
    /// A 2xx was received.
    pub delivered: bool,
    /// When the next attempt is due, Unix ms; none once delivered or given up.
    pub next_attempt_at_ms: Option<i64>,
}

/// An event's delivery as kept apart from the event: the event is written
/// once, and each attempt writes only this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDeliveryVersion {
    /// Whose delivery.
    pub event_id: Uuid,
    /// Where it stands.
    pub delivery: EventDelivery,
}

impl WebhookEvent {
    /// Where its delivery stands.
    pub fn delivery(&self) -> EventDelivery {
        EventDelivery {
            attempts: self.attempts,
            delivered: self.delivered,
            next_attempt_at_ms: self.next_attempt_at_ms,
        }
    }

    /// Sets where its delivery stands.
    pub fn set_delivery(&mut self, delivery: EventDelivery) {
        self.attempts = delivery.attempts;
        self.delivered = delivery.delivered;
        self.next_attempt_at_ms = delivery.next_attempt_at_ms;
    }
}

/// One delivery attempt, as `GET /v1/webhooks/deliveries` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookAttempt {
    /// The event.
    pub event_id: Uuid,
    /// Whose.
    pub merchant_id: Uuid,
    /// The event name.
    pub event: String,
    /// Where it was sent.
    pub url: String,
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The answer's status, if one came.
    pub status_code: Option<u16>,
    /// How long the attempt took.
    pub latency_ms: u64,
    /// Why it failed (timeout, refused, non-2xx ...).
    pub error: Option<String>,
    /// When the next attempt is due; none when delivered or given up.
    pub next_retry_at_ms: Option<i64>,
    /// A 2xx was received.
    pub delivered: bool,
    /// When the attempt started, Unix ms.
    pub attempted_at_ms: i64,
    /// A resend asked for by the merchant (outside the retry schedule).
    pub manual: bool,
}

#[cfg(test)]
impl WebhookAttempt {
    /// Attempt number `attempt` of `event`, made at `attempted_at_ms`:
    /// delivered (200) when no retry follows, else answered 500.
    pub(crate) fn of_event(
        event: &WebhookEvent,
        attempt: u32,
        attempted_at_ms: i64,
        next_retry_at_ms: Option<i64>,
    ) -> WebhookAttempt {
        let delivered = next_retry_at_ms.is_none();
        WebhookAttempt {
            event_id: event.id,
            merchant_id: event.merchant_id,
            event: event.event.clone(),
            url: event.url.clone().unwrap_or_default(),
            attempt,
            status_code: Some(if delivered { 200 } else { 500 }),
            latency_ms: 1,
            error: None,
            next_retry_at_ms,
            delivered,
            attempted_at_ms,
            manual: false,
        }
    }
}

/// The waits after attempts 1, 2, ... before the next; after
/// the last, the event is given up.
pub const RETRY_SCHEDULE: [Duration; 10] = [
    Duration::from_secs(10),
    Duration::from_secs(30),
    Duration::from_secs(120),
    Duration::from_secs(600),
    Duration::from_secs(1800),
    Duration::from_secs(3600),
    Duration::from_secs(3 * 3600),
    Duration::from_secs(6 * 3600),
    Duration::from_secs(12 * 3600),
    Duration::from_secs(24 * 3600),
];

/// The wait after failed attempt number `attempt` (1-based), scaled; none
/// once the schedule is exhausted.
pub fn retry_delay(attempt: u32, scale: f64) -> Option<Duration> {
    let base = RETRY_SCHEDULE.get(attempt.checked_sub(1)? as usize)?;
    Some(Duration::from_secs_f64(
        (base.as_secs_f64() * scale.max(0.0)).min(7.0 * 86_400.0),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_follow_the_schedule_scaled_then_stop() {
        assert_eq!(retry_delay(1, 1.0), Some(Duration::from_secs(10)));
        assert_eq!(retry_delay(10, 1.0), Some(Duration::from_secs(86_400)));
        assert_eq!(retry_delay(11, 1.0), None);
        assert_eq!(retry_delay(2, 0.001), Some(Duration::from_millis(30)));
        assert_eq!(retry_delay(0, 1.0), None);
    }
}
