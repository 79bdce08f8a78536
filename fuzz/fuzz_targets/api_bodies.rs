//! Arbitrary request bodies through the real router (V1, Legacy and admin
//! routes that take a body) over a real engine in a temporary data dir:
//! every answer is a clear 2xx or 4xx, never a panic or a 5xx.
#![no_main]

use axum::body::Body;
use axum::http::Request;
use libfuzzer_sys::fuzz_target;
use paygate_api::{router, ApiConfig, AppState, Mode};
use paygate_engine::{LimitField, LimitOverrides};
use paygate_engine::clock::SystemClock;
use paygate_engine::domain::SettlementType;
use paygate_engine::{Engine, EngineConfig, MinorUnits, NewMerchant};
use std::sync::{Arc, OnceLock};
use tower::ServiceExt;

struct World {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    api_key: String,
    _dir: tempfile::TempDir,
}

const ADMIN_TOKEN: &str = "fuzz-admin-token";

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("data dir");
        let (router, api_key) = runtime.block_on(async {
            let mut config = EngineConfig::new(dir.path());
            config.payout_vendor = Some(Arc::new(paygate_engine::vendor::SandboxPayoutVendor {
                delay: std::time::Duration::from_secs(3600),
            }));
            config.sandbox_refund_delay = Some(std::time::Duration::from_secs(3600));
            let engine = Engine::open(config, Arc::new(SystemClock)).await.expect("engine");
            let (merchant, credentials) = engine
                .merchants()
                .create_merchant(NewMerchant {
                    limits: LimitOverrides::parse([(LimitField::RateLimitPerSecond, Some(1_000_000)), (LimitField::RateLimitBurst, Some(1_000_000))]).expect("valid limits"),
                    ..NewMerchant::new("fuzz", SettlementType::Wallet)
                })
                .await
                .expect("merchant");
            engine
                .merchants()
                .credit_wallet(merchant.id, MinorUnits::new(1_000_000_000_000), "fuzz", None)
                .await
                .expect("credit");
            let state = AppState::new(
                engine,
                ApiConfig {
                    mode: Mode::Sandbox,
                    public_url: "http://127.0.0.1:8080".into(),
                    admin_token: ADMIN_TOKEN.into(),
                    cdn_url: "https://cdn.example".into(),
                    webhook_retry_scale: 1.0,
                    sandbox_disbursement_delay_ms: 3_600_000,
                },
            );
            (router(state), credentials.api_key)
        });
        World {
            runtime,
            router,
            api_key,
            _dir: dir,
        }
    })
}

/// Routes that read a body, with how they authenticate.
const ROUTES: [(&str, &str, bool); 10] = [
    ("POST", "/v1/disbursements", false),
    ("POST", "/v1/disbursements/batch", false),
    ("POST", "/v1/orders", false),
    ("POST", "/v1/beneficiaries", false),
    ("POST", "/v1/sandbox/orders/ORD-000000000000-AAAA/pay", false),
    ("POST", "/api/order/create", false),
    ("POST", "/api/disbursement/create", false),
    ("POST", "/api/disbursement/create-ewallet", false),
    ("POST", "/admin/v1/merchants", true),
    ("PUT", "/admin/v1/banks/XYZ", true),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let world = world();
    let (method, path, admin) = ROUTES[pick as usize % ROUTES.len()];
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    request = if admin {
        request.header("authorization", format!("Bearer {ADMIN_TOKEN}"))
    } else {
        request.header("x-api-key", &world.api_key)
    };
    let request = request.body(Body::from(body.to_vec())).expect("request");
    let response = world
        .runtime
        .block_on(world.router.clone().oneshot(request))
        .expect("the router answers");
    assert!(
        !response.status().is_server_error(),
        "{method} {path} answered {} to {:?}",
        response.status(),
        String::from_utf8_lossy(body)
    );
});
