//! Dynamic QRIS strings (EMVCo merchant-presented mode, Bank Indonesia's
//! national profile) and their PNG rendering.

use crate::money::MinorUnits;
use uuid::Uuid;

/// What goes into one order's QRIS.
#[derive(Clone, Debug)]
pub struct QrisRequest<'a> {
    /// The merchant whose account receives the payment.
    pub merchant_id: Uuid,
    /// Shown by wallets; trimmed to 25 characters.
    pub merchant_name: &'a str,
    /// Shown by wallets; trimmed to 15 characters.
    pub merchant_city: &'a str,
    /// The order's amount.
    pub amount: MinorUnits,
    /// The order's `ref_code`, carried as the reference label.
    pub ref_code: &'a str,
}

/// The acquirer's globally unique identifier in tag 26.
const ACQUIRER_GUI: &str = "ID.CO.PAYGATE.WWW";
/// The national QRIS template identifier in tag 51.
const NATIONAL_GUI: &str = "ID.CO.QRIS.WWW";
/// Merchant category code: miscellaneous retail.
const MCC: &str = "5999";

/// Builds the dynamic QRIS string of an order, CRC included. Written into
/// one buffer: a QRIS is made for every order created.
pub fn build(request: &QrisRequest<'_>) -> String {
    let pan = merchant_pan(&request.merchant_id);
    let mut merchant_code = String::with_capacity(15);
    merchant_code.push_str("PG");
    merchant_code.extend(
        request.merchant_id.simple().to_string()[..13]
            .chars()
            .map(|c| c.to_ascii_uppercase()),
    );
    let mut acquirer = String::with_capacity(80);
    put_tlv(&mut acquirer, "00", ACQUIRER_GUI);
    put_tlv(&mut acquirer, "01", &pan);
    put_tlv(&mut acquirer, "02", &merchant_code);
    put_tlv(&mut acquirer, "03", "UMI");
    let mut national = String::with_capacity(50);
    put_tlv(&mut national, "00", NATIONAL_GUI);
    put_tlv(&mut national, "02", &["ID", &pan[4..17]].concat());
    put_tlv(&mut national, "03", "UMI");
    let mut additional = String::with_capacity(32);
    put_tlv(&mut additional, "05", request.ref_code);
    let mut payload = String::with_capacity(256);
    put_tlv(&mut payload, "00", "01");
    put_tlv(&mut payload, "01", "12");
    put_tlv(&mut payload, "26", &acquirer);
    put_tlv(&mut payload, "51", &national);
    put_tlv(&mut payload, "52", MCC);
    put_tlv(&mut payload, "53", "360");
    put_tlv(&mut payload, "54", &rupiah_amount(request.amount));
    put_tlv(&mut payload, "58", "ID");
    put_tlv(&mut payload, "59", &field_text(request.merchant_name, 25, "MERCHANT"));
    put_tlv(&mut payload, "60", &field_text(request.merchant_city, 15, "JAKARTA"));
    put_tlv(&mut payload, "62", &additional);
    payload.push_str("6304");
    let crc = crc16_ccitt_false(payload.as_bytes());
    payload.push_str(&format!("{crc:04X}"));
    payload
}

/// CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no xor-out).
pub fn crc16_ccitt_false(bytes: &[u8]) -> u16 {
    const CRC: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740);
    CRC.checksum(bytes)
}

/// Amount in rupiah: `25000`, or `25000.50` when not whole rupiah.
pub fn rupiah_amount(amount: MinorUnits) -> String {
    let minor = amount.get();
    let (rupiah, cents) = (minor / 100, minor % 100);
    if cents == 0 {
        rupiah.to_string()
    } else {
        format!("{rupiah}.{cents:02}")
    }
}

/// Appends `tag`, the value's length in two digits, and the value.
fn put_tlv(out: &mut String, tag: &str, value: &str) {
    debug_assert!(value.len() < 100, "EMVCo values are at most 99 bytes");
    let length = value.len().min(99) as u8;
    out.push_str(tag);
    out.push(char::from(b'0' + length / 10));
    out.push(char::from(b'0' + length % 10));
    out.push_str(value);
}

/// Printable ASCII only (wallets reject anything else), trimmed to `max`.
fn field_text(text: &str, max: usize, fallback: &str) -> String {
    let cleaned: String = text
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(max)
        .collect();
    let cleaned = cleaned.trim().to_string();
    if cleaned.is_empty() {
        fallback.to_string()
    } else {
        cleaned
    }
}

/// A stable 19-digit merchant PAN: the QRIS national prefix `9360` and 15
/// digits derived from the merchant id.
fn merchant_pan(merchant_id: &Uuid) -> String {
    let number = merchant_id.as_u128() % 1_000_000_000_000_000;
    format!("9360{number:015}")
}

/// Renders `data` as a PNG QR code: black modules on white, 8 pixels per
/// module, with the 4-module quiet zone readers need.
pub fn render_png(data: &str) -> Result<Vec<u8>, String> {
    let code =
        qrcode::QrCode::with_error_correction_level(data.as_bytes(), qrcode::EcLevel::M).map_err(|e| e.to_string())?;
    let modules = code.width();
    let colors = code.to_colors();
    const SCALE: usize = 8;
    const QUIET: usize = 4;
    let side = (modules + 2 * QUIET) * SCALE;
    let mut pixels = vec![255u8; side * side];
    for (index, color) in colors.iter().enumerate() {
        if *color != qrcode::Color::Dark {
            continue;
        }
        let (mx, my) = (index % modules, index / modules);
        for dy in 0..SCALE {
            let row = (my + QUIET) * SCALE + dy;
            let start = row * side + (mx + QUIET) * SCALE;
            pixels[start..start + SCALE].fill(0);
        }
    }
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, side as u32, side as u32);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
        writer.write_image_data(&pixels).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_check_value_matches_the_standard() {
        assert_eq!(crc16_ccitt_false(b"123456789"), 0x29B1);
    }

    #[test]
    fn amounts_are_rupiah_with_cents_only_when_needed() {
        assert_eq!(rupiah_amount(MinorUnits::new(2_500_000)), "25000");
        assert_eq!(rupiah_amount(MinorUnits::new(2_500_050)), "25000.50");
        assert_eq!(rupiah_amount(MinorUnits::new(2_500_005)), "25000.05");
        assert_eq!(rupiah_amount(MinorUnits::new(1)), "0.01");
    }

    /// The exact strings, so a faster way of writing them cannot change a byte.
    #[test]
    fn strings_are_the_same_byte_for_byte() {
        let cases = [
            (
                0x0123_4567_89ab_cdef_0123_4567_89ab_cdef_u128,
                2_500_050,
                "Toko Sinar Jaya Abadi Sentosa Makmur",
                "Jakarta Selatan Raya",
                "ORD-261121183005-AB12",
                "00020101021226700017ID.CO.PAYGATE.WWW011993605823544065592150215PG0123456789ABC0303UMI51440014ID.CO.QRIS.WWW0215ID58235440655920303UMI520459995303360540825000.505802ID5925Toko Sinar Jaya Abadi Sen6015Jakarta Selatan62250521ORD-261121183005-AB12630483C5",
            ),
            (
                7,
                1,
                "",
                "Bandung",
                "PAY-1",
                "00020101021226700017ID.CO.PAYGATE.WWW011993600000000000000070215PG00000000000000303UMI51440014ID.CO.QRIS.WWW0215ID00000000000000303UMI52045999530336054040.015802ID5908MERCHANT6007Bandung62090505PAY-16304E942",
            ),
        ];
        for (id, amount, name, city, reference, expected) in cases {
            let qris = build(&QrisRequest {
                merchant_id: Uuid::from_u128(id),
                merchant_name: name,
                merchant_city: city,
                amount: MinorUnits::new(amount),
                ref_code: reference,
            });
            assert_eq!(qris, expected);
        }
    }

    #[test]
    fn string_ends_with_its_own_crc() {
        let qris = build(&QrisRequest {
            merchant_id: Uuid::new_v4(),
            merchant_name: "Toko Sinar Jaya Abadi Sentosa Makmur",
            merchant_city: "Jakarta Selatan Raya",
            amount: MinorUnits::new(2_500_000),
            ref_code: "ORD-261121183005-AB12",
        });
        let (body, crc) = qris.split_at(qris.len() - 4);
        assert!(body.ends_with("6304"));
        assert_eq!(crc, format!("{:04X}", crc16_ccitt_false(body.as_bytes())));
        assert!(qris.starts_with("000201010212"));
        assert!(qris.contains("5405250005802ID"), "{qris}");
        assert!(qris.contains("5925Toko Sinar Jaya Abadi Sen6015"), "{qris}");
        assert!(qris.contains("6015Jakarta Selatan"), "{qris}");
    }
}
