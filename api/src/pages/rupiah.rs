//! Amounts as an Indonesian reader writes them: `Rp 25.000`, with `.`
//! between thousands and `,` before the sen.

use paygate_engine::money::{MinorUnits, MINOR_PER_RUPIAH};

/// `Rp 25.000` for whole rupiah, `Rp 25.000,50` otherwise.
pub fn format(amount: MinorUnits) -> String {
    let minor = amount.get();
    let sign = if minor < 0 { "-" } else { "" };
    let minor = minor.unsigned_abs();
    let per_rupiah = MINOR_PER_RUPIAH.unsigned_abs();
    let (rupiah, sen) = (minor / per_rupiah, minor % per_rupiah);
    let digits = rupiah.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            grouped.push('.');
        }
        grouped.push(digit);
    }
    if sen == 0 {
        format!("{sign}Rp {grouped}")
    } else {
        format!("{sign}Rp {grouped},{sen:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::format;
    use paygate_engine::money::MinorUnits;

    fn rupiah(minor: i64) -> String {
        format(MinorUnits::new(minor))
    }

    #[test]
    fn whole_rupiah_have_no_decimals() {
        assert_eq!(rupiah(2_500_000), "Rp 25.000");
        assert_eq!(rupiah(100), "Rp 1");
        assert_eq!(rupiah(0), "Rp 0");
        assert_eq!(rupiah(100_000), "Rp 1.000");
        assert_eq!(rupiah(99_900), "Rp 999");
        assert_eq!(rupiah(12_345_678_900), "Rp 123.456.789");
    }

    #[test]
    fn sen_follow_a_comma() {
        assert_eq!(rupiah(2_500_050), "Rp 25.000,50");
        assert_eq!(rupiah(1), "Rp 0,01");
        assert_eq!(rupiah(100_005), "Rp 1.000,05");
    }

    #[test]
    fn the_extremes_format() {
        assert_eq!(rupiah(i64::MAX), "Rp 92.233.720.368.547.758,07");
        assert_eq!(rupiah(-150), "-Rp 1,50");
        assert_eq!(rupiah(i64::MIN), "-Rp 92.233.720.368.547.758,08");
    }
}
