//! The Agent Output Verifier engine: a verification request read strictly, its checks
//! (JSON Schema, bounds, business rules, content), the cost model that prices them before they
//! run, and the report — signed with the receipt crate's keys. Pure and synchronous: no async
//! runtime, network, storage or cloud SDK, so the same verdict can be computed anywhere.
//!
//! - [`request`]: strict parsing and validation of the verification request ([`problem`]: what
//!   is wrong with one);
//! - [`checks`]: schema, bounds, rules and content checks;
//! - [`cost`]: what a verification will cost (CPU, memory), priced before it runs;
//! - [`engine`]: the pipeline with its compiled-schema cache;
//! - [`report`]: the full and compact responses;
//! - [`identity`]: key-based agent IDs and their signatures;
//! - [`trust`]: the trust score.

pub mod checks;
pub mod cost;
pub mod engine;
pub mod expression;
pub mod identity;
pub mod json;
pub mod path;
pub mod problem;
pub mod report;
pub mod request;
pub mod request_schema;
pub mod schema_doc;
pub mod trust;
pub mod vectors;

pub use engine::{Engine, EngineConfig, EngineError, Unsigned, Verification};
pub use problem::{FieldProblem, InvalidRequest};
pub use request::VerifyRequest;
pub use verifier_receipt as receipt;
pub use verifier_receipt::{PublicKeyEntry, SigningIdentity};
