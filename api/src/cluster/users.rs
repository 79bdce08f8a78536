//! Dashboard users in a cluster. A user lives in its merchant's shard, but
//! signs in by email alone, and an email is unique across the platform: the
//! cluster's catalog holds each email's merchant. A user is created only
//! after its email is claimed there (a claim another merchant holds is a
//! 409 `EMAIL_TAKEN`), and a sign-in goes to the shard the email's merchant
//! is in. A session's token routes to that shard too
//! (`Sessions::start`), so the rest of the dashboard needs no lookup.

use super::{read_body, to_anywhere, to_shard, unavailable, ClusterFront, PendingBody};
use crate::error::{ErrorKind, V1Error};
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use paygate_engine::cluster::shard_of;
use uuid::Uuid;

/// An email as the engine keeps it: trimmed, lowercase.
fn normalized(email: &str) -> String {
    email.trim().to_lowercase()
}

/// `POST /admin/v1/merchants/{id}/users`: the email claimed for the
/// merchant first, then the user created in its shard; a claim made here
/// for a user the shard then refused is given back.
pub async fn create_user(front: &ClusterFront, merchant_id: Uuid, parts: Parts, body: Body) -> Response {
    let shard = shard_of(merchant_id);
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(response) => return *response,
    };
    // Only an operator's request may claim an email; any other is the
    // shard's to refuse, and so is a body without an email.
    let email = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|body| Some(normalized(body.get("email")?.as_str()?)))
        .filter(|email| !email.is_empty());
    let email = match email {
        Some(email) if crate::extract::admin_token_matches(&parts.headers, &front.admin_token) => email,
        _ => return to_shard(front, shard, parts, PendingBody::Read(bytes)).await,
    };
    let claimed_here = match front.directory.claim_user(&email, merchant_id).await {
        Ok(None) => true,
        Ok(Some(holder)) if holder == merchant_id => false,
        Ok(Some(_)) => return V1Error::new(ErrorKind::EmailTaken, "a user with this email exists").into_response(),
        Err(error) => {
            tracing::warn!(%error, "could not claim a user's email in the cluster's catalog");
            return unavailable(&parts);
        }
    };
    let response = to_shard(front, shard, parts, PendingBody::Read(bytes)).await;
    if claimed_here && response.status() != StatusCode::CREATED {
        if let Err(error) = front.directory.release_user(&email).await {
            tracing::warn!(%error, "could not give back an email claimed for a user not created");
        }
    }
    response
}

/// `POST /dashboard/sign-in`: to the shard of the email's merchant; an
/// email nobody holds is refused by any shard alike.
pub async fn sign_in(front: &ClusterFront, parts: Parts, body: Body) -> Response {
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(response) => return *response,
    };
    let email = url_form_field(&bytes, "email").map(|email| normalized(&email));
    let merchant = match email {
        Some(email) if !email.is_empty() => match front.directory.user_merchant(&email).await {
            Ok(merchant) => merchant,
            Err(error) => {
                tracing::warn!(%error, "could not look a user's email up in the cluster's catalog");
                return unavailable(&parts);
            }
        },
        _ => None,
    };
    match merchant {
        Some(merchant) => to_shard(front, shard_of(merchant), parts, PendingBody::Read(bytes)).await,
        None => to_anywhere(front, parts, PendingBody::Read(bytes)).await,
    }
}

/// A field of an `application/x-www-form-urlencoded` body.
fn url_form_field(body: &[u8], name: &str) -> Option<String> {
    let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(body).ok()?;
    fields.into_iter().find(|(key, _)| key == name).map(|(_, value)| value)
}
