//! The checkout page's markup (maud; every value escaped as text): the
//! order's state rendered on the server, so the page is right without
//! JavaScript, and the data `checkout.js` needs to keep it live.

use super::text::{text, Text};
use super::{safe_return_url, Outcome, REDIRECT_SECONDS};
use crate::pages::assets;
use crate::pages::language::Language;
use crate::pages::rupiah;
use crate::wire::timestamp;
use maud::{html, Markup, DOCTYPE};
use paygate_engine::domain::{Order, PaymentMethod};

/// What the page shows.
pub struct Checkout<'a> {
    /// The order.
    pub order: &'a Order,
    /// Who is paid.
    pub merchant_name: &'a str,
    /// The server's clock, Unix ms: the countdown is rendered from it and
    /// the script corrects the payer's clock by it.
    pub now_ms: i64,
    /// The page's language.
    pub language: Language,
}

/// The page's own path in `language`: the refresh link and the switch.
fn page_path(order: &Order, language: Language) -> String {
    format!("/checkout/{}?lang={}", order.id, language.tag())
}

/// `mm:ss`, or `h:mm:ss` from an hour up: the script writes the same.
fn remaining(milliseconds: i64) -> String {
    let seconds = milliseconds.max(0) / 1000;
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if hours > 0 {
        format!("{hours}:{minutes:02}:{seconds:02}")
    } else {
        format!("{minutes:02}:{seconds:02}")
    }
}

/// The shell every checkout answer shares.
fn layout(language: Language, title: &str, head: Markup, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang=(language.tag()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="robots" content="noindex";
                title { (title) }
                link rel="stylesheet" href=(assets::url("checkout.css"));
                (head)
            }
            body {
                (body)
            }
        }
    }
}

/// The switch to the other language, keeping the page.
fn language_switch(text: &Text, language: Language, path: &str) -> Markup {
    let other = language.other();
    html! {
        nav class="language" aria-label=(text.language) {
            a href=(path) hreflang=(other.tag()) lang=(other.tag()) { (other.own_name()) }
        }
    }
}

/// The status words of `outcome`.
fn status_text(text: &Text, outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pending => text.pending,
        Outcome::Paid => text.paid,
        Outcome::Expired => text.expired,
        Outcome::Failed => text.failed,
    }
}

/// The checkout page of an order.
pub fn page(checkout: &Checkout) -> Markup {
    let Checkout {
        order,
        merchant_name,
        now_ms,
        language,
    } = *checkout;
    let text = text(language);
    let outcome = Outcome::of(order.status);
    let amount = rupiah::format(order.amount);
    let return_url = safe_return_url(order);
    let title = format!("{} {amount} – {merchant_name}", text.payment);
    // Without JavaScript a paid page still sends the payer on.
    let head = html! {
        @if let (Outcome::Paid, Some(url)) = (outcome, return_url) {
            meta http-equiv="refresh" content=(format!("{REDIRECT_SECONDS};url={url}"));
        }
        script src=(assets::url("checkout.js")) defer {}
    };
    let body = html! {
        main id="checkout" class="checkout"
            data-status-url=(format!("/checkout/{}/status", order.id))
            data-outcome=(outcome.name())
            data-expires-at=[order.expires_at_ms.map(timestamp)]
            data-server-now=(now_ms)
            data-redirect-seconds=(REDIRECT_SECONDS)
            data-text-pending=(text.pending)
            data-text-paid=(text.paid)
            data-text-expired=(text.expired)
            data-text-failed=(text.failed)
            data-text-copied=(text.copied)
            data-text-copy-failed=(text.copy_failed)
        {
            header class="merchant" {
                p class="pay-to" { (text.pay_to) }
                h1 { (merchant_name) }
            }
            div class="amount-box" {
                p class="amount-label" id="amount-label" { (text.amount) }
                p class="amount" aria-labelledby="amount-label" { (amount) }
                p class="reference" { (text.reference) ": " span class="ref-code" { (order.ref_code) } }
            }
            div id="status" class="status-box" role="status" aria-live="polite" aria-atomic="true" {
                p {
                    (text.status) ": "
                    strong id="status-text" class=(format!("status status-{}", outcome.name())) {
                        (status_text(text, outcome))
                    }
                }
            }
            (instructions(checkout, text, &amount, outcome, now_ms))
            (results(text, outcome, return_url))
            (language_switch(text, language, &page_path(order, language.other())))
        }
    };
    layout(language, &title, head, body)
}

/// How to pay: the QR or the virtual account, the countdown and the
/// refresh link. Shown while the order is pending.
fn instructions(checkout: &Checkout, text: &Text, amount: &str, outcome: Outcome, now_ms: i64) -> Markup {
    let order = checkout.order;
    html! {
        section id="pay" class="pay" data-show="pending" hidden[outcome != Outcome::Pending]
            aria-labelledby="pay-heading"
        {
            @match order.payment_method {
                PaymentMethod::Qris => {
                    h2 id="pay-heading" { (text.qris_heading) }
                    img class="qr" src=(format!("/v1/orders/{}/qr.png", order.ref_code))
                        alt=(format!("{} {amount} {} {}", text.qris_alt_pay, text.qris_alt_to, checkout.merchant_name))
                        width="256" height="256";
                    p class="steps" { (text.qris_steps) }
                }
                PaymentMethod::BankTransfer => {
                    h2 id="pay-heading" { (text.va_heading) }
                    p class="steps" { (text.va_steps) }
                    @if let Some(account) = &order.virtual_account {
                        dl class="va" {
                            div {
                                dt { (text.bank) }
                                dd class="va-bank" { (account.bank_short_code) }
                            }
                            div {
                                dt id="va-number-label" { (text.va_number) }
                                dd { span id="va-number" class="va-number" { (account.account_number) } }
                            }
                        }
                        // Shown by the script, which is what makes it work.
                        button id="copy-va" class="button" type="button" data-copy-target="va-number"
                            aria-describedby="va-number-label" hidden { (text.copy) }
                        p id="copy-result" class="copy-result" role="status" aria-live="polite" {}
                    }
                }
            }
            @if let Some(expires_at_ms) = order.expires_at_ms {
                p class="countdown" {
                    (text.time_left) " "
                    time id="countdown" role="timer" datetime=(timestamp(expires_at_ms)) {
                        (remaining(expires_at_ms - now_ms))
                    }
                }
            }
            p class="refresh" {
                a id="refresh" href=(page_path(order, checkout.language)) { (text.refresh) }
            }
        }
    }
}

/// The paid, expired and failed states; the one that holds is shown, the
/// others wait hidden for the script.
fn results(text: &Text, outcome: Outcome, return_url: Option<&str>) -> Markup {
    html! {
        section id="result-paid" class="result result-paid" data-show="paid" hidden[outcome != Outcome::Paid]
            aria-labelledby="paid-heading"
        {
            svg class="result-icon" viewBox="0 0 24 24" width="48" height="48" aria-hidden="true" focusable="false" {
                circle cx="12" cy="12" r="11" fill="currentColor" {}
                path d="M7 12.5l3.2 3.2L17 9" fill="none" stroke="#fff" stroke-width="2.2"
                    stroke-linecap="round" stroke-linejoin="round" {}
            }
            h2 id="paid-heading" { (text.paid_heading) }
            p { (text.paid_body) }
            @if let Some(url) = return_url {
                p id="redirect-note" {
                    (text.redirect_before) " " span id="redirect-seconds" { (REDIRECT_SECONDS) } " " (text.redirect_after)
                }
                p { a id="return-link" class="button" href=(url) { (text.return_link) } }
            }
        }
        section id="result-expired" class="result result-expired" data-show="expired"
            hidden[outcome != Outcome::Expired] aria-labelledby="expired-heading"
        {
            h2 id="expired-heading" { (text.expired_heading) }
            p { (text.expired_body) }
        }
        section id="result-failed" class="result result-failed" data-show="failed"
            hidden[outcome != Outcome::Failed] aria-labelledby="failed-heading"
        {
            h2 id="failed-heading" { (text.failed_heading) }
            p { (text.failed_body) }
        }
    }
}

/// The page of an unknown or malformed order id (404), or of a failure to
/// read it (500): the same layout, no script.
pub fn problem(language: Language, not_found: bool, path: &str) -> Markup {
    let text = text(language);
    let (heading, body) = if not_found {
        (text.not_found_heading, text.not_found_body)
    } else {
        (text.error_heading, text.error_body)
    };
    let title = format!("{heading} – {}", text.payment);
    html! {
        (layout(language, &title, html! {}, html! {
            main class="checkout" {
                header class="merchant" {
                    p class="pay-to" { (text.payment) }
                    h1 { (heading) }
                }
                p class="problem" { (body) }
                (language_switch(text, language, path))
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::remaining;

    #[test]
    fn the_time_left_reads_as_a_clock() {
        assert_eq!(remaining(899_999), "14:59");
        assert_eq!(remaining(60_000), "01:00");
        assert_eq!(remaining(3_600_000), "1:00:00");
        assert_eq!(remaining(86_399_000), "23:59:59");
        assert_eq!(remaining(-5), "00:00");
    }
}
