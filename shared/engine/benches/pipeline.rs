//! The verification pipeline on the hosted invoice example (`tests/data/hosted-receipts.json`,
//! `receipts[0].request_body_json`):
//!
//! - `full_pipeline_cold_schema`: parse + verify on a fresh engine, so the schema compiles;
//! - `full_pipeline_cached`: parse + verify on a warm engine (hashes, checks, report, signature);
//! - `pipeline_minus_signature`: parse + hashes + cached schema + every check + the report
//!   serialized + the RFC 8785 signing document: everything but the Ed25519 signature;
//! - `sign_only`: the Ed25519 signature over the invoice's signing document;
//! - `stage_*`: the unsigned part stage by stage: parsing and validating the request, the
//!   report (hashes, schema, rules, content), the canonical signing document, the JSON body;
//!   `stage_price`: pricing the request before it runs (the cost model's own cost).
//!
//! Run: `cargo bench -p verifier-engine --bench pipeline -- --warm-up-time 1 --measurement-time 3`.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use serde_json::Value;
use std::hint::black_box;
use time::OffsetDateTime;
use verifier_engine::cost::{Budgets, Meter};
use verifier_engine::receipt::attest::{VERIFY_CONTEXT, signed_document};
use verifier_engine::{Engine, EngineConfig, SigningIdentity, VerifyRequest};

fn invoice_body() -> Vec<u8> {
    let path = format!(
        "{}/../tests/data/hosted-receipts.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("hosted-receipts.json is present");
    let data: Value = serde_json::from_str(&text).expect("hosted-receipts.json is JSON");
    data["receipts"][0]["request_body_json"]
        .as_str()
        .expect("receipts[0].request_body_json is a string")
        .as_bytes()
        .to_vec()
}

fn signer() -> SigningIdentity {
    SigningIdentity::from_seed("bench", &[7u8; 32]).expect("a 32-byte seed is a valid key")
}

/// Everything `Engine::verify` does except the Ed25519 signature itself: the report, the
/// response body serialized, and the canonical signing document.
fn verify_unsigned(engine: &Engine, req: &VerifyRequest) -> (Vec<u8>, Vec<u8>) {
    let (response, _) = engine
        .report(req, "bench", OffsetDateTime::now_utc())
        .expect("the request verifies");
    let document = signed_document(VERIFY_CONTEXT, "bench", &response.verified_at, &response)
        .expect("the response canonicalizes");
    let body = response.to_json().expect("the response serializes");
    (body, document)
}

fn pipeline(c: &mut Criterion) {
    let body = invoice_body();
    let key = signer();

    // Sanity: the example verifies (and fails on its sum rule, as the hosted receipt says).
    {
        let engine = Engine::new(EngineConfig::default());
        let req = VerifyRequest::from_body(&body).expect("the hosted request is valid");
        let out = engine
            .verify(&req, &key, OffsetDateTime::now_utc())
            .expect("verifies");
        assert!(
            !out.passed,
            "the hosted invoice draft fails its sum_equals rule"
        );
        let (body, document) = verify_unsigned(&engine, &req);
        assert!(!body.is_empty() && document.len() > body.len() / 2);
    }

    c.bench_function("full_pipeline_cold_schema", |b| {
        b.iter_batched(
            || Engine::new(EngineConfig::default()),
            |engine| {
                let req = engine.parse(black_box(&body)).expect("valid");
                let out = engine
                    .verify(&req, &key, OffsetDateTime::now_utc())
                    .expect("verifies");
                black_box(out.body);
                engine
            },
            BatchSize::SmallInput,
        )
    });

    let warm = Engine::new(EngineConfig::default());
    let req = warm.parse(&body).expect("valid");
    warm.verify(&req, &key, OffsetDateTime::now_utc())
        .expect("warms the cache");
    // As the server does once a request is served: its schema text is remembered.
    warm.remember_schema(&body, &req);

    c.bench_function("full_pipeline_cached", |b| {
        b.iter(|| {
            let req = warm.parse(black_box(&body)).expect("valid");
            let out = warm
                .verify(&req, &key, OffsetDateTime::now_utc())
                .expect("verifies");
            black_box(out.body)
        })
    });

    // The same request with four expression rules (CEL) beside its sum rule: what expression
    // rules add to a verification (docs/performance.md).
    let mut with_expressions: Value = serde_json::from_slice(&body).expect("json");
    if let Some(rules) = with_expressions["rules"].as_array_mut() {
        for rule in [
            "self.line_items.all(l, l.line_total >= 0.0)",
            "self.total > 0.0 && size(self.line_items) >= 1",
            "self.invoice_id.startsWith('INV-')",
            "self.line_items.exists(l, l.line_total > 50.0)",
        ] {
            rules.push(serde_json::json!({"type": "expression", "rule": rule}));
        }
    }
    let expressions_body = serde_json::to_vec(&with_expressions).expect("json");
    let req_x = warm.parse(&expressions_body).expect("valid");
    warm.remember_schema(&expressions_body, &req_x);
    c.bench_function("full_pipeline_cached_with_4_expressions", |b| {
        b.iter(|| {
            let req = warm.parse(black_box(&expressions_body)).expect("valid");
            let out = warm
                .verify(&req, &key, OffsetDateTime::now_utc())
                .expect("verifies");
            black_box(out.body)
        })
    });

    c.bench_function("stage_parse_with_4_expressions", |b| {
        b.iter(|| black_box(warm.parse(black_box(&expressions_body)).expect("valid")))
    });

    c.bench_function("pipeline_minus_signature", |b| {
        b.iter(|| {
            let req = warm.parse(black_box(&body)).expect("valid");
            black_box(verify_unsigned(&warm, &req))
        })
    });

    // Where the unsigned time goes, stage by stage.
    c.bench_function("stage_parse", |b| {
        b.iter(|| black_box(warm.parse(black_box(&body)).expect("valid")))
    });
    let compiled = warm
        .compiled(&req.expected_schema)
        .expect("the schema compiles");
    c.bench_function("stage_price", |b| {
        b.iter(|| {
            let mut meter = Meter::new(Budgets::default().unpaid);
            warm.price(&req, &compiled, body.len(), &mut meter)
                .expect("within the free ceiling");
            black_box(meter.total())
        })
    });
    c.bench_function("stage_report", |b| {
        b.iter(|| {
            black_box(
                warm.report(&req, "bench", OffsetDateTime::now_utc())
                    .expect("the request verifies"),
            )
        })
    });
    let (response, _) = warm
        .report(&req, "bench", OffsetDateTime::now_utc())
        .expect("the request verifies");
    c.bench_function("stage_signing_document", |b| {
        b.iter(|| {
            black_box(
                signed_document(VERIFY_CONTEXT, "bench", &response.verified_at, &response)
                    .expect("the response canonicalizes"),
            )
        })
    });
    c.bench_function("stage_response_json", |b| {
        b.iter(|| black_box(response.to_json().expect("the response serializes")))
    });

    // The invoice's real signing document (~2.4 KB).
    let (_, message) = verify_unsigned(&warm, &req);
    c.bench_function("sign_only", |b| {
        b.iter(|| black_box(key.sign_base64(black_box(&message))))
    });
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
