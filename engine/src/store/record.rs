//! The journal's record types and their bincode 2 encoding.

use crate::domain::catalog::{PaymentVendorConfig, VendorRouting};
use crate::domain::order::{Order, Refund};
use crate::domain::settlement::Settlement;
use crate::domain::webhook::{WebhookAttempt, WebhookEvent};
use crate::domain::{Bank, Beneficiary, Disbursement, Ewallet, MerchantRecord, Organization};
use crate::ledger::Entry;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Bytes reserved for an encoded record: a disbursement with its debit
/// entry is about 500.
const RECORD_CAPACITY_HINT: usize = 768;

/// One durable change. Every record carries the whole new state of what it
/// changes (or a whole ledger entry), so applying it twice is harmless:
/// recovery may replay records sled already holds. Disbursements are shared
/// (`Arc`, encoded as the value itself) with the merchant actor's memory and
/// the store's overlay, so a version is built once, not copied to each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JournalRecord {
    /// An organization was created.
    OrganizationSaved(Organization),
    /// A bank was added or changed.
    BankSaved(Bank),
    /// An e-wallet was added or changed.
    EwalletSaved(Ewallet),
    /// A merchant was created or changed (credentials, key, settings).
    MerchantSaved(Box<MerchantRecord>),
    /// Money moved.
    EntryPosted(Entry),
    /// A disbursement was created together with the entry debiting the wallet.
    DisbursementCreated {
        /// The new disbursement.
        disbursement: Arc<Disbursement>,
        /// Its debit.
        entry: Entry,
    },
    /// Beneficiaries created or changed together (a new default unsets the old one).
    BeneficiariesSaved(Vec<Beneficiary>),
    /// A disbursement changed status without moving money.
    DisbursementUpdated(Arc<Disbursement>),
    /// A disbursement failed or was rejected, with the entry giving the
    /// full amount back.
    DisbursementReversed {
        /// The disbursement in its final status.
        disbursement: Arc<Disbursement>,
        /// Its reversal.
        entry: Entry,
    },
    /// A payment vendor was added or changed.
    PaymentVendorSaved(PaymentVendorConfig),
    /// An organization's vendors for a payment method were set.
    VendorRoutingSaved(VendorRouting),
    /// An order was created.
    OrderCreated(Box<Order>),
    /// An order changed without moving money (expired, failed).
    OrderUpdated(Box<Order>),
    /// An order was paid, with the entry crediting its net.
    OrderPaid {
        /// The order, PAID.
        order: Box<Order>,
        /// The payment's entry.
        entry: Entry,
    },
    /// A refund was created or settled, with its order's new refunded
    /// amount and status, and the entry that moved money (if any).
    RefundSaved {
        /// The order after the change.
        order: Box<Order>,
        /// The refund after the change.
        refund: Box<Refund>,
        /// The wallet debit at creation, or the credit back after a failure.
        entry: Option<Entry>,
    },
    /// A change together with the webhook events it causes: no change
    /// without its events, no event without its change.
    Evented {
        /// The change.
        record: Box<JournalRecord>,
        /// Its events, due for delivery.
        events: Vec<WebhookEvent>,
    },
    /// A delivery attempt, with the event's new delivery state.
    WebhookAttempted {
        /// The event after the attempt.
        event: Box<WebhookEvent>,
        /// When it was due before the attempt (its index entry goes).
        previously_due_ms: Option<i64>,
        /// The attempt.
        attempt: Box<WebhookAttempt>,
    },
    /// A settlement was created with the orders and refunds it took (now
    /// settled) and the entry moving the money out of pending settlement.
    SettlementCreated {
        /// The new settlement.
        settlement: Box<Settlement>,
        /// Its orders, `is_settled` now.
        orders: Vec<Order>,
        /// Its refunds, marked with it.
        refunds: Vec<Refund>,
        /// The money, if any moved.
        entry: Option<Entry>,
    },
    /// A settlement changed status, with the entry giving a failed transfer back.
    SettlementUpdated {
        /// The settlement after the change.
        settlement: Box<Settlement>,
        /// The reversal, for FAILED.
        entry: Option<Entry>,
    },
    /// Disbursements changed status together without moving money (a batch
    /// handed to the vendor). Last, so older journals decode unchanged.
    DisbursementsUpdated(Vec<Arc<Disbursement>>),
}

impl JournalRecord {
    /// `record` with `events`, or `record` alone when there are none. An
    /// event with no URL to go to (no notify URL, no merchant default) is
    /// not kept: nothing could ever deliver it.
    pub fn with_events(record: JournalRecord, mut events: Vec<WebhookEvent>) -> JournalRecord {
        events.retain(|event| event.url.is_some());
        if events.is_empty() {
            record
        } else {
            JournalRecord::Evented {
                record: Box::new(record),
                events,
            }
        }
    }
}

/// `JournalRecord` by reference: the same variants in the same order, so it
/// encodes to the same bytes without cloning what it encodes.
#[derive(Serialize)]
enum JournalRecordRef<'a> {
    #[allow(dead_code)]
    OrganizationSaved(&'a Organization),
    #[allow(dead_code)]
    BankSaved(&'a Bank),
    #[allow(dead_code)]
    EwalletSaved(&'a Ewallet),
    #[allow(dead_code)]
    MerchantSaved(&'a MerchantRecord),
    EntryPosted(&'a Entry),
}

/// Encodes `JournalRecord::EntryPosted(entry)` without cloning `entry`.
pub fn encode_entry(entry: &Entry) -> Vec<u8> {
    bincode::serde::encode_to_vec(JournalRecordRef::EntryPosted(entry), config()).expect("entries always encode")
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
}

/// Why a stored record could not be read back.
#[derive(Debug, thiserror::Error)]
#[error("undecodable record: {0}")]
pub struct DecodeError(String);

impl JournalRecord {
    /// The bytes written to the journal and sled.
    pub fn encode(&self) -> Vec<u8> {
        // Most records are a few hundred bytes: one allocation, no regrowth.
        let mut out = Vec::with_capacity(RECORD_CAPACITY_HINT);
        bincode::serde::encode_into_std_write(self, &mut out, config()).expect("journal records always encode");
        out
    }

    /// Reads a record back.
    pub fn decode(bytes: &[u8]) -> Result<JournalRecord, DecodeError> {
        decode_value(bytes)
    }
}

/// Encodes any stored value with the journal's configuration.
pub fn encode_value<T: Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, config()).expect("stored values always encode")
}

/// Decodes any stored value with the journal's configuration.
pub fn decode_value<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (value, used) =
        bincode::serde::decode_from_slice::<T, _>(bytes, config()).map_err(|e| DecodeError(e.to_string()))?;
    if used != bytes.len() {
        return Err(DecodeError(format!("{} trailing bytes", bytes.len() - used)));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{wallet_credit, MerchantBook};
    use crate::money::MinorUnits;
    use uuid::Uuid;

    #[test]
    fn entries_round_trip_through_bincode() {
        let book = MerchantBook::new(Uuid::new_v4());
        let entry = book
            .prepare(wallet_credit(MinorUnits::new(42), "x".into(), Some("k".into())), 5)
            .unwrap();
        let record = JournalRecord::EntryPosted(entry.clone());
        assert_eq!(JournalRecord::decode(&record.encode()).unwrap(), record);
        assert_eq!(encode_entry(&entry), record.encode());
        assert!(JournalRecord::decode(&[0xff, 0xff]).is_err());
    }
}
