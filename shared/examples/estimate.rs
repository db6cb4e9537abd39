//! Print what the cost model estimates for a request body, part by part, next to the measured
//! CPU time of the verification: `cargo run --release -p verifier-core --example estimate -- BODY.json`.
use std::time::Instant;
use verifier_core::cost::{Budget, Meter, Part};
use verifier_core::{Engine, EngineConfig, SigningIdentity};

fn main() {
    let path = std::env::args().nth(1).expect("a request body file");
    let body = std::fs::read(&path).expect("readable");
    let engine = Engine::new(EngineConfig::default());
    let req = engine.parse(&body).expect("a valid request");
    let signer = SigningIdentity::from_seed("estimate", &[1u8; 32]).expect("key");
    // The process's first compile also builds jsonschema's meta-schema validators (once).
    let warm: serde_json::Value =
        serde_json::json!({"type": "object", "properties": {"x": {"pattern": "^x[0-9]+$"}}});
    let _ = verifier_core::checks::schema::CompiledSchema::compile(&warm, &Default::default());
    let mut meter = Meter::new(Budget {
        cpu_ns: u64::MAX,
        mem_bytes: u64::MAX,
    });
    let started = Instant::now();
    let compiled = engine
        .compile(&req.expected_schema, req.format_assertion, &mut meter, true)
        .expect("compiles");
    let compile_time = started.elapsed();
    engine
        .price(&req, &compiled, body.len(), &mut meter)
        .expect("priced");
    for part in Part::ALL {
        let c = meter.part(part);
        println!(
            "{:15} {:>12} ns {:>12} bytes",
            part.name(),
            c.cpu_ns,
            c.mem_bytes
        );
    }
    let total = meter.total();
    println!(
        "{:15} {:>12} ns {:>12} bytes",
        "total", total.cpu_ns, total.mem_bytes
    );
    let mut best = f64::MAX;
    for _ in 0..5 {
        let mut m = Meter::new(Budget {
            cpu_ns: u64::MAX,
            mem_bytes: u64::MAX,
        });
        let t = Instant::now();
        let _ = engine.verify_metered(
            &req,
            &compiled,
            &mut m,
            &signer,
            time::OffsetDateTime::now_utc(),
        );
        best = best.min(t.elapsed().as_nanos() as f64);
    }
    println!(
        "measured: compile {:?}, verify (cached) {:.0} ns",
        compile_time, best
    );
}
