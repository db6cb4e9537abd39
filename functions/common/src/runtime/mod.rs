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
///
/// The wait for the next event is a blocking read on the runtime's blocking thread, while
/// `runtime` runs its background tasks (the key and block refreshes: a handler that never
/// waits would not let them run, and Lambda freezes the process only once it asks for the
/// next event, as with the stock runtime); the answer is sent from the runtime's thread.
pub fn serve<H>(
    runtime: &tokio::runtime::Runtime,
    mut api: RuntimeApi,
    mut handle: H,
) -> Result<(), ApiError>
where
    H: FnMut(Invocation) -> Result<Vec<u8>, Failure>,
{
    loop {
        let (returned, next) = runtime
            .block_on(runtime.spawn_blocking(move || {
                let next = api.next_event();
                (api, next)
            }))
            .map_err(|_| ApiError::Framing("the wait for the next event ended in a panic"))?;
        api = returned;
        let invocation = next?;
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
