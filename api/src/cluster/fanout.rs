//! Requests every shard answers: each shard is asked (here, or at its
//! owner through the signed hop) and the answers are joined into the one a
//! single node would give. While any shard has no owner the answer is 503:
//! a ledger check of some shards is not a ledger check.

use super::{forward, serve_locally, unavailable, ClusterFront};
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use paygate_engine::cluster::SHARDS;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// How the shards' answers become one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// `ledger/verify`: balanced only if every shard is; counts and
    /// account totals summed; problems named by shard.
    Ledger,
    /// `settlements/run`: every shard's settlements, in one list.
    Settlements,
}

/// Asks every shard and joins the answers. The first shard that refuses
/// (by shard number) gives the answer.
pub async fn every_shard(front: &Arc<ClusterFront>, join: Join, parts: Parts, body: Bytes) -> Response {
    let mut targets = Vec::with_capacity(usize::from(SHARDS));
    for shard in 0..SHARDS {
        match (front.directory.local(shard), front.directory.owner_url(shard)) {
            (Some(router), _) => targets.push((shard, Some(router), None)),
            (None, Some(owner)) => targets.push((shard, None, Some(owner))),
            (None, None) => return unavailable(&parts),
        }
    }
    let mut asks = tokio::task::JoinSet::new();
    for (shard, router, owner) in targets {
        let front = front.clone();
        let request_parts = copy_parts(&parts);
        let body = body.clone();
        asks.spawn(async move {
            let answer = match (router, owner) {
                (Some(router), _) => {
                    Ok(serve_locally(router, Request::from_parts(request_parts, Body::from(body))).await)
                }
                (None, Some(owner)) => forward::send(&front, &owner, shard, &request_parts, body).await,
                (None, None) => unreachable!("every shard has a router or an owner"),
            };
            (shard, answer)
        });
    }
    let mut answers = BTreeMap::new();
    while let Some(joined) = asks.join_next().await {
        let Ok((shard, answer)) = joined else {
            return unavailable(&parts);
        };
        match answer {
            Ok(answer) => {
                answers.insert(shard, answer);
            }
            Err(error) => {
                tracing::warn!(%error, shard, "a shard's owner did not answer");
                return unavailable(&parts);
            }
        }
    }
    let mut bodies = BTreeMap::new();
    for (shard, answer) in answers {
        if !answer.status().is_success() {
            return answer;
        }
        let status = answer.status();
        let Ok(bytes) = axum::body::to_bytes(answer.into_body(), usize::MAX).await else {
            return unavailable(&parts);
        };
        bodies.insert(shard, (status, bytes));
    }
    let Some((status, _)) = bodies.get(&0).cloned() else {
        return unavailable(&parts);
    };
    let joined = match join {
        Join::Ledger => join_ledgers(&bodies),
        Join::Settlements => join_lists(&bodies),
    };
    match joined {
        Some(data) => (status, axum::Json(json!({"success": true, "data": data}))).into_response(),
        None => {
            tracing::error!("a shard's answer was not the expected JSON");
            crate::error::V1Error::internal("a shard's answer could not be joined").into_response()
        }
    }
}

/// The same request again, for another shard: method, address, headers and
/// the client's address.
fn copy_parts(parts: &Parts) -> Parts {
    let mut request = Request::builder()
        .method(parts.method.clone())
        .uri(parts.uri.clone())
        .version(parts.version)
        .body(())
        .expect("a copy of a valid request is valid");
    *request.headers_mut() = parts.headers.clone();
    if let Some(peer) = parts.extensions.get::<ConnectInfo<SocketAddr>>() {
        request.extensions_mut().insert(*peer);
    }
    request.into_parts().0
}

fn data_of(bytes: &Bytes) -> Option<Value> {
    let mut body: Value = serde_json::from_slice(bytes).ok()?;
    Some(body.get_mut("data")?.take())
}

/// Every shard's ledger check as one.
fn join_ledgers(bodies: &BTreeMap<u16, (StatusCode, Bytes)>) -> Option<Value> {
    let mut balanced = true;
    let (mut entries, mut merchants) = (0u64, 0u64);
    let mut problems = Vec::new();
    let mut accounts: BTreeMap<String, i128> = BTreeMap::new();
    for (shard, (_, bytes)) in bodies {
        let data = data_of(bytes)?;
        balanced &= data.get("balanced")?.as_bool()?;
        entries += data.get("entries")?.as_u64()?;
        merchants += data.get("merchants")?.as_u64()?;
        for problem in data.get("problems")?.as_array()? {
            problems.push(Value::String(format!("shard {shard}: {}", problem.as_str()?)));
        }
        for (account, total) in data.get("accounts")?.as_object()? {
            let total: i128 = match total {
                Value::Number(number) => number.as_i64()?.into(),
                Value::String(text) => text.parse().ok()?,
                _ => return None,
            };
            *accounts.entry(account.clone()).or_default() += total;
        }
    }
    // As one node writes them: past the 64-bit range, a decimal string.
    let accounts: Map<String, Value> = accounts
        .into_iter()
        .map(|(name, total)| {
            let value = i64::try_from(total).map_or_else(|_| json!(total.to_string()), |small| json!(small));
            (name, value)
        })
        .collect();
    Some(json!({
        "balanced": balanced,
        "entries": entries,
        "merchants": merchants,
        "problems": problems,
        "accounts": accounts,
    }))
}

/// Every shard's list as one, in shard order.
fn join_lists(bodies: &BTreeMap<u16, (StatusCode, Bytes)>) -> Option<Value> {
    let mut all = Vec::new();
    for (_, bytes) in bodies.values() {
        all.extend(data_of(bytes)?.as_array()?.iter().cloned());
    }
    Some(Value::Array(all))
}

/// `/metrics` of a node: its own figures, then each of its shards' under a
/// `shard` label, each metric family written once.
pub async fn node_metrics(front: &ClusterFront, parts: &Parts) -> Response {
    let mut families = MetricFamilies::default();
    for shard in front.directory.shards() {
        let Some(router) = front.directory.local(shard) else {
            continue;
        };
        let request = Request::from_parts(copy_parts(parts), Body::empty());
        let answer = serve_locally(router, request).await;
        if let Ok(bytes) = axum::body::to_bytes(answer.into_body(), usize::MAX).await {
            families.add(&String::from_utf8_lossy(&bytes), Some(shard));
        }
    }
    let mut text = front.directory.node_metrics();
    text.push_str(&families.render());
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response()
}

/// Prometheus text from several sources, regrouped so each family's
/// `HELP`, `TYPE` and samples are together, as the format requires.
#[derive(Default)]
struct MetricFamilies {
    order: Vec<String>,
    families: BTreeMap<String, (Vec<String>, Vec<String>)>,
}

impl MetricFamilies {
    fn add(&mut self, text: &str, shard: Option<u16>) {
        let mut current = String::new();
        for line in text.lines() {
            if let Some(comment) = line.strip_prefix("# ") {
                let mut words = comment.splitn(3, ' ');
                let (Some(kind), Some(name)) = (words.next(), words.next()) else {
                    continue;
                };
                if kind != "HELP" && kind != "TYPE" {
                    continue;
                }
                current = name.to_string();
                let family = self.family(&current);
                if !family.0.iter().any(|known| known == line) {
                    family.0.push(line.to_string());
                }
            } else if !line.trim().is_empty() {
                let sample = match shard {
                    Some(shard) => with_shard_label(line, shard),
                    None => line.to_string(),
                };
                let name = line.split(['{', ' ']).next().unwrap_or_default();
                let family = if current.is_empty() || !name.starts_with(current.as_str()) {
                    name.to_string()
                } else {
                    current.clone()
                };
                self.family(&family).1.push(sample);
            }
        }
    }

    fn family(&mut self, name: &str) -> &mut (Vec<String>, Vec<String>) {
        if !self.families.contains_key(name) {
            self.order.push(name.to_string());
        }
        self.families.entry(name.to_string()).or_default()
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for name in &self.order {
            let (comments, samples) = &self.families[name];
            for line in comments.iter().chain(samples) {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

/// A sample line with `shard="N"` first among its labels.
fn with_shard_label(line: &str, shard: u16) -> String {
    match line.find(['{', ' ']) {
        Some(at) if line[at..].starts_with("{}") => format!("{}{{shard=\"{shard}\"}}{}", &line[..at], &line[at + 2..]),
        Some(at) if line[at..].starts_with('{') => format!("{}{{shard=\"{shard}\",{}", &line[..at], &line[at + 1..]),
        Some(at) => format!("{}{{shard=\"{shard}\"}}{}", &line[..at], &line[at..]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_labels_go_first_and_families_stay_together() {
        let mut families = MetricFamilies::default();
        let text = "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n# HELP b B.\n# TYPE b gauge\nb{x=\"1\"} 2\n";
        families.add(text, Some(3));
        families.add(text, Some(7));
        assert_eq!(
            families.render(),
            "# HELP a_total A.\n# TYPE a_total counter\na_total{shard=\"3\"} 1\na_total{shard=\"7\"} 1\n\
             # HELP b B.\n# TYPE b gauge\nb{shard=\"3\",x=\"1\"} 2\nb{shard=\"7\",x=\"1\"} 2\n"
        );
    }

    #[test]
    fn ledger_checks_join_into_one() {
        let shard = |balanced: bool, wallet: i64, problems: &[&str]| {
            let body = json!({"success": true, "data": {"balanced": balanced, "entries": 2, "merchants": 1,
                "problems": problems, "accounts": {"wallet": wallet, "cash": "-9223372036854775808"}}});
            (StatusCode::OK, Bytes::from(body.to_string()))
        };
        let bodies = BTreeMap::from([(0, shard(true, 5, &[])), (9, shard(false, 7, &["wallet drifted"]))]);
        assert_eq!(
            join_ledgers(&bodies).unwrap(),
            json!({"balanced": false, "entries": 4, "merchants": 2, "problems": ["shard 9: wallet drifted"],
                "accounts": {"cash": "-18446744073709551616", "wallet": 12}})
        );
    }
}
