//! `agent_output_verifier._native`: the Rust half of the Python package. Every function takes
//! and gives JSON text (the Python half converts), and raises `ValueError` naming the reason.
//! The same code as the service and the `verifier` CLI: the receipt crate for signatures,
//! hashes and RFC 8785, the engine for requests and verdicts.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::OnceLock;
use verifier_engine::{Engine, EngineConfig, EngineError, FieldProblem, VerifyRequest};
use verifier_receipt::SigningIdentity;
use verifier_receipt::attest::{BACKDATING_WARNING, verify_receipt};
use verifier_receipt::binding::{ExpectedHashes, check_binding};
use verifier_receipt::deliverable::AgentSigner;
use verifier_receipt::keys::parse_key_list;

fn invalid(message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(message.to_string())
}

/// JSON text read as the service reads it (no duplicate keys, no trailing text).
fn parse(what: &str, text: &str) -> PyResult<Value> {
    verifier_engine::json::parse_strict_value(text.as_bytes())
        .map_err(|e| invalid(format!("{what} is not valid JSON: {e}")))
}

fn problems(what: &str, list: &[FieldProblem]) -> PyErr {
    let lines: Vec<String> = list
        .iter()
        .map(|p| format!("{} {} ({})", p.field, p.problem, p.fix))
        .collect();
    invalid(format!("{what} is invalid: {}", lines.join("; ")))
}

fn request_of(text: &str) -> PyResult<VerifyRequest> {
    VerifyRequest::from_body(text.as_bytes()).map_err(|e| problems("the request", &e.problems))
}

fn to_text(value: &Value) -> PyResult<String> {
    serde_json::to_string(value).map_err(invalid)
}

/// A key file's text, refused when other users of this machine can read it (as the CLI does).
fn read_key_file(path: &str) -> PyResult<String> {
    let path = Path::new(path);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(invalid(format!(
                "{} can be read by other users of this machine (mode {:o}): run `chmod 600` on it",
                path.display(),
                mode & 0o777
            )));
        }
    }
    std::fs::read_to_string(path)
        .map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))
}

/// Check a signed response: its signature against the keys, then, when given, that it is about
/// the request (all four hashes) or the parts (output, schema, rules and bounds).
#[pyfunction]
#[pyo3(signature = (response, keys, request=None, output=None, schema=None, rules=None, bounds=None))]
fn verify_receipt_json(
    response: &str,
    keys: &str,
    request: Option<&str>,
    output: Option<&str>,
    schema: Option<&str>,
    rules: Option<&str>,
    bounds: Option<&str>,
) -> PyResult<String> {
    let response = parse("the response", response)?;
    let keys = parse_key_list(&parse("the keys", keys)?).map_err(invalid)?;
    let expected = match request {
        Some(text) => ExpectedHashes::of_request(&request_of(text)?.hash_input())
            .map_err(|_| invalid("the request cannot be canonicalized"))?,
        None => {
            let part = |what: &str, text: Option<&str>| text.map(|t| parse(what, t)).transpose();
            let (output, schema) = (part("the output", output)?, part("the schema", schema)?);
            let (rules, bounds) = (part("the rules", rules)?, part("the bounds", bounds)?);
            ExpectedHashes::of_parts(
                output.as_ref(),
                schema.as_ref(),
                rules.as_ref(),
                bounds.as_ref(),
            )
        }
    };
    let verified = verify_receipt(&response, &keys).map_err(invalid)?;
    let bound = if expected.is_empty() {
        Vec::new()
    } else {
        check_binding(&response, &expected)
            .map_err(|e| invalid(format!("genuine signature, but {e}")))?
    };
    let identity = verified
        .identity
        .map(|id| json!({"agent_id": id.agent_id, "identity": id.identity}));
    to_text(&json!({
        "valid": true,
        "key_version": verified.key_version,
        "context": verified.context,
        "identity": identity,
        "bound": bound,
        "key_revoked_at": verified.key_revoked_at,
        "warning": verified.key_revoked_at.as_ref().map(|_| BACKDATING_WARNING),
    }))
}

/// The four receipt hashes of a request.
#[pyfunction]
fn hashes_json(request: &str) -> PyResult<String> {
    let hashes = request_of(request)?
        .receipt_hashes()
        .map_err(|_| invalid("the request cannot be canonicalized"))?;
    to_text(&json!({
        "output_hash": hashes.output_hash,
        "schema_hash": hashes.schema_hash,
        "rules_hash": hashes.rules_hash,
        "request_hash": hashes.request_hash,
    }))
}

/// RFC 8785 bytes of a JSON text.
#[pyfunction]
fn canonicalize_json<'py>(py: Python<'py>, value: &str) -> PyResult<Bound<'py, PyBytes>> {
    let value = parse("the value", value)?;
    Ok(PyBytes::new(
        py,
        &verifier_receipt::canonical::value_to_jcs(&value),
    ))
}

fn engine(public_url: Option<&str>) -> Engine {
    Engine::new(EngineConfig {
        public_url: public_url.map(str::to_owned),
        ..EngineConfig::default()
    })
}

/// The offline verdict of a request: unsigned, or signed with a signing key file.
#[pyfunction]
#[pyo3(signature = (request, key_file=None, public_url=None))]
fn verify_json(
    py: Python<'_>,
    request: &str,
    key_file: Option<&str>,
    public_url: Option<&str>,
) -> PyResult<String> {
    static UNPUBLISHED: OnceLock<Engine> = OnceLock::new();
    let request = request_of(request)?;
    let signer = key_file
        .map(|path| {
            SigningIdentity::from_key_file(&read_key_file(path)?)
                .map_err(|e| invalid(format!("{path}: {e}")))
        })
        .transpose()?;
    let now = time::OffsetDateTime::now_utc();
    // The checks run without the interpreter lock: other Python threads go on meanwhile.
    let answer = py.detach(|| {
        let local;
        let engine = match public_url {
            None => UNPUBLISHED.get_or_init(|| engine(None)),
            Some(url) => {
                local = engine(Some(url));
                &local
            }
        };
        match &signer {
            Some(signer) => engine
                .verify(&request, signer, now)
                .and_then(|v| Ok(serde_json::from_slice(&v.body)?)),
            None => engine
                .verify_unsigned(&request, now)
                .map(|(value, _)| value),
        }
    });
    match answer {
        Ok(value) => to_text(&value),
        Err(EngineError::Invalid(e)) => Err(problems("the request", &e.problems)),
        Err(e) => Err(invalid(e)),
    }
}

/// What `verifier agent sign` prints: the agent's signature over a deliverable.
#[pyfunction]
fn sign_deliverable_json(
    key_file: &str,
    agent_id: &str,
    task_id: &str,
    output: &str,
) -> PyResult<String> {
    let signer = AgentSigner::from_key_file(&read_key_file(key_file)?).ok_or_else(|| {
        invalid(format!(
            "{key_file} is not an agent key file (JSON with agent_id and a base64 32-byte secret_key)"
        ))
    })?;
    if signer.agent_id() != agent_id {
        return Err(invalid(format!(
            "{key_file} holds the key of another agent ID than the one given"
        )));
    }
    let output = parse("the output", output)?;
    let (output_hash, signature) = signer.sign_deliverable(task_id, &output);
    to_text(&json!({
        "agent_id": agent_id,
        "task_id": task_id,
        "output_hash": output_hash,
        "agent_signature": signature,
    }))
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(verify_receipt_json, m)?)?;
    m.add_function(wrap_pyfunction!(hashes_json, m)?)?;
    m.add_function(wrap_pyfunction!(canonicalize_json, m)?)?;
    m.add_function(wrap_pyfunction!(verify_json, m)?)?;
    m.add_function(wrap_pyfunction!(sign_deliverable_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
