//! Re-derive the cost model's constants on this machine.
//!
//! `cargo run --release -p verifier-engine --example calibrate [-- --quick]`
//!
//! Each line times one unit of work the model prices (the least of several runs of the thread's
//! own CPU time, so other processes do not inflate it), over the costliest variants we know of
//! its input, and prints the worst measured cost per unit beside the constant in
//! `shared/engine/src/cost/calibration.rs` and their ratio: the **margin**. A margin under 1.0 means
//! this machine is slower than the model assumes for that unit; `cost_bound` (the test) will
//! then find estimates below the real work. The constants were set from this output on the
//! reference machine (a 2-vCPU Intel Xeon VM) with a margin of about 2–3×.
//!
//! Memory lines count the peak bytes this binary's allocator holds during one run.

use serde_json::{Value, json};
use std::sync::atomic::Ordering::Relaxed;
use verifier_engine::cost::calibration as c;
use verifier_engine::cost::thread_cpu_ns;

#[path = "../tests/measure/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{CURRENT, PEAK};

/// The least CPU time of `runs` runs of `work`, and the largest peak of allocated bytes above
/// what was held before.
fn measure(runs: usize, mut work: impl FnMut()) -> (u64, u64) {
    let mut best = u64::MAX;
    let mut peak = 0;
    for _ in 0..runs {
        let base = CURRENT.load(Relaxed);
        PEAK.store(base, Relaxed);
        let t = thread_cpu_ns();
        work();
        best = best.min(thread_cpu_ns() - t);
        peak = peak.max(PEAK.load(Relaxed).saturating_sub(base));
    }
    (best, peak as u64)
}

/// JSON texts of `n` bytes built to be costly to parse: many small values, long numbers,
/// escapes, unique keys, deep nesting.
fn json_texts(n: usize) -> Vec<(&'static str, String)> {
    let fill = |unit: &str, open: &str, close: &str| {
        let count = (n.saturating_sub(open.len() + close.len())) / (unit.len() + 1);
        let mut s = String::with_capacity(n + 16);
        s.push_str(open);
        for i in 0..count {
            if i > 0 {
                s.push(',');
            }
            s.push_str(unit);
        }
        s.push_str(close);
        s
    };
    let keyed = {
        let mut s = String::from("{");
        let mut i = 0;
        while s.len() < n {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("\"{i:x}\":0"));
            i += 1;
        }
        s.push('}');
        s
    };
    let nested = {
        let mut s = String::from("[");
        while s.len() < n {
            s.push_str(&"[".repeat(100));
            s.push_str(&"]".repeat(100));
            s.push(',');
        }
        s.push_str("0]");
        s
    };
    let nested_objects = {
        let mut s = String::from("[");
        while s.len() < n {
            s.push_str(&"{\"\":".repeat(100));
            s.push('0');
            s.push_str(&"}".repeat(100));
            s.push(',');
        }
        s.push_str("0]");
        s
    };
    vec![
        ("array of zeros", fill("0", "[", "]")),
        ("array of one-item arrays", fill("[0]", "[", "]")),
        ("array of one-member objects", fill("{\"\":0}", "[", "]")),
        ("nested objects 100 deep", nested_objects),
        ("array of empty objects", fill("{}", "[", "]")),
        ("array of empty arrays", fill("[]", "[", "]")),
        ("array of empty strings", fill("\"\"", "[", "]")),
        (
            "array of long floats",
            fill("1.2345678901234567890123e-300", "[", "]"),
        ),
        (
            "escaped characters",
            format!("\"{}\"", "\\u00e9".repeat(n / 6)),
        ),
        ("object of unique keys", keyed),
        ("nested arrays 100 deep", nested),
        ("unclosed array of zeros", fill("0", "[", "")),
    ]
}

fn validator(draft: &str, schema: Value) -> jsonschema::Validator {
    let mut schema = schema;
    schema["$schema"] = json!(draft);
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("schema")
}

const DRAFT7: &str = "http://json-schema.org/draft-07/schema#";

/// A variant measured against the model's estimate for it.
struct Variant {
    name: String,
    cpu_ns: u64,
    model_ns: u64,
    peak: u64,
    model_peak: u64,
}

impl Variant {
    fn margins(&self) -> (f64, f64) {
        (
            self.model_ns as f64 / self.cpu_ns.max(1) as f64,
            self.model_peak as f64 / self.peak.max(1) as f64,
        )
    }

    fn print(&self) {
        let (cpu, mem) = self.margins();
        println!(
            "  {:<44} cpu {:>8.1} µs model {:>8.1} µs margin {:>5.2}x   peak {:>7} KiB model {:>7} KiB margin {:>5.2}x",
            self.name,
            self.cpu_ns as f64 / 1e3,
            self.model_ns as f64 / 1e3,
            cpu,
            self.peak >> 10,
            self.model_peak >> 10,
            mem
        );
    }
}

/// `contentMediaType`/`contentEncoding` in draft 7: each variant's measured CPU and peak
/// against `cost::content::check_cost` for it; the per-unit lines say what the purest variants
/// imply for each constant.
fn content_keywords(runs: usize, n: usize) -> Vec<Variant> {
    use verifier_engine::cost::content::{TextShape, check_cost};
    let mut out = Vec::new();
    let media = validator(DRAFT7, json!({"contentMediaType": "application/json"}));
    let mut units: Vec<String> = Vec::new();
    for (name, text) in json_texts(n) {
        let shape = TextShape::of(&text);
        let instance = Value::String(text);
        let (ns, peak) = measure(runs, || {
            std::hint::black_box(media.is_valid(&instance));
        });
        let model = check_cost(&shape, false, true);
        match name {
            "escaped characters" => units.push(format!(
                "per byte {:.2} ns, {:.2} bytes (constants {} ns, {} bytes)",
                ns as f64 / shape.bytes as f64,
                peak as f64 / shape.bytes as f64,
                c::CONTENT_JSON_NS_PER_BYTE,
                c::CONTENT_JSON_BYTES_PER_BYTE
            )),
            "array of zeros" => units.push(format!(
                "per value {:.1} ns, {:.1} bytes (constants {} ns, {} bytes)",
                ns as f64 / shape.values as f64,
                peak as f64 / shape.values as f64,
                c::CONTENT_JSON_NS_PER_VALUE,
                c::CONTENT_JSON_BYTES_PER_VALUE
            )),
            "nested arrays 100 deep" => units.push(format!(
                "per container {:.1} ns, {:.1} bytes (constants {} ns, {} bytes)",
                ns as f64 / shape.containers as f64,
                peak as f64 / shape.containers as f64,
                c::CONTENT_JSON_NS_PER_CONTAINER,
                c::CONTENT_JSON_BYTES_PER_CONTAINER
            )),
            _ => {}
        }
        out.push(Variant {
            name: format!("json: {name}"),
            cpu_ns: ns,
            model_ns: model.cpu_ns,
            peak,
            model_peak: model.peak_bytes,
        });
    }
    for line in units {
        println!("  contentMediaType json, {line}");
    }
    use base64::Engine as _;
    let texts = json_texts(n / 2);
    let text = &texts[0].1;
    let encoded = [
        (
            "base64",
            "base64",
            base64::engine::general_purpose::STANDARD.encode(text),
        ),
        ("base16 lower case", "base16", hex::encode(text)),
        ("base16 upper case", "base16", hex::encode_upper(text)),
        ("base16 over non-ASCII text", "base16", "é".repeat(n / 4)),
        ("base64 over non-ASCII text", "base64", "é".repeat(n / 4)),
        ("base64 invalid at the end", "base64", {
            let mut s = base64::engine::general_purpose::STANDARD.encode(text);
            s.push('*');
            s
        }),
    ];
    for (name, encoding, string) in &encoded {
        let shape = TextShape::of(string);
        let instance = Value::String(string.clone());
        for (with_media, schema) in [
            (false, json!({"contentEncoding": encoding})),
            (
                true,
                json!({"contentEncoding": encoding, "contentMediaType": "application/json"}),
            ),
        ] {
            let v = validator(DRAFT7, schema);
            let (ns, peak) = measure(runs, || {
                std::hint::black_box(v.is_valid(&instance));
            });
            let model = check_cost(&shape, true, with_media);
            out.push(Variant {
                name: format!("{name}{}", if with_media { " + json" } else { "" }),
                cpu_ns: ns,
                model_ns: model.cpu_ns,
                peak,
                model_peak: model.peak_bytes,
            });
        }
    }
    out
}

/// The speed probe's CPU time on this machine (compile, price, checks, receipt; the least of
/// `runs`), against [`c::REFERENCE_PROBE_NS`]: the scale this machine's estimates need.
fn speed_probe(runs: usize) -> u64 {
    use verifier_engine::checks::schema::{CompiledSchema, SchemaOptions};
    use verifier_engine::cost::{Budget, Meter};
    let engine = verifier_engine::Engine::new(verifier_engine::EngineConfig::default());
    let signer =
        verifier_engine::SigningIdentity::from_seed("calibrate", &[7u8; 32]).expect("signing key");
    let body = c::speed_probe_body();
    let req = engine.parse(&body).expect("the probe is a valid request");
    let unlimited = Budget {
        cpu_ns: u64::MAX,
        mem_bytes: u64::MAX,
    };
    let now = time::OffsetDateTime::now_utc();
    let (ns, _) = measure(runs, || {
        let mut meter = Meter::new(unlimited);
        let compiled = CompiledSchema::compile_metered(
            &req.expected_schema.value,
            req.expected_schema.canonical.len(),
            &SchemaOptions::default(),
            &mut meter,
        )
        .expect("the probe compiles");
        engine
            .price(&req, &compiled, body.len(), &mut meter)
            .expect("the probe is priced");
        let v = engine.verify_metered(&req, &compiled, &mut meter, &signer, now);
        std::hint::black_box(v.is_ok());
    });
    ns
}

/// Collecting schema errors (jsonschema 0.61 collects every error of an invalid output before
/// the first is returned): CPU and held bytes per error, and per byte of what an error clones
/// (a `not` subschema; under `anyOf`/`oneOf`/`propertyNames`, the instance the error is about).
fn schema_errors(runs: usize) {
    let n = 3000usize;
    let ints: Value = json!((0..n).collect::<Vec<_>>());
    let big_schema: Value = json!({"enum": (0..200).map(|i| json!({"k": i})).collect::<Vec<_>>()});
    let big_schema_bytes = verifier_engine::cost::size::Shape::of(&big_schema).tree_bytes;
    let long_pattern = format!("^(?:{})$", "ab".repeat(500));
    let strings: Value = json!((0..n).map(|i| format!("s{i}")).collect::<Vec<_>>());
    let array_bytes = verifier_engine::cost::size::Shape::of(&ints).tree_bytes;
    let objects: Value = json!((0..n).map(|_| json!({"k": 1})).collect::<Vec<_>>());
    let keyed = Value::Object((0..n).map(|i| (format!("key-{i}"), json!(i))).collect());
    let cases: Vec<(&str, Value, &Value, u64, u64)> = vec![
        // name, schema, instance, errors, bytes the errors clone
        (
            "type errors on items",
            json!({"items": {"type": "string"}}),
            &ints,
            n as u64,
            0,
        ),
        (
            "enum errors (shared candidates)",
            json!({"items": {"enum": (0..500).map(|i| json!({"k": i})).collect::<Vec<_>>()}}),
            &ints,
            n as u64,
            0,
        ),
        (
            "pattern errors (pattern cloned)",
            json!({"items": {"pattern": long_pattern}}),
            &strings,
            n as u64,
            (n * long_pattern.len()) as u64,
        ),
        (
            "not errors (subschema cloned)",
            json!({"items": {"not": big_schema.clone()}}),
            &objects,
            n as u64,
            n as u64 * big_schema_bytes,
        ),
        (
            "anyOf over items (2 errors each)",
            json!({"items": {"anyOf": [{"type": "string"}, {"type": "object"}]}}),
            &ints,
            3 * n as u64,
            2 * n as u64 * 72,
        ),
        (
            "anyOf at the root of a large array",
            json!({"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "integer"}]}),
            &ints,
            4,
            3 * array_bytes,
        ),
        (
            "additionalProperties false, many keys",
            json!({"additionalProperties": false}),
            &keyed,
            n as u64,
            (n * 30) as u64,
        ),
    ];
    println!(
        "schema errors: collecting them (iter_errors, all at once) per error and per cloned byte:"
    );
    for (name, schema, instance, errors, cloned) in cases {
        let v = validator(DRAFT7, schema);
        let (ns, peak) = measure(runs, || {
            std::hint::black_box(v.iter_errors(instance).count());
        });
        let (valid_ns, _) = measure(runs, || {
            std::hint::black_box(v.is_valid(instance));
        });
        let collect_ns = ns.saturating_sub(valid_ns);
        let model_ns = errors * c::ERROR_COLLECT_NS + cloned * c::ERROR_CLONE_NS_PER_BYTE;
        let model_bytes = errors * c::ERROR_HELD_BYTES + cloned * c::ERROR_CLONE_BYTES_PER_BYTE;
        println!(
            "  {:<40} {:>6} errors: {:>7.1} µs ({:>6.0} ns each), peak {:>6} KiB ({:>6.0} B each); model {:>7.1} µs, {:>6} KiB: margins {:.2}x, {:.2}x",
            name,
            errors,
            collect_ns as f64 / 1e3,
            collect_ns as f64 / errors as f64,
            peak >> 10,
            peak as f64 / errors as f64,
            model_ns as f64 / 1e3,
            model_bytes >> 10,
            model_ns as f64 / collect_ns.max(1) as f64,
            model_bytes as f64 / peak.max(1) as f64
        );
    }
}

/// Keywords whose cost is not a scan: `multipleOf` with a fraction (exact rational arithmetic on
/// big integers), `unevaluatedItems`/`unevaluatedProperties` (which track what was evaluated).
fn other_keywords(runs: usize) {
    let n = 5000usize;
    let ints: Value = json!((0..n).collect::<Vec<_>>());
    let floats: Value = json!((0..n).map(|i| i as f64 * 1.37e-3 + 0.5).collect::<Vec<_>>());
    let strings: Value = json!((0..n).map(|i| format!("s{i}")).collect::<Vec<_>>());
    let huge: Value = json!(
        (0..n)
            .map(|i| 1.7e308 - i as f64 * 1e292)
            .collect::<Vec<_>>()
    );
    let cases: Vec<(&str, &str, Value, &Value)> = vec![
        (
            "multipleOf 7 over integers",
            DRAFT7,
            json!({"items": {"multipleOf": 7}}),
            &ints,
        ),
        (
            "multipleOf 0.01 over floats",
            DRAFT7,
            json!({"items": {"multipleOf": 0.01}}),
            &floats,
        ),
        (
            "multipleOf 1e-300 over integers",
            DRAFT7,
            json!({"items": {"multipleOf": 1e-300}}),
            &ints,
        ),
        (
            "multipleOf 1e-300 over floats",
            DRAFT7,
            json!({"items": {"multipleOf": 1e-300}}),
            &floats,
        ),
        (
            "multipleOf 3.3e-7 over floats",
            DRAFT7,
            json!({"items": {"multipleOf": 3.3e-7}}),
            &floats,
        ),
        (
            "multipleOf 5e-324 over huge floats",
            DRAFT7,
            json!({"items": {"multipleOf": 5e-324}}),
            &huge,
        ),
        (
            "multipleOf 1.5e-300 over huge floats",
            DRAFT7,
            json!({"items": {"multipleOf": 1.5e-300}}),
            &huge,
        ),
        (
            "multipleOf 0.1 over huge floats",
            DRAFT7,
            json!({"items": {"multipleOf": 0.1}}),
            &huge,
        ),
        (
            "unevaluatedItems after anyOf prefixItems",
            "https://json-schema.org/draft/2020-12/schema",
            json!({"unevaluatedItems": {"type": "integer"}, "anyOf": [{"prefixItems": [{}]}]}),
            &ints,
        ),
        (
            "unevaluatedItems false after anyOf prefixItems",
            "https://json-schema.org/draft/2020-12/schema",
            json!({"unevaluatedItems": false, "anyOf": [{"prefixItems": [{}]}]}),
            &strings,
        ),
        (
            "unevaluatedItems minLength (errors)",
            "https://json-schema.org/draft/2020-12/schema",
            json!({"unevaluatedItems": {"minLength": 100}, "anyOf": [{"prefixItems": [{}]}]}),
            &strings,
        ),
        (
            "items unevaluatedProperties over integers",
            "https://json-schema.org/draft/2020-12/schema",
            json!({"items": {"unevaluatedProperties": {"minProperties": 9}, "allOf": [{"properties": {"a": {}}}]}}),
            &ints,
        ),
    ];
    println!("other keywords, {n} values: is_valid and iter_errors, per value:");
    for (name, draft, schema, instance) in cases {
        let v = validator(draft, schema);
        let (valid_ns, valid_peak) = measure(runs, || {
            std::hint::black_box(v.is_valid(instance));
        });
        let (errors_ns, errors_peak) = measure(runs, || {
            std::hint::black_box(v.iter_errors(instance).count());
        });
        println!(
            "  {:<48} is_valid {:>7.1} ns, {:>6.0} B; iter_errors {:>7.1} ns, {:>6.0} B (per value)",
            name,
            valid_ns as f64 / n as f64,
            valid_peak as f64 / n as f64,
            errors_ns as f64 / n as f64,
            errors_peak as f64 / n as f64
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 3 } else { 9 };
    println!("cost model calibration ({runs} runs per variant; margin = model / measured)");
    let probe = speed_probe(runs * 3);
    let scale = probe as f64 / c::REFERENCE_PROBE_NS as f64;
    println!(
        "speed probe: {:.0} µs here, {:.0} µs on the reference machine: this machine takes {scale:.2}x its time{}",
        probe as f64 / 1e3,
        c::REFERENCE_PROBE_NS as f64 / 1e3,
        if scale > 1.1 {
            format!(" (run the server with --cost-scale {scale:.2})")
        } else {
            String::new()
        }
    );
    other_keywords(runs);
    schema_errors(runs);
    println!("contentMediaType / contentEncoding (draft 7), one check of a string of about 60 KB:");
    let variants = content_keywords(runs, 60_000);
    for v in &variants {
        v.print();
    }
    let least = |f: fn(&Variant) -> f64| variants.iter().map(f).fold(f64::INFINITY, f64::min);
    println!(
        "  least margin: cpu {:.2}x, memory {:.2}x",
        least(|v| v.margins().0),
        least(|v| v.margins().1)
    );
}
