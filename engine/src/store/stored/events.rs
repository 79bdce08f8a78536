//! Webhook events as stored. Layout 1 carried a whole copy of the resource
//! (and a refund's order); layout 2 names the resource and keeps only the
//! fields that change over its life (`domain::changes`), so an event costs
//! a few dozen bytes instead of a second copy of what it is about.
//!
//! A layout 2 event is read back by laying its changes over a stored
//! version of its resource: in the journal, the version its own record
//! carries (`JournalRecord::Evented`); in a block, the resource's newest
//! version, kept as long as any event (resources are never dropped).

use super::{unknown_layout, EventDeliveryV1, Stored};
use super::{DisbursementChangesV1, DisbursementV1, OrderChangesV1, OrderV1, RefundChangesV1, RefundV1};
use crate::domain::changes::{DisbursementChanges, OrderChanges, RefundChanges};
use crate::domain::webhook::{EventDelivery, EventResource, WebhookEvent};
use crate::domain::{Disbursement, Order, Refund};
use serde::de::SeqAccess;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_with::de::DeserializeAsWrap;
use serde_with::serde_as;
use std::sync::Arc;
use uuid::Uuid;

/// A webhook event as the store keeps it: its resource named, or whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// `webhook-id`.
    pub id: Uuid,
    /// Whose.
    pub merchant_id: Uuid,
    /// When the change happened, Unix ms.
    pub occurred_at_ms: i64,
    /// Where it goes.
    pub url: Option<String>,
    /// What it is about.
    pub subject: EventSubject,
    /// Where its delivery stood when written.
    pub delivery: EventDelivery,
}

/// What an event is about: a resource named by id, with its changing fields
/// as they were right after the change, or the resource whole (layout 1,
/// and an event whose record does not carry its resource).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventSubject {
    /// An order.
    Order(Uuid, OrderChanges),
    /// A refund.
    Refund(Uuid, RefundChanges),
    /// A disbursement.
    Disbursement(Uuid, DisbursementChanges),
    /// The resource itself.
    Whole(EventResource),
}

/// A stored version of an event's resource, to lay the event's changes over.
#[derive(Clone, Copy, Debug)]
pub enum ResourceVersion<'a> {
    /// An order.
    Order(&'a Order),
    /// A refund.
    Refund(&'a Refund),
    /// A disbursement.
    Disbursement(&'a Disbursement),
}

impl<'a> ResourceVersion<'a> {
    /// The version `resource` is.
    pub fn of(resource: &'a EventResource) -> ResourceVersion<'a> {
        match resource {
            EventResource::Order(order) => ResourceVersion::Order(order),
            EventResource::Refund(refund) => ResourceVersion::Refund(refund),
            EventResource::Disbursement(disbursement) => ResourceVersion::Disbursement(disbursement),
        }
    }
}

impl StoredEvent {
    /// `event` with its resource named (`by_reference`: a version of it is
    /// stored where the event will be read), else whole.
    pub fn of(event: &WebhookEvent, by_reference: bool) -> StoredEvent {
        let subject = match &event.resource {
            _ if !by_reference => EventSubject::Whole(event.resource.clone()),
            EventResource::Order(order) => EventSubject::Order(order.id, order.changes()),
            EventResource::Refund(refund) => EventSubject::Refund(refund.id, refund.changes()),
            EventResource::Disbursement(disbursement) => {
                EventSubject::Disbursement(disbursement.id, disbursement.changes())
            }
        };
        StoredEvent {
            id: event.id,
            merchant_id: event.merchant_id,
            occurred_at_ms: event.occurred_at_ms,
            url: event.url.clone(),
            subject,
            delivery: event.delivery(),
        }
    }

    /// The event whole, its changes laid over the one of `versions` that
    /// is its resource (none needed for a whole subject); `None` when none is.
    pub fn into_event_over(self, versions: &[ResourceVersion<'_>]) -> Option<WebhookEvent> {
        let resource = match self.subject {
            EventSubject::Whole(resource) => resource,
            subject => {
                let version = versions.iter().find(|version| subject.names(version))?;
                subject.over(*version)?
            }
        };
        let mut event = WebhookEvent {
            id: self.id,
            merchant_id: self.merchant_id,
            event: resource.event_name(),
            occurred_at_ms: self.occurred_at_ms,
            url: self.url,
            resource,
            attempts: 0,
            delivered: false,
            next_attempt_at_ms: None,
        };
        event.set_delivery(self.delivery);
        Some(event)
    }
}

impl EventSubject {
    /// The resource named, to be found by kind and id; none when whole.
    pub fn named(&self) -> Option<ResourceWanted> {
        match self {
            EventSubject::Order(id, _) => Some(ResourceWanted::Order(*id)),
            EventSubject::Refund(id, _) => Some(ResourceWanted::Refund(*id)),
            EventSubject::Disbursement(id, _) => Some(ResourceWanted::Disbursement(*id)),
            EventSubject::Whole(_) => None,
        }
    }

    /// Whether `version` is of the resource named.
    fn names(&self, version: &ResourceVersion<'_>) -> bool {
        self.named().is_some_and(|wanted| wanted.is(version))
    }

    /// The changes laid over `version`, when it is of the resource named.
    fn over(self, version: ResourceVersion<'_>) -> Option<EventResource> {
        match (self, version) {
            (EventSubject::Order(id, changes), ResourceVersion::Order(order)) if order.id == id => {
                Some(EventResource::Order(Box::new(order.with_changes(changes))))
            }
            (EventSubject::Refund(id, changes), ResourceVersion::Refund(refund)) if refund.id == id => {
                Some(EventResource::Refund(Box::new(refund.with_changes(changes))))
            }
            (EventSubject::Disbursement(id, changes), ResourceVersion::Disbursement(disbursement))
                if disbursement.id == id =>
            {
                Some(EventResource::Disbursement(Arc::new(
                    disbursement.with_changes(changes),
                )))
            }
            _ => None,
        }
    }
}

/// The resource an event names, by kind and id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceWanted {
    /// An order.
    Order(Uuid),
    /// A refund.
    Refund(Uuid),
    /// A disbursement.
    Disbursement(Uuid),
}

impl ResourceWanted {
    /// The resource `resource` is.
    pub fn of(resource: &EventResource) -> ResourceWanted {
        match resource {
            EventResource::Order(order) => ResourceWanted::Order(order.id),
            EventResource::Refund(refund) => ResourceWanted::Refund(refund.id),
            EventResource::Disbursement(disbursement) => ResourceWanted::Disbursement(disbursement.id),
        }
    }

    /// Whether `version` is of this resource.
    pub fn is(self, version: &ResourceVersion<'_>) -> bool {
        match (self, version) {
            (ResourceWanted::Order(id), ResourceVersion::Order(order)) => order.id == id,
            (ResourceWanted::Refund(id), ResourceVersion::Refund(refund)) => refund.id == id,
            (ResourceWanted::Disbursement(id), ResourceVersion::Disbursement(disbursement)) => disbursement.id == id,
            _ => false,
        }
    }
}

/// The resource of a layout 2 event kept whole.
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "EventResource")]
pub(crate) enum EventResourceV2 {
    Order(#[serde_as(as = "Box<OrderV1>")] Box<Order>),
    Refund(#[serde_as(as = "Box<RefundV1>")] Box<Refund>),
    Disbursement(#[serde_as(as = "Arc<DisbursementV1>")] Arc<Disbursement>),
}

/// Layout 2 of [`EventSubject`].
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "EventSubject")]
pub(crate) enum EventSubjectV2 {
    Order(Uuid, #[serde_as(as = "OrderChangesV1")] OrderChanges),
    Refund(Uuid, #[serde_as(as = "RefundChangesV1")] RefundChanges),
    Disbursement(Uuid, #[serde_as(as = "DisbursementChangesV1")] DisbursementChanges),
    Whole(#[serde_as(as = "EventResourceV2")] EventResource),
}

/// Layout 2 of a webhook event.
#[serde_as]
#[derive(Serialize, Deserialize)]
#[serde(remote = "StoredEvent")]
pub(crate) struct StoredEventV2 {
    id: Uuid,
    merchant_id: Uuid,
    occurred_at_ms: i64,
    url: Option<String>,
    #[serde_as(as = "EventSubjectV2")]
    subject: EventSubject,
    #[serde_as(as = "EventDeliveryV1")]
    delivery: EventDelivery,
}

/// Layout 1 of an event's resource: a refund's event carried its order too,
/// which nothing reads.
#[serde_as]
#[derive(Deserialize)]
enum EventResourceV1 {
    Order(#[serde_as(as = "Box<OrderV1>")] Box<Order>),
    Refund(
        #[serde_as(as = "Box<RefundV1>")] Box<Refund>,
        #[allow(dead_code)]
        #[serde_as(as = "Box<OrderV1>")]
        Box<Order>,
    ),
    Disbursement(#[serde_as(as = "Box<DisbursementV1>")] Box<Disbursement>),
}

/// Layout 1 of a webhook event: the resource whole, and the event's name
/// (which its resource's status gives).
#[serde_as]
#[derive(Deserialize)]
struct WebhookEventV1 {
    id: Uuid,
    merchant_id: Uuid,
    #[allow(dead_code)]
    event: String,
    occurred_at_ms: i64,
    url: Option<String>,
    resource: EventResourceV1,
    attempts: u32,
    delivered: bool,
    next_attempt_at_ms: Option<i64>,
}

impl From<WebhookEventV1> for StoredEvent {
    fn from(old: WebhookEventV1) -> StoredEvent {
        let resource = match old.resource {
            EventResourceV1::Order(order) => EventResource::Order(order),
            EventResourceV1::Refund(refund, _order) => EventResource::Refund(refund),
            EventResourceV1::Disbursement(disbursement) => EventResource::Disbursement(disbursement.into()),
        };
        StoredEvent {
            id: old.id,
            merchant_id: old.merchant_id,
            occurred_at_ms: old.occurred_at_ms,
            url: old.url,
            subject: EventSubject::Whole(resource),
            delivery: EventDelivery {
                attempts: old.attempts,
                delivered: old.delivered,
                next_attempt_at_ms: old.next_attempt_at_ms,
            },
        }
    }
}

impl Stored for StoredEvent {
    const NEWEST: u32 = 2;

    fn serialize_newest<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StoredEventV2::serialize(self, serializer)
    }

    fn next_in_layout<'de, A: SeqAccess<'de>>(layout: u32, seq: &mut A) -> Result<Option<Self>, A::Error> {
        match layout {
            1 => Ok(seq.next_element::<WebhookEventV1>()?.map(StoredEvent::from)),
            2 => Ok(seq
                .next_element::<DeserializeAsWrap<StoredEvent, StoredEventV2>>()?
                .map(DeserializeAsWrap::into_inner)),
            newer => Err(unknown_layout::<A::Error>("a webhook event", newer)),
        }
    }

    fn deserialize_untagged<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        WebhookEventV1::deserialize(deserializer).map(StoredEvent::from)
    }
}

super::layout_of! {
    EventResource => EventResourceV2,
    EventSubject => EventSubjectV2,
    StoredEvent => StoredEventV2,
}
