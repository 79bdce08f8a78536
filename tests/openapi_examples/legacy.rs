//! The tour's Legacy calls, signed as its clients sign them.

use super::*;
use base64::Engine as _;
use rsa::pkcs8::{EncodePublicKey, LineEnding};
use rsa::signature::{SignatureEncoding, Signer};
use sha2::{Digest, Sha256, Sha512};

pub(super) async fn tour_legacy(server: &TestServer, tour: &mut Tour, merchant: &TestMerchant) {
    // Legacy, signed as its clients sign: orders with SHA-512 in the body,
    // disbursement calls with an RSA `X-SIGNATURE`.
    let sha512 = |text: String| hex::encode(Sha512::digest(text.as_bytes()));
    let legacy = |path: &'static str, body: Value, signature: Option<String>| {
        let server = &server;
        async move {
            let mut request = server
                .client
                .post(server.url(path))
                .header("Content-Type", "application/json")
                .body(body.to_string());
            if let Some(signature) = signature {
                request = request.header("X-SIGNATURE", signature);
            }
            into_reply(request.send().await.unwrap()).await
        }
    };
    let signature = sha512(format!("{}|LG-1|25000|{}", merchant.client_id, merchant.client_secret));
    tour.keep(
        "legacy_create_order",
        &legacy(
            "/api/order/create",
            json!({ "clientId": merchant.client_id, "orderId": "LG-1", "totalAmount": 25000, "paymentType": "QRIS", "customerName": "Budi", "signature": signature }),
            None,
        )
        .await,
    );
    let signature = sha512(format!("{}|LG-1|{}", merchant.client_id, merchant.client_secret));
    tour.keep(
        "legacy_query_order",
        &legacy(
            "/api/order/query",
            json!({ "clientId": merchant.client_id, "orderId": "LG-1", "signature": signature }),
            None,
        )
        .await,
    );
    tour.keep(
        "legacy_query_order",
        &legacy(
            "/api/order/query",
            json!({ "clientId": merchant.client_id, "orderId": "LG-1", "signature": "00" }),
            None,
        )
        .await,
    );
    let private_key = rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 2048).unwrap();
    let pem = private_key.to_public_key().to_public_key_pem(LineEnding::LF).unwrap();
    tour.keep(
        "admin_set_public_key",
        &server
            .admin_put(
                &format!("/admin/v1/merchants/{}/public-key", merchant.id),
                json!({ "pem": pem }),
            )
            .await,
    );
    let x_signature = |body: &Value| {
        let message = format!(
            "{}|{}|{}",
            merchant.client_id,
            merchant.client_secret,
            hex::encode(Sha256::digest(body.to_string().as_bytes()))
        );
        let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(private_key.clone());
        base64::engine::general_purpose::STANDARD.encode(signer.sign(message.as_bytes()).to_bytes())
    };
    let body = json!({ "clientId": merchant.client_id, "orderId": "LG-D1", "bankCode": "BCA", "accountNumber": "1234567890", "accountName": "PT Sumber Makmur", "requestAmount": 50000 });
    tour.keep(
        "legacy_create_bank_disbursement",
        &legacy("/api/disbursement/create", body.clone(), Some(x_signature(&body))).await,
    );
    for (order_id, amount) in [("LG-D2", 25000), ("LG-D3", 10000)] {
        let body = json!({ "clientId": merchant.client_id, "orderId": order_id, "ewalletCode": "DANA", "accountNumber": "081234567890", "requestAmount": amount });
        let signature = Some(x_signature(&body));
        let reply = legacy("/api/disbursement/create-ewallet", body, signature).await;
        tour.keep("legacy_create_ewallet_disbursement", &reply);
    }
    let body = json!({ "clientId": merchant.client_id, "orderId": "LG-D1" });
    tour.keep(
        "legacy_query_disbursement",
        &legacy("/api/disbursement/query", body.clone(), Some(x_signature(&body))).await,
    );
    let body = json!({ "clientId": merchant.client_id });
    tour.keep(
        "legacy_get_balance",
        &legacy("/api/disbursement/get-balance", body.clone(), Some(x_signature(&body))).await,
    );
    tour.keep(
        "legacy_get_balance",
        &legacy(
            "/api/disbursement/get-balance",
            body,
            Some("bm90LWEtc2lnbmF0dXJl".into()),
        )
        .await,
    );
}
