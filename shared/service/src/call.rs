//! A verification call as every step of it sees it (the verification, its pricing, its
//! payment), and a store failure as the caller sees it.

use super::Resource;
use crate::errors::ApiError;
use crate::payments::PaymentInput;
use std::sync::Arc;
use verifier_engine::request::VerifyRequest;
use verifier_ports::store::StoreError;

/// A verification call as a transport received it.
pub struct VerifyCall<'a> {
    /// The caller's address (the allowance is per address).
    pub client: &'a str,
    /// The parsed, valid request.
    pub request: Arc<VerifyRequest>,
    /// Size of the request as received (bodies over the free size limit are never free).
    pub body_len: usize,
    pub payment: &'a PaymentInput,
    pub resource: Resource,
}

/// A store failure as the caller sees it: retryable, nothing charged.
pub fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Unavailable => ApiError::StoreUnavailable { retry_after: 1 },
        StoreError::Backend(detail) => {
            tracing::error!(error = %detail, "store failed");
            ApiError::StoreUnavailable { retry_after: 2 }
        }
    }
}
