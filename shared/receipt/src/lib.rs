//! The receipt of an Agent Output Verifier verification, for anyone who holds one: RFC 8785
//! canonical JSON, the four receipt hashes, the signed document and its Ed25519 attestation,
//! key lists (an agent card, a list, one key), and the message a seller signs for a
//! deliverable. No runtime, network or storage: a buyer embeds this to check a receipt offline.
//!
//! - [`canonical`]: RFC 8785 and SHA-256;
//! - [`hashes`]: `output_hash`, `schema_hash`, `rules_hash`, `request_hash`;
//! - [`attest`]: signing a response and [`verify_receipt`];
//! - [`binding`]: whether a genuine receipt is about the output, schema and rules you hold;
//! - [`keys`]: signing keys, public key entries, key lists;
//! - [`deliverable`]: the signed-deliverable message and a `did:key` signer;
//! - [`timestamp`]: the receipts' time format.

pub mod attest;
pub mod binding;
pub mod canonical;
pub mod deliverable;
pub mod hashes;
pub mod keys;
pub mod timestamp;

pub use attest::{ReceiptError, VerifiedReceipt, verify_receipt, verify_receipt_in_context};
pub use binding::{BindingError, ExpectedHashes, check_binding};
pub use hashes::{HashInput, ReceiptHashes, receipt_hashes};
pub use keys::{KeyError, PublicKeyEntry, SigningIdentity, parse_key_list};
