//! Paying disbursements out through their route's vendors, exactly once
//! (DESIGN.md 8). A hand-over to a vendor that pays for real is recorded
//! (`HandingTo`) before the request leaves; its answer then moves the
//! disbursement: taken (ON_PROCESS, or final at once), refused (the next
//! vendor of the route, or FAILED with the money back when none is left),
//! or unknown (ON_PROCESS with that vendor, inquired later). A handed
//! disbursement is only ever asked about (`GET /payouts/{id}`) and sent
//! again only after the vendor said it never received it; so whatever
//! crashes, a payout is paid at most once and ends in the vendor's status.
//!
//! One vendor conversation of a disbursement runs at a time (`conversations`,
//! locks by disbursement id); the merchant actor records each move.

use crate::actors::merchant::DisbursementMove;
use crate::domain::catalog::{PayoutRouting, VendorKind, SANDBOX_VENDOR};
use crate::domain::disbursement::lifecycle::{self, DisbursementEvent};
use crate::domain::{Channel, Disbursement, DisbursementStatus};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::limits;
use crate::store::record::JournalRecord;
use crate::vendor::payout::fits_vendor_text;
use crate::vendor::{
    HttpPayoutVendor, Inquiry, PayoutReport, PayoutStatus, PayoutVendor, Submission, VENDOR_FAILED_REASON,
};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// A vendor's call may overrun its own timeout by this much before it is
/// taken as unanswered (the HTTP vendor stops itself at its timeout).
const CALL_GRACE: Duration = Duration::from_secs(1);

/// One disbursement on its way through its route.
pub(crate) struct Attempt {
    /// As last recorded.
    pub disbursement: Arc<Disbursement>,
    /// The vendors left to try, the next one first.
    pub vendors: Vec<Arc<dyn PayoutVendor>>,
    /// What the vendors tried so far refused.
    pub refusals: Vec<String>,
}

/// A payout left open by a vendor's answer, to be followed up.
struct Watch {
    id: Uuid,
    vendor: Arc<dyn PayoutVendor>,
    /// The sandbox's own settlement, when it comes by itself.
    settles: Option<(Duration, DisbursementStatus)>,
    /// The answer was unknown: inquired soon, not on the schedule.
    unknown: bool,
}

/// A vendor's final or interim word on a payout, as moves.
fn report_moves(current: &Disbursement, vendor: &str, report: &PayoutReport) -> Vec<DisbursementEvent> {
    let mut events = Vec::with_capacity(2);
    let accepted = DisbursementEvent::Accepted {
        vendor: vendor.to_string(),
        reference: report.reference.clone(),
    };
    let on_process = current.status == DisbursementStatus::OnProcess;
    let news = report.reference.is_some() && report.reference != current.vendor_disbursement_id;
    if !on_process || news {
        events.push(accepted);
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

/// Calls the vendor, bounded by its timeout: a call that never completes
/// is `unanswered`.
pub(crate) async fn bounded<T>(
    vendor: &dyn PayoutVendor,
    call: impl std::future::Future<Output = T>,
    unanswered: impl FnOnce(String) -> T,
) -> T {
    match tokio::time::timeout(vendor.timeout() + CALL_GRACE, call).await {
        Ok(answer) => answer,
        Err(_) => unanswered(format!("{}: no answer within its timeout", vendor.name())),
    }
}

impl Engine {
    /// The vendors a disbursement of `organization_id` on `channel` goes
    /// to, in order: the configured route, else the built-in vendor (the
    /// sandbox's, in sandbox mode), else none.
    pub(crate) fn payout_route(&self, organization_id: Uuid, channel: Channel) -> Vec<Arc<dyn PayoutVendor>> {
        let names = self
            .store()
            .catalog()
            .payout_routes
            .get(&(organization_id, channel))
            .cloned();
        match names {
            Some(names) => names.iter().filter_map(|name| self.payout_vendor_named(name)).collect(),
            None => self.builtin_payout_vendor().into_iter().collect(),
        }
    }

    /// A payout vendor by name: the built-in one, or an HTTP vendor
    /// configured with `payouts: true`.
    pub(crate) fn payout_vendor_named(&self, name: &str) -> Option<Arc<dyn PayoutVendor>> {
        if let Some(builtin) = self.builtin_payout_vendor().filter(|v| v.name() == name) {
            return Some(builtin);
        }
        let config = self.store().catalog().payment_vendors.get(name).cloned()?;
        if !config.payouts {
            return None;
        }
        HttpPayoutVendor::new(&config, self.http_client().clone()).map(|v| Arc::new(v) as Arc<dyn PayoutVendor>)
    }

    /// Sets the vendors an organization's disbursements on one channel go
    /// to, in order (an unknown vendor, or one without `payouts`, is refused).
    pub async fn set_payout_routing(&self, routing: PayoutRouting) -> Result<PayoutRouting, EngineError> {
        {
            let catalog = self.store().catalog();
            if !catalog.organizations.contains_key(&routing.organization_id) {
                return Err(EngineError::invalid("organization_id", "no such organization"));
            }
            for name in &routing.vendors {
                let builtin = self.builtin_payout_vendor().is_some_and(|v| v.name() == name);
                let http = catalog
                    .payment_vendors
                    .get(name)
                    .is_some_and(|v| v.payouts && matches!(v.kind, VendorKind::Http { .. }));
                if !builtin && !http {
                    return Err(EngineError::invalid(
                        "vendors",
                        format!("no payout vendor named {name} (a vendor needs payouts: true)"),
                    ));
                }
            }
            let mut seen = std::collections::HashSet::new();
            if let Some(twice) = routing.vendors.iter().find(|name| !seen.insert(name.as_str())) {
                return Err(EngineError::invalid("vendors", format!("{twice} is listed twice")));
            }
        }
        self.write(JournalRecord::PayoutRoutingSaved(routing.clone())).await?;
        Ok(routing)
    }

    /// Hands disbursements of one merchant over, each to the next vendor of
    /// its attempt, and records what they answered together with
    /// `first_moves` (moves decided before any vendor was asked). Refused
    /// ones go on to their next vendor; when none is left they fail.
    pub(crate) async fn hand_over(
        &self,
        merchant_id: Uuid,
        first_moves: Vec<DisbursementMove>,
        mut attempts: Vec<Attempt>,
    ) -> Result<(), EngineError> {
        let mut moves = first_moves;
        while !attempts.is_empty() || !moves.is_empty() {
            // A request may leave only once its hand-over is durable.
            let claims: Vec<DisbursementMove> = attempts
                .iter()
                .filter(|attempt| needs_claim(attempt))
                .map(|attempt| DisbursementMove {
                    id: attempt.disbursement.id,
                    event: DisbursementEvent::HandingTo {
                        vendor: attempt.vendors[0].name().to_string(),
                    },
                })
                .collect();
            if !claims.is_empty() {
                let results = self.move_disbursements(merchant_id, claims).await?;
                let mut claimed = results.into_iter();
                let mut kept = Vec::with_capacity(attempts.len());
                for mut attempt in attempts {
                    if !needs_claim(&attempt) {
                        kept.push(attempt);
                        continue;
                    }
                    match claimed.next() {
                        Some(Ok(now)) => {
                            attempt.disbursement = now;
                            kept.push(attempt);
                        }
                        // Moved meanwhile by someone else (an operator, a callback):
                        // not this hand-over's any more.
                        Some(Err(EngineError::InvalidStatus(_) | EngineError::DisbursementNotFound)) | None => {}
                        Some(Err(error)) => return Err(error),
                    }
                }
                attempts = kept;
            }
            let answers = futures_util::future::join_all(attempts.iter().map(|attempt| {
                let vendor = attempt.vendors[0].as_ref();
                bounded(vendor, vendor.submit(&attempt.disbursement), Submission::Unknown)
            }))
            .await;
            let mut refused_onwards = Vec::new();
            let mut watch = Vec::new();
            for (mut attempt, answer) in attempts.into_iter().zip(answers) {
                let vendor = attempt.vendors[0].clone();
                let id = attempt.disbursement.id;
                match answer {
                    Submission::Taken(report) => {
                        for event in report_moves(&attempt.disbursement, vendor.name(), &report) {
                            moves.push(DisbursementMove { id, event });
                        }
                        if report.status == PayoutStatus::Accepted {
                            watch.push(Watch {
                                id,
                                vendor,
                                settles: report.settles,
                                unknown: false,
                            });
                        }
                    }
                    Submission::Unknown(reason) => {
                        tracing::warn!(%id, vendor = vendor.name(), %reason, "payout outcome unknown; it will be inquired");
                        moves.push(DisbursementMove {
                            id,
                            event: DisbursementEvent::Accepted {
                                vendor: vendor.name().to_string(),
                                reference: None,
                            },
                        });
                        watch.push(Watch {
                            id,
                            vendor,
                            settles: None,
                            unknown: true,
                        });
                    }
                    Submission::Refused(reason) => {
                        tracing::warn!(%id, vendor = vendor.name(), %reason, "payout refused");
                        attempt.refusals.push(reason);
                        attempt.vendors.remove(0);
                        if attempt.vendors.is_empty() {
                            // Each vendor's own words, in the order they were asked.
                            let reason = attempt.refusals.join("; ");
                            moves.push(DisbursementMove {
                                id,
                                event: DisbursementEvent::Refused { reason },
                            });
                        } else {
                            refused_onwards.push(attempt);
                        }
                    }
                }
            }
            let results = if moves.is_empty() {
                Vec::new()
            } else {
                self.move_disbursements(merchant_id, std::mem::take(&mut moves)).await?
            };
            self.watch_payouts(&results, watch);
            attempts = refused_onwards;
        }
        Ok(())
    }

    /// Schedules what comes after an answer: the sandbox's own settlement,
    /// or the next inquiry of a payout still open at a real vendor.
    fn watch_payouts(&self, results: &[Result<Arc<Disbursement>, EngineError>], watch: Vec<Watch>) {
        for Watch {
            id,
            vendor,
            settles,
            unknown,
        } in watch
        {
            // Only what was recorded: a move refused (settled first by a
            // callback, say) needs nothing more.
            let recorded = results
                .iter()
                .rev()
                .find_map(|r| r.as_ref().ok().filter(|d| d.id == id));
            let Some(disbursement) = recorded.filter(|d| d.status == DisbursementStatus::OnProcess) else {
                continue;
            };
            match settles {
                Some((delay, outcome)) => self.timers().settle_after(id, delay, outcome),
                None if unknown => self
                    .timers()
                    .inquire_after(id, self.scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER)),
                None if vendor.pays_out_for_real() => {
                    self.timers().inquire_after(id, self.next_inquiry_delay(disbursement))
                }
                None => {}
            }
        }
    }

    /// `delay` times the vendor retry scale.
    pub(crate) fn scaled(&self, delay: Duration) -> Duration {
        delay.mul_f64(self.vendor_retry_scale())
    }

    /// How long until the next scheduled inquiry of an ON_PROCESS payout:
    /// 1 min, 5 min, 15 min, then hourly, counted from when it became
    /// ON_PROCESS (times the vendor retry scale).
    pub(crate) fn next_inquiry_delay(&self, disbursement: &Disbursement) -> Duration {
        let since = disbursement.on_process_at_ms.unwrap_or(disbursement.updated_at_ms);
        self.next_on_schedule(since)
    }

    /// The next point of the payout schedule after now, counted from `since_ms`.
    pub(crate) fn next_on_schedule(&self, since_ms: i64) -> Duration {
        let now_ms = self.clock().now().timestamp_millis();
        let elapsed = Duration::from_millis(now_ms.saturating_sub(since_ms).max(0) as u64);
        let hour = self.scaled(Duration::from_secs(3600));
        let fixed = limits::PAYOUT_INQUIRY_SCHEDULE.iter().map(|step| self.scaled(*step));
        let next = fixed
            .chain((1u32..).map(|hours| hour * hours))
            .find(|point| *point > elapsed)
            .expect("hourly points never end");
        next - elapsed
    }

    /// Asks the vendor holding disbursement `id` what became of it, and
    /// moves it by the answer; a 404 sends it again to that vendor (then the
    /// rest of its route). Runs as one conversation of that disbursement.
    pub(crate) async fn inquire_payout(&self, id: Uuid) {
        let _conversation = self.payout_conversations().lock(&id).await;
        if let Err(error) = self.inquire_payout_now(id).await {
            tracing::error!(%error, %id, "payout inquiry failed; asked again later");
            self.timers()
                .inquire_after(id, self.scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER));
        }
    }

    async fn inquire_payout_now(&self, id: Uuid) -> Result<(), EngineError> {
        let Some(current) = self.store().disbursement(&id)? else {
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
        let Some(vendor) = self.payout_vendor_named(&name) else {
            tracing::error!(%id, vendor = %name, "the payout's vendor is no longer configured; asked again in an hour");
            self.timers().inquire_after(id, self.scaled(Duration::from_secs(3600)));
            return Ok(());
        };
        let answer = bounded(vendor.as_ref(), vendor.inquire(&current), Inquiry::Unknown).await;
        match answer {
            Inquiry::Found(report) => {
                let moves: Vec<DisbursementMove> = report_moves(&current, vendor.name(), &report)
                    .into_iter()
                    .map(|event| DisbursementMove { id, event })
                    .collect();
                let results = if moves.is_empty() {
                    vec![Ok(Arc::new(current.clone()))]
                } else {
                    self.move_disbursements(current.merchant_id, moves).await?
                };
                if report.status == PayoutStatus::Accepted {
                    let watch = Watch {
                        id,
                        vendor,
                        settles: report.settles,
                        unknown: false,
                    };
                    self.watch_payouts(&results, vec![watch]);
                }
            }
            Inquiry::NeverReceived => {
                tracing::info!(%id, vendor = vendor.name(), "the vendor never received the payout; sending it again");
                let merchant = self
                    .merchant(current.merchant_id)
                    .ok_or(EngineError::MerchantNotFound)?;
                let route = self.payout_route(merchant.organization_id, current.destination.channel());
                // This vendor again, then the ones after it in the route.
                let after: Vec<_> = route
                    .iter()
                    .skip_while(|v| v.name() != vendor.name())
                    .skip(1)
                    .cloned()
                    .collect();
                let attempt = Attempt {
                    disbursement: Arc::new(current.clone()),
                    vendors: std::iter::once(vendor).chain(after).collect(),
                    refusals: Vec::new(),
                };
                self.hand_over(current.merchant_id, Vec::new(), vec![attempt]).await?;
            }
            Inquiry::Unknown(reason) => {
                tracing::warn!(%id, vendor = vendor.name(), %reason, "payout inquiry unanswered; asked again later");
                let delay = if current.status == DisbursementStatus::OnProcess {
                    self.next_inquiry_delay(&current)
                } else {
                    self.scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER)
                };
                self.timers().inquire_after(id, delay);
            }
        }
        Ok(())
    }

    /// The sandbox vendor's own outcome, due now.
    pub(crate) async fn settle_payout(&self, id: Uuid, outcome: DisbursementStatus) {
        let event = match outcome {
            DisbursementStatus::Success => DisbursementEvent::Paid { reference: None },
            _ => DisbursementEvent::PayoutFailed {
                reference: None,
                reason: VENDOR_FAILED_REASON.into(),
            },
        };
        // Settled first by a sandbox "complete", or gone: nothing to do.
        match self.move_disbursement_by_id(id, event).await {
            Ok(_) | Err(EngineError::InvalidStatus(_)) | Err(EngineError::DisbursementNotFound) => {}
            Err(error) => {
                tracing::error!(%error, %id, "a payout outcome was not recorded; asked again later");
                self.timers()
                    .inquire_after(id, self.scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER));
            }
        }
    }

    /// A vendor's signed callback about a payout: `status` SUCCESS or
    /// FAILED. Returns the status after it; a repeat changes nothing, the
    /// opposite of a final status is `StatusConflict`.
    pub(crate) async fn payout_callback(
        &self,
        vendor: &str,
        payout_id: Uuid,
        status: &str,
        reference: Option<String>,
        failure_reason: Option<String>,
    ) -> Result<String, EngineError> {
        let wanted = match status {
            "SUCCESS" => DisbursementStatus::Success,
            "FAILED" => DisbursementStatus::Failed,
            _ => return Err(EngineError::invalid("status", "must be SUCCESS or FAILED")),
        };
        if !fits_vendor_text(&reference) {
            return Err(EngineError::invalid("reference", "must be 1 to 255 characters"));
        }
        if !fits_vendor_text(&failure_reason) {
            return Err(EngineError::invalid("failure_reason", "must be 1 to 255 characters"));
        }
        let report = PayoutReport {
            status: if wanted == DisbursementStatus::Success {
                PayoutStatus::Success
            } else {
                PayoutStatus::Failed
            },
            reference,
            failure_reason,
            settles: None,
        };
        let holder = |d: &Disbursement| d.payout_vendor.as_deref() == Some(vendor);
        let current = self
            .store()
            .disbursement(&payout_id)?
            .filter(holder)
            .ok_or(EngineError::DisbursementNotFound)?;
        if !current.status.is_terminal() {
            let moves = report_moves(&current, vendor, &report)
                .into_iter()
                .map(|event| DisbursementMove { id: payout_id, event })
                .collect();
            for result in self.move_disbursements(current.merchant_id, moves).await? {
                match result {
                    // Settled meanwhile (an inquiry, a repeat): judged below.
                    Ok(_) | Err(EngineError::InvalidStatus(_)) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        let after = self
            .store()
            .disbursement(&payout_id)?
            .ok_or(EngineError::DisbursementNotFound)?;
        if after.status.is_terminal() && after.status != wanted {
            tracing::error!(
                vendor,
                %payout_id,
                ours = after.status.as_str(),
                theirs = status,
                "a payout vendor's callback contradicts the disbursement's final status; nothing changed, an operator must reconcile"
            );
            return Err(EngineError::StatusConflict(after.status.as_str().into()));
        }
        Ok(after.status.as_str().to_string())
    }
}

/// Whether an attempt's hand-over must be recorded before its request
/// leaves: for a vendor that pays for real, or when another vendor held it.
fn needs_claim(attempt: &Attempt) -> bool {
    let vendor = &attempt.vendors[0];
    let held_by = attempt.disbursement.payout_vendor.as_deref();
    (vendor.pays_out_for_real() && held_by != Some(vendor.name())) || held_by.is_some_and(|v| v != vendor.name())
}
