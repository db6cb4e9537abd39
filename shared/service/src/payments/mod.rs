//! x402 v2 payments for the seller side: what is offered, the wire types, decoding a client's
//! payment, local checks (EVM and Solana), the facilitator client, and the gate that ties them
//! to the replay guard.

pub mod bazaar;
pub mod error;
pub mod evm;
pub mod gate;
pub mod identifier;
pub mod offer;
pub mod refusals;
pub mod svm;
/// The x402 wire types (the facilitator port speaks them).
pub use verifier_ports::x402 as types;

pub use error::{PAYMENT_ERROR_CODES, PaymentError};
pub use gate::{Authorized, Checked, Inspected, PaymentGate, PaymentInput, SettleFailure};
pub use offer::{FreeTrialState, accepts, encode_header, free_trial, payment_required, resource};
pub use types::{PaymentPayload, PaymentRequired, PaymentRequirements, SettlementResponse};
