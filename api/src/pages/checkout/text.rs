//! Every word the checkout page shows, in Bahasa Indonesia and in English:
//! one struct per language, so a string missing in one fails the build.

use crate::pages::language::Language;

/// The page's words in one language.
pub struct Text {
    /// `<title>` prefix and the 404 page's brand line.
    pub payment: &'static str,
    /// Above the merchant's name.
    pub pay_to: &'static str,
    /// Above the amount.
    pub amount: &'static str,
    /// Before the order's ref code.
    pub reference: &'static str,
    /// Before the status in the live region.
    pub status: &'static str,
    /// The status while unpaid.
    pub pending: &'static str,
    /// The status once paid (refunds included: the payer's part is done).
    pub paid: &'static str,
    /// The status once expired.
    pub expired: &'static str,
    /// The status once failed.
    pub failed: &'static str,
    /// Before the countdown.
    pub time_left: &'static str,
    /// Heading of the QRIS instructions.
    pub qris_heading: &'static str,
    /// How to pay by QRIS.
    pub qris_steps: &'static str,
    /// The QR image's alt text before the amount and the merchant's name.
    pub qris_alt_pay: &'static str,
    /// Between the amount and the merchant's name in the alt text.
    pub qris_alt_to: &'static str,
    /// Heading of the virtual account instructions.
    pub va_heading: &'static str,
    /// How to pay by transfer.
    pub va_steps: &'static str,
    /// Label of the bank.
    pub bank: &'static str,
    /// Label of the account number.
    pub va_number: &'static str,
    /// The copy button.
    pub copy: &'static str,
    /// Said once the number is on the clipboard.
    pub copied: &'static str,
    /// Said when the browser would not copy.
    pub copy_failed: &'static str,
    /// Heading of the paid state.
    pub paid_heading: &'static str,
    /// Body of the paid state.
    pub paid_body: &'static str,
    /// Before the seconds until the redirect.
    pub redirect_before: &'static str,
    /// After the seconds until the redirect.
    pub redirect_after: &'static str,
    /// The link back to the merchant.
    pub return_link: &'static str,
    /// Heading of the expired state.
    pub expired_heading: &'static str,
    /// Body of the expired state.
    pub expired_body: &'static str,
    /// Heading of the failed state.
    pub failed_heading: &'static str,
    /// Body of the failed state.
    pub failed_body: &'static str,
    /// The link that reloads the page (the state without JavaScript).
    pub refresh: &'static str,
    /// Label of the language switch.
    pub language: &'static str,
    /// Heading of the 404 page.
    pub not_found_heading: &'static str,
    /// Body of the 404 page.
    pub not_found_body: &'static str,
    /// Heading of the 500 page.
    pub error_heading: &'static str,
    /// Body of the 500 page.
    pub error_body: &'static str,
}

const INDONESIAN: Text = Text {
    payment: "Pembayaran",
    pay_to: "Bayar ke",
    amount: "Total pembayaran",
    reference: "Nomor referensi",
    status: "Status",
    pending: "Menunggu pembayaran",
    paid: "Pembayaran berhasil",
    expired: "Waktu pembayaran habis",
    failed: "Pembayaran gagal",
    time_left: "Sisa waktu",
    qris_heading: "Bayar dengan QRIS",
    qris_steps: "Pindai kode QR ini dengan aplikasi bank atau dompet digital yang mendukung QRIS.",
    qris_alt_pay: "Kode QR QRIS untuk membayar",
    qris_alt_to: "ke",
    va_heading: "Transfer ke virtual account",
    va_steps: "Transfer tepat sebesar total pembayaran ke nomor virtual account ini.",
    bank: "Bank",
    va_number: "Nomor virtual account",
    copy: "Salin nomor",
    copied: "Nomor virtual account disalin.",
    copy_failed: "Tidak dapat menyalin. Salin nomor secara manual.",
    paid_heading: "Pembayaran berhasil",
    paid_body: "Terima kasih, pembayaran Anda sudah kami terima.",
    redirect_before: "Anda akan diarahkan kembali ke merchant dalam",
    redirect_after: "detik.",
    return_link: "Kembali ke merchant",
    expired_heading: "Waktu pembayaran habis",
    expired_body: "Pesanan ini tidak dibayar tepat waktu. Jangan membayar pesanan ini; minta tautan pembayaran baru kepada merchant.",
    failed_heading: "Pembayaran gagal",
    failed_body: "Pembayaran ini tidak dapat diselesaikan. Hubungi merchant untuk mencoba lagi.",
    refresh: "Perbarui status",
    language: "Bahasa",
    not_found_heading: "Halaman tidak ditemukan",
    not_found_body: "Tautan pembayaran ini tidak dikenal. Periksa kembali tautan yang Anda terima dari merchant.",
    error_heading: "Terjadi kesalahan",
    error_body: "Halaman ini tidak dapat ditampilkan sekarang. Coba lagi sebentar lagi.",
};

const ENGLISH: Text = Text {
    payment: "Payment",
    pay_to: "Pay to",
    amount: "Amount to pay",
    reference: "Reference",
    status: "Status",
    pending: "Waiting for payment",
    paid: "Payment received",
    expired: "Payment time is over",
    failed: "Payment failed",
    time_left: "Time left",
    qris_heading: "Pay with QRIS",
    qris_steps: "Scan this QR code with any banking or e-wallet app that supports QRIS.",
    qris_alt_pay: "QRIS code to pay",
    qris_alt_to: "to",
    va_heading: "Transfer to a virtual account",
    va_steps: "Transfer exactly the amount to pay to this virtual account number.",
    bank: "Bank",
    va_number: "Virtual account number",
    copy: "Copy number",
    copied: "Virtual account number copied.",
    copy_failed: "Could not copy. Please copy the number by hand.",
    paid_heading: "Payment received",
    paid_body: "Thank you, we have received your payment.",
    redirect_before: "You will be taken back to the merchant in",
    redirect_after: "seconds.",
    return_link: "Return to the merchant",
    expired_heading: "Payment time is over",
    expired_body: "This order was not paid in time. Do not pay it; ask the merchant for a new payment link.",
    failed_heading: "Payment failed",
    failed_body: "This payment could not be completed. Contact the merchant to try again.",
    refresh: "Refresh status",
    language: "Language",
    not_found_heading: "Page not found",
    not_found_body: "This payment link is not known. Check the link the merchant gave you.",
    error_heading: "Something went wrong",
    error_body: "This page cannot be shown right now. Please try again in a moment.",
};

/// The words of `language`.
pub fn text(language: Language) -> &'static Text {
    match language {
        Language::Indonesian => &INDONESIAN,
        Language::English => &ENGLISH,
    }
}
