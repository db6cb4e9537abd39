//! Why a payment was refused: stable codes, listed in llms.txt and the OpenAPI document.

/// A refused or failed payment. Nothing is charged for any of these; the messages never
/// quote the caller's payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaymentError {
    #[error("the payment header is not base64 of a JSON PaymentPayload")]
    HeaderInvalid,
    #[error("only x402Version 2 is accepted")]
    UnsupportedVersion,
    #[error("the accepted requirement matches none of the offered ones")]
    NoMatchingRequirements,
    #[error("the scheme payload is malformed")]
    PayloadInvalid,
    #[error("the authorization pays someone other than the offered payTo")]
    RecipientMismatch,
    #[error("the authorized amount differs from the price")]
    AmountMismatch,
    #[error("the authorization expires too soon or has expired")]
    AuthorizationExpired,
    #[error("the authorization is not valid yet")]
    AuthorizationNotYetValid,
    #[error("the authorization stays valid longer than the offer's maxTimeoutSeconds")]
    ValidityTooLong,
    #[error("the signature does not verify for the payer")]
    InvalidSignature,
    #[error("the payment-identifier id is not 16 to 128 characters of [A-Za-z0-9_-]")]
    InvalidPaymentIdentifier,
    #[error("this payment was already used")]
    Replayed,
    #[error("the facilitator rejected the payment ({0})")]
    Rejected(String),
    #[error("settlement failed ({0})")]
    SettlementFailed(String),
    #[error("the payment facilitator is unreachable")]
    FacilitatorUnavailable,
    #[error("the facilitator refused too many of this client's payments lately")]
    TooManyRefused { retry_after: u64 },
    #[error("this server is not configured to settle payments")]
    NotConfigured,
}

/// Every payment error code (answered 402 with a new PaymentRequired) with its meaning. An
/// unreachable facilitator is not a payment error but a retryable 503 in the common error
/// shape (`facilitator_unavailable`, see [`crate::errors::ERROR_CODES`]).
pub const PAYMENT_ERROR_CODES: &[(&str, u16, &str)] = &[
    (
        "payment_header_invalid",
        402,
        "PAYMENT-SIGNATURE (or MCP _meta x402/payment) is not a base64/JSON x402 PaymentPayload.",
    ),
    (
        "invalid_x402_version",
        402,
        "The payload's x402Version is not 2.",
    ),
    (
        "no_matching_payment_requirements",
        402,
        "`accepted` matches none of the offered requirements (scheme, network, amount, asset, payTo, maxTimeoutSeconds, extra).",
    ),
    (
        "invalid_payload",
        402,
        "The scheme payload (EVM authorization and signature, or Solana transaction) is malformed.",
    ),
    (
        "recipient_mismatch",
        402,
        "The authorization pays an address other than the offered payTo.",
    ),
    (
        "amount_mismatch",
        402,
        "The authorized amount is not exactly the price.",
    ),
    (
        "authorization_expired",
        402,
        "validBefore is in the past or less than 6 seconds away.",
    ),
    (
        "authorization_not_yet_valid",
        402,
        "validAfter is in the future.",
    ),
    (
        "authorization_validity_too_long",
        402,
        "validBefore is further in the future than the offer's maxTimeoutSeconds plus 120 seconds of clock skew.",
    ),
    (
        "invalid_signature",
        402,
        "The signature has no form the exact-EVM scheme admits (65-byte ECDSA that recovers to `from` with low s and v 27/28; an ERC-1271 signature of 66 to 4096 bytes; a well-formed ERC-6492 wrapper), or a Solana signature does not verify.",
    ),
    (
        "invalid_payment_identifier",
        402,
        "extensions[\"payment-identifier\"].info.id is not 16 to 128 characters of A-Z, a-z, 0-9, - and _.",
    ),
    (
        "payment_replayed",
        402,
        "This payment (payer and nonce, or Solana transaction) was already presented once.",
    ),
    (
        "facilitator_rejected",
        402,
        "The facilitator's /verify refused the payment; `reason` carries its invalidReason (e.g. insufficient_funds).",
    ),
    (
        "settlement_failed",
        402,
        "Settlement failed after the work was done; no result is returned and PAYMENT-RESPONSE has success false.",
    ),
    (
        "payment_settlement_unavailable",
        402,
        "This server has no facilitator configured, so it cannot accept payments; use the free allowance.",
    ),
];

impl PaymentError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            PaymentError::HeaderInvalid => "payment_header_invalid",
            PaymentError::UnsupportedVersion => "invalid_x402_version",
            PaymentError::NoMatchingRequirements => "no_matching_payment_requirements",
            PaymentError::PayloadInvalid => "invalid_payload",
            PaymentError::RecipientMismatch => "recipient_mismatch",
            PaymentError::AmountMismatch => "amount_mismatch",
            PaymentError::AuthorizationExpired => "authorization_expired",
            PaymentError::AuthorizationNotYetValid => "authorization_not_yet_valid",
            PaymentError::ValidityTooLong => "authorization_validity_too_long",
            PaymentError::InvalidSignature => "invalid_signature",
            PaymentError::InvalidPaymentIdentifier => "invalid_payment_identifier",
            PaymentError::Replayed => "payment_replayed",
            PaymentError::Rejected(_) => "facilitator_rejected",
            PaymentError::SettlementFailed(_) => "settlement_failed",
            PaymentError::FacilitatorUnavailable => "facilitator_unavailable",
            PaymentError::TooManyRefused { .. } => "too_many_requests",
            PaymentError::NotConfigured => "payment_settlement_unavailable",
        }
    }

    /// The facilitator's own reason, when it gave one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            PaymentError::Rejected(r) | PaymentError::SettlementFailed(r) => Some(r),
            _ => None,
        }
    }

    /// Whether the same payment may succeed later (only when the facilitator was unreachable).
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            PaymentError::FacilitatorUnavailable | PaymentError::TooManyRefused { .. }
        )
    }

    /// What the payer should do.
    pub fn fix(&self) -> &'static str {
        match self {
            PaymentError::HeaderInvalid | PaymentError::PayloadInvalid => {
                "Build the payment with an x402 v2 client from the PAYMENT-REQUIRED header of this answer."
            }
            PaymentError::UnsupportedVersion => "Send an x402 v2 PaymentPayload.",
            PaymentError::NoMatchingRequirements => {
                "Copy one entry of `accepts` unchanged into `accepted`."
            }
            PaymentError::RecipientMismatch | PaymentError::AmountMismatch => {
                "Sign an authorization for exactly the offered payTo and amount."
            }
            PaymentError::AuthorizationExpired
            | PaymentError::AuthorizationNotYetValid
            | PaymentError::ValidityTooLong => {
                "Sign a fresh authorization valid from now for maxTimeoutSeconds."
            }
            PaymentError::InvalidSignature => "Sign the authorization with the payer's key.",
            PaymentError::InvalidPaymentIdentifier => {
                "Send an id of 16 to 128 characters of A-Z, a-z, 0-9, - and _ (e.g. pay_ and a UUID's hex), or none."
            }
            PaymentError::Replayed => "Sign a new payment (a new nonce) for each call.",
            PaymentError::Rejected(_) => {
                "See `reason`; fix the cause (e.g. fund the payer) and pay again."
            }
            PaymentError::SettlementFailed(_) => {
                "Nothing was delivered; pay again with a new authorization."
            }
            PaymentError::FacilitatorUnavailable => "Retry the same request shortly.",
            PaymentError::TooManyRefused { .. } => {
                "Fix why the facilitator refuses your payments (see its last reason), then retry after Retry-After."
            }
            PaymentError::NotConfigured => {
                "Use the free allowance, or a server that settles payments."
            }
        }
    }
}

/// A facilitator reason reduced to a safe token: `[a-z0-9_]`, at most 64 characters.
pub fn sanitize_reason(reason: &str) -> String {
    let cleaned: String = reason
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "unspecified".into()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_a_listed_code() {
        let all = [
            PaymentError::HeaderInvalid,
            PaymentError::UnsupportedVersion,
            PaymentError::NoMatchingRequirements,
            PaymentError::PayloadInvalid,
            PaymentError::RecipientMismatch,
            PaymentError::AmountMismatch,
            PaymentError::AuthorizationExpired,
            PaymentError::AuthorizationNotYetValid,
            PaymentError::ValidityTooLong,
            PaymentError::InvalidSignature,
            PaymentError::InvalidPaymentIdentifier,
            PaymentError::Replayed,
            PaymentError::Rejected("x".into()),
            PaymentError::SettlementFailed("x".into()),
            PaymentError::NotConfigured,
        ];
        assert_eq!(all.len(), PAYMENT_ERROR_CODES.len());
        for e in all {
            assert!(PAYMENT_ERROR_CODES.iter().any(|(c, _, _)| *c == e.code()));
        }
        assert!(
            crate::errors::ERROR_CODES
                .iter()
                .any(|(c, _, _)| *c == PaymentError::FacilitatorUnavailable.code())
        );
        assert!(
            crate::errors::ERROR_CODES
                .iter()
                .any(|(c, _, _)| *c == PaymentError::TooManyRefused { retry_after: 1 }.code())
        );
        assert_eq!(
            sanitize_reason("Insufficient funds!"),
            "insufficient_funds_"
        );
    }
}
