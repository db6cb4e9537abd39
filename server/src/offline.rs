//! `verifier verify` and `verifier receipt verify`: offline tools.

use crate::cli::{ReceiptOpts, VerifyOpts};
use crate::keyfile;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use verifier_core::attest::{
    ReceiptIdentity, TRUST_SCORE_CONTEXT, verify_receipt as check_receipt,
};
use verifier_core::keys::{KeySource, parse_key_list};
use verifier_core::{Engine, EngineConfig, EngineError, VerifyRequest};

fn read_json(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    verifier_core::json::parse_strict_value(&bytes).map_err(|e| format!("{}: {e}", path.display()))
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
    let keys = match keyfile::load_or_create(&opts.data_dir) {
        Ok(k) => k,
        Err(e) => return bad(e.to_string()),
    };
    let engine = Engine::new(EngineConfig {
        public_url: opts.public_url.clone(),
        ..EngineConfig::default()
    });
    match engine.verify(&request, &keys.current(), time::OffsetDateTime::now_utc()) {
        Ok(v) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&v.body);
            let _ = out.write_all(b"\n");
            if v.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(EngineError::Invalid(e)) => bad(problems(&e.problems)),
        Err(e) => bad(e.to_string()),
    }
}

fn problems(list: &[verifier_core::FieldProblem]) -> String {
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
    match check_receipt(&response, &keys) {
        Ok(ok) => {
            println!("valid: signed with key {} ({})", ok.key_version, ok.context);
            if let Some(id) = &ok.identity {
                println!("{}", identity_line(id, ok.context == TRUST_SCORE_CONTEXT));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("INVALID: {e}");
            ExitCode::from(1)
        }
    }
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
    let tls = verifier_core::tls::client_config().map_err(|e| e.to_string())?;
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
    verifier_core::json::parse_strict_value(&bytes).map_err(|e| format!("{url}: {e}"))
}

/// `verifier routes`: the route table as `METHOD PATH FUNCTION PRICING documented|hidden`
/// lines (hidden routes are routed but not advertised, e.g. 405-only ones).
pub fn routes() -> ExitCode {
    for r in verifier_core::routes::ROUTES {
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
