//! The Agent Output Verifier service's ports: what the service needs from the outside, as
//! traits and the types they speak, so adapters (the embedded and DynamoDB stores, SSM/KMS keys,
//! the facilitator's HTTP client) build against these and not against the engine: a change in
//! a check rebuilds the engine and the service, not the adapters.
//!
//! - [`store`]: the free allowance, the agent histories, the payment replay guard;
//! - [`keys`]: the active signing key and the public key ring;
//! - [`facilitator`]: an x402 facilitator, and [`x402`] the wire types it speaks;
//! - [`clock`]: time (injectable for tests).

pub mod clock;
pub mod facilitator;
pub mod keys;
pub mod no_table;
pub mod store;
pub mod x402;

pub use verifier_receipt as receipt;
