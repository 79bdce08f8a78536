//! The QRIS encoder over arbitrary names, cities, references and amounts:
//! the string parses back as EMVCo TLV (two-digit tags and lengths that add
//! up), its CRC (tag 63) checks, and the amount and reference come back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paygate_engine::qris::{build, crc16_ccitt_false, rupiah_amount, QrisRequest};
use paygate_engine::MinorUnits;

fn tlv(data: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        assert!(rest.len() >= 4 && rest.is_char_boundary(4), "a field header: {rest:?}");
        let tag = rest[..2].to_string();
        let length: usize = rest[2..4].parse().expect("a two-digit length");
        assert!(rest.len() >= 4 + length && rest.is_char_boundary(4 + length), "field {tag} fits");
        fields.push((tag, rest[4..4 + length].to_string()));
        rest = &rest[4 + length..];
    }
    fields
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\u{1f}');
    let (name, city, reference) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    // Reference codes are ours: ASCII, at most 25 characters.
    let reference: String = reference.chars().filter(char::is_ascii_alphanumeric).take(25).collect();
    let amount = i64::from(data.len() as u32) * 100 + 100;
    let qris = build(&QrisRequest {
        merchant_id: uuid::Uuid::from_u128(data.len() as u128),
        merchant_name: name,
        merchant_city: city,
        amount: MinorUnits::new(amount),
        ref_code: &reference,
    });
    let fields = tlv(&qris);
    let (tag, crc) = fields.last().expect("fields");
    assert_eq!(tag, "63");
    let body = &qris[..qris.len() - 4];
    assert_eq!(crc, &format!("{:04X}", crc16_ccitt_false(body.as_bytes())));
    let amount_field = fields.iter().find(|(t, _)| t == "54").expect("an amount");
    assert_eq!(amount_field.1, rupiah_amount(MinorUnits::new(amount)));
    if !reference.is_empty() {
        let additional = fields.iter().find(|(t, _)| t == "62").expect("additional data");
        assert!(tlv(&additional.1).iter().any(|(t, v)| t == "05" && *v == reference));
    }
});
