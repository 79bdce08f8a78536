//! The closing checks: every disbursement answered 201 is found again and
//! final, a sample of the orders found with the status the run left them
//! in, each wallet holds its funding minus what was paid out plus what
//! orders paid in, the ledger verifies, and every final webhook arrived.

use super::client::{in_parallel, BenchMerchant, Gateway, ORDER_NET_MINOR};
use super::load::{Created, CreatedOrder};
use super::sink::{Receipts, Sink};
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
/// Orders looked up after the run: an even sample, enough to catch a lost
/// or stale order without a GET per order of a long run.
const ORDER_SAMPLE_MAX: usize = 1_000;

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
                .disbursement(&merchants[wanted.merchant].api_key, &wanted.id.to_string())
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
                    lookups.amount_mismatches.push(wanted.id.to_string());
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
            .map(|(wanted, _)| wanted.id.to_string())
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
/// are credited back whole), plus the net of each order it was paid.
pub async fn balances_match(
    gateway: &Arc<Gateway>,
    merchants: &Arc<Vec<BenchMerchant>>,
    created: &[Created],
    lookups: &Lookups,
    orders: &[CreatedOrder],
    connections: usize,
) -> Verdict {
    let mut expected: Vec<i64> = merchants.iter().map(|m| m.funding_minor).collect();
    for (wanted, status) in created.iter().zip(&lookups.statuses) {
        let given_back = status.as_deref().is_some_and(|s| s == "FAILED" || s == "REJECTED");
        if !given_back {
            expected[wanted.merchant] -= wanted.final_amount_minor;
        }
    }
    for order in orders.iter().filter(|order| order.paid) {
        expected[order.merchant] += ORDER_NET_MINOR;
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
    let paid_in = if orders.iter().any(|order| order.paid) {
        " + orders paid in"
    } else {
        ""
    };
    let mut line = format!(
        "each balance = funding - final amounts paid{paid_in}: {} of {} merchants",
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
            match receipts.finals.get(&wanted.id.as_u128()) {
                None => absent.push(wanted.id.to_string()),
                Some(hook) if status.as_deref() != Some(hook.status) => disagreeing.push(wanted.id.to_string()),
                Some(_) => {}
            }
        }
        let received = created.len() - absent.len();
        let line = format!(
            "final webhook received for every disbursement, signature checked: {} of {}",
            thousands(received as u64),
            thousands(created.len() as u64)
        );
        let disagreeing_said = |count: usize| format!(", {count} say another status than GET");
        webhook_verdict(line, &absent, &disagreeing, disagreeing_said, receipts)
    })
}

/// The verdict of a webhook check, `line` saying what arrived: it holds
/// when no event is `absent`, none is `wrong` (`wrong_said` words their
/// count), and the sink refused no delivery; the line names examples of
/// each failure.
fn webhook_verdict(
    mut line: String,
    absent: &[String],
    wrong: &[String],
    wrong_said: impl Fn(usize) -> String,
    receipts: &Receipts,
) -> Verdict {
    if !absent.is_empty() {
        line += &format!(", {} never came{}", absent.len(), examples(absent.iter().cloned()));
    }
    if !wrong.is_empty() {
        line += &format!("{}{}", wrong_said(wrong.len()), examples(wrong.iter().cloned()));
    }
    if receipts.refused > 0 {
        line += &format!(
            "; {} deliveries refused, first: {}",
            receipts.refused,
            receipts.refusal_reasons.first().map_or("", String::as_str)
        );
    }
    Verdict::new(absent.is_empty() && wrong.is_empty() && receipts.refused == 0, line)
}

/// After a restart: every disbursement found again with the status it had.
pub fn unchanged_after_restart(created: &[Created], before: &Lookups, after: &Lookups) -> Verdict {
    let changed: Vec<String> = created
        .iter()
        .zip(before.statuses.iter().zip(&after.statuses))
        .filter(|(_, (before, after))| after.is_none() || before != after)
        .map(|(wanted, _)| wanted.id.to_string())
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

/// The statuses `GET /v1/orders/{ref_code}` answers for a sample of the
/// orders, in the sample's order (`None`: not found).
pub struct OrderLookups {
    /// Indexes into the run's order list.
    sample: Vec<usize>,
    statuses: Vec<Option<String>>,
    /// Requests that failed outright.
    errors: Vec<String>,
}

/// Up to `ORDER_SAMPLE_MAX` of `count` orders, evenly spread, first and last included.
fn order_sample(count: usize) -> Vec<usize> {
    if count <= ORDER_SAMPLE_MAX {
        return (0..count).collect();
    }
    (0..ORDER_SAMPLE_MAX)
        .map(|i| i * (count - 1) / (ORDER_SAMPLE_MAX - 1))
        .collect()
}

/// GETs a sample of the orders with their merchants' keys.
pub async fn look_up_orders(
    gateway: &Arc<Gateway>,
    merchants: &Arc<Vec<BenchMerchant>>,
    orders: &Arc<Vec<CreatedOrder>>,
    connections: usize,
) -> OrderLookups {
    let sample = Arc::new(order_sample(orders.len()));
    let (gateway, merchants, list, picked) = (gateway.clone(), merchants.clone(), orders.clone(), sample.clone());
    let answers = in_parallel(sample.len(), connections, move |index| {
        let (gateway, merchants, list, picked) = (gateway.clone(), merchants.clone(), list.clone(), picked.clone());
        async move {
            let wanted = &list[picked[index]];
            gateway
                .order(&merchants[wanted.merchant].api_key, &wanted.ref_code)
                .await
                .map(|found| found.map(|data| data["status"].as_str().unwrap_or("").to_string()))
        }
    })
    .await;
    let mut lookups = OrderLookups {
        sample: Arc::unwrap_or_clone(sample),
        statuses: Vec::with_capacity(answers.len()),
        errors: Vec::new(),
    };
    for answer in answers {
        match answer {
            Ok(status) => lookups.statuses.push(status),
            Err(error) => {
                lookups.errors.push(format!("{error:#}"));
                lookups.statuses.push(None);
            }
        }
    }
    lookups
}

/// Every sampled order found by GET, PAID if its payment was answered 200,
/// else PENDING.
pub fn orders_found(orders: &[CreatedOrder], lookups: &OrderLookups, after_restart: bool) -> Verdict {
    let mut wrong = Vec::new();
    for (&index, status) in lookups.sample.iter().zip(&lookups.statuses) {
        let order = &orders[index];
        let expected = if order.paid { "PAID" } else { "PENDING" };
        match status.as_deref() {
            Some(status) if status == expected => {}
            Some(status) => wrong.push(format!("{} {status}, expected {expected}", order.ref_code)),
            None => wrong.push(format!("{} not found", order.ref_code)),
        }
    }
    let sampled = lookups.sample.len();
    let mut line = format!(
        "every order found by GET{} with its status (PAID once paid, else PENDING): {} of {} sampled of {}",
        if after_restart { " again" } else { "" },
        thousands((sampled - wrong.len()) as u64),
        thousands(sampled as u64),
        thousands(orders.len() as u64)
    );
    if !wrong.is_empty() {
        line += &format!(", {} wrong{}", wrong.len(), examples(wrong.iter().cloned()));
    }
    if let Some(error) = lookups.errors.first() {
        line += &format!("; {} lookups failed, first: {error}", lookups.errors.len());
    }
    Verdict::new(wrong.is_empty() && lookups.errors.is_empty(), line)
}

/// Every paid order's `order.paid` webhook arrived (signature checked), no
/// pending order had one, and the sink refused no delivery.
pub fn order_webhooks_received(orders: &[CreatedOrder], sink: &Sink) -> Verdict {
    sink.with_receipts(|receipts| {
        let paid = orders.iter().filter(|order| order.paid).count();
        let absent: Vec<String> = orders
            .iter()
            .filter(|order| order.paid)
            .filter(|order| {
                receipts
                    .finals
                    .get(&order.id.as_u128())
                    .is_none_or(|hook| hook.status != "PAID")
            })
            .map(|order| order.ref_code.to_string())
            .collect();
        let unexpected: Vec<String> = orders
            .iter()
            .filter(|order| !order.paid && receipts.order_events.contains_key(&order.id.as_u128()))
            .map(|order| order.ref_code.to_string())
            .collect();
        let line = format!(
            "order.paid webhook received for every paid order, signature checked: {} of {}; none for a pending order",
            thousands((paid - absent.len()) as u64),
            thousands(paid as u64)
        );
        let unexpected_said = |count: usize| format!("; {count} pending orders had one");
        webhook_verdict(line, &absent, &unexpected, unexpected_said, receipts)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_order_sample_takes_every_order_up_to_its_size_then_spreads_from_first_to_last() {
        assert_eq!(super::order_sample(3), [0, 1, 2]);
        let sample = super::order_sample(1_000_000);
        assert_eq!(sample.len(), super::ORDER_SAMPLE_MAX);
        assert_eq!((sample[0], sample[sample.len() - 1]), (0, 999_999));
        assert!(sample.windows(2).all(|pair| pair[0] < pair[1]));
    }
}
