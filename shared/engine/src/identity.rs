//! Agent identities that prove themselves. An `agent_id` is either a plain label (anyone may
//! write under it; its history is `unverified`) or a key: `did:key:z6Mk…` (Ed25519), a CAIP-10
//! EVM account `eip155:<chain>:0x…` (EIP-191 personal-sign, what ordinary wallets sign), or a
//! CAIP-10 Solana account `solana:<chain>:<base58>` (Ed25519). A request for a key carries
//! `agent_signature` over [`deliverable_message`], which binds the agent, the task and the
//! output's hash; only the key holder can make one, so only the key holder's deliverables enter
//! that identity's history.

use alloy_primitives::{Address, Signature};
use ed25519_dalek::{Signature as Ed25519Signature, VerifyingKey};
use std::str::FromStr;
pub use verifier_receipt::deliverable::{
    AgentSigner, ED25519_MULTICODEC, MESSAGE_DOMAIN, deliverable_message,
};

/// `agent_id` prefixes that claim a key; an ID with one of them must parse as that key.
const KEY_PREFIXES: [&str; 3] = ["did:", "eip155:", "solana:"];

/// A key an agent ID names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentKey {
    /// `did:key:z6Mk…`: signatures are Ed25519, base58btc.
    DidKey(VerifyingKey),
    /// `eip155:<chain>:0x…`: signatures are EIP-191 personal-sign, 65 bytes, `0x` hex.
    Evm(Address),
    /// `solana:<chain>:<address>`: signatures are Ed25519, base58.
    Solana(VerifyingKey),
}

/// Why an agent ID or its signature is refused (never carries the caller's text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error(
        "starts like a key-based identity (did:, eip155:, solana:) but is not a did:key Ed25519 key, a CAIP-10 EVM account or a CAIP-10 Solana account"
    )]
    MalformedId,
    #[error("is not a signature in this identity's encoding")]
    MalformedSignature,
    #[error("does not verify for this agent, task and output")]
    BadSignature,
}

impl IdentityError {
    /// What the caller should do.
    pub fn fix(&self) -> &'static str {
        match self {
            IdentityError::MalformedId => {
                "Use did:key:z6Mk… (Ed25519), eip155:<chain id>:0x<40 hex> or solana:<chain>:<base58 address>, or a plain label that does not start with did:, eip155: or solana:."
            }
            IdentityError::MalformedSignature => {
                "Send the signature of the deliverable message: 0x-hex (65 bytes, EIP-191 personal_sign) for eip155 accounts, base58 (64 bytes, Ed25519) for did:key and solana accounts."
            }
            IdentityError::BadSignature => {
                "The agent signs the message 'agent-output-verifier deliverable v1' / agent_id / task_id / output_sha256 of exactly this output (see /llms.txt); `verifier agent sign` makes one."
            }
        }
    }
}

/// The key an agent ID names: `Ok(None)` for a plain label.
pub fn parse(agent_id: &str) -> Result<Option<AgentKey>, IdentityError> {
    if !KEY_PREFIXES.iter().any(|p| agent_id.starts_with(p)) {
        return Ok(None);
    }
    let key = if let Some(encoded) = agent_id.strip_prefix("did:key:z") {
        let bytes = bs58::decode(encoded)
            .into_vec()
            .map_err(|_| IdentityError::MalformedId)?;
        let raw = bytes
            .strip_prefix(&ED25519_MULTICODEC)
            .ok_or(IdentityError::MalformedId)?;
        AgentKey::DidKey(ed25519_key(raw)?)
    } else if let Some(rest) = agent_id.strip_prefix("eip155:") {
        let (chain, address) = rest.split_once(':').ok_or(IdentityError::MalformedId)?;
        let chain_ok = (1..=32).contains(&chain.len()) && chain.bytes().all(|b| b.is_ascii_digit());
        let address_ok = address.len() == 42
            && address.starts_with("0x")
            && address[2..].bytes().all(|b| b.is_ascii_hexdigit());
        if !chain_ok || !address_ok {
            return Err(IdentityError::MalformedId);
        }
        AgentKey::Evm(Address::from_str(address).map_err(|_| IdentityError::MalformedId)?)
    } else if let Some(rest) = agent_id.strip_prefix("solana:") {
        let (chain, address) = rest.split_once(':').ok_or(IdentityError::MalformedId)?;
        let chain_ok = (1..=32).contains(&chain.len()) && bs58::decode(chain).into_vec().is_ok();
        let raw = bs58::decode(address)
            .into_vec()
            .map_err(|_| IdentityError::MalformedId)?;
        if !chain_ok {
            return Err(IdentityError::MalformedId);
        }
        AgentKey::Solana(ed25519_key(&raw)?)
    } else {
        return Err(IdentityError::MalformedId);
    };
    Ok(Some(key))
}

fn ed25519_key(raw: &[u8]) -> Result<VerifyingKey, IdentityError> {
    let bytes: [u8; 32] = raw.try_into().map_err(|_| IdentityError::MalformedId)?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| IdentityError::MalformedId)
}

/// Check an agent's signature over `message`.
pub fn verify(key: &AgentKey, message: &str, signature: &str) -> Result<(), IdentityError> {
    match key {
        AgentKey::DidKey(k) | AgentKey::Solana(k) => {
            let bytes = bs58::decode(signature)
                .into_vec()
                .map_err(|_| IdentityError::MalformedSignature)?;
            let bytes: [u8; 64] = bytes
                .as_slice()
                .try_into()
                .map_err(|_| IdentityError::MalformedSignature)?;
            k.verify_strict(message.as_bytes(), &Ed25519Signature::from_bytes(&bytes))
                .map_err(|_| IdentityError::BadSignature)
        }
        AgentKey::Evm(address) => {
            let hex = signature
                .strip_prefix("0x")
                .ok_or(IdentityError::MalformedSignature)?;
            let bytes = alloy_primitives::hex::decode(hex)
                .map_err(|_| IdentityError::MalformedSignature)?;
            if bytes.len() != 65 {
                return Err(IdentityError::MalformedSignature);
            }
            let sig = Signature::try_from(bytes.as_slice())
                .map_err(|_| IdentityError::MalformedSignature)?;
            let signer = sig
                .recover_address_from_msg(message.as_bytes())
                .map_err(|_| IdentityError::BadSignature)?;
            if &signer == address {
                Ok(())
            } else {
                Err(IdentityError::BadSignature)
            }
        }
    }
}

/// `verified` for a key-based agent ID (only its key holder's signed deliverables are
/// recorded), `unverified` for a plain label (anyone may write under it).
pub fn label(agent_id: &str) -> &'static str {
    label_of(parse(agent_id).ok().flatten().as_ref())
}

/// [`label`] for an agent ID parsed already: `verified` when it names a key.
pub fn label_of(key: Option<&AgentKey>) -> &'static str {
    match key {
        Some(_) => "verified",
        None => "unverified",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::B256;
    use ed25519_dalek::{Signer, SigningKey};

    fn did_key(k: &SigningKey) -> String {
        let mut bytes = ED25519_MULTICODEC.to_vec();
        bytes.extend_from_slice(k.verifying_key().as_bytes());
        format!("did:key:z{}", bs58::encode(bytes).into_string())
    }

    #[test]
    fn labels_stay_labels_and_key_lookalikes_must_be_keys() {
        assert_eq!(parse("invoice-agent"), Ok(None));
        assert_eq!(parse("rival-agent"), Ok(None));
        for bad in [
            "did:web:example.com",
            "did:key:z123",
            "eip155:8453:0x12",
            "eip155:x:0x0000000000000000000000000000000000000001",
            "solana:abc",
            "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:notbase58!",
        ] {
            assert_eq!(parse(bad), Err(IdentityError::MalformedId), "{bad}");
        }
    }

    #[test]
    fn a_did_key_signature_binds_agent_task_and_output() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let id = did_key(&key);
        assert!(id.starts_with("did:key:z6Mk"), "{id}");
        let parsed = parse(&id).expect("valid").expect("a key");
        let message = deliverable_message(&id, "task-1", &"ab".repeat(32));
        let sig = bs58::encode(key.sign(message.as_bytes()).to_bytes()).into_string();
        assert_eq!(verify(&parsed, &message, &sig), Ok(()));
        for other in [
            deliverable_message(&id, "task-2", &"ab".repeat(32)),
            deliverable_message(&id, "task-1", &"cd".repeat(32)),
            deliverable_message("did:key:z6Mkother", "task-1", &"ab".repeat(32)),
        ] {
            assert_eq!(
                verify(&parsed, &other, &sig),
                Err(IdentityError::BadSignature)
            );
        }
        assert_eq!(
            verify(&parsed, &message, "0x1234"),
            Err(IdentityError::MalformedSignature)
        );
    }

    #[test]
    fn an_evm_personal_sign_signature_recovers_the_account() {
        let signer = alloy_primitives::hex!(
            "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
        );
        let secret = k256::ecdsa::SigningKey::from_slice(&signer).expect("key");
        let address = Address::from_private_key(&secret);
        let id = format!("eip155:8453:{address:#x}");
        let parsed = parse(&id).expect("valid").expect("a key");
        let message = deliverable_message(&id, "task-1", &"ab".repeat(32));
        let digest: B256 = alloy_primitives::eip191_hash_message(message.as_bytes());
        let (sig, recid) = secret
            .sign_prehash_recoverable(digest.as_slice())
            .expect("signs");
        let mut bytes = sig.to_bytes().to_vec();
        bytes.push(27 + recid.to_byte());
        let hex = format!("0x{}", alloy_primitives::hex::encode(&bytes));
        assert_eq!(verify(&parsed, &message, &hex), Ok(()));
        let other = deliverable_message(&id, "task-2", &"ab".repeat(32));
        assert_eq!(
            verify(&parsed, &other, &hex),
            Err(IdentityError::BadSignature)
        );
    }

    #[test]
    fn a_solana_account_signs_with_ed25519() {
        let key = SigningKey::from_bytes(&[9; 32]);
        let address = bs58::encode(key.verifying_key().as_bytes()).into_string();
        let id = format!("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:{address}");
        let parsed = parse(&id).expect("valid").expect("a key");
        let message = deliverable_message(&id, "t", &"00".repeat(32));
        let sig = bs58::encode(key.sign(message.as_bytes()).to_bytes()).into_string();
        assert_eq!(verify(&parsed, &message, &sig), Ok(()));
        assert_eq!(label(&id), "verified");
        assert_eq!(label("some-label"), "unverified");
    }

    #[test]
    fn the_signer_makes_ids_and_signatures_the_verifier_accepts() {
        let signer = AgentSigner::from_seed(&[3; 32]);
        let id = signer.agent_id();
        let output = serde_json::json!({"total": 1.0, "items": [1, 2]});
        let (hash, sig) = signer.sign_deliverable("task-9", &output);
        let key = parse(&id).expect("valid").expect("a key");
        assert_eq!(
            verify(&key, &deliverable_message(&id, "task-9", &hash), &sig),
            Ok(())
        );
        assert_eq!(AgentSigner::from_seed(&signer.seed()).agent_id(), id);
    }

    #[test]
    fn no_id_can_forge_a_line_of_the_message() {
        let sneaky = deliverable_message("a", "t\noutput_sha256: x", "y");
        assert_eq!(sneaky.lines().count(), 4);
    }
}
