//! Dynamic QRIS strings (EMVCo merchant-presented mode, Bank Indonesia's
//! national profile) and their PNG rendering (DESIGN.md 5).

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

/// Builds the dynamic QRIS string of an order, CRC included.
pub fn build(request: &QrisRequest<'_>) -> String {
    let pan = merchant_pan(&request.merchant_id);
    let merchant_code = format!("PG{}", &request.merchant_id.simple().to_string()[..13].to_uppercase());
    let acquirer = [
        tlv("00", ACQUIRER_GUI),
        tlv("01", &pan),
        tlv("02", &merchant_code),
        tlv("03", "UMI"),
    ]
    .concat();
    let national = [
        tlv("00", NATIONAL_GUI),
        tlv("02", &format!("ID{}", &pan[4..17])),
        tlv("03", "UMI"),
    ]
    .concat();
    let additional = tlv("05", request.ref_code);
    let mut payload = [
        tlv("00", "01"),
        tlv("01", "12"),
        tlv("26", &acquirer),
        tlv("51", &national),
        tlv("52", MCC),
        tlv("53", "360"),
        tlv("54", &rupiah_amount(request.amount)),
        tlv("58", "ID"),
        tlv("59", &field_text(request.merchant_name, 25, "MERCHANT")),
        tlv("60", &field_text(request.merchant_city, 15, "JAKARTA")),
        tlv("62", &additional),
    ]
    .concat();
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

fn tlv(tag: &str, value: &str) -> String {
    debug_assert!(value.len() < 100, "EMVCo values are at most 99 bytes");
    format!("{tag}{:02}{value}", value.len())
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
