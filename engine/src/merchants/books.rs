//! Merchants' money: entries posted and reversed through each merchant's
//! actor, balances, and the platform-wide ledger check
//! (`GET /admin/v1/ledger/verify`).

use super::Merchants;
use crate::actors::{MerchantMsg, PostReceipt};
use crate::domain::SettlementType;
use crate::error::EngineError;
use crate::input::validate_idempotency_key;
use crate::ledger::{self, Account, EntryProposal, LedgerError, MerchantBook};
use crate::limits;
use crate::money::MinorUnits;
use crate::store::Store;
use std::collections::{BTreeMap, HashSet};
use uuid::Uuid;

/// What `verify_ledger` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerReport {
    /// No problem found and all balances sum to zero.
    pub balanced: bool,
    /// Entries checked.
    pub entries: u64,
    /// Merchants checked.
    pub merchants: u64,
    /// Every broken invariant, in words.
    pub problems: Vec<String>,
    /// Platform-wide balance of every account: a sum over merchants, which
    /// can pass what one i64 holds.
    pub accounts: BTreeMap<&'static str, i128>,
}

impl Merchants {
    /// Records one ledger entry for a merchant, durably.
    pub async fn post_entry(&self, merchant_id: Uuid, proposal: EntryProposal) -> Result<PostReceipt, EngineError> {
        self.core.ensure_writable()?;
        Ok(self
            .core
            .call_merchant(merchant_id, |reply| MerchantMsg::Post {
                proposal: proposal.clone(),
                reply,
            })
            .await??)
    }

    /// Records many entries for one merchant in one message, durably.
    pub async fn post_entries(
        &self,
        merchant_id: Uuid,
        proposals: Vec<EntryProposal>,
    ) -> Result<Vec<Result<PostReceipt, LedgerError>>, EngineError> {
        self.core.ensure_writable()?;
        if proposals.len() > limits::POST_BATCH_MAX {
            return Err(EngineError::invalid("proposals", "too many in one batch"));
        }
        self.core
            .call_merchant(merchant_id, |reply| MerchantMsg::PostBatch {
                proposals: proposals.clone(),
                reply,
            })
            .await
    }

    /// Reverses entry `seq` of a merchant, at most once.
    pub async fn reverse_entry(&self, merchant_id: Uuid, seq: u64, memo: &str) -> Result<PostReceipt, EngineError> {
        self.core.ensure_writable()?;
        Ok(self
            .core
            .call_merchant(merchant_id, |reply| MerchantMsg::Reverse {
                seq,
                memo: memo.to_string(),
                reply,
            })
            .await??)
    }

    /// An operator credit into a WALLET merchant's wallet.
    pub async fn credit_wallet(
        &self,
        merchant_id: Uuid,
        amount: MinorUnits,
        reason: &str,
        idempotency_key: Option<String>,
    ) -> Result<PostReceipt, EngineError> {
        self.core.ensure_writable()?;
        let merchant = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        if merchant.settlement_type != SettlementType::Wallet {
            return Err(EngineError::NotWalletMerchant);
        }
        if !amount.is_positive() {
            return Err(EngineError::invalid("amount_minor", "must be at least 1"));
        }
        if reason.chars().count() > limits::MEMO_CHARS_MAX {
            return Err(EngineError::invalid("reason", "must be at most 1024 characters"));
        }
        if let Some(key) = &idempotency_key {
            validate_idempotency_key(key)?;
        }
        self.post_entry(
            merchant_id,
            ledger::wallet_credit(amount, reason.to_string(), idempotency_key),
        )
        .await
    }

    /// A merchant's book, as of every durable entry.
    pub async fn book(&self, merchant_id: Uuid) -> Result<MerchantBook, EngineError> {
        self.core
            .call_merchant(merchant_id, |reply| MerchantMsg::Book { reply })
            .await
    }

    /// The wallet balance of a WALLET merchant.
    pub async fn wallet_balance(&self, merchant_id: Uuid) -> Result<MinorUnits, EngineError> {
        let merchant = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        if merchant.settlement_type != SettlementType::Wallet {
            return Err(EngineError::NotWalletMerchant);
        }
        Ok(self.book(merchant_id).await?.balance(Account::Wallet))
    }

    /// Recomputes every balance from the stored entries and checks the
    /// ledger's invariants against the live books: every entry balanced, no
    /// wallet negative, no idempotency key moving money twice, the entries'
    /// balances equal to the live and stored books, all balances summing to
    /// zero.
    pub async fn verify_ledger(&self) -> Result<LedgerReport, EngineError> {
        let mut report = LedgerReport {
            balanced: true,
            entries: 0,
            merchants: 0,
            problems: Vec::new(),
            accounts: BTreeMap::new(),
        };
        let mut totals = [0i128; 10];
        for merchant_id in self.core.merchant_ids() {
            report.merchants += 1;
            // The live book first: every entry it reflects is already in sled.
            let live = self.book(merchant_id).await?;
            let store = self.core.store().clone();
            let (recomputed, count, problems) =
                tokio::task::spawn_blocking(move || recompute_book(&store, merchant_id, live.last_seq))
                    .await
                    .map_err(|_| EngineError::ShuttingDown)?;
            // Under load the stored book may have moved past the live one
            // read before it: it is then held to the entries up to its own
            // sequence. Behind the live book it cannot be: the live book is
            // answered only once durable.
            let durable = self.core.store().durable_book(&merchant_id)?;
            let stored_ok = match durable.last_seq.cmp(&live.last_seq) {
                std::cmp::Ordering::Equal => durable == live,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Greater => {
                    let store = self.core.store().clone();
                    let up_to = durable.last_seq;
                    let (at_durable, _, _) =
                        tokio::task::spawn_blocking(move || recompute_book(&store, merchant_id, up_to))
                            .await
                            .map_err(|_| EngineError::ShuttingDown)?;
                    at_durable == durable
                }
            };
            if !stored_ok {
                report
                    .problems
                    .push(format!("merchant {merchant_id}: stored book differs from the live one"));
            }
            report.entries += count;
            report.problems.extend(problems);
            if recomputed != live {
                report
                    .problems
                    .push(format!("merchant {merchant_id}: live balances differ from the entries"));
            }
            for account in Account::ALL {
                totals[account.index()] += recomputed.balances[account.index()] as i128;
            }
        }
        let grand_total: i128 = totals.iter().sum();
        if grand_total != 0 {
            report
                .problems
                .push(format!("all balances sum to {grand_total}, not 0"));
        }
        for account in Account::ALL {
            report.accounts.insert(account.name(), totals[account.index()]);
        }
        report.balanced = report.problems.is_empty();
        Ok(report)
    }
}

fn recompute_book(store: &Store, merchant_id: Uuid, up_to_seq: u64) -> (MerchantBook, u64, Vec<String>) {
    let mut book = MerchantBook::new(merchant_id);
    let mut problems = Vec::new();
    let mut keys = HashSet::new();
    let mut count = 0;
    let entries = match store.entries_after(&merchant_id, 0) {
        Ok(entries) => entries,
        Err(error) => {
            problems.push(format!("merchant {merchant_id}: {error}"));
            Vec::new()
        }
    };
    for entry in entries {
        if entry.seq > up_to_seq {
            break;
        }
        count += 1;
        if let Some(key) = &entry.idempotency_key {
            if !keys.insert(key.clone()) {
                problems.push(format!(
                    "merchant {merchant_id}: idempotency key {key:?} moved money twice"
                ));
            }
        }
        if let Err(error) = book.apply(&entry) {
            problems.push(format!("merchant {merchant_id} entry {}: {error}", entry.seq));
            break;
        }
    }
    if book.last_seq != up_to_seq && problems.is_empty() {
        problems.push(format!(
            "merchant {merchant_id}: entries end at {} but the book is at {up_to_seq}",
            book.last_seq
        ));
    }
    (book, count, problems)
}
