//! The webhook dispatcher's loop: looks at the durable outbox for due
//! events and starts their deliveries, within limits that keep a slow or
//! dead endpoint from delaying anyone else while a healthy one is sent to
//! as fast as its events are made.
//!
//! - One resource's events go out one at a time, in the order they happened.
//! - Each merchant has a pace: it starts at `PACE_FLOOR` deliveries in
//!   flight, grows by one with each 2xx answered within `QUICK_ANSWER`, up to
//!   `PACE_CEILING`, and falls back to the floor on any other outcome. A dead
//!   or slow endpoint therefore never holds more than the floor.
//! - A look is started by the poll interval or, spaced by `LOOK_SPACING`, by
//!   a delivery that ended (its slot is free again); see `Look` for how far
//!   each reads. Events read by one look are kept for the next while they
//!   stay due at the same time, so a backlog is decoded once, not at every
//!   look. A look after an ended delivery reads on from the first event
//!   left waiting, not over the delivered events whose removal the outbox
//!   holds until its checkpoint, and only about as many as slots were freed.

use super::delivery::deliver;
use crate::AppState;
use paygate_engine::domain::WebhookEvent;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use uuid::Uuid;

/// How often the outbox is looked at when no delivery ends.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// The least time between looks started by ended deliveries: a burst of
/// them shares one look.
const LOOK_SPACING: Duration = Duration::from_millis(2);
/// Deliveries in flight for a merchant whose endpoint has not shown it keeps
/// up, and after any failure: all a dead endpoint ever holds.
const PACE_FLOOR: usize = 4;
/// Deliveries in flight for a merchant whose endpoint keeps answering 2xx
/// quickly. A slot is held until the attempt is durable, a few ms after the
/// answer: one busy merchant's creations, thousands a second, need hundreds.
const PACE_CEILING: usize = 256;
/// A 2xx slower than this does not raise the pace.
const QUICK_ANSWER: Duration = Duration::from_secs(1);
/// Deliveries in flight overall: no more than a page, so while a slot is
/// free one page read from the outbox's start holds an event not in flight.
const IN_FLIGHT_MAX: usize = DUE_PAGE;
/// Due events read from the outbox at a time.
const DUE_PAGE: usize = 512;
/// How far into the due events a deep look reads: past a backlog that is
/// held back (a slow merchant's), the events of others are still found.
const LOOK_DEPTH: usize = 8192;
/// Every this many polls the look is deep; the others read one page.
const DEEP_EVERY: u32 = 10;
/// How long after its due time an event may still become visible in the
/// outbox (its record's write, sync and apply). A wake-up's cursor stays this
/// far behind now: one that passed an event not yet visible would let a
/// later event of the same resource, read after it, overtake it.
const WRITE_SETTLE_MS: i64 = 1000;
/// A merchant's pace is forgotten after this long with nothing in flight.
const PACE_IDLE: Duration = Duration::from_secs(60);

/// A merchant's deliveries in flight and how many it may have.
struct Pace {
    in_flight: usize,
    limit: usize,
    last_ended: Instant,
}

/// Which events, resources and merchants have deliveries in flight.
#[derive(Default)]
struct InFlight {
    events: HashSet<Uuid>,
    resources: HashSet<Uuid>,
    merchants: HashMap<Uuid, Pace>,
    /// Deliveries ended since the last look began: how many slots it may fill.
    ended_since_look: usize,
    /// Events whose delivery ended while a look was reading: the look may
    /// have read them as still due, so it leaves them to the next look.
    ended_during_look: Option<HashSet<Uuid>>,
}

impl InFlight {
    /// Whether `event` may start now; a refusal because of its resource or
    /// merchant holds back the rest of its resource's events.
    fn may_start(&self, event: &WebhookEvent, resource: Uuid) -> bool {
        let merchant_in_flight = self.merchants.get(&event.merchant_id);
        !self.resources.contains(&resource)
            && self.may_start_later(event.id)
            && merchant_in_flight.is_none_or(|pace| pace.in_flight < pace.limit)
    }

    /// Whether `event_id` is neither in flight nor just delivered: worth
    /// keeping for the next look.
    fn may_start_later(&self, event_id: Uuid) -> bool {
        !self.events.contains(&event_id)
            && !self
                .ended_during_look
                .as_ref()
                .is_some_and(|ended| ended.contains(&event_id))
    }

    fn start(&mut self, event_id: Uuid, merchant_id: Uuid, resource: Uuid) {
        self.events.insert(event_id);
        self.resources.insert(resource);
        self.merchants
            .entry(merchant_id)
            .or_insert_with(|| Pace {
                in_flight: 0,
                limit: PACE_FLOOR,
                last_ended: Instant::now(),
            })
            .in_flight += 1;
    }

    /// A delivery ended; `kept_up`: answered 2xx within `QUICK_ANSWER`.
    fn end(&mut self, event_id: Uuid, resource: Uuid, merchant_id: Uuid, kept_up: bool) {
        self.events.remove(&event_id);
        self.ended_since_look += 1;
        if let Some(ended) = self.ended_during_look.as_mut() {
            ended.insert(event_id);
        }
        self.resources.remove(&resource);
        if let Some(pace) = self.merchants.get_mut(&merchant_id) {
            pace.in_flight -= 1;
            pace.limit = if kept_up {
                (pace.limit + 1).min(PACE_CEILING)
            } else {
                PACE_FLOOR
            };
            pace.last_ended = Instant::now();
        }
    }

    /// Forgets the pace of merchants idle for `PACE_IDLE`: memory holds
    /// only merchants with recent deliveries.
    fn forget_idle(&mut self) {
        self.merchants
            .retain(|_, pace| pace.in_flight > 0 || pace.last_ended.elapsed() < PACE_IDLE);
    }
}

/// The loop's own state between looks.
struct Dispatcher {
    state: AppState,
    in_flight: Arc<Mutex<InFlight>>,
    /// A delivery ended: a slot is free.
    ended: Arc<Notify>,
    /// Events read by earlier looks that were not started, by id, with the
    /// time they were due when read.
    known: HashMap<Uuid, (i64, WebhookEvent)>,
    /// Where a look after an ended delivery starts reading (after this due
    /// time and event id).
    wake_after: Option<(i64, Uuid)>,
}

/// Where the next wake-up reads from, after a look that left
/// `first_not_started` waiting (the smallest such key) and read every due
/// key through `read_through`, never past `settled_through` (keys an event
/// may still be written under; see `WRITE_SETTLE_MS`). Everything before the first event left
/// waiting was started, is in flight or was just delivered, so a wake-up
/// never again walks the keys delivered since the last checkpoint. An event
/// written late with an earlier due time is found by the next poll's look.
fn next_wake_after(
    first_not_started: Option<(i64, Uuid)>,
    read_through: Option<(i64, Uuid)>,
    previous: Option<(i64, Uuid)>,
    settled_through: (i64, Uuid),
) -> Option<(i64, Uuid)> {
    let next = match first_not_started {
        Some(first) => Some(just_before(first)),
        None => read_through.or(previous),
    };
    next.map(|next| next.min(settled_through))
}

/// The outbox key just before `(due_ms, id)`: reading after it reads it.
fn just_before((due_ms, id): (i64, Uuid)) -> (i64, Uuid) {
    match id.as_u128().checked_sub(1) {
        Some(previous) => (due_ms, Uuid::from_u128(previous)),
        None => (due_ms - 1, Uuid::max()),
    }
}

/// Runs the dispatcher until `stop` turns true.
pub async fn run(state: AppState, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut dispatcher = Dispatcher {
        state,
        in_flight: Arc::default(),
        ended: Arc::new(Notify::new()),
        known: HashMap::new(),
        wake_after: None,
    };
    let mut poll = tokio::time::interval(POLL_INTERVAL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut polls = 0u32;
    loop {
        let look = tokio::select! {
            _ = poll.tick() => {
                polls = polls.wrapping_add(1);
                if polls % DEEP_EVERY == 1 { Look::Deep } else { Look::Head }
            }
            _ = dispatcher.ended.notified() => Look::Wake,
            _ = stop.changed() => return,
        };
        dispatcher.look(look);
        if look == Look::Deep {
            dispatcher.in_flight.lock().expect("in-flight lock").forget_idle();
        }
        tokio::select! {
            _ = tokio::time::sleep(LOOK_SPACING) => {}
            _ = stop.changed() => return,
        }
    }
}

/// How far a look reads, and from where.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Look {
    /// From the outbox's start, `LOOK_DEPTH` deep; forgets the events it
    /// no longer saw due.
    Deep,
    /// From the outbox's start, one page: finds events written after a
    /// wake-up had read past their due time.
    Head,
    /// After an ended delivery: from `wake_after`, as many as the ended
    /// deliveries freed slots for, and some.
    Wake,
}

impl Dispatcher {
    /// Reads due events, oldest first, and starts every one the limits allow.
    fn look(&mut self, look: Look) {
        let (freed, in_flight) = {
            let mut flight = self.in_flight.lock().expect("in-flight lock");
            flight.ended_during_look = Some(HashSet::new());
            (std::mem::take(&mut flight.ended_since_look), flight.events.len())
        };
        let now_ms = self.state.engine.operations().clock().now().timestamp_millis();
        let (depth, page) = match look {
            Look::Deep => (LOOK_DEPTH, DUE_PAGE),
            Look::Head => (DUE_PAGE, DUE_PAGE),
            Look::Wake => {
                // Events in flight after the cursor are read too (and skipped).
                let page = (in_flight + 2 * freed + 16).min(DUE_PAGE);
                (page, page)
            }
        };
        let mut seen: HashMap<Uuid, (i64, WebhookEvent)> = HashMap::new();
        let mut held_back = HashSet::new();
        let mut first_not_started: Option<(i64, Uuid)> = None;
        let mut after = if look == Look::Wake { self.wake_after } else { None };
        let mut read = 0;
        let mut read_to_now = false;
        while read < depth {
            let due = match self.state.engine.webhooks().due_webhooks(after, now_ms, page) {
                Ok(due) => due,
                Err(error) => {
                    tracing::error!(%error, "reading due webhooks failed");
                    break;
                }
            };
            read += due.len();
            after = due.last().copied().or(after);
            read_to_now = due.len() < page;
            // Events in flight are not read again: their delivery decides.
            let due: Vec<(i64, Uuid)> = {
                let flight = self.in_flight.lock().expect("in-flight lock");
                due.into_iter().filter(|(_, id)| !flight.events.contains(id)).collect()
            };
            let mut events = Vec::with_capacity(due.len());
            for (due_ms, event_id) in due {
                if let Some(event) = self.due_event(due_ms, event_id) {
                    events.push((due_ms, event));
                }
            }
            // Events of one resource in the order they happened: a later
            // one waits while an earlier one is in flight or held back.
            events.sort_by_key(|(_, event)| (event.occurred_at_ms, event.id));
            let mut flight = self.in_flight.lock().expect("in-flight lock");
            for (due_ms, event) in events {
                let resource = event.resource.id();
                if flight.events.len() >= IN_FLIGHT_MAX
                    || held_back.contains(&resource)
                    || !flight.may_start(&event, resource)
                {
                    held_back.insert(resource);
                    if flight.may_start_later(event.id) {
                        let key = (due_ms, event.id);
                        first_not_started = Some(first_not_started.map_or(key, |first| first.min(key)));
                        seen.insert(event.id, (due_ms, event));
                    }
                    continue;
                }
                flight.start(event.id, event.merchant_id, resource);
                self.spawn_delivery(event, resource);
            }
            if flight.events.len() >= IN_FLIGHT_MAX || read_to_now {
                break;
            }
        }
        self.in_flight.lock().expect("in-flight lock").ended_during_look = None;
        let read_through = if read_to_now {
            Some((now_ms, Uuid::max()))
        } else {
            after
        };
        let settled_through = (now_ms - WRITE_SETTLE_MS, Uuid::max());
        self.wake_after = next_wake_after(first_not_started, read_through, self.wake_after, settled_through);
        if look == Look::Deep {
            self.known = seen;
        } else {
            self.known.extend(seen);
        }
    }

    /// The event `event_id` as it stands while due at `due_ms`: from an
    /// earlier look if it was read then at the same due time (an attempt
    /// recorded since would have moved or cleared it), else from the outbox.
    fn due_event(&mut self, due_ms: i64, event_id: Uuid) -> Option<WebhookEvent> {
        if let Some((known_due_ms, event)) = self.known.remove(&event_id) {
            if known_due_ms == due_ms {
                return Some(event);
            }
        }
        match self.state.engine.webhooks().webhook_event(event_id) {
            Ok(Some(event)) if event.next_attempt_at_ms == Some(due_ms) && !event.delivered => Some(event),
            Ok(_) => None,
            Err(error) => {
                tracing::error!(%error, "reading a webhook event failed");
                None
            }
        }
    }

    fn spawn_delivery(&self, event: WebhookEvent, resource: Uuid) {
        let (state, in_flight, ended) = (self.state.clone(), self.in_flight.clone(), self.ended.clone());
        tokio::spawn(async move {
            let (event_id, merchant_id) = (event.id, event.merchant_id);
            let kept_up = match deliver(&state, &state.webhook_client, event, false).await {
                Ok(attempt) => attempt.delivered && Duration::from_millis(attempt.latency_ms) < QUICK_ANSWER,
                Err(error) => {
                    tracing::error!(%error, %event_id, "recording a webhook attempt failed");
                    false
                }
            };
            in_flight
                .lock()
                .expect("in-flight lock")
                .end(event_id, resource, merchant_id, kept_up);
            ended.notify_one();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace_of(flight: &InFlight, merchant_id: Uuid) -> (usize, usize) {
        let pace = &flight.merchants[&merchant_id];
        (pace.in_flight, pace.limit)
    }

    #[test]
    fn a_pace_grows_with_quick_successes_to_its_ceiling_and_falls_to_the_floor_on_any_failure() {
        let mut flight = InFlight::default();
        let merchant = Uuid::new_v4();
        let resource = Uuid::new_v4();
        let deliver_once = |flight: &mut InFlight, kept_up: bool| {
            let event = Uuid::new_v4();
            flight.start(event, merchant, resource);
            assert!(pace_of(flight, merchant).0 == 1);
            flight.end(event, resource, merchant, kept_up);
        };
        deliver_once(&mut flight, true);
        assert_eq!(pace_of(&flight, merchant), (0, PACE_FLOOR + 1));
        for _ in 0..PACE_CEILING {
            deliver_once(&mut flight, true);
        }
        assert_eq!(pace_of(&flight, merchant), (0, PACE_CEILING));
        deliver_once(&mut flight, false);
        assert_eq!(pace_of(&flight, merchant), (0, PACE_FLOOR));
        assert!(flight.events.is_empty() && flight.resources.is_empty());
    }

    #[test]
    fn reading_after_the_key_just_before_one_reads_that_key() {
        assert_eq!(just_before((5, Uuid::from_u128(1))), (5, Uuid::nil()));
        assert_eq!(just_before((5, Uuid::nil())), (4, Uuid::max()));
        assert!(just_before((5, Uuid::from_u128(7))) < (5, Uuid::from_u128(7)));
    }

    #[test]
    fn a_wake_up_reads_from_the_first_event_left_waiting_else_past_all_it_read_but_not_past_what_settled() {
        let key = |due_ms: i64, id: u128| (due_ms, Uuid::from_u128(id));
        // An event left waiting: the next wake-up reads it again, first.
        let settled = key(40, u128::MAX);
        assert_eq!(
            next_wake_after(Some(key(10, 5)), Some(key(50, 1)), None, settled),
            Some(key(10, 4))
        );
        // All read were started: on from the last key read.
        assert_eq!(
            next_wake_after(None, Some(key(30, 1)), Some(key(3, 3)), settled),
            Some(key(30, 1))
        );
        // Nothing read at all: where it was.
        assert_eq!(next_wake_after(None, None, Some(key(3, 3)), settled), Some(key(3, 3)));
        // Never past what may still be written: an event due at 45 ms and
        // not yet visible is read by the next wake-up.
        assert_eq!(next_wake_after(None, Some(key(50, 1)), None, settled), Some(settled));
    }
}
