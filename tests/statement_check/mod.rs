//! The statement check the ledger's property tests share:
//! a merchant's balance history, walked a page at a time, is exactly the
//! lines the model expects, chains line to line, starts from an empty
//! wallet and ends at the wallet's balance.
#![allow(dead_code)]

use paygate_engine::ledger::statement::{LineType, StatementLine};
use paygate_engine::{Engine, HistoryQuery};
use proptest::prelude::*;
use uuid::Uuid;

/// Every line of a merchant's statement, newest first, `page` at a time.
pub fn walk(engine: &Engine, merchant_id: Uuid, page: usize) -> Result<Vec<StatementLine>, TestCaseError> {
    let mut lines: Vec<StatementLine> = Vec::new();
    loop {
        let query = HistoryQuery::page(lines.last().map(|line| line.id), page);
        let got = engine
            .merchants()
            .balance_history(merchant_id, &query)
            .map_err(|e| TestCaseError::fail(format!("history page failed: {e}")))?;
        prop_assert!(got.lines.len() <= page);
        let more = got.has_more;
        lines.extend(got.lines);
        if !more {
            return Ok(lines);
        }
    }
}

/// Checks the statement against `expected` (oldest first: type and signed
/// amount of each line) and `wallet`.
pub fn check(
    engine: &Engine,
    merchant_id: Uuid,
    expected: &[(LineType, i64)],
    wallet: i64,
    page: usize,
) -> Result<(), TestCaseError> {
    let lines = walk(engine, merchant_id, page.max(1))?;
    let seen: Vec<(LineType, i64)> = lines.iter().rev().map(|l| (l.line_type, l.amount_minor)).collect();
    prop_assert_eq!(&seen, &expected.to_vec());
    let mut balance = wallet;
    for (index, line) in lines.iter().enumerate() {
        prop_assert_eq!(line.balance_after_minor, balance, "line {} of {:?}", index, lines);
        balance -= line.amount_minor;
        if let Some(older) = lines.get(index + 1) {
            prop_assert!(
                (older.id.seq, older.id.part) < (line.id.seq, line.id.part),
                "{:?}",
                lines
            );
        }
    }
    prop_assert_eq!(balance, 0, "the first line starts from an empty wallet");
    Ok(())
}
