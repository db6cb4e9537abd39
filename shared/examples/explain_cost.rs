//! Print what the cost model charges each part of a request, beside the time the verification
//! takes here: `cargo run --release -p verifier-core --example explain_cost -- REQUEST.json`.

use verifier_core::checks::schema::{CompiledSchema, SchemaOptions};
use verifier_core::cost::{Budget, Meter, Part};
use verifier_core::{Engine, EngineConfig, SigningIdentity};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: explain_cost REQUEST.json");
        std::process::exit(2);
    };
    let body = std::fs::read(&path).expect("readable request file");
    let engine = Engine::new(EngineConfig::default());
    let signer = SigningIdentity::from_seed("explain", &[3u8; 32]).expect("key");
    let req = match engine.parse(&body) {
        Ok(req) => req,
        Err(e) => {
            eprintln!("invalid request: {:?}", e.problems);
            std::process::exit(1);
        }
    };
    let unlimited = Budget {
        cpu_ns: u64::MAX,
        mem_bytes: u64::MAX,
    };
    let mut meter = Meter::new(unlimited);
    let compiled = CompiledSchema::compile_metered(
        &req.expected_schema.value,
        req.expected_schema.canonical.len(),
        &SchemaOptions::default(),
        &mut meter,
    )
    .expect("the schema compiles");
    engine
        .price(&req, &compiled, body.len(), &mut meter)
        .expect("priced");
    for part in Part::ALL {
        let c = meter.part(part);
        if c.cpu_ns > 0 || c.mem_bytes > 0 {
            println!(
                "{:<16} {:>12.1} µs {:>10} KiB",
                part.name(),
                c.cpu_ns as f64 / 1e3,
                c.mem_bytes >> 10
            );
        }
    }
    println!(
        "total            {:>12.1} µs {:>10} KiB (peak {} KiB)",
        meter.total().cpu_ns as f64 / 1e3,
        meter.total().mem_bytes >> 10,
        meter.peak_bytes() >> 10
    );
    let now = time::OffsetDateTime::now_utc();
    let started = verifier_core::cost::thread_cpu_ns();
    let mut m = Meter::new(unlimited);
    let compiled2 = CompiledSchema::compile_metered(
        &req.expected_schema.value,
        req.expected_schema.canonical.len(),
        &SchemaOptions::default(),
        &mut m,
    )
    .expect("compiles");
    let compiled_at = verifier_core::cost::thread_cpu_ns();
    let v = engine.verify_metered(&req, &compiled2, &mut m, &signer, now);
    let done = verifier_core::cost::thread_cpu_ns();
    println!(
        "measured: compile {:.1} µs, verification {:.1} µs ({}), schema errors charged {:.1} µs",
        (compiled_at - started) as f64 / 1e3,
        (done - compiled_at) as f64 / 1e3,
        if v.is_ok() { "ok" } else { "refused" },
        m.part(Part::SchemaErrors).cpu_ns as f64 / 1e3
    );
}
