//! A WALLET merchant's statement, a page at a time: lines
//! newest first from the stored entries, after a cursor, filtered by time
//! and type. Read from storage (durable entries only) and never held in
//! memory: a page seeks to its cursor's entry.

use super::Merchants;
use crate::domain::SettlementType;
use crate::error::EngineError;
use crate::input::CreatedBetween;
use crate::ledger::statement::{lines_of, LineId, LineType, StatementLine};
use uuid::Uuid;

/// The most lines a page holds.
pub const HISTORY_LIMIT_MAX: usize = 100;

/// How far before `created_from` a statement is still read: entries are
/// recorded in time order unless the clock steps back, and a step of up
/// to this much must not hide a line that belongs in the range.
const CLOCK_STEP_SLACK_MS: i64 = 60_000;

/// Which lines, from where.
#[derive(Clone, Debug)]
pub struct HistoryQuery {
    /// Lines older than this one (a line id of an earlier page); from the
    /// newest when `None`.
    pub starting_after: Option<LineId>,
    /// At most this many (1..=100).
    pub limit: usize,
    /// Only lines created in this window.
    pub created: CreatedBetween,
    /// Only lines of this type; every type when `None`.
    pub line_type: Option<LineType>,
}

/// One page of a statement.
#[derive(Clone, Debug)]
pub struct HistoryPage {
    /// Newest first.
    pub lines: Vec<StatementLine>,
    /// More lines match after the last one.
    pub has_more: bool,
}

impl HistoryQuery {
    /// Up to `limit` lines of every type and time, after `starting_after`.
    pub fn page(starting_after: Option<LineId>, limit: usize) -> HistoryQuery {
        HistoryQuery {
            starting_after,
            limit,
            created: CreatedBetween::ANY,
            line_type: None,
        }
    }

    fn admits(&self, line: &StatementLine) -> bool {
        self.line_type.is_none_or(|t| t == line.line_type) && self.created.contains(line.created_at_ms)
    }
}

impl Merchants {
    /// A page of a WALLET merchant's statement. A `starting_after` of
    /// another merchant, or naming no line of this one, is refused as
    /// `InvalidInput` on `starting_after`.
    pub fn balance_history(&self, merchant_id: Uuid, query: &HistoryQuery) -> Result<HistoryPage, EngineError> {
        let merchant = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        if merchant.settlement_type != SettlementType::Wallet {
            return Err(EngineError::NotWalletMerchant);
        }
        let limit = query.limit.clamp(1, HISTORY_LIMIT_MAX);
        let store = self.core.store();
        let unknown = || EngineError::invalid("starting_after", "not a line of this wallet's statement");
        // One read from the cursor's entry down: its lines after the cursor
        // come first, then older entries'.
        let (mut pending, mut entries) = match query.starting_after {
            None => (Vec::new(), store.entries_newest_first(&merchant_id, u64::MAX)),
            Some(cursor) => {
                if cursor.merchant_id != merchant_id {
                    return Err(unknown());
                }
                let mut entries = store.entries_newest_first(&merchant_id, cursor.seq.saturating_add(1));
                let entry = entries
                    .next()
                    .transpose()?
                    .filter(|e| e.seq == cursor.seq)
                    .ok_or_else(unknown)?;
                let lines = lines_of(&entry);
                if !lines.iter().any(|line| line.id == cursor) {
                    return Err(unknown());
                }
                let older = lines.into_iter().filter(|line| line.id.part < cursor.part).collect();
                (older, entries)
            }
        };
        let mut lines = Vec::with_capacity(limit);
        loop {
            let Some(line) = pending.pop() else {
                match entries.next().transpose()? {
                    Some(entry) => {
                        let floor = query.created.from_ms().saturating_sub(CLOCK_STEP_SLACK_MS);
                        if entry.created_at_ms < floor {
                            return Ok(HistoryPage { lines, has_more: false });
                        }
                        pending = lines_of(&entry);
                        continue;
                    }
                    None => return Ok(HistoryPage { lines, has_more: false }),
                }
            };
            if !query.admits(&line) {
                continue;
            }
            if lines.len() == limit {
                return Ok(HistoryPage { lines, has_more: true });
            }
            lines.push(line);
        }
    }
}
