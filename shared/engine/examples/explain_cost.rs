//! Print what the cost model charges each part of a request, beside the time the verification
//! takes here: `cargo run --release -p verifier-engine --example explain_cost -- REQUEST.json`.

use std::sync::atomic::Ordering::Relaxed;
use verifier_engine::checks::schema::{CompiledSchema, SchemaOptions};
use verifier_engine::cost::{Budget, Meter, Part};
use verifier_engine::{Engine, EngineConfig, SigningIdentity};

#[path = "../tests/measure/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{CURRENT, PEAK};

/// Bytes held above `base` at the peak since the last reset, and a reset.
fn peak_since(base: usize) -> usize {
    let peak = PEAK.load(Relaxed).saturating_sub(base);
    PEAK.store(CURRENT.load(Relaxed), Relaxed);
    peak
}

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
    let errors = meter.error_collection();
    println!(
        "(if the output is invalid: collecting its schema errors {:.1} µs, {} KiB more)",
        errors.cpu_ns as f64 / 1e3,
        errors.mem_bytes >> 10
    );
    println!(
        "total            {:>12.1} µs {:>10} KiB (peak {} KiB)",
        meter.total().cpu_ns as f64 / 1e3,
        meter.total().mem_bytes >> 10,
        meter.peak_bytes() >> 10
    );
    drop(compiled);
    if std::env::args().any(|a| a == "--no-run") {
        return;
    }
    let now = time::OffsetDateTime::now_utc();
    let base = CURRENT.load(Relaxed);
    peak_since(base);
    let started = verifier_engine::cost::thread_cpu_ns();
    let mut m = Meter::new(unlimited);
    let compiled2 = CompiledSchema::compile_metered(
        &req.expected_schema.value,
        req.expected_schema.canonical.len(),
        &SchemaOptions::default(),
        &mut m,
    )
    .expect("compiles");
    let compiled_at = verifier_engine::cost::thread_cpu_ns();
    let compile_peak = peak_since(base);
    engine
        .price(&req, &compiled2, body.len(), &mut m)
        .expect("priced");
    let priced_at = verifier_engine::cost::thread_cpu_ns();
    let price_peak = peak_since(base);
    let v = engine.verify_metered(&req, &compiled2, &mut m, &signer, now);
    let done = verifier_engine::cost::thread_cpu_ns();
    let verify_peak = peak_since(base);
    println!(
        "measured: compile {:.1} µs (peak {} KiB), price {:.1} µs (peak {} KiB), verification {:.1} µs (peak {} KiB, {}); schema errors charged {:.1} µs, {} KiB",
        (compiled_at - started) as f64 / 1e3,
        compile_peak >> 10,
        (priced_at - compiled_at) as f64 / 1e3,
        price_peak >> 10,
        (done - priced_at) as f64 / 1e3,
        verify_peak >> 10,
        if v.is_ok() { "ok" } else { "refused" },
        m.part(Part::SchemaErrors).cpu_ns as f64 / 1e3,
        m.part(Part::SchemaErrors).mem_bytes >> 10
    );
}
