//! What a seller signs to prove a deliverable is theirs: the message that binds an agent ID,
//! a task and the output's hash, and a `did:key` Ed25519 signer for it (`verifier agent sign`).
//! Verifying an agent's signature (and parsing EVM and Solana identities) is the engine's.

/// The first line of every signed deliverable message (the domain separator).
pub const MESSAGE_DOMAIN: &str = "agent-output-verifier deliverable v1";
/// The multicodec prefix of an Ed25519 public key in a `did:key` (varint 0xed).
pub const ED25519_MULTICODEC: [u8; 2] = [0xed, 0x01];

/// The message an agent signs for a deliverable: the domain line, then the agent ID and the
/// task ID as JSON strings (so no ID can forge a line), then the output's SHA-256 (the
/// receipt's `output_hash`), joined by `\n`.
pub fn deliverable_message(agent_id: &str, task_id: &str, output_hash: &str) -> String {
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
    format!(
        "{MESSAGE_DOMAIN}\nagent_id: {}\ntask_id: {}\noutput_sha256: {output_hash}",
        quoted(agent_id),
        quoted(task_id)
    )
}

/// A seller's Ed25519 key and its `did:key` agent ID: what `verifier agent` makes and signs
/// deliverables with.
pub struct AgentSigner {
    key: ed25519_dalek::SigningKey,
}

impl AgentSigner {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)?;
        Ok(Self::from_seed(&seed))
    }

    /// The key with this 32-byte seed.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        AgentSigner {
            key: ed25519_dalek::SigningKey::from_bytes(seed),
        }
    }

    /// The 32-byte seed (the secret).
    pub fn seed(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The key of an agent key file's text (what `verifier agent keygen` writes: JSON with
    /// `agent_id` and a base64 32-byte `secret_key`); `None` when it is not one, or when its
    /// `agent_id` is not its key's.
    pub fn from_key_file(text: &str) -> Option<Self> {
        use base64::Engine as _;
        let file: serde_json::Value = serde_json::from_str(text).ok()?;
        let seed: [u8; 32] = file["secret_key"]
            .as_str()
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            .and_then(|b| b.try_into().ok())?;
        let signer = AgentSigner::from_seed(&seed);
        (file["agent_id"].as_str() == Some(signer.agent_id().as_str())).then_some(signer)
    }

    /// An agent key file's text for this key.
    pub fn key_file(&self) -> String {
        use base64::Engine as _;
        let file = serde_json::json!({
            "agent_id": self.agent_id(),
            "secret_key": base64::engine::general_purpose::STANDARD.encode(self.seed()),
            "algorithm": "Ed25519",
        });
        format!("{file:#}\n")
    }

    /// The agent ID: `did:key:z6Mk…`.
    pub fn agent_id(&self) -> String {
        let mut bytes = ED25519_MULTICODEC.to_vec();
        bytes.extend_from_slice(self.key.verifying_key().as_bytes());
        format!("did:key:z{}", bs58::encode(bytes).into_string())
    }

    /// Sign a deliverable: its `output_hash` (SHA-256 of the output's RFC 8785 form, as the
    /// receipt states it) and the base58 `agent_signature` for `task_id`.
    pub fn sign_deliverable(&self, task_id: &str, output: &serde_json::Value) -> (String, String) {
        use ed25519_dalek::Signer;
        let output_hash = crate::canonical::sha256_hex(&crate::canonical::value_to_jcs(output));
        let message = deliverable_message(&self.agent_id(), task_id, &output_hash);
        let signature = bs58::encode(self.key.sign(message.as_bytes()).to_bytes()).into_string();
        (output_hash, signature)
    }
}
