//! What every function's router shares: turning a [`Reply`](verifier_service::Reply)
//! into an HTTP response, reading the client address and the payment header, and CORS.

pub mod body;
pub mod client;
pub mod cors;
pub mod lambda;
#[doc(hidden)] // for the functions' tests only
pub mod linked_code;
pub mod request_metrics;
pub mod respond;
pub mod runtime;

pub use client::client_address;
pub use respond::{PricePath, payment_input, reply};
