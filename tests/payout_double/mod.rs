//! A payout vendor double: an axum server on 127.0.0.1:0 inside the test
//! process that speaks paygate's payout protocol (`engine/src/vendor/payout.rs`),
//! checks every signature, answers as the test programs it and records what
//! it was asked.
#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use hmac::{Hmac, Mac};
use rand::distributions::{Distribution, WeightedIndex};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use sha2::Sha256;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// `sha256=<hex HMAC-SHA256(secret, bytes)>`, the `X-Paygate-Signature` value.
pub fn sign(secret: &str, bytes: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(bytes);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// How the double answers one `POST {url}/payouts` of a payout it has not taken.
/// "Taken" means the vendor now holds the payout and will pay or fail it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 200 `ACCEPTED`: taken, final later (by `settle` or the settler).
    Accept,
    /// 200 `SUCCESS` at once.
    Succeed,
    /// 200 `FAILED` at once, with a `failure_reason`.
    Fail,
    /// 422: refused, nothing taken.
    Refuse,
    /// 500 without taking it.
    ErrorUntaken,
    /// Taken as `ACCEPTED`, answered 500.
    ErrorTaken,
    /// Taken as `ACCEPTED`, answered 200 `ACCEPTED` only after the hang time.
    HangTaken,
    /// Answered 500 after the hang time, never taken.
    HangUntaken,
    /// Taken as `ACCEPTED`, answered 200 with a body that is not JSON.
    GarbageTaken,
}

/// A vendor's final status of a payout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Final {
    Success,
    Failed,
}

impl Final {
    /// The protocol's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Final::Success => "SUCCESS",
            Final::Failed => "FAILED",
        }
    }

    /// The other final status.
    pub fn opposite(self) -> Final {
        match self {
            Final::Success => Final::Failed,
            Final::Failed => Final::Success,
        }
    }
}

/// The vendor's status of a payout it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VendorStatus {
    Accepted,
    Final(Final),
}

impl VendorStatus {
    /// The protocol's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            VendorStatus::Accepted => "ACCEPTED",
            VendorStatus::Final(done) => done.as_str(),
        }
    }
}

/// How the double answers `POST {url}/account-inquiries`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountAnswer {
    /// 200 `{account_name}`.
    Name(String),
    /// 404: no such account.
    NotFound,
    /// 503: try again later.
    Error,
}

/// What the double knows of one `payout_id`.
#[derive(Clone, Debug, Default)]
pub struct Payout {
    /// `POST /payouts` received for it, whatever the answer.
    pub posts: u32,
    /// POSTs answered 4xx.
    pub refusals: u32,
    /// POSTs received after the double had taken it: paygate submitting a
    /// payout it may already have submitted without hearing 404. Must stay 0.
    pub posts_after_taken: u32,
    /// `GET /payouts/{id}` received for it.
    pub gets: u32,
    /// Set once taken; `None` while never taken.
    pub status: Option<VendorStatus>,
    /// Where an `ACCEPTED` one goes when it is settled without a choice.
    pub planned: Option<Final>,
    /// The vendor's reference, given when taken.
    pub reference: Option<String>,
    /// Given with `FAILED`.
    pub failure_reason: Option<String>,
    /// Every POST body, in order.
    pub bodies: Vec<Value>,
}

impl Payout {
    /// True once the double holds the payout.
    pub fn taken(&self) -> bool {
        self.status.is_some()
    }

    /// The final status paygate must end in: the vendor's own when it took
    /// the payout, `FAILED` when it only ever refused it, `None` otherwise
    /// (still open at the vendor, or never answered: not final anywhere).
    pub fn expected_final(&self) -> Option<Final> {
        match self.status {
            Some(VendorStatus::Final(done)) => Some(done),
            Some(VendorStatus::Accepted) => None,
            None if self.refusals > 0 => Some(Final::Failed),
            None => None,
        }
    }
}

/// One request as the double saw it, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A POST and how it was answered (`None`: a repeat of a taken payout).
    Post { payout_id: String, answer: Option<Answer> },
    /// A GET and the HTTP status of the answer.
    Get { payout_id: String, status: u16 },
}

impl Event {
    fn payout_id(&self) -> &str {
        match self {
            Event::Post { payout_id, .. } | Event::Get { payout_id, .. } => payout_id,
        }
    }
}

/// How answers are chosen when no scripted one is queued.
enum Mode {
    Fixed(Answer),
    Random {
        rng: Box<StdRng>,
        answers: Vec<Answer>,
        weights: WeightedIndex<u32>,
        /// Chance that a taken payout is planned to end `SUCCESS`.
        success_ratio: f64,
    },
}

struct DoubleState {
    mode: Mode,
    /// One-shot answers used before `mode`, first first.
    script: VecDeque<Answer>,
    hang: Duration,
    payouts: HashMap<String, Payout>,
    events: Vec<Event>,
    bad_signatures: Vec<String>,
    unexpected: Vec<String>,
    account_answer: AccountAnswer,
    account_inquiries: Vec<Value>,
    /// `(payout_id, status sent, HTTP status or None when unsent)` of settler callbacks.
    callbacks: Vec<(String, Final, Option<u16>)>,
    callback_target: Option<String>,
    next_reference: u64,
}

impl DoubleState {
    fn next_answer(&mut self) -> Answer {
        if let Some(answer) = self.script.pop_front() {
            return answer;
        }
        match &mut self.mode {
            Mode::Fixed(answer) => *answer,
            Mode::Random {
                rng, answers, weights, ..
            } => answers[weights.sample(rng)],
        }
    }

    fn planned_final(&mut self) -> Final {
        match &mut self.mode {
            Mode::Fixed(_) => Final::Success,
            Mode::Random { rng, success_ratio, .. } => {
                if rng.gen_bool(*success_ratio) {
                    Final::Success
                } else {
                    Final::Failed
                }
            }
        }
    }

    /// Takes `payout_id` with `status`; gives it a reference.
    fn take(&mut self, name: &str, payout_id: &str, status: VendorStatus) {
        self.next_reference += 1;
        let reference = format!("{}-{:06}", name.to_uppercase(), self.next_reference);
        let planned = self.planned_final();
        let payout = self.payouts.get_mut(payout_id).expect("recorded before taken");
        payout.status = Some(status);
        payout.reference = Some(reference);
        payout.planned = Some(planned);
        if status == VendorStatus::Final(Final::Failed) {
            payout.failure_reason = Some("ACCOUNT_CLOSED".into());
        }
    }

    fn settle(&mut self, payout_id: &str, done: Final) -> Payout {
        let payout = self
            .payouts
            .get_mut(payout_id)
            .unwrap_or_else(|| panic!("the double never saw payout {payout_id}"));
        match payout.status {
            Some(VendorStatus::Accepted) => {
                payout.status = Some(VendorStatus::Final(done));
                if done == Final::Failed {
                    payout.failure_reason = Some("BENEFICIARY_BANK_REJECTED".into());
                }
            }
            Some(VendorStatus::Final(already)) => {
                assert_eq!(already, done, "a vendor never changes a final status ({payout_id})");
            }
            None => panic!("the double never took payout {payout_id}"),
        }
        payout.clone()
    }
}

/// The answer of a payout as the protocol words it.
fn payout_answer(payout: &Payout) -> Value {
    let mut answer = json!({
        "status": payout.status.expect("taken").as_str(),
        "reference": payout.reference,
    });
    if let (Some(VendorStatus::Final(Final::Failed)), Some(reason)) = (payout.status, &payout.failure_reason) {
        answer["failure_reason"] = json!(reason);
    }
    answer
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// A running payout vendor double. Clones share one state.
#[derive(Clone)]
pub struct PayoutDouble {
    /// The vendor's name at paygate (`/callbacks/{name}`).
    pub name: String,
    /// The URL to configure at paygate: `http://127.0.0.1:<port><prefix>`.
    pub url: String,
    /// The path prefix every request must carry, e.g. `/acme`.
    pub prefix: String,
    /// The shared secret.
    pub secret: String,
    state: Arc<Mutex<DoubleState>>,
    client: reqwest::Client,
}

#[derive(Clone)]
struct Shared {
    name: String,
    prefix: String,
    secret: String,
    state: Arc<Mutex<DoubleState>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, DoubleState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a bad or missing signature over `signed` (the raw body, or a GET's path).
    fn check_signature(&self, state: &mut DoubleState, what: &str, headers: &HeaderMap, signed: &[u8]) {
        let expected = sign(&self.secret, signed);
        let given = headers.get("x-paygate-signature").and_then(|v| v.to_str().ok());
        if given != Some(expected.as_str()) {
            state.bad_signatures.push(format!(
                "{what}: got {given:?}, want {expected} over {:?}",
                String::from_utf8_lossy(signed)
            ));
        }
    }
}

/// `POST {prefix}/payouts`.
async fn submit_payout(State(shared): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let (delay, response) = {
        let mut state = shared.lock();
        shared.check_signature(&mut state, &format!("POST {}", uri.path()), &headers, &body);
        let parsed: Value = match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(error) => {
                state
                    .unexpected
                    .push(format!("POST {}: body is not JSON ({error})", uri.path()));
                return json_response(StatusCode::BAD_REQUEST, json!({ "error": "body is not JSON" }));
            }
        };
        let Some(payout_id) = parsed["payout_id"].as_str().map(str::to_string) else {
            state
                .unexpected
                .push(format!("POST {}: no payout_id in {parsed}", uri.path()));
            return json_response(StatusCode::BAD_REQUEST, json!({ "error": "payout_id missing" }));
        };
        let payout = state.payouts.entry(payout_id.clone()).or_default();
        payout.posts += 1;
        payout.bodies.push(parsed);
        if payout.taken() {
            // A real vendor deduplicates on payout_id; paygate must not rely on it.
            payout.posts_after_taken += 1;
            let answer = payout_answer(payout);
            state.events.push(Event::Post {
                payout_id,
                answer: None,
            });
            return json_response(StatusCode::OK, answer);
        }
        let answer = state.next_answer();
        state.events.push(Event::Post {
            payout_id: payout_id.clone(),
            answer: Some(answer),
        });
        let hang = state.hang;
        let name = shared.name.clone();
        let take = |state: &mut DoubleState, status: VendorStatus| {
            state.take(&name, &payout_id, status);
            payout_answer(&state.payouts[&payout_id])
        };
        match answer {
            Answer::Accept => (
                None,
                json_response(StatusCode::OK, take(&mut state, VendorStatus::Accepted)),
            ),
            Answer::Succeed => {
                let body = take(&mut state, VendorStatus::Final(Final::Success));
                (None, json_response(StatusCode::OK, body))
            }
            Answer::Fail => {
                let body = take(&mut state, VendorStatus::Final(Final::Failed));
                (None, json_response(StatusCode::OK, body))
            }
            Answer::Refuse => {
                state.payouts.get_mut(&payout_id).expect("recorded").refusals += 1;
                let body = json!({ "error": "ACCOUNT_BLOCKED", "message": "the account cannot receive transfers" });
                (None, json_response(StatusCode::UNPROCESSABLE_ENTITY, body))
            }
            Answer::ErrorUntaken => (
                None,
                json_response(StatusCode::INTERNAL_SERVER_ERROR, json!({ "error": "down" })),
            ),
            Answer::ErrorTaken => {
                take(&mut state, VendorStatus::Accepted);
                (
                    None,
                    json_response(StatusCode::BAD_GATEWAY, json!({ "error": "upstream bank timeout" })),
                )
            }
            Answer::HangTaken => {
                let body = take(&mut state, VendorStatus::Accepted);
                (Some(hang), json_response(StatusCode::OK, body))
            }
            Answer::HangUntaken => (
                Some(hang),
                json_response(StatusCode::INTERNAL_SERVER_ERROR, json!({ "error": "gave up" })),
            ),
            Answer::GarbageTaken => {
                take(&mut state, VendorStatus::Accepted);
                (None, (StatusCode::OK, "<html>502 Bad Gateway</html>").into_response())
            }
        }
    };
    // Every decision is made above, before any wait: a caller that gives up
    // (or a handler future that is dropped) changes nothing the double holds.
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    response
}

/// `GET {prefix}/payouts/{payout_id}`.
async fn inquire_payout(
    State(shared): State<Shared>,
    Path(payout_id): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let mut state = shared.lock();
    shared.check_signature(
        &mut state,
        &format!("GET {}", uri.path()),
        &headers,
        uri.path().as_bytes(),
    );
    if uri.query().is_some() {
        state.unexpected.push(format!("GET {uri}: a query string"));
    }
    let payout = state.payouts.entry(payout_id.clone()).or_default();
    payout.gets += 1;
    let (status, body) = if payout.taken() {
        (StatusCode::OK, payout_answer(payout))
    } else {
        (StatusCode::NOT_FOUND, json!({ "error": "PAYOUT_NOT_FOUND" }))
    };
    state.events.push(Event::Get {
        payout_id,
        status: status.as_u16(),
    });
    json_response(status, body)
}

/// `POST {prefix}/account-inquiries`.
async fn inquire_account(State(shared): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let mut state = shared.lock();
    shared.check_signature(&mut state, &format!("POST {}", uri.path()), &headers, &body);
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if parsed.is_null() {
        state.unexpected.push(format!("POST {}: body is not JSON", uri.path()));
    }
    state.account_inquiries.push(parsed);
    match state.account_answer.clone() {
        AccountAnswer::Name(name) => json_response(StatusCode::OK, json!({ "account_name": name })),
        AccountAnswer::NotFound => json_response(StatusCode::NOT_FOUND, json!({ "error": "ACCOUNT_NOT_FOUND" })),
        AccountAnswer::Error => json_response(StatusCode::SERVICE_UNAVAILABLE, json!({ "error": "bank offline" })),
    }
}

/// Any other request: paygate called a path outside the protocol (a lost prefix, say).
async fn unexpected_request(State(shared): State<Shared>, method: axum::http::Method, uri: Uri) -> Response {
    shared
        .lock()
        .unexpected
        .push(format!("{method} {uri}: not a protocol route"));
    json_response(StatusCode::NOT_FOUND, json!({ "error": "no such route" }))
}

impl PayoutDouble {
    /// Starts a double named `name` whose URL ends in `prefix` (e.g. `/acme`),
    /// answering `ACCEPTED` and resolving account inquiries to `BUDI SANTOSO`.
    pub async fn start(name: &str, prefix: &str) -> PayoutDouble {
        assert!(prefix.starts_with('/') && !prefix.ends_with('/'), "prefix like /acme");
        let state = Arc::new(Mutex::new(DoubleState {
            mode: Mode::Fixed(Answer::Accept),
            script: VecDeque::new(),
            hang: Duration::from_millis(1_000),
            payouts: HashMap::new(),
            events: Vec::new(),
            bad_signatures: Vec::new(),
            unexpected: Vec::new(),
            account_answer: AccountAnswer::Name("BUDI SANTOSO".into()),
            account_inquiries: Vec::new(),
            callbacks: Vec::new(),
            callback_target: None,
            next_reference: 0,
        }));
        let shared = Shared {
            name: name.to_string(),
            prefix: prefix.to_string(),
            secret: format!("{name}-shared-secret"),
            state: state.clone(),
        };
        let app = Router::new()
            .route(&format!("{prefix}/payouts"), post(submit_payout))
            .route(&format!("{prefix}/payouts/{{payout_id}}"), get(inquire_payout))
            .route(&format!("{prefix}/account-inquiries"), post(inquire_account))
            .fallback(unexpected_request)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let address = listener.local_addr().expect("local address");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("double serves") });
        PayoutDouble {
            name: shared.name,
            url: format!("http://{address}{prefix}"),
            prefix: shared.prefix,
            secret: shared.secret,
            state,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .expect("client"),
        }
    }

    fn lock(&self) -> MutexGuard<'_, DoubleState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Answers every POST of a payout it has not taken with `answer`.
    pub fn set_answer(&self, answer: Answer) {
        self.lock().mode = Mode::Fixed(answer);
    }

    /// Queues one-shot answers, used (first first) before the standing one.
    pub fn script(&self, answers: &[Answer]) {
        self.lock().script.extend(answers.iter().copied());
    }

    /// Answers at random with `weights`, from a seeded RNG; a taken payout is
    /// planned to end `SUCCESS` with chance `success_ratio`.
    pub fn set_random(&self, seed: u64, weights: &[(Answer, u32)], success_ratio: f64) {
        let answers = weights.iter().map(|(answer, _)| *answer).collect();
        let weights = WeightedIndex::new(weights.iter().map(|(_, weight)| *weight)).expect("positive weights");
        self.lock().mode = Mode::Random {
            rng: Box::new(StdRng::seed_from_u64(seed)),
            answers,
            weights,
            success_ratio,
        };
    }

    /// How long the hanging answers wait (longer than paygate's vendor timeout).
    pub fn set_hang(&self, hang: Duration) {
        self.lock().hang = hang;
    }

    /// How account inquiries are answered from now on.
    pub fn set_account_answer(&self, answer: AccountAnswer) {
        self.lock().account_answer = answer;
    }

    /// What the double knows of `payout_id` (default: never heard of).
    pub fn payout(&self, payout_id: &str) -> Payout {
        self.lock().payouts.get(payout_id).cloned().unwrap_or_default()
    }

    /// Every payout the double has heard of, by id.
    pub fn payouts(&self) -> HashMap<String, Payout> {
        self.lock().payouts.clone()
    }

    /// POSTs received for `payout_id`.
    pub fn posts(&self, payout_id: &str) -> u32 {
        self.payout(payout_id).posts
    }

    /// GETs received for `payout_id`.
    pub fn gets(&self, payout_id: &str) -> u32 {
        self.payout(payout_id).gets
    }

    /// POSTs received for any payout.
    pub fn total_posts(&self) -> u32 {
        self.lock().payouts.values().map(|p| p.posts).sum()
    }

    /// Every payout request, in arrival order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// The requests about `payout_id`, in arrival order.
    pub fn events_for(&self, payout_id: &str) -> Vec<Event> {
        self.lock()
            .events
            .iter()
            .filter(|event| event.payout_id() == payout_id)
            .cloned()
            .collect()
    }

    /// Requests whose `X-Paygate-Signature` was missing or wrong.
    pub fn bad_signatures(&self) -> Vec<String> {
        self.lock().bad_signatures.clone()
    }

    /// Requests outside the protocol (wrong path, unreadable body).
    pub fn unexpected_requests(&self) -> Vec<String> {
        self.lock().unexpected.clone()
    }

    /// Payouts POSTed again after the double took them ("accepted twice").
    pub fn accepted_twice(&self) -> Vec<String> {
        self.lock()
            .payouts
            .iter()
            .filter(|(_, payout)| payout.posts_after_taken > 0)
            .map(|(id, payout)| format!("{id}: {} POSTs after it was taken", payout.posts_after_taken))
            .collect()
    }

    /// Asserts the protocol was kept: every signature good, every request a
    /// protocol route, no payout submitted again after it was taken.
    pub fn assert_protocol_kept(&self) {
        assert_eq!(
            self.bad_signatures(),
            Vec::<String>::new(),
            "bad signatures at {}",
            self.name
        );
        assert_eq!(
            self.unexpected_requests(),
            Vec::<String>::new(),
            "unexpected requests at {}",
            self.name
        );
        assert_eq!(
            self.accepted_twice(),
            Vec::<String>::new(),
            "accepted twice at {}",
            self.name
        );
    }

    /// Account-inquiry bodies received, in order.
    pub fn account_inquiries(&self) -> Vec<Value> {
        self.lock().account_inquiries.clone()
    }

    /// Makes a taken payout final at the vendor (no callback); returns it.
    pub fn settle(&self, payout_id: &str, done: Final) -> Payout {
        self.lock().settle(payout_id, done)
    }

    /// The callback body of a payout the double holds as final.
    pub fn callback_body(&self, payout_id: &str) -> Value {
        let payout = self.payout(payout_id);
        let Some(VendorStatus::Final(done)) = payout.status else {
            panic!("payout {payout_id} is not final at {}", self.name);
        };
        let mut body = json!({
            "type": "payout",
            "payout_id": payout_id,
            "status": done.as_str(),
            "reference": payout.reference,
        });
        if let Some(reason) = payout.failure_reason {
            body["failure_reason"] = json!(reason);
        }
        body
    }

    /// POSTs `body` to `{paygate}/callbacks/{name}` signed with the secret;
    /// returns the HTTP status and JSON body (None: not delivered).
    pub async fn send_callback(&self, paygate: &str, body: &Value) -> Option<(u16, Value)> {
        let bytes = body.to_string();
        let response = self
            .client
            .post(format!("{paygate}/callbacks/{}", self.name))
            .header("content-type", "application/json")
            .header("X-Paygate-Signature", sign(&self.secret, bytes.as_bytes()))
            .body(bytes)
            .send()
            .await
            .ok()?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.ok()?;
        Some((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    }

    /// Where the settler sends its callbacks (None: it sends none).
    pub fn set_callback_target(&self, paygate: Option<String>) {
        self.lock().callback_target = paygate;
    }

    /// Callbacks the settler sent: `(payout_id, status, HTTP status)`.
    pub fn settler_callbacks(&self) -> Vec<(String, Final, Option<u16>)> {
        self.lock().callbacks.clone()
    }

    /// Settles, every `interval`, each `ACCEPTED` payout with chance `share`
    /// to its planned final status, and calls back to the callback target.
    pub fn spawn_settler(&self, seed: u64, interval: Duration, share: f64) -> tokio::task::JoinHandle<()> {
        let double = self.clone();
        tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed);
            loop {
                tokio::time::sleep(interval).await;
                let (settled, target) = {
                    let mut state = double.lock();
                    let mut open: Vec<String> = state
                        .payouts
                        .iter()
                        .filter(|(_, payout)| payout.status == Some(VendorStatus::Accepted))
                        .map(|(id, _)| id.clone())
                        .collect();
                    open.sort();
                    let mut settled = Vec::new();
                    for id in open {
                        if rng.gen_bool(share) {
                            let planned = state.payouts[&id].planned.unwrap_or(Final::Success);
                            state.settle(&id, planned);
                            settled.push((id, planned));
                        }
                    }
                    (settled, state.callback_target.clone())
                };
                for (id, done) in settled {
                    let answer = match &target {
                        Some(paygate) => double.send_callback(paygate, &double.callback_body(&id)).await,
                        None => None,
                    };
                    double
                        .lock()
                        .callbacks
                        .push((id, done, answer.map(|(status, _)| status)));
                }
            }
        })
    }

    /// From now on every POST succeeds at once, queued answers are dropped,
    /// and every `ACCEPTED` payout is made final (its planned status), all
    /// in one step: nothing can be accepted and left open after this.
    pub fn make_healthy(&self) {
        let mut state = self.lock();
        state.mode = Mode::Fixed(Answer::Succeed);
        state.script.clear();
        let open: Vec<String> = state
            .payouts
            .iter()
            .filter(|(_, payout)| payout.status == Some(VendorStatus::Accepted))
            .map(|(id, _)| id.clone())
            .collect();
        for id in open {
            let planned = state.payouts[&id].planned.unwrap_or(Final::Success);
            state.settle(&id, planned);
        }
    }
}
