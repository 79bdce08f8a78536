//! Webhook reads: events by id, the deliveries due, and a merchant's
//! delivery attempts.

use crate::domain::{WebhookAttempt, WebhookEvent};
use crate::store::keys::{prefixed, read_u64, KeyPrefix};
use crate::store::record::decode_value;
use crate::store::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// A webhook event by id.
    pub fn webhook_event(&self, id: &Uuid) -> Result<Option<WebhookEvent>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::WebhookEvent, &[id.as_bytes()]))
    }

    /// Events due at or before `now_ms`, with the time each is due, oldest
    /// first: at most `limit` of them, after the (due ms, event id) key
    /// `after` when one is given (the next page of a scan). Reads no further
    /// into the index than the page needs, however long the backlog.
    pub fn webhooks_due(
        &self,
        after: Option<(i64, Uuid)>,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, Uuid)>, StoreError> {
        let start = match after {
            // The smallest key above `after`'s: the same bytes with one more.
            Some((due_ms, id)) => prefixed(
                KeyPrefix::WebhookEventDue,
                &[&(due_ms.max(0) as u64).to_be_bytes(), id.as_bytes(), &[0]],
            ),
            None => vec![KeyPrefix::WebhookEventDue.byte()],
        };
        let end = prefixed(
            KeyPrefix::WebhookEventDue,
            &[&((now_ms.max(0) as u64) + 1).to_be_bytes()],
        );
        Ok(self
            .resource_range_first(&start, &end, limit)?
            .into_iter()
            .map(|(key, _)| {
                let due = read_u64(&key[1..9]) as i64;
                (due, Uuid::from_slice(&key[9..25]).unwrap_or_default())
            })
            .collect())
    }

    /// A merchant's delivery attempts, newest first, that pass `keep`: the
    /// `offset`..`offset + limit` slice and the total.
    pub fn merchant_webhook_attempts(
        &self,
        merchant_id: &Uuid,
        keep: impl Fn(&WebhookAttempt) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<WebhookAttempt>, usize), StoreError> {
        let start = prefixed(KeyPrefix::WebhookAttempt, &[merchant_id.as_bytes()]);
        let end = prefixed(KeyPrefix::WebhookAttempt, &[merchant_id.as_bytes(), &[0xFF; 40]]);
        let mut page = Vec::new();
        let mut total = 0;
        for (_, value) in self.resource_range(&start, &end)?.into_iter().rev() {
            let attempt: WebhookAttempt = decode_value(&value)?;
            if !keep(&attempt) {
                continue;
            }
            if total >= offset && page.len() < limit {
                page.push(attempt);
            }
            total += 1;
        }
        Ok((page, total))
    }
}
