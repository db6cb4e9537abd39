//! `verifier verify` and `verifier receipt verify`: offline tools.

use crate::cli::{KeyInitOpts, KeyRevokeOpts, ReceiptOpts, VerifyOpts};
use crate::keyfile;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use verifier_engine::{Engine, EngineConfig, EngineError, VerifyRequest};
use verifier_ports::keys::KeySource;
use verifier_receipt::attest::{
    BACKDATING_WARNING, ReceiptIdentity, TRUST_SCORE_CONTEXT, verify_receipt as check_receipt,
};
use verifier_receipt::binding::{ExpectedHashes, check_binding};
use verifier_receipt::keys::{SigningIdentity, parse_key_list};

fn read_json(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    verifier_engine::json::parse_strict_value(&bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Check an output offline; exit 0 pass, 1 fail, 2 bad input.
pub fn verify(opts: VerifyOpts) -> ExitCode {
    let bad = |msg: String| {
        eprintln!("verifier verify: {msg}");
        ExitCode::from(2)
    };
    let mut request = Map::new();
    request.insert("task_id".into(), opts.task_id.clone().into());
    if let Some(agent) = &opts.agent_id {
        request.insert("agent_id".into(), agent.clone().into());
    }
    for (key, path) in [
        ("expected_schema", Some(&opts.schema)),
        ("submitted_output", Some(&opts.output)),
        ("rules", opts.rules.as_ref()),
        ("bounds", opts.bounds.as_ref()),
    ] {
        if let Some(path) = path {
            match read_json(path) {
                Ok(v) => request.insert(key.into(), v),
                Err(e) => return bad(e),
            };
        }
    }
    request.insert("enforce_rules".into(), opts.enforce_rules.into());
    request.insert("strict_content_check".into(), opts.strict.into());
    request.insert(
        "detail".into(),
        if opts.compact { "compact" } else { "full" }.into(),
    );
    let request = match VerifyRequest::from_value(Value::Object(request)) {
        Ok(r) => r,
        Err(e) => return bad(problems(&e.problems)),
    };
    let signer = match signer_of(&opts) {
        Ok(signer) => signer,
        Err(e) => return bad(e),
    };
    let engine = Engine::new(EngineConfig {
        public_url: opts.public_url.clone(),
        ..EngineConfig::default()
    });
    let now = time::OffsetDateTime::now_utc();
    let answer = match &signer {
        Some((identity, path)) => {
            eprintln!(
                "verifier verify: signed with key {} from {}{}",
                identity.key_version(),
                path.display(),
                match &opts.public_url {
                    Some(url) => format!(", stated as published at {url}"),
                    None => ", published nowhere this receipt states: \
                        check it with `verifier receipt verify --keys` and that key's public half"
                        .to_owned(),
                }
            );
            engine
                .verify(&request, identity, now)
                .map(|v| (v.body, v.passed))
        }
        None => {
            eprintln!(
                "verifier verify: unsigned (no key at {}; give --key-file, or make the local key with `verifier key init`)",
                opts.data_dir.join("signing-key.json").display()
            );
            engine
                .verify_unsigned(&request, now)
                .and_then(|(value, passed)| Ok((serde_json::to_vec(&value)?, passed)))
        }
    };
    match answer {
        Ok((body, passed)) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&body);
            let _ = out.write_all(b"\n");
            if passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(EngineError::Invalid(e)) => bad(problems(&e.problems)),
        Err(e) => bad(e.to_string()),
    }
}

/// The key `verify` signs with and where it came from: `--key-file`, else the local server's
/// key when it exists; none with `--unsigned` or when there is no key (never made here).
fn signer_of(opts: &VerifyOpts) -> Result<Option<(SigningIdentity, std::path::PathBuf)>, String> {
    if opts.unsigned {
        return Ok(None);
    }
    let path = match &opts.key_file {
        Some(path) => path.clone(),
        None => {
            let local = opts.data_dir.join("signing-key.json");
            if !local.exists() {
                return Ok(None);
            }
            local
        }
    };
    keyfile::read_signing_key(&path)
        .map(|identity| Some((identity, path)))
        .map_err(|e| e.to_string())
}

/// `verifier key init`: make the local signing key unless it exists; print its version.
pub fn key_init(opts: KeyInitOpts) -> ExitCode {
    match keyfile::load_or_create(&opts.data_dir) {
        Ok(keys) => {
            println!(
                "key {} in {}; its public half is listed in {} (and served at /.well-known/agent-card.json by `verifier serve`)",
                keys.current().key_version(),
                opts.data_dir.join("signing-key.json").display(),
                opts.data_dir.join("public-keys.json").display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("verifier key init: {e}");
            ExitCode::from(2)
        }
    }
}

/// `key rotate`: a new local signing key.
pub fn key_rotate(opts: KeyInitOpts) -> ExitCode {
    report_key_change("rotate", keyfile::rotate(&opts.data_dir))
}

/// `key revoke VERSION [--at TIME]`.
pub fn key_revoke(opts: KeyRevokeOpts) -> ExitCode {
    report_key_change(
        "revoke",
        keyfile::revoke(&opts.data_dir, &opts.version, opts.at.as_deref()),
    )
}

fn report_key_change(
    command: &str,
    change: Result<keyfile::KeyChange, keyfile::KeyFileError>,
) -> ExitCode {
    match change {
        Ok(change) => {
            if let Some((version, at)) = &change.revoked {
                println!("key {version} revoked at {at}");
            }
            if let Some(old) = &change.replaced {
                println!("key {} replaces {old}", change.active);
            }
            println!(
                "key {} signs; restart a running server to publish the change",
                change.active
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("verifier key {command}: {e}");
            ExitCode::from(2)
        }
    }
}

fn problems(list: &[verifier_engine::FieldProblem]) -> String {
    list.iter()
        .map(|p| format!("{} {} — {}", p.field, p.problem, p.fix))
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Verify a receipt; exit 0 valid, 1 invalid, 2 bad input.
pub fn verify_receipt(opts: ReceiptOpts) -> ExitCode {
    let bad = |msg: String| {
        eprintln!("verifier receipt verify: {msg}");
        ExitCode::from(2)
    };
    let response = match read_json(&opts.response) {
        Ok(v) => v,
        Err(e) => return bad(e),
    };
    let key_doc = match (&opts.keys, &opts.agent_card) {
        (Some(path), _) => read_json(path),
        (None, Some(url)) => fetch(url),
        (None, None) => Err("give --keys or --agent-card".into()),
    };
    let key_doc = match key_doc {
        Ok(v) => v,
        Err(e) => return bad(e),
    };
    let keys = match parse_key_list(&key_doc) {
        Ok(k) => k,
        Err(e) => return bad(e.to_string()),
    };
    let expected = match expected_hashes(&opts) {
        Ok(expected) => expected,
        Err(e) => return bad(e),
    };
    let verified = match check_receipt(&response, &keys) {
        Ok(ok) => ok,
        Err(e) => {
            println!("INVALID: {e}");
            return ExitCode::from(1);
        }
    };
    let compared = if expected.is_empty() {
        Vec::new()
    } else {
        match check_binding(&response, &expected) {
            Ok(compared) => compared,
            Err(e) => {
                println!("INVALID: genuine signature, but {e}");
                return ExitCode::from(1);
            }
        }
    };
    println!(
        "valid: signed with key {} ({})",
        verified.key_version, verified.context
    );
    if compared.is_empty() {
        println!(
            "not bound: the signature is checked, not what it is about; give --request (or --output, --schema, --rules) for any receipt you did not request yourself"
        );
    } else {
        println!("bound: {} recomputed and equal", compared.join(", "));
    }
    if let Some(id) = &verified.identity {
        println!(
            "{}",
            identity_line(id, verified.context == TRUST_SCORE_CONTEXT)
        );
    }
    if let Some(revoked_at) = &verified.key_revoked_at {
        println!(
            "warning: key {} revoked at {revoked_at}: {BACKDATING_WARNING}",
            verified.key_version
        );
    }
    ExitCode::SUCCESS
}

/// The hashes the receipt must carry, from `--request` or the parts given.
fn expected_hashes(opts: &ReceiptOpts) -> Result<ExpectedHashes, String> {
    if let Some(path) = &opts.request {
        let request = VerifyRequest::from_value(read_json(path)?)
            .map_err(|e| format!("{}: {}", path.display(), problems(&e.problems)))?;
        return ExpectedHashes::of_request(&request.hash_input())
            .map_err(|_| format!("{}: cannot be canonicalized", path.display()));
    }
    let read = |path: &Option<std::path::PathBuf>| path.as_deref().map(read_json).transpose();
    let (output, schema) = (read(&opts.output)?, read(&opts.schema)?);
    let (rules, bounds) = (read(&opts.rules)?, read(&opts.bounds)?);
    Ok(ExpectedHashes::of_parts(
        output.as_ref(),
        schema.as_ref(),
        rules.as_ref(),
        bounds.as_ref(),
    ))
}

/// What a valid receipt says about the agent it was recorded under (the ID quoted, so no
/// control character reaches the terminal).
fn identity_line(id: &ReceiptIdentity, score: bool) -> String {
    let meaning = match id.identity.as_deref() {
        Some("verified") if score => {
            "verified: a key-based ID; only deliverables its holder signed were counted"
        }
        Some("verified") => {
            "verified: a key-based ID; the service checked its holder's signature over this deliverable"
        }
        Some("unverified") => "unverified: a plain label anyone may write under",
        Some(_) => "stated in a form this tool does not know",
        None => "not stated: the receipt comes from a service without agent identities",
    };
    format!("identity: {:?} {meaning}", id.agent_id)
}

fn fetch(url: &str) -> Result<Value, String> {
    let tls = verifier_facilitator_http::tls::client_config().map_err(|e| e.to_string())?;
    let client = reqwest::blocking::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let response = client
        .get(url)
        .send()
        .map_err(|e| format!("cannot fetch {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    let bytes = response
        .bytes()
        .map_err(|e| format!("cannot read {url}: {e}"))?;
    verifier_engine::json::parse_strict_value(&bytes).map_err(|e| format!("{url}: {e}"))
}

/// `verifier health URL`: exit 0 when the URL answers 200 within 5 s, else 1 (the reason on
/// stderr).
pub fn health(url: &str) -> ExitCode {
    let answer = verifier_facilitator_http::tls::client_config()
        .map_err(|e| e.to_string())
        .and_then(|tls| {
            reqwest::blocking::Client::builder()
                .use_preconfigured_tls(tls)
                .timeout(std::time::Duration::from_secs(5))
                .build()
                .and_then(|c| c.get(url).send())
                .map_err(|e| e.to_string())
        });
    match answer {
        Ok(r) if r.status().is_success() => ExitCode::SUCCESS,
        Ok(r) => {
            eprintln!("verifier health: {url} answered {}", r.status());
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("verifier health: {url}: {e}");
            ExitCode::from(1)
        }
    }
}

/// `verifier routes`: the route table as `METHOD PATH FUNCTION PRICING documented|hidden`
/// lines (hidden routes are routed but not advertised, e.g. 405-only ones).
pub fn routes() -> ExitCode {
    for r in verifier_service::routes::ROUTES {
        println!(
            "{} {} {} {:?} {}",
            r.method,
            r.path,
            r.function.name(),
            r.pricing,
            if r.documented { "documented" } else { "hidden" }
        );
    }
    ExitCode::SUCCESS
}
