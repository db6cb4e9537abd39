//! Every keyword the pinned jsonschema compiles, in every draft, has a price in the cost model
//! (`verifier_engine::cost::keywords::KEYWORDS`).
//!
//! The validator's own keyword table is read from its source (`get_for_draft` in
//! `src/keywords/mod.rs` of the jsonschema package cargo resolved for this workspace, found with
//! `cargo metadata`), together with the companion keywords its compilers read from a schema
//! object (`minContains`, `then`, …). A (draft, keyword) the validator compiles that the model
//! does not list fails this test, so upgrading jsonschema cannot add unpriced work silently.
//! The reverse holds too: every listed (draft, keyword) must be one the validator compiles,
//! every keyword priced as applied or asserted must be one the cost walk reads, and every
//! keyword listed as an annotation is probed on the compiled validator to assert nothing.

use jsonschema::Draft;
use regex::Regex;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use verifier_engine::checks::keywords::Keywords;
use verifier_engine::cost::keywords::{KEYWORDS, Pricing, pricing};

const DRAFTS: [(Draft, &str); 5] = [
    (Draft::Draft4, "Draft4"),
    (Draft::Draft6, "Draft6"),
    (Draft::Draft7, "Draft7"),
    (Draft::Draft201909, "Draft201909"),
    (Draft::Draft202012, "Draft202012"),
];

/// The source directory of the jsonschema package this workspace builds.
fn jsonschema_src() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Only this machine's platform: the others' packages need not be downloaded.
    let rustc = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .expect("host triple");
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        .arg(host)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata failed");
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let package = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "jsonschema")
        .expect("jsonschema among the packages");
    let manifest = PathBuf::from(package["manifest_path"].as_str().expect("manifest path"));
    manifest.parent().expect("package dir").join("src")
}

/// The source without its test modules (their schemas mention keywords in every position).
fn without_tests(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

/// (draft, keyword) pairs of `get_for_draft`, the validator's keyword table.
fn compiled_keywords(mod_rs: &str) -> BTreeSet<(String, &'static str)> {
    let start = mod_rs
        .find("fn get_for_draft")
        .expect("jsonschema's keyword table (get_for_draft) is where it was");
    let body = &without_tests(mod_rs)[start..];
    let body = &body[..body.find("\n}\n").expect("end of get_for_draft")];
    let arm =
        Regex::new(r#"\(\s*((?:_|Draft::\w+)(?:\s*\|\s*Draft::\w+)*)\s*,\s*"([^"]+)"\s*,?\s*\)"#)
            .expect("regex");
    let mut out = BTreeSet::new();
    for cap in arm.captures_iter(body) {
        let (drafts, name) = (&cap[1], cap[2].to_owned());
        for (_, label) in DRAFTS {
            let applies = drafts.trim() == "_"
                || drafts
                    .split('|')
                    .any(|d| d.trim().trim_start_matches("Draft::") == label);
            if applies {
                out.insert((name.clone(), label));
            }
        }
    }
    out
}

/// Keywords the validator's compilers read from a schema object beside their own.
fn companion_keywords(keywords_dir: &PathBuf) -> BTreeSet<String> {
    let read = Regex::new(
        r#"(?:\.get|contains_key|Site::new\(ctx,|new_at_location|compile_branch\(ctx, parent,)\(?\s*"([$A-Za-z]+)"\)"#,
    )
    .expect("regex");
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(keywords_dir).expect("keywords dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        for cap in read.captures_iter(without_tests(&text)) {
            out.insert(cap[1].to_owned());
        }
    }
    out
}

fn draft_of(label: &str) -> Draft {
    DRAFTS
        .iter()
        .find(|(_, l)| *l == label)
        .map(|(d, _)| *d)
        .expect("draft")
}

fn schema_uri(draft: Draft) -> &'static str {
    match draft {
        Draft::Draft4 => "http://json-schema.org/draft-04/schema#",
        Draft::Draft6 => "http://json-schema.org/draft-06/schema#",
        Draft::Draft7 => "http://json-schema.org/draft-07/schema#",
        Draft::Draft201909 => "https://json-schema.org/draft/2019-09/schema",
        _ => "https://json-schema.org/draft/2020-12/schema",
    }
}

#[test]
fn every_keyword_the_validator_compiles_is_priced() {
    let src = jsonschema_src();
    let mod_rs = std::fs::read_to_string(src.join("keywords/mod.rs")).expect("keywords/mod.rs");
    let compiled = compiled_keywords(&mod_rs);
    // The table has about fifty keywords in five drafts; far fewer means it moved.
    assert!(
        compiled.len() > 150,
        "only {} (draft, keyword) pairs read from jsonschema's table: its layout changed, update this reader",
        compiled.len()
    );
    let unpriced: Vec<String> = compiled
        .iter()
        .filter(|(name, draft)| pricing(draft_of(draft), name).is_none())
        .map(|(name, draft)| format!("{name} ({draft})"))
        .collect();
    assert!(
        unpriced.is_empty(),
        "keywords jsonschema compiles that the cost model does not price (add them to cost/keywords.rs, priced): {unpriced:?}"
    );

    // Companions: each must be listed for some draft (or not be a keyword at all).
    const NOT_KEYWORDS: &[&str] = &["evaluationPath", "instanceLocation", "schemaLocation"];
    let companions = companion_keywords(&src.join("keywords"));
    assert!(companions.contains("then") && companions.contains("minContains"));
    let unlisted: Vec<&String> = companions
        .iter()
        .filter(|c| !NOT_KEYWORDS.contains(&c.as_str()) && !KEYWORDS.iter().any(|k| k.name == *c))
        .collect();
    assert!(
        unlisted.is_empty(),
        "keywords jsonschema's compilers read that the cost model does not list: {unlisted:?}"
    );

    // The reverse: nothing listed that the validator does not compile (a stale entry would
    // hide a keyword that moved to another draft).
    let compiled_names: HashMap<&str, ()> =
        compiled.iter().map(|(n, _)| (n.as_str(), ())).collect();
    for k in KEYWORDS {
        if matches!(k.pricing, Pricing::WithParent(_)) {
            assert!(
                companions.contains(k.name),
                "{} is read by no compiler",
                k.name
            );
            continue;
        }
        for d in k.drafts {
            let label = DRAFTS
                .iter()
                .find(|(x, _)| x == d)
                .map(|(_, l)| *l)
                .expect("draft");
            assert!(
                compiled.contains(&(k.name.to_owned(), label)),
                "{} is listed for {label} but jsonschema does not compile it there",
                k.name
            );
        }
        assert!(compiled_names.contains_key(k.name));
    }
}

#[test]
fn priced_keywords_are_read_by_the_cost_walk() {
    for k in KEYWORDS {
        match k.pricing {
            Pricing::Applicator | Pricing::Assertion | Pricing::WithParent(_)
                if !matches!(k.name, "minContains" | "maxContains") =>
            {
                assert!(
                    Keywords::reads(k.name),
                    "the cost walk does not read {}",
                    k.name
                );
            }
            _ => {}
        }
    }
}

#[test]
fn keywords_listed_as_annotations_assert_nothing() {
    let values = [
        json!("application/json"),
        json!("base64"),
        json!("base16"),
        json!("text/x-unknown"),
        json!({"type": "integer"}),
        json!(false),
    ];
    let instances = [
        json!("{not json"),
        json!("!!not base64!!"),
        json!("zz"),
        json!(""),
        json!(1),
        json!(null),
        json!([1, "x"]),
        json!({"a": 1}),
    ];
    let mut probed = 0;
    for k in KEYWORDS.iter().filter(|k| k.pricing == Pricing::Annotation) {
        for draft in k.drafts {
            for value in &values {
                let mut schema = json!({"$schema": schema_uri(*draft)});
                schema[k.name] = value.clone();
                if k.name == "contentSchema" {
                    schema["contentMediaType"] = json!("application/json");
                }
                let Ok(validator) = jsonschema::options().with_draft(*draft).build(&schema) else {
                    continue;
                };
                for instance in &instances {
                    probed += 1;
                    assert!(
                        validator.is_valid(instance),
                        "{} in {draft:?} asserted something ({value} on {instance}): price it",
                        k.name
                    );
                }
            }
        }
    }
    assert!(probed > 100, "only {probed} probes compiled");
}
