//! The closing checks: every disbursement answered 201 is found again and
//! final, each wallet holds its funding minus what was paid out, the ledger
//! verifies, and every final webhook arrived.

use super::client::{in_parallel, BenchMerchant, Gateway};
use super::load::Created;
use super::sink::Sink;
use super::thousands;
use std::collections::HashMap;
use std::sync::Arc;

/// One check's verdict and its line in the report.
pub struct Verdict {
    /// Whether it held.
    pub passed: bool,
    /// What was checked, with the figures.
    pub line: String,
}

impl Verdict {
    fn new(passed: bool, line: String) -> Verdict {
        Verdict { passed, line }
    }
}

/// Examples of a failure shown in its line.
const EXAMPLES_SHOWN: usize = 3;

/// Disbursement statuses as `GET /v1/disbursements/{id}` answers them, in
/// the order of the created list (`None`: not found).
pub struct Lookups {
    statuses: Vec<Option<String>>,
    /// Lookups whose `final_amount_minor` differs from the 201's.
    amount_mismatches: Vec<String>,
    /// Requests that failed outright.
    errors: Vec<String>,
}

/// GETs every created disbursement with its merchant's key.
pub async fn look_up(
    gateway: &Arc<Gateway>,
    merchants: &Arc<Vec<BenchMerchant>>,
    created: &Arc<Vec<Created>>,
    connections: usize,
) -> Lookups {
    let (gateway, merchants, list) = (gateway.clone(), merchants.clone(), created.clone());
    let answers = in_parallel(created.len(), connections, move |index| {
        let (gateway, merchants, list) = (gateway.clone(), merchants.clone(), list.clone());
        async move {
            let wanted = &list[index];
            gateway
                .disbursement(&merchants[wanted.merchant].api_key, &wanted.id)
                .await
                .map(|found| {
                    found.map(|data| {
                        (
                            data["status"].as_str().unwrap_or("").to_string(),
                            data["final_amount_minor"].as_i64(),
                        )
                    })
                })
        }
    })
    .await;
    let mut lookups = Lookups {
        statuses: Vec::with_capacity(answers.len()),
        amount_mismatches: Vec::new(),
        errors: Vec::new(),
    };
    for (wanted, answer) in created.iter().zip(answers) {
        match answer {
            Ok(Some((status, final_amount))) => {
                if final_amount != Some(wanted.final_amount_minor) {
                    lookups.amount_mismatches.push(wanted.id.clone());
                }
                lookups.statuses.push(Some(status));
            }
            Ok(None) => lookups.statuses.push(None),
            Err(error) => {
                lookups.errors.push(format!("{error:#}"));
                lookups.statuses.push(None);
            }
        }
    }
    lookups
}

fn examples(ids: impl Iterator<Item = String>) -> String {
    let shown: Vec<String> = ids.take(EXAMPLES_SHOWN).collect();
    if shown.is_empty() {
        String::new()
    } else {
        format!(" (e.g. {})", shown.join(", "))
    }
}

/// Every 201 found by GET, with the amount it debited.
pub fn all_found(created: &[Created], lookups: &Lookups) -> Verdict {
    let missing = || {
        created
            .iter()
            .zip(&lookups.statuses)
            .filter(|(_, status)| status.is_none())
            .map(|(wanted, _)| wanted.id.clone())
    };
    let missing_count = missing().count();
    let found = created.len() - missing_count;
    let mut line = format!(
        "every 201 found by GET: {} of {}",
        thousands(found as u64),
        thousands(created.len() as u64)
    );
    if missing_count > 0 {
        line += &format!(", {missing_count} missing{}", examples(missing()));
    }
    if let Some(error) = lookups.errors.first() {
        line += &format!("; {} lookups failed, first: {error}", lookups.errors.len());
    }
    if !lookups.amount_mismatches.is_empty() {
        line += &format!(
            "; {} with another final amount{}",
            lookups.amount_mismatches.len(),
            examples(lookups.amount_mismatches.iter().cloned())
        );
    }
    Verdict::new(
        missing_count == 0 && lookups.errors.is_empty() && lookups.amount_mismatches.is_empty(),
        line,
    )
}

/// Every disbursement final, and SUCCESS (the sandbox pays every account
/// the benchmark uses).
pub fn all_succeeded(created: &[Created], lookups: &Lookups) -> Verdict {
    let mut by_status: HashMap<&str, usize> = HashMap::new();
    for status in lookups.statuses.iter().flatten() {
        *by_status.entry(status.as_str()).or_default() += 1;
    }
    let succeeded = by_status.get("SUCCESS").copied().unwrap_or(0);
    let mut line = format!(
        "every disbursement final and SUCCESS: {} of {}",
        thousands(succeeded as u64),
        thousands(created.len() as u64)
    );
    let mut others: Vec<String> = by_status
        .iter()
        .filter(|(status, _)| **status != "SUCCESS")
        .map(|(status, count)| format!("{count} {status}"))
        .collect();
    others.sort();
    if !others.is_empty() {
        line += &format!(" (also {})", others.join(", "));
    }
    Verdict::new(succeeded == created.len(), line)
}

/// Each merchant's `GET /v1/balance` equals its funding minus the final
/// amounts of its disbursements not given back (FAILED or REJECTED ones
/// are credited back whole).
pub async fn balances_match(
    gateway: &Arc<Gateway>,
    merchants: &Arc<Vec<BenchMerchant>>,
    created: &[Created],
    lookups: &Lookups,
    connections: usize,
) -> Verdict {
    let mut expected: Vec<i64> = merchants.iter().map(|m| m.funding_minor).collect();
    for (wanted, status) in created.iter().zip(&lookups.statuses) {
        let given_back = status.as_deref().is_some_and(|s| s == "FAILED" || s == "REJECTED");
        if !given_back {
            expected[wanted.merchant] -= wanted.final_amount_minor;
        }
    }
    let (gateway, list) = (gateway.clone(), merchants.clone());
    let balances = in_parallel(merchants.len(), connections, move |index| {
        let (gateway, list) = (gateway.clone(), list.clone());
        async move { gateway.balance(&list[index].api_key).await }
    })
    .await;
    let mut wrong = Vec::new();
    for (index, (balance, expected)) in balances.into_iter().zip(&expected).enumerate() {
        match balance {
            Ok(balance) if balance == *expected => {}
            Ok(balance) => wrong.push(format!(
                "merchant {} has {balance}, expected {expected}",
                merchants[index].id
            )),
            Err(error) => wrong.push(format!("{error:#}")),
        }
    }
    let mut line = format!(
        "each balance = funding - final amounts paid: {} of {} merchants",
        thousands((merchants.len() - wrong.len()) as u64),
        thousands(merchants.len() as u64)
    );
    if !wrong.is_empty() {
        line += &format!(
            ", wrong: {}",
            wrong
                .iter()
                .take(EXAMPLES_SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Verdict::new(wrong.is_empty(), line)
}

/// `GET /admin/v1/ledger/verify` says balanced, with no problems.
pub async fn ledger_balanced(gateway: &Gateway) -> Verdict {
    match gateway.verify_ledger().await {
        Ok(report) => {
            let problems = report["problems"].as_array().map_or(0, Vec::len);
            let balanced = report["balanced"].as_bool() == Some(true) && problems == 0;
            let mut line = format!(
                "ledger verify: balanced {}, {} entries",
                report["balanced"], report["entries"]
            );
            if problems > 0 {
                line += &format!(", {problems} problems, first: {}", report["problems"][0]);
            }
            Verdict::new(balanced, line)
        }
        Err(error) => Verdict::new(false, format!("ledger verify: {error:#}")),
    }
}

/// Every disbursement's final webhook arrived, saying the status GET says,
/// and the sink refused no delivery.
pub fn webhooks_received(created: &[Created], lookups: &Lookups, sink: &Sink) -> Verdict {
    sink.with_receipts(|receipts| {
        let mut absent = Vec::new();
        let mut disagreeing = Vec::new();
        for (wanted, status) in created.iter().zip(&lookups.statuses) {
            match receipts.finals.get(&wanted.id) {
                None => absent.push(wanted.id.clone()),
                Some(hook) if status.as_deref() != Some(hook.status.as_str()) => disagreeing.push(wanted.id.clone()),
                Some(_) => {}
            }
        }
        let received = created.len() - absent.len();
        let mut line = format!(
            "final webhook received for every disbursement, signature checked: {} of {}",
            thousands(received as u64),
            thousands(created.len() as u64)
        );
        if !absent.is_empty() {
            line += &format!(", {} never came{}", absent.len(), examples(absent.iter().cloned()));
        }
        if !disagreeing.is_empty() {
            line += &format!(
                ", {} say another status than GET{}",
                disagreeing.len(),
                examples(disagreeing.iter().cloned())
            );
        }
        if receipts.refused > 0 {
            line += &format!(
                "; {} deliveries refused, first: {}",
                receipts.refused,
                receipts.refusal_reasons.first().map_or("", String::as_str)
            );
        }
        Verdict::new(
            absent.is_empty() && disagreeing.is_empty() && receipts.refused == 0,
            line,
        )
    })
}

/// After a restart: every disbursement found again with the status it had.
pub fn unchanged_after_restart(created: &[Created], before: &Lookups, after: &Lookups) -> Verdict {
    let changed: Vec<String> = created
        .iter()
        .zip(before.statuses.iter().zip(&after.statuses))
        .filter(|(_, (before, after))| after.is_none() || before != after)
        .map(|(wanted, _)| wanted.id.clone())
        .collect();
    let mut line = format!(
        "every 201 found again with its status: {} of {}",
        thousands((created.len() - changed.len()) as u64),
        thousands(created.len() as u64)
    );
    if !changed.is_empty() {
        line += &format!(
            ", {} missing or changed{}",
            changed.len(),
            examples(changed.iter().cloned())
        );
    }
    if let Some(error) = after.errors.first() {
        line += &format!("; {} lookups failed, first: {error}", after.errors.len());
    }
    Verdict::new(changed.is_empty() && after.errors.is_empty(), line)
}
