//! Money as integer minor units (100 minor = IDR 1), with checked arithmetic only.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An amount of rupiah in minor units. There is deliberately no `Add`/`Sub`:
/// every operation that could overflow returns an `Option`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MinorUnits(i64);

/// Minor units in one rupiah.
pub const MINOR_PER_RUPIAH: i64 = 100;

impl MinorUnits {
    /// Zero rupiah.
    pub const ZERO: MinorUnits = MinorUnits(0);

    /// Wraps a raw count of minor units.
    pub const fn new(minor: i64) -> Self {
        MinorUnits(minor)
    }

    /// The raw count of minor units.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// Full rupiah (Legacy `totalAmount`) to minor units; `None` on overflow.
    pub fn from_rupiah(rupiah: i64) -> Option<Self> {
        rupiah.checked_mul(MINOR_PER_RUPIAH).map(MinorUnits)
    }

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: MinorUnits) -> Option<Self> {
        self.0.checked_add(other.0).map(MinorUnits)
    }

    /// `self + other`, held at the largest amount instead of overflowing:
    /// for running sums compared against a limit, which such a sum exceeds.
    pub fn saturating_add(self, other: MinorUnits) -> Self {
        MinorUnits(self.0.saturating_add(other.0))
    }

    /// `self - other`, or `None` on overflow.
    pub fn checked_sub(self, other: MinorUnits) -> Option<Self> {
        self.0.checked_sub(other.0).map(MinorUnits)
    }

    /// `-self`, or `None` for `i64::MIN`.
    pub fn checked_neg(self) -> Option<Self> {
        self.0.checked_neg().map(MinorUnits)
    }

    /// True for amounts strictly above zero.
    pub fn is_positive(self) -> bool {
        self.0 > 0
    }

    /// True for amounts strictly below zero.
    pub fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// The Legacy decimal string with two decimals: `5000000` -> `"50000.00"`.
    pub fn to_decimal_string(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let per = MINOR_PER_RUPIAH as u64;
        format!("{sign}{}.{:02}", abs / per, abs % per)
    }
}

impl fmt::Display for MinorUnits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_strings_have_two_decimals() {
        assert_eq!(MinorUnits::new(5_000_000).to_decimal_string(), "50000.00");
        assert_eq!(MinorUnits::new(250_050).to_decimal_string(), "2500.50");
        assert_eq!(MinorUnits::new(7).to_decimal_string(), "0.07");
        assert_eq!(MinorUnits::new(-150).to_decimal_string(), "-1.50");
        assert_eq!(MinorUnits::ZERO.to_decimal_string(), "0.00");
    }

    #[test]
    fn arithmetic_overflow_is_none() {
        assert_eq!(MinorUnits::new(i64::MAX).checked_add(MinorUnits::new(1)), None);
        assert_eq!(MinorUnits::new(i64::MIN).checked_sub(MinorUnits::new(1)), None);
        assert_eq!(MinorUnits::from_rupiah(i64::MAX / 10), None);
        assert_eq!(MinorUnits::from_rupiah(50_000), Some(MinorUnits::new(5_000_000)));
    }
}
