//! `DisbursementActor`: one disbursement's whole life after its creation,
//! handled one message at a time: the first step (review, or
//! the vendors of its route), the vendors' answers, inquiries that fall
//! due, the sandbox's own settlement, operator approval and rejection, the
//! sandbox's forced outcome, and vendors' callbacks. It is virtual: its
//! host (`host.rs`) activates it for a message and drops it when the
//! message is handled, so only disbursements with work in hand take memory.
//! Its state between messages is the stored disbursement; every move goes
//! through its merchant's actor, the only writer of money, and the
//! transitions themselves are `domain::disbursement::lifecycle`.
//!
//! Exactly once: a hand-over to a vendor that pays for real is recorded
//! (`HandingTo`) before the request leaves; its answer then moves the
//! disbursement: taken (ON_PROCESS, or final at once), refused (the next
//! vendor of the route, or FAILED with the money back when none is left),
//! or unknown (ON_PROCESS with that vendor, inquired later). A handed
//! disbursement is only ever asked about, and sent again only after the
//! vendor said it never received it; so whatever crashes, a payout is paid
//! at most once and ends in the vendor's status.

use super::context::{bounded, PayoutContext};
use super::hosting::{panic_retry_delay, Hosting};
use super::recorder::MovesResult;
use crate::actors::merchant::DisbursementMove;
use crate::domain::catalog::SANDBOX_VENDOR;
use crate::domain::disbursement::lifecycle::{self, DisbursementEvent};
use crate::domain::{Disbursement, DisbursementStatus};
use crate::error::EngineError;
use crate::limits;
use crate::timers::DisbursementDue;
use crate::vendor::payout::sandbox_reference;
use crate::vendor::{Inquiry, PayoutReport, PayoutStatus, PayoutVendor, Submission, VENDOR_FAILED_REASON};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use uuid::Uuid;

/// Where an answer to the caller of a message goes.
pub type Reply<T> = oneshot::Sender<Result<T, EngineError>>;

/// What a disbursement actor handles.
pub enum DisbursementMsg {
    /// Just created and durable (PENDING): review, or to its route's vendors.
    Start(Arc<Disbursement>),
    /// After a restart or a failed message: the next step from where it stands.
    TakeUp,
    /// The next inquiry of a payout open at a vendor is due.
    InquiryDue,
    /// The sandbox vendor's own outcome is due: SUCCESS when true, else FAILED.
    SandboxSettles { success: bool },
    /// An operator approves it (IN_REVIEW): to its route's vendors now;
    /// answered as the vendors left it.
    Approve(Reply<Disbursement>),
    /// An operator rejects it (not yet handed over): the money back.
    Reject { reason: String, reply: Reply<Disbursement> },
    /// Sandbox: the vendor's outcome (SUCCESS or FAILED) forced now.
    SandboxComplete {
        outcome: DisbursementStatus,
        reply: Reply<Disbursement>,
    },
    /// A vendor's signed callback with its final word; answered with the
    /// status after it.
    Callback {
        vendor: String,
        report: PayoutReport,
        reply: Reply<String>,
    },
}

impl DisbursementMsg {
    /// The message of a deadline fallen due.
    pub fn of_due(due: DisbursementDue) -> DisbursementMsg {
        match due {
            DisbursementDue::SandboxSettles { success } => DisbursementMsg::SandboxSettles { success },
            DisbursementDue::Inquiry => DisbursementMsg::InquiryDue,
            DisbursementDue::TakeUp => DisbursementMsg::TakeUp,
        }
    }

    /// True for the first message of a new disbursement.
    pub fn is_start(&self) -> bool {
        matches!(self, DisbursementMsg::Start(_))
    }

    /// True when a caller waits on this message's answer.
    pub fn is_waited(&self) -> bool {
        match self {
            DisbursementMsg::Start(_)
            | DisbursementMsg::TakeUp
            | DisbursementMsg::InquiryDue
            | DisbursementMsg::SandboxSettles { .. } => false,
            DisbursementMsg::Approve(_)
            | DisbursementMsg::Reject { .. }
            | DisbursementMsg::SandboxComplete { .. }
            | DisbursementMsg::Callback { .. } => true,
        }
    }
}

/// One disbursement's actor, active for one message.
pub struct DisbursementActor {
    /// Which disbursement.
    pub id: Uuid,
    /// Its merchant.
    pub merchant_id: Uuid,
    /// What it shares with its merchant's other actors.
    pub hosting: Arc<Hosting>,
    /// Whether the message handled has a caller waiting on its answer: its
    /// moves are then journaled as waited on (see `DisbursementMove`).
    pub waited: bool,
}

impl DisbursementActor {
    fn ctx(&self) -> &PayoutContext {
        &self.hosting.ctx
    }

    /// Handles one message; a step that failed on the way is taken up again
    /// shortly (`TakeUp`). Every message but the first is boxed: the future
    /// of a message is as large as its largest handler, and the first step
    /// is the one every disbursement takes.
    pub async fn handle(self, message: DisbursementMsg) {
        match message {
            DisbursementMsg::Start(disbursement) => self.first_step(disbursement).await,
            other => Box::pin(self.handle_later(other)).await,
        }
    }

    async fn first_step(&self, disbursement: Arc<Disbursement>) {
        let result = self.start(disbursement).await;
        self.retry_on_failure(result, "hand-over");
    }

    async fn handle_later(self, message: DisbursementMsg) {
        match message {
            DisbursementMsg::Start(disbursement) => self.first_step(disbursement).await,
            DisbursementMsg::TakeUp => {
                let result = self.take_up().await;
                self.retry_on_failure(result, "take-up");
            }
            DisbursementMsg::InquiryDue => {
                let result = self.inquire().await;
                self.retry_on_failure(result, "inquiry");
            }
            DisbursementMsg::SandboxSettles { success } => {
                let result = self.sandbox_settles(success).await;
                self.retry_on_failure(result, "sandbox settlement");
            }
            DisbursementMsg::Approve(reply) => {
                let result = self.approve().await;
                if matches!(
                    result,
                    Err(EngineError::Store(_) | EngineError::Timeout | EngineError::ShuttingDown)
                ) {
                    // It may be half handed over: looked at again, never left so.
                    self.take_up_later();
                }
                let _ = reply.send(result);
            }
            DisbursementMsg::Reject { reason, reply } => {
                let _ = reply.send(self.reject(reason).await);
            }
            DisbursementMsg::SandboxComplete { outcome, reply } => {
                let _ = reply.send(self.sandbox_complete(outcome).await);
            }
            DisbursementMsg::Callback { vendor, report, reply } => {
                let _ = reply.send(self.callback(&vendor, &report).await);
            }
        }
    }

    fn retry_on_failure(&self, result: Result<(), EngineError>, step: &str) {
        if let Err(error) = result {
            tracing::error!(%error, id = %self.id, step, "disbursement step failed; taken up again shortly");
            self.take_up_later();
        }
    }

    /// A `TakeUp` once whatever went wrong had time to settle.
    pub fn take_up_later(&self) {
        let delay = self.ctx().scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER);
        self.due_after(delay, DisbursementDue::TakeUp);
    }

    /// A `TakeUp` after the `panics`-th panic in a row: the usual wait,
    /// doubled for each panic before it, at most an hour, so a disbursement
    /// a vendor's bug trips on is tried again ever more rarely, not every
    /// 10 s for ever.
    pub fn take_up_after_panic(&self, panics: u32) {
        let delay = panic_retry_delay(self.ctx().scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER), panics);
        tracing::error!(id = %self.id, panics, delay_s = delay.as_secs(), "a disbursement's handling panicked; it is taken up again later");
        self.due_after(delay, DisbursementDue::TakeUp);
    }

    fn due_after(&self, delay: Duration, due: DisbursementDue) {
        self.ctx()
            .timers
            .disbursement_after(self.merchant_id, self.id, delay, due);
    }

    fn load(&self) -> Result<Option<Disbursement>, EngineError> {
        Ok(self.ctx().store.disbursement(&self.id)?)
    }

    async fn record(&self, events: Vec<DisbursementEvent>) -> MovesResult {
        let moves = events
            .into_iter()
            .map(|event| DisbursementMove {
                id: self.id,
                event,
                waited: self.waited,
            })
            .collect();
        self.hosting.recorder.record(moves).await
    }

    async fn record_one(&self, event: DisbursementEvent) -> Result<Arc<Disbursement>, EngineError> {
        self.record(vec![event])
            .await?
            .pop()
            .unwrap_or(Err(EngineError::DisbursementNotFound))
    }

    /// The first step: IN_REVIEW at or above the review threshold, else to
    /// the first vendor of its route. With no vendor on its route it stays
    /// PENDING (creation refuses new ones meanwhile).
    async fn start(&self, current: Arc<Disbursement>) -> Result<(), EngineError> {
        let Some(merchant) = self.ctx().merchant(self.merchant_id) else {
            return Ok(());
        };
        if current.request_amount.get() >= merchant.limits.review_threshold_minor {
            return match self.record_one(DisbursementEvent::HeldForReview).await {
                Ok(_) | Err(EngineError::InvalidStatus(_)) => Ok(()),
                Err(error) => Err(error),
            };
        }
        let vendors = self
            .hosting
            .route(merchant.organization_id, current.destination.channel());
        if vendors.is_empty() {
            return Ok(());
        }
        self.hand_over(current, vendors).await
    }

    /// The next step of a disbursement not yet final: one never handed over
    /// goes to its vendors; one that may be at a vendor is inquired (never
    /// sent again blindly); one IN_REVIEW waits for an operator.
    async fn take_up(&self) -> Result<(), EngineError> {
        let Some(current) = self.load()? else {
            return Ok(());
        };
        let handed = lifecycle::is_handed(&current);
        match current.status {
            DisbursementStatus::Pending if !handed => self.start(Arc::new(current)).await,
            DisbursementStatus::OnProcess => self.inquire().await,
            DisbursementStatus::Pending | DisbursementStatus::InReview if handed => self.inquire().await,
            _ => Ok(()),
        }
    }

    /// Hands the payout to `vendors` in turn until one takes it or may
    /// have; when every one refused, it fails with the money back.
    async fn hand_over(
        &self,
        mut current: Arc<Disbursement>,
        vendors: Vec<Arc<dyn PayoutVendor>>,
    ) -> Result<(), EngineError> {
        let mut refusals = Vec::new();
        for vendor in vendors {
            if needs_claim(&current, vendor.as_ref()) {
                // The request may leave only once its hand-over is durable.
                let claim = DisbursementEvent::HandingTo {
                    vendor: vendor.name().to_string(),
                };
                match self.record_one(claim).await {
                    Ok(now) => current = now,
                    // Final already (a callback of an earlier vendor, say).
                    Err(EngineError::InvalidStatus(_) | EngineError::DisbursementNotFound) => return Ok(()),
                    Err(error) => return Err(error),
                }
            }
            let answer = bounded(vendor.as_ref(), vendor.submit(&current), Submission::Unknown).await;
            match answer {
                Submission::Taken(report) => return self.take_report(&current, vendor.as_ref(), &report).await,
                Submission::Unknown(reason) => {
                    tracing::warn!(id = %self.id, vendor = vendor.name(), %reason, "payout outcome unknown; it will be inquired");
                    let accepted = DisbursementEvent::Accepted {
                        vendor: vendor.name().to_string(),
                        reference: None,
                    };
                    let results = self.record(vec![accepted]).await?;
                    self.watch(last_recorded(&results, &current), vendor.as_ref(), None, true);
                    return Ok(());
                }
                Submission::Refused(reason) => {
                    tracing::warn!(id = %self.id, vendor = vendor.name(), %reason, "payout refused");
                    refusals.push(reason);
                }
            }
        }
        // Each vendor's own words, in the order they were asked.
        let reason = refusals.join("; ");
        match self.record_one(DisbursementEvent::Refused { reason }).await {
            Ok(_) | Err(EngineError::InvalidStatus(_)) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Records what `vendor` says of the payout, and follows it up while it
    /// stays open.
    async fn take_report(
        &self,
        current: &Disbursement,
        vendor: &dyn PayoutVendor,
        report: &PayoutReport,
    ) -> Result<(), EngineError> {
        let results = self.record(report_moves(current, vendor.name(), report)).await?;
        if report.status == PayoutStatus::Accepted {
            self.watch(last_recorded(&results, current), vendor, report.settles, false);
        }
        Ok(())
    }

    /// Schedules what follows a payout left open at `vendor`: the sandbox's
    /// own settlement, or its next inquiry (soon when the answer was unknown).
    fn watch(
        &self,
        recorded: Option<&Disbursement>,
        vendor: &dyn PayoutVendor,
        settles: Option<(Duration, DisbursementStatus)>,
        unknown: bool,
    ) {
        // Only what was recorded: a move refused (final already) needs nothing more.
        let Some(disbursement) = recorded.filter(|d| d.status == DisbursementStatus::OnProcess) else {
            return;
        };
        match settles {
            Some((delay, outcome)) => {
                let success = outcome == DisbursementStatus::Success;
                self.due_after(delay, DisbursementDue::SandboxSettles { success });
            }
            None if unknown => {
                let delay = self.ctx().scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER);
                self.due_after(delay, DisbursementDue::Inquiry);
            }
            None if vendor.pays_out_for_real() => {
                self.due_after(self.ctx().next_inquiry_delay(disbursement), DisbursementDue::Inquiry)
            }
            None => {}
        }
    }

    /// Asks the vendor holding the payout what became of it, and moves it
    /// by the answer; a 404 sends it again to that vendor (then the rest of
    /// its route).
    async fn inquire(&self) -> Result<(), EngineError> {
        let Some(current) = self.load()? else {
            return Ok(());
        };
        let handed = lifecycle::is_handed(&current);
        let open = current.status == DisbursementStatus::OnProcess || (handed && !current.status.is_terminal());
        if !open {
            return Ok(());
        }
        let name = current
            .payout_vendor
            .clone()
            .unwrap_or_else(|| SANDBOX_VENDOR.to_string());
        let Some(vendor) = self.ctx().vendor_named(&name) else {
            tracing::error!(id = %self.id, vendor = %name, "the payout's vendor is no longer configured; asked again in an hour");
            self.due_after(self.ctx().scaled(Duration::from_secs(3600)), DisbursementDue::Inquiry);
            return Ok(());
        };
        match bounded(vendor.as_ref(), vendor.inquire(&current), Inquiry::Unknown).await {
            Inquiry::Found(report) => self.take_report(&current, vendor.as_ref(), &report).await?,
            Inquiry::NeverReceived => {
                tracing::info!(id = %self.id, vendor = vendor.name(), "the vendor never received the payout; sending it again");
                let merchant = self
                    .ctx()
                    .merchant(self.merchant_id)
                    .ok_or(EngineError::MerchantNotFound)?;
                let route = self
                    .ctx()
                    .route(merchant.organization_id, current.destination.channel());
                // This vendor again, then the ones after it in the route.
                let after = route.iter().skip_while(|v| v.name() != vendor.name()).skip(1).cloned();
                let vendors = std::iter::once(vendor.clone()).chain(after).collect();
                self.hand_over(Arc::new(current), vendors).await?;
            }
            Inquiry::Unknown(reason) => {
                tracing::warn!(id = %self.id, vendor = vendor.name(), %reason, "payout inquiry unanswered; asked again later");
                let delay = if current.status == DisbursementStatus::OnProcess {
                    self.ctx().next_inquiry_delay(&current)
                } else {
                    self.ctx().scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER)
                };
                self.due_after(delay, DisbursementDue::Inquiry);
            }
        }
        Ok(())
    }

    /// The sandbox vendor's own outcome, due now; settled first by a
    /// sandbox "complete", or gone: nothing to do.
    async fn sandbox_settles(&self, success: bool) -> Result<(), EngineError> {
        let event = if success {
            DisbursementEvent::Paid { reference: None }
        } else {
            DisbursementEvent::PayoutFailed {
                reference: None,
                reason: VENDOR_FAILED_REASON.into(),
            }
        };
        match self.record_one(event).await {
            Ok(_) | Err(EngineError::InvalidStatus(_) | EngineError::DisbursementNotFound) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Operator approval of a disbursement IN_REVIEW: it goes to its route's
    /// vendors now, and comes back as they left it (ON_PROCESS, or final).
    async fn approve(&self) -> Result<Disbursement, EngineError> {
        let current = self.load()?.ok_or(EngineError::DisbursementNotFound)?;
        if current.status != DisbursementStatus::InReview || lifecycle::is_handed(&current) {
            return Err(EngineError::InvalidStatus(current.status.as_str().into()));
        }
        let merchant = self
            .ctx()
            .merchant(self.merchant_id)
            .ok_or(EngineError::MerchantNotFound)?;
        // The route as it is now, not as the host last looked it up.
        let vendors = self
            .ctx()
            .route(merchant.organization_id, current.destination.channel());
        if vendors.is_empty() {
            return Err(EngineError::NoVendor);
        }
        self.hand_over(Arc::new(current), vendors).await?;
        self.load()?.ok_or(EngineError::DisbursementNotFound)
    }

    /// Operator rejection of a disbursement not yet handed to a vendor: the
    /// full amount goes back to the wallet.
    async fn reject(&self, reason: String) -> Result<Disbursement, EngineError> {
        let rejected = self.record_one(DisbursementEvent::Rejected { reason }).await?;
        Ok(Arc::unwrap_or_clone(rejected))
    }

    /// Sandbox: the vendor's outcome now. One still PENDING is handed to
    /// the vendor first, as its hand-over would have: the vendor holding it
    /// already, else the sandbox one.
    async fn sandbox_complete(&self, outcome: DisbursementStatus) -> Result<Disbursement, EngineError> {
        let current = self.load()?.ok_or(EngineError::DisbursementNotFound)?;
        if current.status == DisbursementStatus::Pending {
            let vendor = current
                .payout_vendor
                .clone()
                .unwrap_or_else(|| SANDBOX_VENDOR.to_string());
            let reference = (!lifecycle::is_handed(&current)).then(|| sandbox_reference(current.id));
            match self.record_one(DisbursementEvent::Accepted { vendor, reference }).await {
                Ok(_) | Err(EngineError::InvalidStatus(_)) => {}
                Err(error) => return Err(error),
            }
        }
        let event = match outcome {
            DisbursementStatus::Success => DisbursementEvent::Paid { reference: None },
            _ => DisbursementEvent::PayoutFailed {
                reference: None,
                reason: "failed by sandbox request".into(),
            },
        };
        Ok(Arc::unwrap_or_clone(self.record_one(event).await?))
    }

    /// A vendor's final word by callback. A repeat changes nothing; the
    /// opposite of a final status is `StatusConflict`, and changes nothing.
    async fn callback(&self, vendor: &str, report: &PayoutReport) -> Result<String, EngineError> {
        let holder = |d: &Disbursement| d.payout_vendor.as_deref() == Some(vendor);
        let current = self.load()?.filter(holder).ok_or(EngineError::DisbursementNotFound)?;
        if !current.status.is_terminal() {
            for result in self.record(report_moves(&current, vendor, report)).await? {
                match result {
                    Ok(_) | Err(EngineError::InvalidStatus(_)) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        let after = self.load()?.ok_or(EngineError::DisbursementNotFound)?;
        let wanted = if report.status == PayoutStatus::Success {
            DisbursementStatus::Success
        } else {
            DisbursementStatus::Failed
        };
        if after.status.is_terminal() && after.status != wanted {
            tracing::error!(
                vendor,
                payout_id = %self.id,
                ours = after.status.as_str(),
                theirs = wanted.as_str(),
                "a payout vendor's callback contradicts the disbursement's final status; nothing changed, an operator must reconcile"
            );
            return Err(EngineError::StatusConflict(after.status.as_str().into()));
        }
        Ok(after.status.as_str().to_string())
    }
}

/// The disbursement as its last recorded move left it; as it was when
/// there was nothing to record.
fn last_recorded<'a>(
    results: &'a [Result<Arc<Disbursement>, EngineError>],
    before: &'a Disbursement,
) -> Option<&'a Disbursement> {
    if results.is_empty() {
        return Some(before);
    }
    results.iter().rev().find_map(|r| r.as_deref().ok())
}

/// A vendor's final or interim word on a payout, as events.
pub(crate) fn report_moves(current: &Disbursement, vendor: &str, report: &PayoutReport) -> Vec<DisbursementEvent> {
    let mut events = Vec::with_capacity(2);
    let on_process = current.status == DisbursementStatus::OnProcess;
    let news = report.reference.is_some() && report.reference != current.vendor_disbursement_id;
    if !on_process || news {
        events.push(DisbursementEvent::Accepted {
            vendor: vendor.to_string(),
            reference: report.reference.clone(),
        });
    }
    match report.status {
        PayoutStatus::Accepted => {}
        PayoutStatus::Success => events.push(DisbursementEvent::Paid {
            reference: report.reference.clone(),
        }),
        PayoutStatus::Failed => events.push(DisbursementEvent::PayoutFailed {
            reference: report.reference.clone(),
            reason: report
                .failure_reason
                .clone()
                .unwrap_or_else(|| VENDOR_FAILED_REASON.into()),
        }),
    }
    events
}

/// Whether a hand-over must be recorded before its request leaves: for a
/// vendor that pays for real, or when another vendor held it.
fn needs_claim(current: &Disbursement, vendor: &dyn PayoutVendor) -> bool {
    let held_by = current.payout_vendor.as_deref();
    (vendor.pays_out_for_real() && held_by != Some(vendor.name())) || held_by.is_some_and(|v| v != vendor.name())
}
