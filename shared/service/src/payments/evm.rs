//! Local checks of an `exact` EVM payment (EIP-3009 `transferWithAuthorization`), done before
//! the facilitator is asked: recipient, exact amount, validity window (not longer than the
//! offer's `maxTimeoutSeconds`), and the signature in one of the forms x402's exact-EVM scheme
//! admits:
//!
//! - 65 bytes: an ECDSA signature (an externally owned account), recovered here to the payer
//!   with low `s` and `v` in {27, 28}, as USDC requires;
//! - ERC-6492 (ends with the 32-byte magic suffix): a not-yet-deployed smart wallet's signature,
//!   `abi.encode(factory, factoryCalldata, innerSignature)`; its structure is decoded here,
//!   the wallet's own check needs the chain and is the facilitator's;
//! - any other length from 66 bytes up to [`MAX_SIGNATURE_BYTES`]: an ERC-1271 smart-wallet
//!   signature (a multisig's concatenated signatures, a passkey wallet's encoded assertion),
//!   which only the wallet contract can check, so the facilitator's simulation does.
//!
//! Shorter signatures, longer ones and malformed ERC-6492 wrappers never reach the facilitator.

use super::error::PaymentError;
use super::types::{PaymentPayload, PaymentRequirements};
use alloy_primitives::{Address, B256, Signature, U256};
use alloy_sol_types::{Eip712Domain, SolStruct, sol};
use serde::Deserialize;
use std::str::FromStr;

sol! {
    /// EIP-3009's signed message.
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// secp256k1's order divided by two: signatures with a larger `s` are malleable copies.
const HALF_ORDER: U256 = U256::from_be_slice(&[
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
]);

/// Seconds a payment must stay valid beyond now (block time), as the reference facilitators use.
const VALIDITY_BUFFER: u64 = 6;

/// Seconds a payer's clock may run ahead of ours: `validBefore` may be up to
/// `maxTimeoutSeconds` plus this much in the future (the x402 clients sign
/// `validBefore = now + maxTimeoutSeconds`).
pub const CLOCK_SKEW_SECONDS: u64 = 120;

/// The longest signature accepted (bytes): ERC-6492 wrappers of passkey smart wallets are a
/// few hundred bytes to about 2 KB; anything longer is refused before any network call.
pub const MAX_SIGNATURE_BYTES: usize = 4096;

/// ERC-6492's suffix marking a wrapped signature of a counterfactual (undeployed) wallet.
const ERC6492_MAGIC: [u8; 32] = [
    0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92,
    0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92, 0x64, 0x92,
];

/// How a payment's signature is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureForm {
    /// 65-byte ECDSA, recovered to the payer here.
    Ecdsa,
    /// An ERC-1271 smart-wallet signature: only the chain can check it.
    SmartWallet,
    /// An ERC-6492-wrapped signature of an undeployed wallet, decoded here.
    Erc6492,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Authorization {
    from: String,
    to: String,
    value: String,
    valid_after: String,
    valid_before: String,
    nonce: String,
}

#[derive(Deserialize)]
struct ExactEvmPayload {
    signature: String,
    authorization: Authorization,
}

/// What the local checks established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedEvm {
    /// The payer, lowercase hex with `0x`.
    pub payer: String,
    /// The authorization nonce, lowercase hex with `0x`.
    pub nonce: String,
    /// Unix seconds before which the authorization cannot be used (saturated at `u64::MAX`).
    pub valid_after: u64,
    /// Unix seconds after which the authorization is worthless (saturated at `u64::MAX`;
    /// [`check_window`] holds it to `maxTimeoutSeconds` plus the clock skew from now).
    pub valid_before: u64,
    /// The signature's form.
    pub signature_form: SignatureForm,
}

/// Which form `signature` has, refusing what no form admits.
fn signature_form(signature: &[u8]) -> Result<SignatureForm, PaymentError> {
    if signature.len() > MAX_SIGNATURE_BYTES || signature.len() < 65 {
        return Err(PaymentError::InvalidSignature);
    }
    if signature.len() == 65 {
        return Ok(SignatureForm::Ecdsa);
    }
    let Some(wrapped) = signature.strip_suffix(&ERC6492_MAGIC) else {
        return Ok(SignatureForm::SmartWallet);
    };
    use alloy_sol_types::SolValue;
    type Wrapper = (Address, alloy_primitives::Bytes, alloy_primitives::Bytes);
    let (factory, calldata, inner) =
        Wrapper::abi_decode_params(wrapped).map_err(|_| PaymentError::InvalidSignature)?;
    if factory == Address::ZERO || calldata.is_empty() || inner.len() < 65 {
        return Err(PaymentError::InvalidSignature);
    }
    Ok(SignatureForm::Erc6492)
}

fn uint(text: &str) -> Result<U256, PaymentError> {
    U256::from_str_radix(text, 10).map_err(|_| PaymentError::PayloadInvalid)
}

/// The chain id of an `eip155:<id>` network.
pub fn chain_id(network: &str) -> Option<u64> {
    network.strip_prefix("eip155:")?.parse().ok()
}

/// The EIP-712 digest a payer signs for `auth` under the requirement's token domain.
fn signing_hash(
    req: &PaymentRequirements,
    msg: &TransferWithAuthorization,
) -> Result<B256, PaymentError> {
    let text = |key: &str| {
        req.extra
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or(PaymentError::NoMatchingRequirements)
    };
    let chain = chain_id(&req.network).ok_or(PaymentError::NoMatchingRequirements)?;
    let asset = Address::from_str(&req.asset).map_err(|_| PaymentError::NoMatchingRequirements)?;
    let domain = Eip712Domain::new(
        Some(text("name")?.into()),
        Some(text("version")?.into()),
        Some(U256::from(chain)),
        Some(asset),
        None,
    );
    Ok(msg.eip712_signing_hash(&domain))
}

/// Check an EVM `exact` payment against the requirement it matched, at unix time `now`:
/// [`inspect`], then [`check_window`].
pub fn check(
    payment: &PaymentPayload,
    req: &PaymentRequirements,
    now: u64,
) -> Result<CheckedEvm, PaymentError> {
    let checked = inspect(payment, req)?;
    check_window(&checked, req, now)?;
    Ok(checked)
}

/// The authorization's validity window at unix time `now`: not expired (with a buffer for
/// settlement), not valid for longer than the offer's `maxTimeoutSeconds` plus clock skew,
/// already valid.
pub fn check_window(
    checked: &CheckedEvm,
    req: &PaymentRequirements,
    now: u64,
) -> Result<(), PaymentError> {
    if checked.valid_before < now.saturating_add(VALIDITY_BUFFER) {
        return Err(PaymentError::AuthorizationExpired);
    }
    let latest = now
        .saturating_add(req.max_timeout_seconds)
        .saturating_add(CLOCK_SKEW_SECONDS);
    if checked.valid_before > latest {
        return Err(PaymentError::ValidityTooLong);
    }
    if checked.valid_after > now {
        return Err(PaymentError::AuthorizationNotYetValid);
    }
    Ok(())
}

/// The checks that do not depend on the time: recipient, amount, a nonce, and the signature
/// in a form the exact-EVM scheme admits (an ECDSA one recovered to the payer).
pub fn inspect(
    payment: &PaymentPayload,
    req: &PaymentRequirements,
) -> Result<CheckedEvm, PaymentError> {
    let payload: ExactEvmPayload = serde_json::from_value(payment.payload.clone())
        .map_err(|_| PaymentError::PayloadInvalid)?;
    let auth = &payload.authorization;
    let from = Address::from_str(&auth.from).map_err(|_| PaymentError::PayloadInvalid)?;
    let to = Address::from_str(&auth.to).map_err(|_| PaymentError::PayloadInvalid)?;
    let pay_to =
        Address::from_str(&req.pay_to).map_err(|_| PaymentError::NoMatchingRequirements)?;
    if to != pay_to {
        return Err(PaymentError::RecipientMismatch);
    }
    let value = uint(&auth.value)?;
    if value != uint(&req.amount).map_err(|_| PaymentError::NoMatchingRequirements)? {
        return Err(PaymentError::AmountMismatch);
    }
    let valid_after = uint(&auth.valid_after)?;
    let valid_before = uint(&auth.valid_before)?;
    let nonce = B256::from_str(&auth.nonce).map_err(|_| PaymentError::PayloadInvalid)?;

    let signature = alloy_primitives::hex::decode(&payload.signature)
        .map_err(|_| PaymentError::InvalidSignature)?;
    let form = signature_form(&signature)?;
    if form == SignatureForm::Ecdsa {
        if !matches!(signature[64], 27 | 28) {
            return Err(PaymentError::InvalidSignature);
        }
        if U256::from_be_slice(&signature[32..64]) > HALF_ORDER {
            return Err(PaymentError::InvalidSignature);
        }
        let msg = TransferWithAuthorization {
            from,
            to,
            value,
            validAfter: valid_after,
            validBefore: valid_before,
            nonce,
        };
        let digest = signing_hash(req, &msg)?;
        let sig = Signature::try_from(signature.as_slice())
            .map_err(|_| PaymentError::InvalidSignature)?;
        let signer = sig
            .recover_address_from_prehash(&digest)
            .map_err(|_| PaymentError::InvalidSignature)?;
        if signer != from {
            return Err(PaymentError::InvalidSignature);
        }
    }
    Ok(CheckedEvm {
        payer: format!("{from:#x}"),
        nonce: format!("{nonce:#x}"),
        valid_after: u64::try_from(valid_after).unwrap_or(u64::MAX),
        valid_before: u64::try_from(valid_before).unwrap_or(u64::MAX),
        signature_form: form,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The x402 notes' vector: made with the Python x402 client, key 0x59c6…690d.
    fn vector() -> (PaymentPayload, PaymentRequirements) {
        let req = PaymentRequirements {
            scheme: "exact".into(),
            network: "eip155:8453".into(),
            amount: "20000".into(),
            asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
            pay_to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C".into(),
            max_timeout_seconds: 60,
            extra: json!({"name": "USD Coin", "version": "2"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let payment = PaymentPayload {
            x402_version: 2,
            resource: None,
            accepted: req.clone(),
            payload: json!({
                "signature": "0xdfc1b3e934a375e92adadb61a0ca7fbff61512f04cb2a685d52ec8a51e1c0162513a67fb7ecc10d44563f6ce45d3d7fda26cf2af1dcd3244b5cc8b0564ef0b131b",
                "authorization": {
                    "from": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
                    "to": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
                    "value": "20000",
                    "validAfter": "0",
                    "validBefore": "1900000000",
                    "nonce": "0x1111111111111111111111111111111111111111111111111111111111111111"
                }
            }),
            extensions: None,
        };
        (payment, req)
    }

    #[test]
    fn the_reference_vector_recovers_its_payer() {
        let (payment, req) = vector();
        let now = 1_899_999_950;
        let checked = check(&payment, &req, now).expect("valid");
        assert_eq!(checked.payer, "0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
        assert_eq!(checked.valid_before, 1_900_000_000);
        let auth = TransferWithAuthorization {
            from: Address::from_str("0x70997970C51812dc3A010C7d01b50e0d17dc79C8").expect("addr"),
            to: Address::from_str(&req.pay_to).expect("addr"),
            value: U256::from(20000u64),
            validAfter: U256::ZERO,
            validBefore: U256::from(1_900_000_000u64),
            nonce: B256::repeat_byte(0x11),
        };
        assert_eq!(
            format!("{:#x}", signing_hash(&req, &auth).expect("digest")),
            "0xd007d95039bc4ce155b782727335cd90795a3bbe81d2b1ec3d7a1c67a0826db3"
        );
    }

    /// The time-independent checks pass an expired authorization (a kept answer may be
    /// fetched with it) and still refuse a bad signature; the window alone judges the time.
    #[test]
    fn inspection_is_independent_of_the_time_and_the_window_is_not() {
        let (payment, req) = vector();
        let expired = 1_900_000_100;
        let checked = inspect(&payment, &req).expect("the signature and amounts are right");
        assert_eq!(
            check_window(&checked, &req, expired),
            Err(PaymentError::AuthorizationExpired)
        );
        assert_eq!(check_window(&checked, &req, 1_899_999_950), Ok(()));
        let mut forged = payment.clone();
        forged.payload["signature"] = format!("0x{}", "ab".repeat(65)).into();
        assert_eq!(
            inspect(&forged, &req).map(|_| ()),
            Err(PaymentError::InvalidSignature)
        );
    }

    #[test]
    fn tampering_is_caught_locally() {
        let (payment, req) = vector();
        let now = 1_899_999_950;
        let with = |path: &str, value: serde_json::Value| {
            let mut p = payment.clone();
            if let Some(slot) = p.payload.pointer_mut(path) {
                *slot = value;
            }
            p
        };
        let cases = [
            (
                with("/authorization/value", json!("20001")),
                PaymentError::AmountMismatch,
            ),
            (
                with(
                    "/authorization/to",
                    json!("0x1111111111111111111111111111111111111111"),
                ),
                PaymentError::RecipientMismatch,
            ),
            // The signature covers the window: a changed window is a forged signature (the
            // window itself is judged after the signature, see check_window's tests).
            (
                with("/authorization/validBefore", json!("1899999953")),
                PaymentError::InvalidSignature,
            ),
            (
                with("/authorization/validAfter", json!("1899999990")),
                PaymentError::InvalidSignature,
            ),
            (
                with(
                    "/authorization/nonce",
                    json!("0x2222222222222222222222222222222222222222222222222222222222222222"),
                ),
                PaymentError::InvalidSignature,
            ),
            (
                with("/signature", json!("0x1234")),
                PaymentError::InvalidSignature,
            ),
            (
                with("/authorization", json!("nope")),
                PaymentError::PayloadInvalid,
            ),
        ];
        for (bad, expected) in cases {
            assert_eq!(check(&bad, &req, now), Err(expected));
        }
        // The high-s twin of a valid signature (s' = n - s, v flipped) is refused.
        let sig = alloy_primitives::hex::decode(
            payment.payload["signature"].as_str().expect("signature"),
        )
        .expect("hex");
        let n = U256::from_str_radix(
            "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",
            16,
        )
        .expect("order");
        let s = U256::from_be_slice(&sig[32..64]);
        let mut twin = sig.clone();
        twin[32..64].copy_from_slice(&(n - s).to_be_bytes::<32>());
        twin[64] = if sig[64] == 27 { 28 } else { 27 };
        let bad = with(
            "/signature",
            json!(format!("0x{}", alloy_primitives::hex::encode(&twin))),
        );
        assert_eq!(check(&bad, &req, now), Err(PaymentError::InvalidSignature));
    }

    #[test]
    fn validity_longer_than_the_offer_is_refused_locally() {
        let (payment, req) = vector();
        // validBefore 1_900_000_000: fine 60 + 120 seconds before it, too far one second earlier.
        assert!(check(&payment, &req, 1_900_000_000 - 180).is_ok());
        assert_eq!(
            check(&payment, &req, 1_900_000_000 - 181),
            Err(PaymentError::ValidityTooLong)
        );
        // Windows as signed authorizations carry them (the signature is checked before).
        let facts = |valid_after: u64, valid_before: u64| CheckedEvm {
            valid_after,
            valid_before,
            ..inspect(&payment, &req).expect("valid")
        };
        let now = 1_899_999_950;
        for (window, expected) in [
            (facts(0, u64::MAX), Err(PaymentError::ValidityTooLong)),
            (facts(0, now + 3), Err(PaymentError::AuthorizationExpired)),
            (
                facts(now + 40, now + 100),
                Err(PaymentError::AuthorizationNotYetValid),
            ),
            (facts(now, now + 100), Ok(())),
        ] {
            assert_eq!(check_window(&window, &req, now), expected);
        }
        let mut forever = payment.clone();
        forever.payload["authorization"]["validBefore"] = json!(U256::MAX.to_string());
        assert_eq!(
            check(&forever, &req, now),
            Err(PaymentError::InvalidSignature)
        );
    }

    /// A valid ERC-6492 wrapper around `inner`.
    fn erc6492(inner: &[u8]) -> Vec<u8> {
        use alloy_sol_types::SolValue;
        let factory = Address::repeat_byte(0xfa);
        let calldata = alloy_primitives::Bytes::from(vec![0x5f; 68]);
        let mut out = (
            factory,
            calldata,
            alloy_primitives::Bytes::from(inner.to_vec()),
        )
            .abi_encode_params();
        out.extend_from_slice(&ERC6492_MAGIC);
        out
    }

    #[test]
    fn signature_forms_follow_the_exact_evm_scheme() {
        assert_eq!(signature_form(&[1; 65]), Ok(SignatureForm::Ecdsa));
        assert_eq!(
            signature_form(&[1; 64]),
            Err(PaymentError::InvalidSignature)
        );
        assert_eq!(signature_form(&[]), Err(PaymentError::InvalidSignature));
        // A multisig's two concatenated signatures, a passkey wallet's assertion: ERC-1271.
        assert_eq!(signature_form(&[1; 130]), Ok(SignatureForm::SmartWallet));
        assert_eq!(signature_form(&[1; 700]), Ok(SignatureForm::SmartWallet));
        assert_eq!(
            signature_form(&vec![1; MAX_SIGNATURE_BYTES + 1]),
            Err(PaymentError::InvalidSignature)
        );
        assert_eq!(
            signature_form(&erc6492(&[7; 65])),
            Ok(SignatureForm::Erc6492)
        );
        assert_eq!(
            signature_form(&erc6492(&[7; 300])),
            Ok(SignatureForm::Erc6492)
        );
        // The magic suffix on junk, or around an empty signature, is refused.
        let mut junk = vec![0xab; 200];
        junk.extend_from_slice(&ERC6492_MAGIC);
        assert_eq!(signature_form(&junk), Err(PaymentError::InvalidSignature));
        assert_eq!(
            signature_form(&erc6492(&[])),
            Err(PaymentError::InvalidSignature)
        );
        // A long signature passes the local checks (the facilitator checks it on chain).
        let (payment, req) = vector();
        let mut wallet = payment.clone();
        wallet.payload["signature"] = json!(format!(
            "0x{}",
            alloy_primitives::hex::encode(erc6492(&[7; 65]))
        ));
        let checked = check(&wallet, &req, 1_899_999_950).expect("structurally valid");
        assert_eq!(checked.signature_form, SignatureForm::Erc6492);
    }
}
