//! A disbursement's life as one table: from a status, an event leads to a
//! status and perhaps a money move. Every change of a
//! disbursement, whoever causes it (the hand-over, the vendor's answer, a
//! callback, an inquiry, an operator, the sandbox), is an event applied here
//! by the merchant actor, the only writer of the money.
//!
//! "Handed" means a request may have left for an external payout vendor
//! (`payout_vendor` is set before it is sent). A handed disbursement can no
//! longer be rejected or sent elsewhere on a guess: the vendor may be paying
//! it, so only the vendor's own answer (or its 404 to an inquiry) moves it.

use super::{Disbursement, DisbursementStatus};

/// Something that happens to a disbursement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DisbursementEvent {
    /// At or above the review threshold: an operator decides.
    HeldForReview,
    /// About to be sent to `vendor`. Recorded before the request leaves, so
    /// that after a crash paygate inquires instead of sending it again.
    HandingTo {
        /// The vendor's name.
        vendor: String,
    },
    /// The vendor took it (`reference` given), or its answer was unknown
    /// (`reference` none): ON_PROCESS with `vendor`. On an ON_PROCESS one it
    /// only notes the reference.
    Accepted {
        /// The vendor's name.
        vendor: String,
        /// The vendor's reference, when it answered.
        reference: Option<String>,
    },
    /// The vendor paid it.
    Paid {
        /// The vendor's reference, if it gave one now.
        reference: Option<String>,
    },
    /// The vendor took it and the transfer failed: the money goes back.
    PayoutFailed {
        /// The vendor's reference, if it gave one now.
        reference: Option<String>,
        /// Why, as the vendor said.
        reason: String,
    },
    /// Every vendor of the route refused it (4xx): nothing was paid, the
    /// money goes back.
    Refused {
        /// Why, as the vendors said.
        reason: String,
    },
    /// An operator refused it: the money goes back.
    Rejected {
        /// Why.
        reason: String,
    },
}

/// Which kind of event, for the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `HeldForReview`.
    HeldForReview,
    /// `HandingTo`.
    HandingTo,
    /// `Accepted`.
    Accepted,
    /// `Paid`.
    Paid,
    /// `PayoutFailed`.
    PayoutFailed,
    /// `Refused`.
    Refused,
    /// `Rejected`.
    Rejected,
}

impl DisbursementEvent {
    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        match self {
            DisbursementEvent::HeldForReview => EventKind::HeldForReview,
            DisbursementEvent::HandingTo { .. } => EventKind::HandingTo,
            DisbursementEvent::Accepted { .. } => EventKind::Accepted,
            DisbursementEvent::Paid { .. } => EventKind::Paid,
            DisbursementEvent::PayoutFailed { .. } => EventKind::PayoutFailed,
            DisbursementEvent::Refused { .. } => EventKind::Refused,
            DisbursementEvent::Rejected { .. } => EventKind::Rejected,
        }
    }
}

/// What the money does on a transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Money {
    /// Nothing moves.
    Stays,
    /// The full amount (request + fee) goes back to the wallet, in one entry.
    GoesBack,
}

/// Whether a row needs the disbursement not yet handed to an external vendor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handed {
    /// Only when no request may have left.
    No,
    /// Either way.
    Either,
}

/// `None` for a status the row keeps as it is.
type To = Option<DisbursementStatus>;

use DisbursementStatus::{Failed, InReview, OnProcess, Pending, Rejected, Success};
use EventKind as E;

/// Every transition there is: (from, handed, event) -> (to, money). A pair
/// not listed is refused with the current status.
pub const TRANSITIONS: &[(DisbursementStatus, Handed, EventKind, To, Money)] = &[
    (Pending, Handed::No, E::HeldForReview, Some(InReview), Money::Stays),
    (Pending, Handed::Either, E::HandingTo, None, Money::Stays),
    (InReview, Handed::Either, E::HandingTo, None, Money::Stays),
    // After the vendor said 404 to an inquiry, and then refused it anew.
    (OnProcess, Handed::Either, E::HandingTo, None, Money::Stays),
    (Pending, Handed::Either, E::Accepted, Some(OnProcess), Money::Stays),
    (InReview, Handed::Either, E::Accepted, Some(OnProcess), Money::Stays),
    (OnProcess, Handed::Either, E::Accepted, None, Money::Stays),
    (OnProcess, Handed::Either, E::Paid, Some(Success), Money::Stays),
    (
        OnProcess,
        Handed::Either,
        E::PayoutFailed,
        Some(Failed),
        Money::GoesBack,
    ),
    (Pending, Handed::Either, E::Refused, Some(Failed), Money::GoesBack),
    (InReview, Handed::Either, E::Refused, Some(Failed), Money::GoesBack),
    (OnProcess, Handed::Either, E::Refused, Some(Failed), Money::GoesBack),
    (Pending, Handed::No, E::Rejected, Some(Rejected), Money::GoesBack),
    (InReview, Handed::No, E::Rejected, Some(Rejected), Money::GoesBack),
];

/// Why an event cannot apply: the status it found (a vendor's stale answer,
/// from a vendor that no longer holds it, is refused the same way).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The status the disbursement is in.
    pub status: DisbursementStatus,
}

/// Whether `event` can give money back (read off the table): its move then
/// needs room for a reversal entry.
pub fn may_give_money_back(event: &DisbursementEvent) -> bool {
    TRANSITIONS
        .iter()
        .any(|(_, _, kind, _, money)| *kind == event.kind() && *money == Money::GoesBack)
}

/// Whether a request may have left for an external vendor.
pub fn is_handed(disbursement: &Disbursement) -> bool {
    disbursement.payout_vendor.is_some()
}

/// The row of the table for `event` on `current`, as (to, money).
pub fn transition(current: &Disbursement, event: &DisbursementEvent) -> Result<(DisbursementStatus, Money), Refusal> {
    let refused = Refusal { status: current.status };
    let handed = is_handed(current);
    let (_, _, _, to, money) = TRANSITIONS
        .iter()
        .find(|(from, needs, kind, _, _)| {
            *from == current.status && *kind == event.kind() && (*needs == Handed::Either || !handed)
        })
        .ok_or_else(|| refused.clone())?;
    // A vendor's answer counts only from the vendor that holds it.
    if let DisbursementEvent::Accepted { vendor, .. } = event {
        if current.payout_vendor.as_ref().is_some_and(|holder| holder != vendor) {
            return Err(refused);
        }
    }
    Ok((to.unwrap_or(current.status), *money))
}

/// The next version of `current` after `event` at `now_ms`, and the money
/// move it makes. The caller records the move's entry (and its sequence
/// in `reversal_seq`).
pub fn apply(current: &Disbursement, event: &DisbursementEvent, now_ms: i64) -> Result<(Disbursement, Money), Refusal> {
    let (to, money) = transition(current, event)?;
    let mut next = current.clone();
    next.status = to;
    if to != current.status {
        next.updated_at_ms = now_ms;
    }
    if to == OnProcess && current.status != OnProcess {
        next.on_process_at_ms = Some(now_ms);
    }
    match event {
        DisbursementEvent::HeldForReview => {}
        DisbursementEvent::HandingTo { vendor } => next.payout_vendor = Some(vendor.clone()),
        DisbursementEvent::Accepted { vendor, reference } => {
            next.payout_vendor = Some(vendor.clone());
            if reference.is_some() {
                next.vendor_disbursement_id = reference.clone();
            }
        }
        DisbursementEvent::Paid { reference } => {
            if reference.is_some() {
                next.vendor_disbursement_id = reference.clone();
            }
        }
        DisbursementEvent::PayoutFailed { reference, reason } => {
            if reference.is_some() {
                next.vendor_disbursement_id = reference.clone();
            }
            next.failure_reason = Some(reason.clone());
        }
        DisbursementEvent::Refused { reason } | DisbursementEvent::Rejected { reason } => {
            next.failure_reason = Some(reason.clone());
        }
    }
    Ok((next, money))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Destination, Source};
    use crate::money::MinorUnits;
    use uuid::Uuid;

    fn disbursement(status: DisbursementStatus, vendor: Option<&str>) -> Disbursement {
        Disbursement {
            id: Uuid::new_v4(),
            ref_code: "DSB-261125000000-AAAA".into(),
            merchant_id: Uuid::new_v4(),
            idempotency_key: "k".into(),
            destination: std::sync::Arc::new(Destination::Ewallet {
                provider: "OVO".into(),
                phone: "6281234567890".into(),
            }),
            request_amount: MinorUnits::new(100),
            fee: MinorUnits::new(0),
            final_amount: MinorUnits::new(100),
            vendor_disbursement_id: None,
            payout_vendor: vendor.map(str::to_string),
            on_process_at_ms: None,
            source: Source::Api,
            status,
            notify_url: None,
            beneficiary_id: None,
            failure_reason: None,
            debit_seq: 1,
            reversal_seq: None,
            wib_day: 0,
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }

    fn events() -> Vec<DisbursementEvent> {
        vec![
            DisbursementEvent::HeldForReview,
            DisbursementEvent::HandingTo { vendor: "a".into() },
            DisbursementEvent::Accepted {
                vendor: "a".into(),
                reference: Some("r".into()),
            },
            DisbursementEvent::Paid { reference: None },
            DisbursementEvent::PayoutFailed {
                reference: None,
                reason: "x".into(),
            },
            DisbursementEvent::Refused { reason: "x".into() },
            DisbursementEvent::Rejected { reason: "x".into() },
        ]
    }

    const ALL: [DisbursementStatus; 6] = [Pending, InReview, OnProcess, Success, Failed, Rejected];

    /// The whole table, spelled out pair by pair: anything not here is refused.
    fn expected(from: DisbursementStatus, handed: bool, kind: EventKind) -> Option<(DisbursementStatus, Money)> {
        use Money::*;
        match (from, handed, kind) {
            (Pending, false, E::HeldForReview) => Some((InReview, Stays)),
            (Pending | InReview | OnProcess, _, E::HandingTo) => Some((from, Stays)),
            (Pending | InReview | OnProcess, _, E::Accepted) => Some((OnProcess, Stays)),
            (OnProcess, _, E::Paid) => Some((Success, Stays)),
            (OnProcess, _, E::PayoutFailed) => Some((Failed, GoesBack)),
            (Pending | InReview | OnProcess, _, E::Refused) => Some((Failed, GoesBack)),
            (Pending | InReview, false, E::Rejected) => Some((Rejected, GoesBack)),
            _ => None,
        }
    }

    #[test]
    fn every_status_and_event_follows_the_table() {
        for from in ALL {
            for handed in [false, true] {
                for event in events() {
                    let current = disbursement(from, handed.then_some("a"));
                    let got = transition(&current, &event).ok();
                    assert_eq!(
                        got,
                        expected(from, handed, event.kind()),
                        "{from:?} handed={handed} {event:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn final_statuses_never_move_and_money_goes_back_only_into_failed_or_rejected() {
        for (from, _, _, to, money) in TRANSITIONS {
            assert!(!from.is_terminal(), "{from:?} is final");
            let to = to.unwrap_or(*from);
            assert_eq!(*money == Money::GoesBack, to.is_reversed(), "{from:?} -> {to:?}");
        }
    }

    #[test]
    fn only_failures_rejections_and_refusals_may_give_money_back() {
        let giving: Vec<EventKind> = events()
            .iter()
            .filter(|event| may_give_money_back(event))
            .map(DisbursementEvent::kind)
            .collect();
        assert_eq!(giving, vec![E::PayoutFailed, E::Refused, E::Rejected]);
    }

    #[test]
    fn a_handed_disbursement_cannot_be_rejected_or_reviewed() {
        for from in [Pending, InReview] {
            let handed = disbursement(from, Some("a"));
            let refusal = transition(&handed, &DisbursementEvent::Rejected { reason: "no".into() }).unwrap_err();
            assert_eq!(refusal.status, from);
        }
        let handed = disbursement(Pending, Some("a"));
        assert!(transition(&handed, &DisbursementEvent::HeldForReview).is_err());
    }

    #[test]
    fn only_the_holding_vendor_can_accept() {
        let held = disbursement(Pending, Some("a"));
        let other = DisbursementEvent::Accepted {
            vendor: "b".into(),
            reference: Some("r".into()),
        };
        assert_eq!(transition(&held, &other).unwrap_err().status, Pending);
        let (next, _) = apply(
            &held,
            &DisbursementEvent::Accepted {
                vendor: "a".into(),
                reference: Some("r".into()),
            },
            5,
        )
        .unwrap();
        assert_eq!(next.status, OnProcess);
        assert_eq!(next.vendor_disbursement_id.as_deref(), Some("r"));
        assert_eq!(next.on_process_at_ms, Some(5));
        assert_eq!(next.updated_at_ms, 5);
    }

    #[test]
    fn applying_records_the_vendor_reference_and_reason() {
        let current = disbursement(Pending, None);
        let (handed, _) = apply(&current, &DisbursementEvent::HandingTo { vendor: "a".into() }, 7).unwrap();
        assert_eq!((handed.status, handed.payout_vendor.as_deref()), (Pending, Some("a")));
        assert_eq!(handed.updated_at_ms, 0, "no status change, no new update time");
        let (unknown, _) = apply(
            &handed,
            &DisbursementEvent::Accepted {
                vendor: "a".into(),
                reference: None,
            },
            8,
        )
        .unwrap();
        assert_eq!(
            (unknown.status, unknown.vendor_disbursement_id.as_deref()),
            (OnProcess, None)
        );
        let (failed, money) = apply(
            &unknown,
            &DisbursementEvent::PayoutFailed {
                reference: Some("ref".into()),
                reason: "closed account".into(),
            },
            9,
        )
        .unwrap();
        assert_eq!(money, Money::GoesBack);
        assert_eq!(failed.status, Failed);
        assert_eq!(failed.vendor_disbursement_id.as_deref(), Some("ref"));
        assert_eq!(failed.failure_reason.as_deref(), Some("closed account"));
        assert_eq!(failed.on_process_at_ms, Some(8), "kept from when it became ON_PROCESS");
    }
}
