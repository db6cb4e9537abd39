//! Agent Output Verifier core: the whole domain, no HTTP or Lambda types.
//!
//! - [`request`]: strict parsing and validation of the verification request;
//! - [`checks`]: schema, bounds, rules and content checks;
//! - [`report`]: the full and compact responses;
//! - [`canonical`] and [`hashes`]: RFC 8785 and the four receipt hashes;
//! - [`attest`] and [`keys`]: Ed25519 receipts and a verifier for buyers;
//! - [`identity`]: key-based agent IDs and the signed-deliverable message;
//! - [`cost`]: what a verification will cost (CPU, memory), priced before it runs;
//! - [`engine`]: the pipeline with its compiled-schema cache;
//! - [`payments`]: x402 v2 offers, checks, facilitator and replay guard;
//! - [`service`]: the calls (verify, score, reputation) whatever the transport;
//! - [`routes`]: the one route table every router and document follows.

pub mod attest;
pub mod canonical;
pub mod checks;
pub mod client;
pub mod clock;
pub mod config;
pub mod cost;
pub mod engine;
pub mod errors;
pub mod hashes;
pub mod identity;
pub mod json;
pub mod keys;
pub mod path;
pub mod payments;
pub mod report;
pub mod request;
pub mod request_schema;
pub mod routes;
pub mod schema_doc;
pub mod service;
pub mod ssm_keys;
pub mod store;
pub mod tls;
pub mod trust;
pub mod vectors;

pub use engine::{Engine, EngineConfig, EngineError, Unsigned, Verification};
pub use keys::{PublicKeyEntry, SigningIdentity};
pub use request::{FieldProblem, InvalidRequest, VerifyRequest};

/// The caller's network address as the edge saw it: the socket peer locally,
/// `requestContext.http.sourceIp` on Lambda; never a client-supplied header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAddr(pub String);

/// How many bytes a request's body had as received (MCP measures its free size limit on these,
/// not on the re-serialized tool arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivedBytes(pub usize);
