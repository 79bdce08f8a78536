//! A wallet's statement, read from its entries alone: each
//! entry that posts to the wallet gives one line, a disbursement's debit two
//! (the request, then its fee), each with its signed amount, the wallet's
//! balance right after it and the resource it belongs to. Consecutive lines
//! chain: each balance is the one before it plus its amount.

use super::{Account, Entry, EntryKind, EntryResource, ResourceKind};
use uuid::Uuid;

/// What a line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LineType {
    /// + the net of a paid order.
    OrderPayment,
    /// - a refund's amount.
    Refund,
    /// + a failed refund's amount back.
    RefundReversal,
    /// - a disbursement's request amount.
    Disbursement,
    /// - a disbursement's fee (no line when it is 0).
    DisbursementFee,
    /// + a failed or rejected disbursement's request and fee back.
    DisbursementReversal,
    /// + an operator credit.
    WalletCredit,
    /// - a debit posted through the engine's generic entry call (no API
    ///   posts one; the ledger's property tests do).
    WalletDebit,
    /// The mirror of a generic entry (engine calls only, as above).
    Reversal,
}

impl LineType {
    /// Every type, in the order the statement documents them.
    pub const ALL: [LineType; 9] = [
        LineType::OrderPayment,
        LineType::Refund,
        LineType::RefundReversal,
        LineType::Disbursement,
        LineType::DisbursementFee,
        LineType::DisbursementReversal,
        LineType::WalletCredit,
        LineType::WalletDebit,
        LineType::Reversal,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LineType::OrderPayment => "ORDER_PAYMENT",
            LineType::Refund => "REFUND",
            LineType::RefundReversal => "REFUND_REVERSAL",
            LineType::Disbursement => "DISBURSEMENT",
            LineType::DisbursementFee => "DISBURSEMENT_FEE",
            LineType::DisbursementReversal => "DISBURSEMENT_REVERSAL",
            LineType::WalletCredit => "WALLET_CREDIT",
            LineType::WalletDebit => "WALLET_DEBIT",
            LineType::Reversal => "REVERSAL",
        }
    }

    /// The type a wire name names.
    pub fn parse(raw: &str) -> Option<LineType> {
        LineType::ALL.into_iter().find(|t| t.as_str() == raw)
    }
}

/// Where a line is: its entry and its place among that entry's lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineId {
    /// Whose wallet.
    pub merchant_id: Uuid,
    /// The entry's per-merchant sequence number.
    pub seq: u64,
    /// 0, or 1 for a disbursement's fee line.
    pub part: u8,
}

const LINE_ID_PREFIX: &str = "bt_";

impl LineId {
    /// `bt_`, the merchant id, the entry's sequence and the part, in
    /// lowercase hex: opaque to clients, yet it names its merchant, so
    /// another merchant's id is refused rather than read as a place here.
    pub fn encode(&self) -> String {
        format!(
            "{LINE_ID_PREFIX}{}{:016x}{:x}",
            self.merchant_id.simple(),
            self.seq,
            self.part
        )
    }

    /// The id `encode` wrote, or `None` for anything else.
    pub fn parse(raw: &str) -> Option<LineId> {
        let hex = raw.strip_prefix(LINE_ID_PREFIX)?;
        if hex.len() != 32 + 16 + 1 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        Some(LineId {
            merchant_id: Uuid::parse_str(&hex[..32]).ok()?,
            seq: u64::from_str_radix(&hex[32..48], 16).ok()?,
            part: u8::from_str_radix(&hex[48..], 16).ok()?,
        })
    }
}

/// One line of a wallet's statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementLine {
    /// Where it is.
    pub id: LineId,
    /// What it is.
    pub line_type: LineType,
    /// Signed: + into the wallet, - out of it.
    pub amount_minor: i64,
    /// The wallet's balance right after this line.
    pub balance_after_minor: i64,
    /// What the money moved for.
    pub resource: Option<EntryResource>,
    /// When its entry was recorded, Unix milliseconds.
    pub created_at_ms: i64,
}

/// The lines of one entry, oldest first (none if it leaves the wallet alone).
pub fn lines_of(entry: &Entry) -> Vec<StatementLine> {
    let wallet: Vec<_> = entry.postings.iter().filter(|p| p.account == Account::Wallet).collect();
    if wallet.is_empty() {
        return Vec::new();
    }
    let amount: i64 = wallet.iter().map(|p| p.signed_amount()).sum();
    let line = |part: u8, line_type: LineType, amount_minor: i64, balance_after_minor: i64| StatementLine {
        id: LineId {
            merchant_id: entry.merchant_id,
            seq: entry.seq,
            part,
        },
        line_type,
        amount_minor,
        balance_after_minor,
        resource: entry.resource.clone(),
        created_at_ms: entry.created_at_ms,
    };
    let after = entry.wallet_balance_after;
    let resource_kind = entry.resource.as_ref().map(|r| r.kind);
    let line_type = match entry.kind {
        EntryKind::OrderPayment => LineType::OrderPayment,
        EntryKind::Refund => LineType::Refund,
        EntryKind::WalletCredit => LineType::WalletCredit,
        EntryKind::WalletDebit | EntryKind::Settlement => LineType::WalletDebit,
        EntryKind::Reversal => match resource_kind {
            Some(ResourceKind::Refund) => LineType::RefundReversal,
            Some(ResourceKind::Disbursement) => LineType::DisbursementReversal,
            _ => LineType::Reversal,
        },
        EntryKind::Disbursement => {
            // The wallet gave request + fee; the request went to payout clearing.
            let request: i64 = entry
                .postings
                .iter()
                .filter(|p| p.account == Account::PayoutClearing)
                .map(|p| p.amount.get())
                .sum();
            let fee = -amount - request;
            if fee <= 0 || request <= 0 {
                return vec![line(0, LineType::Disbursement, amount, after)];
            }
            return vec![
                line(0, LineType::Disbursement, -request, after + fee),
                line(1, LineType::DisbursementFee, -fee, after),
            ];
        }
    };
    vec![line(0, line_type, amount, after)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{wallet_credit, EntryProposal, MerchantBook, Posting};
    use crate::money::MinorUnits;

    fn disbursement_debit(request: i64, fee: i64) -> EntryProposal {
        let mut postings = vec![
            Posting::debit(Account::Wallet, MinorUnits::new(request + fee)),
            Posting::credit(Account::PayoutClearing, MinorUnits::new(request)),
        ];
        if fee > 0 {
            postings.push(Posting::credit(Account::DisbursementFeeRevenue, MinorUnits::new(fee)));
        }
        EntryProposal {
            kind: EntryKind::Disbursement,
            idempotency_key: None,
            memo: "d".into(),
            postings,
            reverses: None,
            resource: Some(EntryResource {
                kind: ResourceKind::Disbursement,
                id: Uuid::nil(),
                ref_code: "DSB-1".into(),
            }),
        }
    }

    #[test]
    fn a_disbursement_is_two_lines_its_reversal_one_and_all_chain() {
        let mut book = MerchantBook::new(Uuid::new_v4());
        let mut lines = Vec::new();
        let mut entries = Vec::new();
        let proposals = [
            wallet_credit(MinorUnits::new(10_000), "fund".into(), None),
            disbursement_debit(3_000, 250),
            disbursement_debit(1_000, 0),
        ];
        for proposal in proposals {
            let entry = book.prepare(proposal, 7).unwrap();
            book.apply(&entry).unwrap();
            lines.extend(lines_of(&entry));
            entries.push(entry);
        }
        let reversal = book.prepare(entries[1].reversal("failed".into()), 8).unwrap();
        book.apply(&reversal).unwrap();
        lines.extend(lines_of(&reversal));
        let seen: Vec<_> = lines
            .iter()
            .map(|l| (l.line_type, l.amount_minor, l.balance_after_minor, l.id.seq, l.id.part))
            .collect();
        assert_eq!(
            seen,
            vec![
                (LineType::WalletCredit, 10_000, 10_000, 1, 0),
                (LineType::Disbursement, -3_000, 7_000, 2, 0),
                (LineType::DisbursementFee, -250, 6_750, 2, 1),
                (LineType::Disbursement, -1_000, 5_750, 3, 0),
                (LineType::DisbursementReversal, 3_250, 9_000, 4, 0),
            ]
        );
        assert_eq!(lines[4].resource.as_ref().unwrap().ref_code, "DSB-1");
        assert_eq!(book.balance(Account::Wallet).get(), 9_000);
    }

    #[test]
    fn an_entry_whose_running_balance_was_altered_is_refused() {
        let mut book = MerchantBook::new(Uuid::new_v4());
        let mut entry = book
            .prepare(wallet_credit(MinorUnits::new(5), "x".into(), None), 1)
            .unwrap();
        entry.wallet_balance_after = 6;
        assert_eq!(
            book.apply(&entry),
            Err(crate::ledger::LedgerError::RunningBalanceMismatch(1))
        );
    }

    #[test]
    fn line_ids_round_trip_and_refuse_anything_else() {
        let id = LineId {
            merchant_id: Uuid::new_v4(),
            seq: 1_234_567,
            part: 1,
        };
        assert_eq!(LineId::parse(&id.encode()), Some(id));
        for bad in [
            "",
            "bt_",
            "bt_xyz",
            &id.encode().to_uppercase(),
            &format!("{}0", id.encode()),
        ] {
            assert_eq!(LineId::parse(bad), None, "{bad}");
        }
    }
}
