//! Webhooks: `dispatcher.rs` picks due events from the
//! durable outbox and paces each merchant's deliveries; `delivery.rs` sends
//! one (body, signatures, HTTP) and records the attempt.

pub mod delivery;
mod dispatcher;

pub use delivery::{client, deliver};
pub use dispatcher::run;
