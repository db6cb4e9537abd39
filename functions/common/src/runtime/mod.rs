//! The functions' Lambda runtime: the Runtime API loop ([`serve`]) over a blocking client
//! ([`api`]) and the HTTP events read and answered in place ([`event`]), instead of
//! `lambda_http`'s stack (a pooled async client, tower layers, an event enum tried variant by
//! variant, a URL parse, the trace ID set in the environment on every event). Measured in
//! `docs/performance.md` ("A leaner Lambda runtime").

pub mod api;
pub mod event;

use api::{ApiError, Invocation, RuntimeApi};

/// Why an event got no answer: reported to the Runtime API as an invocation error.
#[derive(Debug)]
pub struct Failure {
    /// `errorType`, e.g. `UnsupportedEvent`.
    pub kind: &'static str,
    /// `errorMessage`: never the caller's content.
    pub message: String,
}

/// Serve events one at a time until the Runtime API fails: each event handed to `handle`
/// (inside a span carrying its request ID, so every log line names the invocation) and its
/// answer or failure sent back.
pub fn serve<H>(api: &mut RuntimeApi, mut handle: H) -> Result<(), ApiError>
where
    H: FnMut(Invocation) -> Result<Vec<u8>, Failure>,
{
    loop {
        let invocation = api.next()?;
        let request_id = invocation.request_id.clone();
        let span = tracing::info_span!("invoke", requestId = %request_id);
        match span.in_scope(|| handle(invocation)) {
            Ok(answer) => api.respond(&request_id, &answer)?,
            Err(failure) => {
                tracing::error!(error_type = failure.kind, error = %failure.message, "the event got no answer");
                api.fail(&request_id, failure.kind, &failure.message)?
            }
        }
    }
}
