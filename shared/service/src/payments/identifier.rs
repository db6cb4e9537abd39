//! x402's `payment-identifier` extension (specs/extensions/payment_identifier.md): a client's
//! idempotency key for a payment. Every PaymentRequired declares it (optional); a payment that
//! carries `extensions["payment-identifier"].info.id` (16–128 characters of `[A-Za-z0-9_-]`)
//! gets its settled answer kept under that id until the payment's replay row expires. The same id
//! with the same payment and request returns the kept answer (no second settlement, no second
//! count), the same id with anything else is a 409.

use super::error::PaymentError;
use super::types::PaymentPayload;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The extension's key in `extensions`.
pub const PAYMENT_IDENTIFIER: &str = "payment-identifier";
/// Shortest id accepted.
pub const MIN_ID_CHARS: usize = 16;
/// Longest id accepted.
pub const MAX_ID_CHARS: usize = 128;

/// The declaration every PaymentRequired carries: the id is optional, and its schema.
pub fn declaration() -> Value {
    json!({
        "info": {"required": false},
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "required": {"type": "boolean"},
                "id": {
                    "type": "string",
                    "minLength": MIN_ID_CHARS,
                    "maxLength": MAX_ID_CHARS,
                    "pattern": "^[a-zA-Z0-9_-]+$"
                }
            },
            "required": ["required"]
        }
    })
}

/// Whether `id` has the extension's form.
pub fn valid_id(id: &str) -> bool {
    (MIN_ID_CHARS..=MAX_ID_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The payment's identifier: `None` without the extension or without an `id`; an error when
/// the id is present but not of the extension's form.
pub fn payment_id(payment: &PaymentPayload) -> Result<Option<String>, PaymentError> {
    let Some(info) = payment
        .extensions
        .as_ref()
        .and_then(|e| e.get(PAYMENT_IDENTIFIER))
        .and_then(|ext| ext.get("info"))
    else {
        return Ok(None);
    };
    match info.get("id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if valid_id(id) => Ok(Some(id.clone())),
        Some(_) => Err(PaymentError::InvalidPaymentIdentifier),
    }
}

/// What must be equal for a kept answer to be returned: the chosen requirement, the signed
/// scheme payload and the request it paid for (`request`: the service's own serialization of
/// the parsed request, or the route's argument), as a hex SHA-256.
pub fn fingerprint(payment: &PaymentPayload, resource: &str, request: &[u8]) -> String {
    let mut h = Sha256::new();
    let part = |h: &mut Sha256, bytes: &[u8]| {
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(bytes);
    };
    part(
        &mut h,
        &serde_json::to_vec(&payment.accepted).unwrap_or_default(),
    );
    part(
        &mut h,
        &serde_json::to_vec(&payment.payload).unwrap_or_default(),
    );
    part(&mut h, resource.as_bytes());
    part(&mut h, request);
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_extension(ext: Value) -> PaymentPayload {
        serde_json::from_value(json!({
            "x402Version": 2,
            "accepted": {"scheme": "exact", "network": "eip155:8453", "amount": "1",
                         "asset": "0x0", "payTo": "0x0", "maxTimeoutSeconds": 60, "extra": {}},
            "payload": {"signature": "0x01"},
            "extensions": ext,
        }))
        .expect("payload")
    }

    #[test]
    fn ids_follow_the_extension() {
        let ok = "pay_7d5d747be160e280504c099d984bcfe0";
        let p =
            with_extension(json!({PAYMENT_IDENTIFIER: {"info": {"required": false, "id": ok}}}));
        assert_eq!(payment_id(&p), Ok(Some(ok.to_owned())));
        assert_eq!(payment_id(&with_extension(json!({}))), Ok(None));
        let declared_only =
            with_extension(json!({PAYMENT_IDENTIFIER: {"info": {"required": false}}}));
        assert_eq!(payment_id(&declared_only), Ok(None));
        for bad in [
            json!("short"),
            json!("x".repeat(129)),
            json!("pay <b>1234567890</b>"),
            json!(7),
        ] {
            let p = with_extension(json!({PAYMENT_IDENTIFIER: {"info": {"id": bad}}}));
            assert_eq!(payment_id(&p), Err(PaymentError::InvalidPaymentIdentifier));
        }
    }

    #[test]
    fn the_fingerprint_changes_with_payment_resource_or_request() {
        let p = with_extension(json!({}));
        let base = fingerprint(&p, "/verify/schema", b"{}");
        assert_eq!(base, fingerprint(&p, "/verify/schema", b"{}"));
        assert_ne!(base, fingerprint(&p, "/verify/deliverable", b"{}"));
        assert_ne!(base, fingerprint(&p, "/verify/schema", b"{\"a\":1}"));
        let mut other = p.clone();
        other.payload = json!({"signature": "0x02"});
        assert_ne!(base, fingerprint(&other, "/verify/schema", b"{}"));
        // The extension itself (the id) is not part of what is compared.
        let mut with_id = p.clone();
        with_id.extensions = Some(json!({PAYMENT_IDENTIFIER: {"info": {"id": "a".repeat(16)}}}));
        assert_eq!(base, fingerprint(&with_id, "/verify/schema", b"{}"));
    }
}
