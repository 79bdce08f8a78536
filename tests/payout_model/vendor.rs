//! The scripted payout vendor: its record of each payout is the model's
//! truth, and it answers each call as the case scripts it.

use super::*;

/// What the vendor holds of a payout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// Taken, not final yet; it will end as planned.
    Accepted(Final),
    Final(Final),
}

/// The vendor's record of one payout id.
#[derive(Clone, Debug, Default)]
pub(super) struct Payout {
    pub(super) held: Option<Held>,
    pub(super) submits: u32,
    /// The vendor answered 404 to an inquiry since the last submit: only
    /// now may it be submitted again.
    pub(super) cleared: bool,
    /// The last submit was refused (and nothing taken since).
    pub(super) refused: bool,
    /// The amount of each submit.
    pub(super) amounts: Vec<i64>,
}

impl Payout {
    /// The status the disbursement must end in: the vendor's own when it
    /// holds the payout, FAILED when it refused it, none while undecided.
    pub(super) fn expected(&self) -> Option<DisbursementStatus> {
        match self.held {
            Some(Held::Final(Final::Success)) => Some(DisbursementStatus::Success),
            Some(Held::Final(Final::Failed)) => Some(DisbursementStatus::Failed),
            Some(Held::Accepted(_)) => None,
            None if self.refused => Some(DisbursementStatus::Failed),
            None => None,
        }
    }
}

/// The vendor's truth and its script.
pub(super) struct Truth {
    pub(super) payouts: HashMap<Uuid, Payout>,
    pub(super) answers: VecDeque<Answer>,
    pub(super) inquiry_faults: VecDeque<InquiryFault>,
    pub(super) usual: Answer,
    /// Set: the next call crashes the engine (`Some`: a submit is taken first).
    pub(super) crash_at_next_call: Option<Option<Final>>,
    /// A call is waiting for the engine to be crashed.
    pub(super) crash_requested: bool,
    /// No more faults: every call is answered at once and truthfully.
    pub(super) honest: bool,
    /// Broken rules, in words.
    pub(super) violations: Vec<String>,
    pub(super) tally: Tally,
}

/// How a call ends.
pub(super) enum Reply<T> {
    Now(T),
    Never,
    /// Never, and the engine must be crashed before it gives up on the call.
    Crash,
}

pub(super) fn report(id: Uuid, held: Held) -> PayoutReport {
    let status = match held {
        Held::Accepted(_) => PayoutStatus::Accepted,
        Held::Final(Final::Success) => PayoutStatus::Success,
        Held::Final(Final::Failed) => PayoutStatus::Failed,
    };
    PayoutReport {
        status,
        reference: Some(format!("SCR-{}", id.simple())),
        failure_reason: (status == PayoutStatus::Failed).then(|| "account closed".into()),
        settles: None,
    }
}

impl Truth {
    pub(super) fn new(usual: Answer) -> Truth {
        Truth {
            payouts: HashMap::new(),
            answers: VecDeque::new(),
            inquiry_faults: VecDeque::new(),
            usual,
            crash_at_next_call: None,
            crash_requested: false,
            honest: false,
            violations: Vec::new(),
            tally: Tally::default(),
        }
    }

    pub(super) fn submit(&mut self, id: Uuid, amount: i64) -> Reply<Submission> {
        self.tally.submits += 1;
        let payout = self.payouts.entry(id).or_default();
        payout.amounts.push(amount);
        if payout.submits > 0 {
            if payout.cleared {
                self.tally.resubmits_after_404 += 1;
            } else {
                self.violations.push(format!(
                    "{id}: submit {} without a 404 since the last one (vendor holds {:?})",
                    payout.submits + 1,
                    payout.held
                ));
            }
        }
        payout.submits += 1;
        payout.cleared = false;
        if let Some(held) = payout.held {
            // Its idempotency key keeps the vendor from paying twice; the rule
            // was broken all the same (above).
            return Reply::Now(Submission::Taken(report(id, held)));
        }
        payout.refused = false;
        if let Some(taken) = self.crash_at_next_call.take() {
            payout.held = taken.map(Held::Accepted);
            self.crash_requested = true;
            match taken {
                Some(_) => self.tally.crashes_in_submit_taken += 1,
                None => self.tally.crashes_in_submit_untaken += 1,
            }
            return Reply::Crash;
        }
        let answer = if self.honest {
            self.usual
        } else {
            self.answers.pop_front().unwrap_or(self.usual)
        };
        let mut take = |held: Held| {
            payout.held = Some(held);
            Submission::Taken(report(id, held))
        };
        match answer {
            // An honest vendor settles what it took at once, after answering.
            Answer::Accepted(planned) if self.honest => {
                let said = take(Held::Accepted(planned));
                payout.held = Some(Held::Final(planned));
                Reply::Now(said)
            }
            Answer::Accepted(planned) => Reply::Now(take(Held::Accepted(planned))),
            Answer::Success => Reply::Now(take(Held::Final(Final::Success))),
            Answer::Failed => Reply::Now(take(Held::Final(Final::Failed))),
            Answer::Refused => {
                self.tally.refusals += 1;
                payout.refused = true;
                Reply::Now(Submission::Refused(format!("{VENDOR}: HTTP 422")))
            }
            Answer::UnknownTaken(planned) => {
                self.tally.unknowns += 1;
                payout.held = Some(Held::Accepted(planned));
                Reply::Now(Submission::Unknown(format!("{VENDOR}: HTTP 500")))
            }
            Answer::UnknownUntaken => {
                self.tally.unknowns += 1;
                Reply::Now(Submission::Unknown(format!("{VENDOR}: HTTP 503")))
            }
            Answer::HangTaken(planned) => {
                self.tally.hangs += 1;
                payout.held = Some(Held::Accepted(planned));
                Reply::Never
            }
            Answer::HangUntaken => {
                self.tally.hangs += 1;
                Reply::Never
            }
        }
    }

    pub(super) fn inquire(&mut self, id: Uuid) -> Reply<Inquiry> {
        self.tally.inquiries += 1;
        if self.crash_at_next_call.take().is_some() {
            self.crash_requested = true;
            self.tally.crashes_in_inquiry += 1;
            return Reply::Crash;
        }
        if !self.honest {
            match self.inquiry_faults.pop_front() {
                Some(InquiryFault::Unknown) => return Reply::Now(Inquiry::Unknown(format!("{VENDOR}: HTTP 502"))),
                Some(InquiryFault::Hang) => {
                    self.tally.hangs += 1;
                    return Reply::Never;
                }
                None => {}
            }
        }
        let payout = self.payouts.entry(id).or_default();
        match payout.held {
            Some(held) => Reply::Now(Inquiry::Found(report(id, held))),
            None => {
                self.tally.not_received += 1;
                payout.cleared = true;
                Reply::Now(Inquiry::NeverReceived)
            }
        }
    }

    /// Settles one of `made` that the vendor holds as ACCEPTED, as planned.
    pub(super) fn decide(&mut self, pick: usize, made: &[Made]) {
        let open: Vec<Uuid> = made
            .iter()
            .map(|m| m.id)
            .filter(|id| matches!(self.payouts.get(id).and_then(|p| p.held), Some(Held::Accepted(_))))
            .collect();
        if let Some(id) = open.get(pick % open.len().max(1)) {
            let payout = self.payouts.get_mut(id).expect("listed above");
            if let Some(Held::Accepted(planned)) = payout.held {
                payout.held = Some(Held::Final(planned));
            }
        }
    }

    /// From now on every call is answered at once and truthfully, and every
    /// payout held as ACCEPTED is settled.
    pub(super) fn become_honest(&mut self) {
        self.honest = true;
        self.answers.clear();
        self.inquiry_faults.clear();
        self.crash_at_next_call = None;
        for payout in self.payouts.values_mut() {
            if let Some(Held::Accepted(planned)) = payout.held {
                payout.held = Some(Held::Final(planned));
            }
        }
    }
}

/// The vendor the engine pays through: it keeps the truth, and answers as scripted.
pub(super) struct ScriptedVendor {
    pub(super) truth: Mutex<Truth>,
    /// Told when a call waits for the engine to be crashed.
    pub(super) crashing: tokio::sync::Notify,
}

impl ScriptedVendor {
    pub(super) fn new(usual: Answer) -> ScriptedVendor {
        ScriptedVendor {
            truth: Mutex::new(Truth::new(usual)),
            crashing: tokio::sync::Notify::new(),
        }
    }

    pub(super) fn truth(&self) -> MutexGuard<'_, Truth> {
        self.truth.lock().expect("vendor truth lock")
    }

    pub(super) fn crash_requested(&self) -> bool {
        self.truth().crash_requested
    }

    pub(super) fn reply<'a, T: Send + 'a>(&self, reply: Reply<T>) -> BoxFuture<'a, T> {
        match reply {
            Reply::Now(answer) => Box::pin(std::future::ready(answer)),
            Reply::Never => Box::pin(std::future::pending()),
            Reply::Crash => {
                self.crashing.notify_one();
                Box::pin(std::future::pending())
            }
        }
    }
}

impl PayoutVendor for ScriptedVendor {
    fn name(&self) -> &str {
        VENDOR
    }

    fn pays_out_for_real(&self) -> bool {
        true
    }

    fn timeout(&self) -> Duration {
        VENDOR_TIMEOUT
    }

    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Submission> {
        let reply = self.truth().submit(disbursement.id, disbursement.request_amount.get());
        self.reply(reply)
    }

    fn inquire<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Inquiry> {
        let reply = self.truth().inquire(disbursement.id);
        self.reply(reply)
    }

    fn check_account<'a>(&'a self, _destination: &'a Destination) -> BoxFuture<'a, AccountCheck> {
        Box::pin(std::future::ready(AccountCheck::Unknown("no accounts here".into())))
    }
}
