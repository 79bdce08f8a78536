//! The pure double-entry domain: accounts, postings, entries and one
//! merchant's book. No async, no IO, no actors: the same code validates live
//! entries, replays the journal and verifies the ledger.

use crate::money::MinorUnits;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub mod statement;

/// Ledger accounts (double entry). `Wallet` and `PendingSettlement` belong to
/// the merchant whose entry posts them; the rest are platform accounts, whose
/// balances are tracked per merchant as that merchant's contribution and
/// summed across merchants when reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Account {
    /// The merchant's spendable wallet (WALLET merchants); never negative.
    Wallet,
    /// Paid-order net awaiting a settlement (MANUAL merchants).
    PendingSettlement,
    /// Money the payment vendors owe the platform for paid orders.
    VendorClearing,
    /// MDR earned on paid orders.
    MdrRevenue,
    /// Platform fee earned on paid orders.
    PlatformFeeRevenue,
    /// Aggregator fee earned on paid orders.
    AggregatorFeeRevenue,
    /// Fees earned on disbursements.
    DisbursementFeeRevenue,
    /// Money on its way out to a bank or e-wallet account.
    PayoutClearing,
    /// Money on its way back to a paying customer.
    RefundClearing,
    /// Outside money brought in by an operator (admin wallet credits).
    Funding,
}

impl Account {
    /// Every account, in index order.
    pub const ALL: [Account; 10] = [
        Account::Wallet,
        Account::PendingSettlement,
        Account::VendorClearing,
        Account::MdrRevenue,
        Account::PlatformFeeRevenue,
        Account::AggregatorFeeRevenue,
        Account::DisbursementFeeRevenue,
        Account::PayoutClearing,
        Account::RefundClearing,
        Account::Funding,
    ];

    /// Position in `ALL` and in a book's balance array.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Account::Wallet => "wallet",
            Account::PendingSettlement => "pending_settlement",
            Account::VendorClearing => "vendor_clearing",
            Account::MdrRevenue => "mdr_revenue",
            Account::PlatformFeeRevenue => "platform_fee_revenue",
            Account::AggregatorFeeRevenue => "aggregator_fee_revenue",
            Account::DisbursementFeeRevenue => "disbursement_fee_revenue",
            Account::PayoutClearing => "payout_clearing",
            Account::RefundClearing => "refund_clearing",
            Account::Funding => "funding",
        }
    }

    /// True for accounts owned by one merchant.
    pub fn is_merchant_owned(self) -> bool {
        matches!(self, Account::Wallet | Account::PendingSettlement)
    }
}

/// Which side of an account a posting lands on. Balances are credits minus
/// debits, so crediting a wallet raises it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    /// Lowers the account's balance.
    Debit,
    /// Raises the account's balance.
    Credit,
}

impl Side {
    /// The other side, for reversals.
    pub fn opposite(self) -> Side {
        match self {
            Side::Debit => Side::Credit,
            Side::Credit => Side::Debit,
        }
    }
}

/// One line of an entry: a positive amount on one side of one account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Posting {
    /// The account touched.
    pub account: Account,
    /// Debit or credit.
    pub side: Side,
    /// Always strictly positive.
    pub amount: MinorUnits,
}

impl Posting {
    /// A debit of `amount` on `account`.
    pub fn debit(account: Account, amount: MinorUnits) -> Posting {
        Posting {
            account,
            side: Side::Debit,
            amount,
        }
    }

    /// A credit of `amount` on `account`.
    pub fn credit(account: Account, amount: MinorUnits) -> Posting {
        Posting {
            account,
            side: Side::Credit,
            amount,
        }
    }

    /// The posting that balances this one: the same amount on the other
    /// side of `account`.
    pub fn balanced_by(self, account: Account) -> Posting {
        Posting {
            account,
            side: self.side.opposite(),
            amount: self.amount,
        }
    }

    /// This posting's effect on its account's balance.
    pub fn signed_amount(&self) -> i64 {
        match self.side {
            Side::Credit => self.amount.get(),
            Side::Debit => -self.amount.get(),
        }
    }
}

/// Why money moved: kept on every entry for audits and for later resources
/// (orders, refunds, disbursements) to find their own entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryKind {
    /// An operator brought money into a wallet.
    WalletCredit,
    /// Money left a wallet (the generic debit; payouts use it until they have their own kind).
    WalletDebit,
    /// The mirror of an earlier entry.
    Reversal,
    /// A disbursement's debit: request to payout clearing, fee to revenue.
    Disbursement,
    /// A paid order: vendor clearing to the merchant's net and the fees.
    OrderPayment,
    /// A refund's wallet debit, to refund clearing; or, for a MANUAL
    /// merchant, a settled refund that failed: back from refund clearing to
    /// pending settlement.
    Refund,
    /// A settlement: pending settlement to the payout, refunds and the fee.
    Settlement,
}

/// The kind of resource an entry moved money for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResourceKind {
    /// An order's payment.
    Order,
    /// A refund of an order.
    Refund,
    /// A disbursement.
    Disbursement,
}

/// The resource an entry moved money for, as a statement line names it:
/// kept on the entry so a statement is read from entries alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryResource {
    /// Which kind.
    pub kind: ResourceKind,
    /// Its id (a refund's own id).
    pub id: Uuid,
    /// Its reference code (a refund's is its order's).
    pub ref_code: String,
}

/// What a caller asks the book to record; the book turns it into an `Entry`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryProposal {
    /// Why.
    pub kind: EntryKind,
    /// Moves money at most once per merchant.
    pub idempotency_key: Option<String>,
    /// Free text for operators.
    pub memo: String,
    /// The lines; must balance.
    pub postings: Vec<Posting>,
    /// For reversals: the merchant sequence number of the entry mirrored.
    pub reverses: Option<u64>,
    /// What the money moved for, if a resource.
    pub resource: Option<EntryResource>,
}

/// A recorded, balanced movement of money belonging to one merchant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The merchant whose actor wrote it.
    pub merchant_id: Uuid,
    /// 1, 2, 3... per merchant, without gaps.
    pub seq: u64,
    /// Why.
    pub kind: EntryKind,
    /// Moves money at most once per merchant.
    pub idempotency_key: Option<String>,
    /// Free text for operators.
    pub memo: String,
    /// The lines; they sum to zero.
    pub postings: Vec<Posting>,
    /// For reversals: the sequence number mirrored.
    pub reverses: Option<u64>,
    /// When it was recorded, Unix milliseconds.
    pub created_at_ms: i64,
    /// What the money moved for, if a resource.
    pub resource: Option<EntryResource>,
    /// The wallet's balance right after this entry: the statement's
    /// running balance, so a page deep in it needs no sum from the start.
    pub wallet_balance_after: i64,
}

impl Entry {
    /// The proposal that undoes this entry: every posting on the other side.
    pub fn reversal(&self, memo: String) -> EntryProposal {
        EntryProposal {
            kind: EntryKind::Reversal,
            idempotency_key: Some(reversal_idempotency_key(self.seq)),
            memo,
            postings: self
                .postings
                .iter()
                .map(|p| Posting {
                    account: p.account,
                    side: p.side.opposite(),
                    amount: p.amount,
                })
                .collect(),
            reverses: Some(self.seq),
            resource: self.resource.clone(),
        }
    }
}

/// The idempotency key every reversal of entry `seq` carries, so an entry is
/// reversed at most once whoever asks.
pub fn reversal_idempotency_key(seq: u64) -> String {
    format!("reversal-of:{seq}")
}

/// Why a proposal or an entry was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// No postings at all.
    #[error("an entry needs at least two postings")]
    TooFewPostings,
    /// A zero or negative posting amount.
    #[error("posting amounts must be positive")]
    NonPositiveAmount,
    /// Debits and credits differ.
    #[error("debits and credits differ by {0} minor units")]
    Unbalanced(i64),
    /// The wallet would go below zero.
    #[error("insufficient balance")]
    InsufficientBalance,
    /// An amount or balance would overflow i64.
    #[error("amount overflow")]
    Overflow,
    /// An entry for another merchant was given to this book.
    #[error("entry belongs to another merchant")]
    WrongMerchant,
    /// Entries must arrive in gapless sequence.
    #[error("entry sequence {got} out of order, expected {expected}")]
    OutOfSequence {
        /// The next sequence number the book expects.
        expected: u64,
        /// What it got.
        got: u64,
    },
    /// The idempotency key already moved money, in entry `0`.
    #[error("idempotency key already used by entry {0}")]
    DuplicateIdempotencyKey(u64),
    /// A reversal names an entry that does not exist.
    #[error("entry {0} not found")]
    EntryNotFound(u64),
    /// Reversals are not themselves reversed.
    #[error("entry {0} is a reversal and cannot be reversed")]
    ReversalOfReversal(u64),
    /// The stored idempotency index could not be read, so whether the key
    /// was used is unknown: nothing is recorded.
    #[error("idempotency index unreadable: {0}")]
    IndexUnreadable(String),
    /// A stored entry's running wallet balance is not what its postings give.
    #[error("entry {0} states a wallet balance its postings do not give")]
    RunningBalanceMismatch(u64),
}

/// One merchant's balances: its own accounts and its contribution to the
/// platform accounts. Built by folding that merchant's entries in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerchantBook {
    /// Whose book.
    pub merchant_id: Uuid,
    /// Sequence number of the last entry applied; 0 for none.
    pub last_seq: u64,
    /// Balance per account, indexed by `Account::index`.
    pub balances: [i64; 10],
}

impl MerchantBook {
    /// An empty book.
    pub fn new(merchant_id: Uuid) -> Self {
        MerchantBook {
            merchant_id,
            last_seq: 0,
            balances: [0; 10],
        }
    }

    /// The balance of one account.
    pub fn balance(&self, account: Account) -> MinorUnits {
        MinorUnits::new(self.balances[account.index()])
    }

    /// Validates a proposal against this book and turns it into the next
    /// entry, without applying it.
    pub fn prepare(&self, proposal: EntryProposal, created_at_ms: i64) -> Result<Entry, LedgerError> {
        let mut entry = Entry {
            merchant_id: self.merchant_id,
            seq: self.last_seq + 1,
            kind: proposal.kind,
            idempotency_key: proposal.idempotency_key,
            memo: proposal.memo,
            postings: proposal.postings,
            reverses: proposal.reverses,
            created_at_ms,
            resource: proposal.resource,
            wallet_balance_after: 0,
        };
        let balances = self.balances_after(&entry)?;
        entry.wallet_balance_after = balances[Account::Wallet.index()];
        Ok(entry)
    }

    /// Applies an entry prepared by `prepare` (or read back from storage).
    /// Refuses anything that would break an invariant, leaving the book as it was.
    pub fn apply(&mut self, entry: &Entry) -> Result<(), LedgerError> {
        let balances = self.balances_after(entry)?;
        if entry.wallet_balance_after != balances[Account::Wallet.index()] {
            return Err(LedgerError::RunningBalanceMismatch(entry.seq));
        }
        self.balances = balances;
        self.last_seq = entry.seq;
        assert!(
            self.balances[Account::Wallet.index()] >= 0,
            "wallet below zero after apply"
        );
        Ok(())
    }

    fn balances_after(&self, entry: &Entry) -> Result<[i64; 10], LedgerError> {
        if entry.merchant_id != self.merchant_id {
            return Err(LedgerError::WrongMerchant);
        }
        if entry.seq != self.last_seq + 1 {
            return Err(LedgerError::OutOfSequence {
                expected: self.last_seq + 1,
                got: entry.seq,
            });
        }
        check_balanced(&entry.postings)?;
        let mut balances = self.balances;
        for posting in &entry.postings {
            let slot = &mut balances[posting.account.index()];
            *slot = slot.checked_add(posting.signed_amount()).ok_or(LedgerError::Overflow)?;
        }
        if balances[Account::Wallet.index()] < 0 {
            return Err(LedgerError::InsufficientBalance);
        }
        Ok(balances)
    }

    /// The sum of every balance in this book; zero for any book built from
    /// balanced entries.
    pub fn total(&self) -> i128 {
        self.balances.iter().map(|b| *b as i128).sum()
    }
}

/// Checks that postings are at least two, all positive, and sum to zero.
pub fn check_balanced(postings: &[Posting]) -> Result<(), LedgerError> {
    if postings.len() < 2 {
        return Err(LedgerError::TooFewPostings);
    }
    let mut sum: i64 = 0;
    for posting in postings {
        if !posting.amount.is_positive() {
            return Err(LedgerError::NonPositiveAmount);
        }
        sum = sum.checked_add(posting.signed_amount()).ok_or(LedgerError::Overflow)?;
    }
    if sum != 0 {
        return Err(LedgerError::Unbalanced(sum));
    }
    Ok(())
}

/// The proposal for an operator credit of `amount` into a wallet.
pub fn wallet_credit(amount: MinorUnits, memo: String, idempotency_key: Option<String>) -> EntryProposal {
    EntryProposal {
        kind: EntryKind::WalletCredit,
        idempotency_key,
        memo,
        postings: vec![
            Posting::debit(Account::Funding, amount),
            Posting::credit(Account::Wallet, amount),
        ],
        reverses: None,
        resource: None,
    }
}

/// The proposal for a debit of `amount` out of a wallet towards a payout.
pub fn wallet_debit(amount: MinorUnits, memo: String, idempotency_key: Option<String>) -> EntryProposal {
    EntryProposal {
        kind: EntryKind::WalletDebit,
        idempotency_key,
        memo,
        postings: vec![
            Posting::debit(Account::Wallet, amount),
            Posting::credit(Account::PayoutClearing, amount),
        ],
        reverses: None,
        resource: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> MerchantBook {
        MerchantBook::new(Uuid::from_u128(7))
    }

    #[test]
    fn credit_then_debit_moves_the_wallet() {
        let mut b = book();
        let e = b
            .prepare(wallet_credit(MinorUnits::new(500), "c".into(), None), 0)
            .unwrap();
        b.apply(&e).unwrap();
        let d = b
            .prepare(wallet_debit(MinorUnits::new(200), "d".into(), None), 0)
            .unwrap();
        b.apply(&d).unwrap();
        assert_eq!(b.balance(Account::Wallet), MinorUnits::new(300));
        assert_eq!(b.balance(Account::Funding), MinorUnits::new(-500));
        assert_eq!(b.total(), 0);
        assert_eq!(b.last_seq, 2);
    }

    #[test]
    fn debit_beyond_the_wallet_is_refused_and_changes_nothing() {
        let mut b = book();
        let e = b
            .prepare(wallet_credit(MinorUnits::new(100), "c".into(), None), 0)
            .unwrap();
        b.apply(&e).unwrap();
        let before = b.clone();
        assert_eq!(
            b.prepare(wallet_debit(MinorUnits::new(101), "d".into(), None), 0),
            Err(LedgerError::InsufficientBalance)
        );
        assert_eq!(b, before);
    }

    #[test]
    fn unbalanced_and_non_positive_postings_are_refused() {
        let b = book();
        let unbalanced = EntryProposal {
            kind: EntryKind::WalletCredit,
            idempotency_key: None,
            memo: String::new(),
            postings: vec![
                Posting::debit(Account::Funding, MinorUnits::new(5)),
                Posting::credit(Account::Wallet, MinorUnits::new(4)),
            ],
            reverses: None,
            resource: None,
        };
        assert_eq!(b.prepare(unbalanced, 0), Err(LedgerError::Unbalanced(-1)));
        assert_eq!(
            b.prepare(wallet_credit(MinorUnits::ZERO, String::new(), None), 0),
            Err(LedgerError::NonPositiveAmount)
        );
    }

    #[test]
    fn reversal_mirrors_every_posting() {
        let mut b = book();
        let e = b
            .prepare(wallet_credit(MinorUnits::new(100), "c".into(), None), 0)
            .unwrap();
        b.apply(&e).unwrap();
        let r = b.prepare(e.reversal("undo".into()), 0).unwrap();
        b.apply(&r).unwrap();
        assert_eq!(b.balances, [0; 10]);
        assert_eq!(r.idempotency_key.as_deref(), Some("reversal-of:1"));
    }

    #[test]
    fn entries_out_of_sequence_are_refused() {
        let mut b = book();
        let mut e = b
            .prepare(wallet_credit(MinorUnits::new(1), String::new(), None), 0)
            .unwrap();
        e.seq = 3;
        assert_eq!(b.apply(&e), Err(LedgerError::OutOfSequence { expected: 1, got: 3 }));
    }
}
