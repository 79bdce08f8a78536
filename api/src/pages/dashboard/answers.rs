//! What the dashboard's routes answer, declared once per kind of route for
//! the API document: a signed-in page, a form whose outcome is shown in
//! place, and a form that goes back to its page; and once each, the answers
//! routes of other kinds share (from the extractors they share, or the
//! resource they show), beside their own.

use utoipa::IntoResponses;

/// A signed-in page.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum PageAnswers {
    /// The page.
    #[response(status = 200, content_type = "text/html")]
    Page(String),
    /// Not signed in: to the sign-in page.
    #[response(status = 303)]
    SignIn,
}

/// A form whose outcome the page shows in place.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum ShownFormAnswers {
    /// Taken: the page shows the outcome.
    #[response(status = 200, content_type = "text/html")]
    Taken(String),
    /// Not taken: the page says why.
    #[response(status = 400, content_type = "text/html")]
    Refused(String),
    /// The form's token is missing or wrong.
    #[response(status = 403, content_type = "text/html")]
    BadToken(String),
}

/// A form that goes back to its page once taken.
#[derive(IntoResponses)]
#[allow(dead_code)]
pub enum RedirectingFormAnswers {
    /// Taken: back to the page, which shows the change.
    #[response(status = 303)]
    Taken,
    /// Not taken: the page says why.
    #[response(status = 400, content_type = "text/html")]
    Refused(String),
    /// The form's token is missing or wrong.
    #[response(status = 403, content_type = "text/html")]
    BadToken(String),
}

/// Not signed in: to the sign-in page.
#[derive(IntoResponses)]
#[response(status = 303)]
pub struct SignInAnswer;

/// The form's token is missing or wrong.
#[derive(IntoResponses)]
#[response(status = 403, content_type = "text/html")]
#[allow(dead_code)]
pub struct BadTokenAnswer(String);

/// No such order of this merchant.
#[derive(IntoResponses)]
#[response(status = 404, content_type = "text/html")]
#[allow(dead_code)]
pub struct OrderNotFoundAnswer(String);
