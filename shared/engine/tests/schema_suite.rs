//! The official JSON-Schema-Test-Suite (required tests and the optional format tests, draft
//! 2020-12 and draft 7) run through
//! the real pipeline: `VerifyRequest::from_value` → `Engine::verify` → the signed body's
//! `result`. Remote references (`http://localhost:1234/...`) are served from memory out of
//! `tests/data/json-schema-test-suite/remotes/`; nothing touches the network.
//!
//! Run with `--nocapture` to see the per-draft counts.

use jsonschema::{Draft, Retrieve, Uri};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use verifier_engine::checks::schema::SchemaOptions;
use verifier_engine::{Engine, EngineConfig, EngineError, SigningIdentity, VerifyRequest};

const REMOTE_BASE: &str = "http://localhost:1234/";

/// The exact disagreement an allow-list entry allows.
#[derive(Clone, Copy)]
enum Expected {
    /// The request is refused, with this text in the refusal.
    Refused(&'static str),
    /// The suite's validity, and the result the pipeline gives instead.
    Verdict(bool, &'static str),
}

const CUSTOM_META_SCHEMA: &str = "a custom $schema meta-schema URI is refused by design (SchemaError::UnknownDraft); the service only accepts the five official drafts";
const ANNOTATION_ONLY: &str = "formats are assertions by default in every draft (format_assertion: false restores the annotation-only default of 2019-09 and 2020-12, tested below)";

/// Suite cases where our verdict honestly differs from the suite's, keyed by
/// `(draft dir, file, case description, test description)`, each with the exact disagreement
/// it allows and the reason. A test description `*` covers every test of the case, `*text`
/// every test whose description ends with `text`; either way each covered test must disagree
/// exactly as stated, and an entry that covers no disagreement fails the run (stale).
const ALLOWED_DISAGREEMENTS: &[(&str, &str, &str, &str, Expected, &str)] = &[
    (
        "draft2020-12",
        "vocabulary.json",
        "schema that uses custom metaschema with with no validation vocabulary",
        "*",
        Expected::Refused("names a meta-schema ($schema) this service does not support"),
        CUSTOM_META_SCHEMA,
    ),
    (
        "draft2020-12",
        "vocabulary.json",
        "ignore unrecognized optional vocabulary",
        "*",
        Expected::Refused("names a meta-schema ($schema) this service does not support"),
        CUSTOM_META_SCHEMA,
    ),
    (
        "draft2020-12",
        "format.json",
        "*",
        "*string is only an annotation by default",
        Expected::Verdict(true, "fail"),
        ANNOTATION_ONLY,
    ),
];

fn suite_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/json-schema-test-suite")
}

fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Every `.json` file under `dir`, recursively, with its path relative to `dir` ('/'-separated).
fn json_files(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .expect("file name")
            .to_string_lossy()
            .into_owned();
        if path.is_dir() {
            json_files(&path, &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".json") {
            out.push((format!("{prefix}{name}"), path));
        }
    }
}

/// Serves `http://localhost:1234/<path>` from the suite's `remotes/` directory, all loaded
/// into memory up front.
struct SuiteRemotes {
    documents: HashMap<String, Value>,
}

impl SuiteRemotes {
    fn load() -> Self {
        let mut files = Vec::new();
        json_files(&suite_root().join("remotes"), "", &mut files);
        let documents: HashMap<String, Value> = files
            .into_iter()
            .map(|(rel, path)| (format!("{REMOTE_BASE}{rel}"), read_json(&path)))
            .collect();
        assert!(
            documents.len() > 20,
            "expected the suite's remotes to be present, found {}",
            documents.len()
        );
        SuiteRemotes { documents }
    }
}

impl Retrieve for SuiteRemotes {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let key = uri.as_str().split('#').next().unwrap_or_default();
        self.documents
            .get(key)
            .cloned()
            .ok_or_else(|| format!("no in-memory remote for {key}").into())
    }
}

enum Disagreement {
    /// The request layer refused the request.
    Request(String),
    /// The engine refused (compile error or canonicalization failure).
    Engine(String),
    /// The verdict differs from the suite's.
    Verdict {
        expected_valid: bool,
        result: String,
    },
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Disagreement::Request(problems) => write!(f, "request refused: {problems}"),
            Disagreement::Engine(why) => write!(f, "engine refused: {why}"),
            Disagreement::Verdict {
                expected_valid,
                result,
            } => {
                write!(
                    f,
                    "suite says valid={expected_valid}, pipeline said {result}"
                )
            }
        }
    }
}

#[derive(Default)]
struct Tally {
    cases: usize,
    tests: usize,
    agreements: usize,
    allowed: Vec<String>,
    disagreements: Vec<String>,
    /// The allow-list entries that allowed something.
    used: std::collections::BTreeSet<usize>,
}

/// Whether `pattern` (an allow-list description: exact, `*`, or `*suffix`) covers `text`.
fn covers(pattern: &str, text: &str) -> bool {
    match pattern.strip_prefix('*') {
        Some("") => true,
        Some(suffix) => text.ends_with(suffix),
        None => pattern == text,
    }
}

impl Expected {
    /// Whether `d` is exactly this disagreement.
    fn matches(self, d: &Disagreement) -> bool {
        match (self, d) {
            (Expected::Refused(text), Disagreement::Request(why) | Disagreement::Engine(why)) => {
                why.contains(text)
            }
            (
                Expected::Verdict(valid, said),
                Disagreement::Verdict {
                    expected_valid,
                    result,
                },
            ) => valid == *expected_valid && said == result,
            _ => false,
        }
    }
}

/// The index of the allow-list entry that allows exactly this disagreement.
fn allowed(draft_dir: &str, file: &str, case: &str, test: &str, d: &Disagreement) -> Option<usize> {
    ALLOWED_DISAGREEMENTS
        .iter()
        .position(|(dd, f, c, t, expected, _)| {
            *dd == draft_dir
                && *f == file
                && covers(c, case)
                && covers(t, test)
                && expected.matches(d)
        })
}

fn run_one(
    engine: &Engine,
    signer: &SigningIdentity,
    schema: &Value,
    data: &Value,
    valid: bool,
) -> Result<(), Disagreement> {
    let request = json!({
        "task_id": "json-schema-test-suite",
        "expected_schema": schema,
        "submitted_output": data,
    });
    let req = VerifyRequest::from_value(request)
        .map_err(|e| Disagreement::Request(format!("{:?}", e.problems)))?;
    let verification = engine
        .verify(&req, signer, time::OffsetDateTime::now_utc())
        .map_err(|e| match e {
            EngineError::Invalid(inv) => Disagreement::Engine(format!("{:?}", inv.problems)),
            other => Disagreement::Engine(other.to_string()),
        })?;
    let body: Value =
        serde_json::from_slice(&verification.body).expect("the response body is JSON");
    let result = body["result"]
        .as_str()
        .expect("the response has a result")
        .to_owned();
    assert_eq!(
        verification.passed,
        result == "pass",
        "Verification::passed agrees with the body"
    );
    if (result == "pass") == valid {
        Ok(())
    } else {
        Err(Disagreement::Verdict {
            expected_valid: valid,
            result,
        })
    }
}

/// Run every file of `tests/<draft_dir>/<sub>` (`sub` empty: the required tests); files are
/// named `<sub>/<file>` in the allow-list.
fn run_draft(
    draft_dir: &str,
    sub: &str,
    draft: Option<Draft>,
    remotes: &Arc<SuiteRemotes>,
) -> Tally {
    let retriever: Arc<dyn Retrieve> = remotes.clone();
    let engine = Engine::with_schema_options(
        EngineConfig::default(),
        SchemaOptions {
            retriever: Some(retriever),
            draft,
            validate_formats: None,
        },
    );
    let signer = SigningIdentity::from_seed("t", &[1; 32]).expect("a 32-byte seed is a valid key");
    let dir = suite_root().join("tests").join(draft_dir).join(sub);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() > 15,
        "expected the {draft_dir}/{sub} suite files, found {}",
        files.len()
    );

    let mut tally = Tally::default();
    for path in files {
        let name = path.file_name().expect("file name").to_string_lossy();
        let file = if sub.is_empty() {
            name.into_owned()
        } else {
            format!("{sub}/{name}")
        };
        let cases = read_json(&path);
        for case in cases.as_array().expect("a suite file is an array of cases") {
            tally.cases += 1;
            let case_desc = case["description"].as_str().expect("case description");
            let schema = &case["schema"];
            for test in case["tests"].as_array().expect("case tests") {
                tally.tests += 1;
                let test_desc = test["description"].as_str().expect("test description");
                let valid = test["valid"].as_bool().expect("test validity");
                match run_one(&engine, &signer, schema, &test["data"], valid) {
                    Ok(()) => tally.agreements += 1,
                    Err(d) => {
                        let line = format!("{file} :: {case_desc} :: {test_desc} => {d}");
                        match allowed(draft_dir, &file, case_desc, test_desc, &d) {
                            Some(entry) => {
                                tally.used.insert(entry);
                                tally.allowed.push(line);
                            }
                            None => tally.disagreements.push(line),
                        }
                    }
                }
            }
        }
    }
    tally
}

fn check_draft(draft_dir: &str, sub: &str, draft: Option<Draft>, min_tests: usize) {
    let remotes = Arc::new(SuiteRemotes::load());
    let tally = run_draft(draft_dir, sub, draft, &remotes);
    println!(
        "{draft_dir}/{sub}: {} cases, {} tests, {} agree, {} allow-listed, {} unexpected disagreements",
        tally.cases,
        tally.tests,
        tally.agreements,
        tally.allowed.len(),
        tally.disagreements.len()
    );
    for line in &tally.allowed {
        println!("  allowed: {line}");
    }
    // Every allow-list entry for this draft's files must still be needed.
    let stale: Vec<&str> = ALLOWED_DISAGREEMENTS
        .iter()
        .enumerate()
        .filter(|(i, (d, f, _, _, _, _))| {
            *d == draft_dir
                && f.starts_with(sub)
                && (sub.is_empty() != f.contains('/'))
                && !tally.used.contains(i)
        })
        .map(|(_, e)| e.2)
        .collect();
    assert!(
        stale.is_empty(),
        "allow-list entries no longer needed for {draft_dir}: {stale:?}"
    );
    assert!(
        tally.disagreements.is_empty(),
        "{draft_dir}: {} of {} tests disagree with the suite:\n{}",
        tally.disagreements.len(),
        tally.tests,
        tally.disagreements.join("\n")
    );
    assert_eq!(tally.agreements + tally.allowed.len(), tally.tests);
    assert!(
        tally.tests >= min_tests,
        "{draft_dir}/{sub}: only {} tests ran",
        tally.tests
    );
}

#[test]
fn draft2020_12_required_suite_agrees() {
    check_draft("draft2020-12", "", None, 900);
}

#[test]
fn draft7_required_suite_agrees() {
    check_draft("draft7", "", Some(Draft::Draft7), 900);
}

/// Formats are assertions by default in every draft, so the optional format suites apply.
#[test]
fn draft2020_12_format_suite_agrees() {
    check_draft("draft2020-12", "optional/format", None, 500);
}

#[test]
fn draft7_format_suite_agrees() {
    check_draft("draft7", "optional/format", Some(Draft::Draft7), 400);
}

/// `format_assertion: false` makes `format` an annotation again (the 2019-09 / 2020-12
/// default), and the receipt says which applied.
#[test]
fn format_assertion_is_the_default_and_can_be_turned_off() {
    let engine = Engine::new(EngineConfig::default());
    let signer = SigningIdentity::from_seed("t", &[1; 32]).expect("a 32-byte seed is a valid key");
    let verdict = |extra: Value| {
        let mut request = json!({
            "task_id": "format",
            "expected_schema": {"type": "string", "format": "date"},
            "submitted_output": "2026-13-45",
        });
        if let (Value::Object(r), Value::Object(e)) = (&mut request, extra) {
            r.extend(e);
        }
        let req = VerifyRequest::from_value(request).expect("a valid request");
        let v = engine
            .verify(&req, &signer, time::OffsetDateTime::now_utc())
            .expect("verifies");
        let body: Value = serde_json::from_slice(&v.body).expect("JSON");
        (
            body["result"].clone(),
            body["format_assertion"].clone(),
            body["request_hash"].clone(),
        )
    };
    let (asserted, flag, default_hash) = verdict(json!({}));
    assert_eq!((asserted, flag), (json!("fail"), json!(true)));
    let (explicit, _, explicit_hash) = verdict(json!({"format_assertion": true}));
    assert_eq!(explicit, json!("fail"));
    assert_eq!(
        explicit_hash, default_hash,
        "true is the default: same request hash"
    );
    let (annotated, flag, off_hash) = verdict(json!({"format_assertion": false}));
    assert_eq!((annotated, flag), (json!("pass"), json!(false)));
    assert_ne!(off_hash, default_hash, "the hash binds the choice");
}

#[test]
fn remotes_are_served_from_memory_only() {
    let remotes = SuiteRemotes::load();
    let uri: Uri<String> =
        jsonschema::uri::from_str("http://localhost:1234/integer.json").expect("a valid URI");
    assert_eq!(
        remotes
            .retrieve(&uri)
            .expect("integer.json is a suite remote"),
        json!({"type": "integer"})
    );
    let missing: Uri<String> =
        jsonschema::uri::from_str("http://localhost:1234/nope.json").expect("a valid URI");
    assert!(
        remotes.retrieve(&missing).is_err(),
        "unknown remotes are refused, not fetched"
    );
}
