//! `verifier agent`: what a seller runs to make a key-based agent identity (`did:key`, Ed25519)
//! and to sign a deliverable, so that a buyer's verification counts toward that identity's
//! history and no one else's can (docs/trust-score.md).

use crate::cli::{AgentKeygenOpts, AgentSignOpts};
use crate::keyfile::{refuse_shared, write_private};
use serde_json::{Value, json};
use std::path::Path;
use std::process::ExitCode;
use verifier_receipt::deliverable::AgentSigner;

/// Why a key file cannot be used (never prints the secret).
#[derive(Debug, thiserror::Error)]
enum AgentKeyError {
    #[error(transparent)]
    File(#[from] crate::keyfile::KeyFileError),
    #[error("{0} is not an agent key file (JSON with agent_id and a base64 32-byte secret_key)")]
    Format(String),
    #[error("no random source: {0}")]
    Random(String),
    #[error("cannot read {0}: {1}")]
    Read(String, std::io::Error),
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("verifier agent: {e}");
    ExitCode::from(2)
}

/// `verifier agent keygen --out FILE`: a new key, written owner-only; prints the agent ID.
pub fn keygen(opts: AgentKeygenOpts) -> ExitCode {
    match make_key(&opts.out) {
        Ok(agent_id) => {
            println!(
                "{}",
                json!({"agent_id": agent_id, "key_file": opts.out.display().to_string()})
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn make_key(path: &Path) -> Result<String, AgentKeyError> {
    let signer = AgentSigner::generate().map_err(|e| AgentKeyError::Random(e.to_string()))?;
    write_private(path, signer.key_file().as_bytes())?;
    Ok(signer.agent_id())
}

fn load_key(path: &Path) -> Result<AgentSigner, AgentKeyError> {
    refuse_shared(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| AgentKeyError::Read(path.display().to_string(), e))?;
    AgentSigner::from_key_file(&text)
        .ok_or_else(|| AgentKeyError::Format(path.display().to_string()))
}

/// `verifier agent sign --key FILE --task-id ID OUTPUT.json`: prints `agent_id`,
/// `output_hash` and `agent_signature`, the fields a buyer adds to its verification request.
pub fn sign(opts: AgentSignOpts) -> ExitCode {
    let signer = match load_key(&opts.key) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let text = match std::fs::read_to_string(&opts.output) {
        Ok(t) => t,
        Err(e) => return fail(AgentKeyError::Read(opts.output.display().to_string(), e)),
    };
    let Ok(output) = serde_json::from_str::<Value>(&text) else {
        return fail(format!("{} is not JSON", opts.output.display()));
    };
    let (output_hash, signature) = signer.sign_deliverable(&opts.task_id, &output);
    println!(
        "{}",
        json!({
            "agent_id": signer.agent_id(),
            "task_id": opts.task_id,
            "output_hash": output_hash,
            "agent_signature": signature,
        })
    );
    ExitCode::SUCCESS
}
