//! Searching for the next hole in the cost model instead of waiting for it (issue 35).
//!
//! A generator builds requests from every keyword the validator compiles (the cost model's
//! own keyword table, `cost::keywords::KEYWORDS`) with adversarial values — patterns that
//! backtrack or thrash a DFA, every format, large enums, content keywords — nested in
//! applicators and fanned out through `$ref`s, in drafts 7, 2019-09 and 2020-12, over outputs
//! sized up to the free body limit (long strings, JSON-looking text, wide arrays, many keys,
//! deep nesting). Each request is priced without a ceiling and, when its estimate is within
//! what is worth running ([`RUN_CAP_NS`]), run: its CPU (least of three runs) and peak memory
//! must stay under the estimate. The run reports the worst measured/estimate ratio.
//!
//! `cargo test --release -p verifier-engine --test cost_search -- --nocapture` runs the short
//! search of the test command (a fixed seed); `COST_SEARCH_CASES=20000
//! COST_SEARCH_SEED=<n>` a long one (docs/cost-model.md).

mod measure;

use measure::{Measured, Skip, machine_speed, measure_settled};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use verifier_engine::cost::keywords::{KEYWORDS, Pricing};
use verifier_engine::{Engine, EngineConfig, SigningIdentity};

/// The free body limit: what an unpaid request may send.
const FREE_LIMIT: usize = 64 * 1024;
/// Requests estimated above this are priced but not run (a paid request may cost up to 1 s;
/// the long search sets `COST_SEARCH_RUN_CAP_MS=1000`).
const RUN_CAP_NS: u64 = 100_000_000;

const DRAFTS: [&str; 3] = [
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
];

/// Patterns that are costly for some engine: word boundaries over Unicode, large counted
/// repetitions, nested quantifiers, wide alternations, classes.
const PATTERNS: &[&str] = &[
    "\\b\\w+\\b$",
    "^(a+)+$",
    "(x+x+)+y",
    "[a-z]{200}[0-9]",
    "(?:a|b|c|d|e|f|g|h|i|j){1,50}z",
    "^\\p{L}+$",
    "(\\w+\\s?)*$",
    ".*.*.*=.*",
    "^[\\s\\S]{0,1000}$",
    "[^z]{1,300}$",
    "a",
    "^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$",
];

const FORMATS: &[&str] = &[
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
    "date",
    "time",
    "date-time",
    "duration",
    "uuid",
];

/// A value for an assertion keyword, adversarial where it can be.
fn assertion_value(name: &'static str) -> BoxedStrategy<Value> {
    match name {
        "type" => prop_oneof![
            prop::sample::select(vec![
                "string", "number", "integer", "object", "array", "boolean", "null"
            ])
            .prop_map(|t| json!(t)),
            Just(json!(["string", "number", "array", "object"])),
        ]
        .boxed(),
        "enum" => prop_oneof![
            (1usize..2000).prop_map(|n| json!((0..n).collect::<Vec<_>>())),
            (1usize..500).prop_map(|n| json!(
                (0..n)
                    .map(|i| format!("v{i}{}", "x".repeat(i % 50)))
                    .collect::<Vec<_>>()
            )),
            (1usize..200).prop_map(|n| json!(
                (0..n)
                    .map(|i| json!({"k": i, "v": [i, i]}))
                    .collect::<Vec<_>>()
            )),
        ]
        .boxed(),
        "const" => prop_oneof![
            (0usize..3000).prop_map(|n| json!("c".repeat(n))),
            (0usize..500).prop_map(|n| json!((0..n).collect::<Vec<_>>())),
            Just(json!({"a": [1, 2, {"b": null}]})),
        ]
        .boxed(),
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
            prop_oneof![Just(json!(0)), Just(json!(-1e300)), Just(json!(1.5))].boxed()
        }
        "multipleOf" => {
            prop_oneof![Just(json!(0.0001)), Just(json!(7)), Just(json!(1e-300))].boxed()
        }
        "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" => {
            (0u64..100_000).prop_map(|n| json!(n)).boxed()
        }
        "pattern" => prop::sample::select(PATTERNS)
            .prop_map(|p| json!(p))
            .boxed(),
        "format" => prop::sample::select(FORMATS).prop_map(|f| json!(f)).boxed(),
        "uniqueItems" => Just(json!(true)).boxed(),
        "required" => (0usize..300)
            .prop_map(|n| json!((0..n).map(|i| format!("k{i}")).collect::<Vec<_>>()))
            .boxed(),
        "dependentRequired" => (0usize..50)
            .prop_map(|n| {
                Value::Object(
                    (0..n)
                        .map(|i| {
                            (
                                format!("k{i}"),
                                json!((0..n).map(|j| format!("k{j}")).collect::<Vec<_>>()),
                            )
                        })
                        .collect(),
                )
            })
            .boxed(),
        "contentMediaType" => {
            prop_oneof![Just(json!("application/json")), Just(json!("text/plain"))].boxed()
        }
        "contentEncoding" => {
            prop::sample::select(vec!["base64", "base64url", "base32", "base32hex", "base16"])
                .prop_map(|e| json!(e))
                .boxed()
        }
        "minContains" | "maxContains" => (0u64..50).prop_map(|n| json!(n)).boxed(),
        _ => Just(json!({})).boxed(),
    }
}

/// A leaf schema: a few assertion keywords with adversarial values.
fn leaf() -> BoxedStrategy<Value> {
    let names: Vec<&'static str> = KEYWORDS
        .iter()
        .filter(|k| matches!(k.pricing, Pricing::Assertion | Pricing::Annotation))
        .map(|k| k.name)
        .chain(["minContains", "maxContains"])
        .collect();
    prop::collection::vec(prop::sample::select(names), 1..4)
        .prop_flat_map(|names| {
            let values: Vec<BoxedStrategy<(String, Value)>> = names
                .into_iter()
                .map(|n| {
                    assertion_value(n)
                        .prop_map(move |v| (n.to_owned(), v))
                        .boxed()
                })
                .collect();
            values
        })
        .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>()))
        .boxed()
}

/// A schema: leaves inside applicators, to a small depth.
fn schema() -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(4, 24, 4, |inner| {
            let list = prop::collection::vec(inner.clone(), 1..4);
            prop_oneof![
                list.clone().prop_map(|l| json!({"allOf": l})),
                list.clone().prop_map(|l| json!({"anyOf": l})),
                list.clone().prop_map(|l| json!({"oneOf": l})),
                inner.clone().prop_map(|s| json!({"not": s})),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(i, t, e)| json!({"if": i, "then": t, "else": e})),
                inner.clone().prop_map(|s| json!({"items": s})),
                (list.clone(), inner.clone())
                    .prop_map(|(p, s)| json!({"prefixItems": p, "items": s})),
                (inner.clone(), 0u64..5)
                    .prop_map(|(s, n)| json!({"contains": s, "minContains": n})),
                inner
                    .clone()
                    .prop_map(|s| json!({"additionalProperties": s})),
                inner.clone().prop_map(
                    |s| json!({"unevaluatedProperties": s, "allOf": [{"properties": {"a": {}}}]})
                ),
                inner
                    .clone()
                    .prop_map(|s| json!({"unevaluatedItems": s, "anyOf": [{"prefixItems": [{}]}]})),
                inner.clone().prop_map(|s| json!({"propertyNames": s})),
                (prop::sample::select(PATTERNS), inner.clone())
                    .prop_map(|(p, s)| json!({"patternProperties": {p: s, "^k": s}})),
                inner
                    .clone()
                    .prop_map(|s| json!({"properties": {"a": s, "k1": s, "k2": s}})),
                inner
                    .clone()
                    .prop_map(|s| json!({"dependentSchemas": {"a": s, "k1": s}})),
            ]
        })
        .boxed()
}

/// A whole schema: a draft, and the body applied directly or fanned out through `$ref`s.
fn document() -> BoxedStrategy<Value> {
    (
        prop::sample::select(DRAFTS.to_vec()),
        schema(),
        0usize..40,
        0usize..40,
    )
        .prop_map(|(draft, body, w1, w2)| {
            let defs = if draft.contains("draft-07") {
                "definitions"
            } else {
                "$defs"
            };
            if w1 < 2 || w2 < 2 {
                let mut doc = body;
                if let Value::Object(map) = &mut doc {
                    map.insert("$schema".into(), json!(draft));
                }
                return doc;
            }
            json!({
                "$schema": draft,
                defs: {
                    "d0": body,
                    "d1": {"allOf": vec![json!({"$ref": format!("#/{defs}/d0")}); w1]},
                    "d2": {"allOf": vec![json!({"$ref": format!("#/{defs}/d1")}); w2]},
                },
                "$ref": format!("#/{defs}/d2"),
            })
        })
        .boxed()
}

/// JSON-looking text that is costly to parse.
fn json_text(n: usize, kind: usize) -> String {
    let unit = [
        "0",
        "[0]",
        "{\"a\":0}",
        "[]",
        "\"\\u00e9\"",
        "1.2345678901234567e-300",
    ][kind % 6];
    let mut s = String::from("[");
    while s.len() + unit.len() + 2 < n {
        s.push_str(unit);
        s.push(',');
    }
    s.push_str("0]");
    s
}

/// An output sized up to the free limit.
fn output() -> BoxedStrategy<Value> {
    prop_oneof![
        (1usize..30_000, 0usize..6).prop_map(|(n, k)| json!(json_text(n, k))),
        (1usize..20_000).prop_map(|n| json!("é".repeat(n))),
        (1usize..20_000).prop_map(|n| json!("a.".repeat(n))),
        (1usize..5_000).prop_map(|n| json!((0..n).collect::<Vec<_>>())),
        (1usize..1_000).prop_map(|n| json!(
            (0..n)
                .map(|i| format!("k{i}@example.com"))
                .collect::<Vec<_>>()
        )),
        (1usize..1_000).prop_map(|n| Value::Object(
            (0..n)
                .map(|i| (format!("k{i}"), json!(format!("v{i}"))))
                .collect()
        )),
        (1usize..120).prop_map(|d| {
            let mut v = json!("leaf");
            for _ in 0..d {
                v = json!({"a": [v]});
            }
            v
        }),
        (1usize..200, 1usize..200)
            .prop_map(|(n, m)| json!((0..n).map(|_| json_text(m * 10, n)).collect::<Vec<_>>())),
    ]
    .boxed()
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn no_generated_request_costs_more_than_its_estimate() {
    let cases = env_number("COST_SEARCH_CASES", 1000) as u32;
    let seed = env_number("COST_SEARCH_SEED", 35);
    let run_cap = env_number("COST_SEARCH_RUN_CAP_MS", RUN_CAP_NS / 1_000_000) * 1_000_000;
    let engine = Engine::new(EngineConfig::default());
    let signer = SigningIdentity::from_seed("cost-search", &[5u8; 32]).expect("key");
    let speed = machine_speed(&engine, &signer);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let strategy = (document(), output());
    let mut worst: Option<Measured> = None;
    let mut worst_mem: Option<Measured> = None;
    let mut outcomes: BTreeMap<&str, u64> = BTreeMap::new();
    let mut over: Vec<String> = Vec::new();
    for i in 0..cases {
        let (schema, output) = strategy
            .new_tree(&mut runner)
            .expect("a generated case")
            .current();
        let body = serde_json::to_vec(&json!({
            "task_id": "cost-search",
            "expected_schema": schema,
            "submitted_output": output,
        }))
        .expect("json");
        if body.len() > FREE_LIMIT {
            *outcomes
                .entry("over the free size limit (not generated for the free path)")
                .or_default() += 1;
            continue;
        }
        let name = format!("case {i} (seed {seed})");
        if std::env::var_os("COST_SEARCH_TRACE").is_some() {
            eprintln!("{name}: {} bytes", body.len());
            keep_failure("last", &body);
        }
        match priced_then_run(&name, &engine, &signer, &body, speed, run_cap) {
            Ok(m) => {
                *outcomes.entry("measured").or_default() += 1;
                if !m.bounded(speed) {
                    keep_failure(&name, &body);
                    over.push(format!(
                        "{name}: cpu {} µs vs estimate {} µs, peak {} KiB vs {} KiB\n{}",
                        m.cpu_ns / 1000,
                        m.estimate_ns / 1000,
                        m.peak_bytes >> 10,
                        m.estimate_bytes >> 10,
                        String::from_utf8_lossy(&body[..body.len().min(300)])
                    ));
                }
                if worst
                    .as_ref()
                    .is_none_or(|w| m.cpu_margin() < w.cpu_margin())
                {
                    worst = Some(m.clone());
                }
                if std::env::var_os("COST_SEARCH_KEEP").is_some()
                    && m.mem_margin().min(m.cpu_margin() * speed) < 1.3
                {
                    keep_failure(&name, &body);
                }
                if worst_mem
                    .as_ref()
                    .is_none_or(|w| m.mem_margin() < w.mem_margin())
                {
                    worst_mem = Some(m);
                }
            }
            Err(Outcome::OverRunCap) => {
                *outcomes
                    .entry("priced over the run cap (not run)")
                    .or_default() += 1
            }
            Err(Outcome::Skipped(Skip::Invalid)) => {
                *outcomes.entry("refused at parsing (422)").or_default() += 1
            }
            Err(Outcome::Skipped(Skip::Uncompilable)) => {
                *outcomes.entry("schema refused (422)").or_default() += 1
            }
            Err(Outcome::Skipped(Skip::Refused)) => {
                *outcomes.entry("refused while priced (422)").or_default() += 1
            }
        }
    }
    println!(
        "cost search: {cases} cases, seed {seed}, run cap {} ms, speed {speed:.2}x: {outcomes:?}",
        run_cap / 1_000_000
    );
    if let Some(w) = &worst {
        println!(
            "worst CPU: estimate / measured {:.2} ({}: {} µs of {} µs)",
            w.cpu_margin() * speed,
            w.name,
            w.cpu_ns / 1000,
            w.estimate_ns / 1000
        );
    }
    if let Some(w) = &worst_mem {
        println!(
            "worst memory: estimate / measured {:.2} ({}: {} KiB of {} KiB)",
            w.mem_margin(),
            w.name,
            w.peak_bytes >> 10,
            w.estimate_bytes >> 10
        );
    }
    assert!(
        outcomes.get("measured").copied().unwrap_or(0) * 2 >= u64::from(cases),
        "fewer than half the generated cases were measured: {outcomes:?}"
    );
    assert!(
        over.is_empty(),
        "estimates below the real work:\n{}",
        over.join("\n\n")
    );
}

/// Keep a failing case's body in `target/cost-search/` to study it.
fn keep_failure(name: &str, body: &[u8]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/cost-search");
    let file: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(format!("{file}.json")), body);
    }
}

/// Why a generated case was not measured.
enum Outcome {
    OverRunCap,
    Skipped(Skip),
}

/// Price `body` without running it; run it when the estimate is within `run_cap`.
fn priced_then_run(
    name: &str,
    engine: &Engine,
    signer: &SigningIdentity,
    body: &[u8],
    speed: f64,
    run_cap: u64,
) -> Result<Measured, Outcome> {
    use verifier_engine::checks::schema::{CompiledSchema, SchemaOptions};
    use verifier_engine::cost::{Budget, Meter};
    let req = engine
        .parse(body)
        .map_err(|_| Outcome::Skipped(Skip::Invalid))?;
    let mut meter = Meter::new(Budget {
        cpu_ns: run_cap,
        mem_bytes: 1 << 30,
    });
    let compiled = CompiledSchema::compile_metered(
        &req.expected_schema.value,
        req.expected_schema.canonical.len(),
        &SchemaOptions::default(),
        &mut meter,
    );
    let compiled = match compiled {
        Ok(c) => c,
        Err(verifier_engine::checks::schema::CompileError::OverBudget(_)) => {
            return Err(Outcome::OverRunCap);
        }
        Err(_) => return Err(Outcome::Skipped(Skip::Uncompilable)),
    };
    match engine.price(&req, &compiled, body.len(), &mut meter) {
        Ok(()) => {}
        Err(over) if over.estimate == u64::MAX => return Err(Outcome::Skipped(Skip::Refused)),
        Err(_) => return Err(Outcome::OverRunCap),
    }
    drop(compiled);
    // Run under the same cap: errors whose collection would pass it are refused, as the
    // service refuses them at its ceiling.
    let cap = Budget {
        cpu_ns: run_cap,
        mem_bytes: 1 << 30,
    };
    measure_settled(name, engine, signer, body, speed, cap).map_err(Outcome::Skipped)
}
