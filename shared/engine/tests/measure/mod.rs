//! Measuring a verification against its estimate: the thread's own CPU time (not wall time) and
//! the peak of the bytes this binary's allocator holds. Shared by the cost tests
//! (`cost_bound`, `cost_search`); each runs as the only test of its binary, so nothing else
//! allocates meanwhile.

use std::sync::atomic::Ordering::Relaxed;
use verifier_engine::checks::schema::{CompiledSchema, SchemaOptions};
use verifier_engine::cost::calibration as c;
use verifier_engine::cost::{Budget, Meter};
use verifier_engine::{Engine, SigningIdentity};

mod counting_alloc;
use counting_alloc::{CURRENT, PEAK};

/// No ceiling: the estimate is computed whole.
pub const UNLIMITED: Budget = Budget {
    cpu_ns: u64::MAX,
    mem_bytes: u64::MAX,
};

/// One measured case.
#[derive(Debug, Clone)]
pub struct Measured {
    pub name: String,
    pub estimate_ns: u64,
    pub estimate_bytes: u64,
    pub cpu_ns: u64,
    pub peak_bytes: u64,
}

impl Measured {
    /// Estimate over measured CPU (≥ 1: the estimate bounds the work).
    pub fn cpu_margin(&self) -> f64 {
        self.estimate_ns as f64 / self.cpu_ns.max(1) as f64
    }

    /// Estimate over measured peak memory.
    pub fn mem_margin(&self) -> f64 {
        self.estimate_bytes as f64 / self.peak_bytes.max(1) as f64
    }

    /// Whether the estimate bounds both, with the CPU estimate multiplied by `speed` (how much
    /// slower this machine is than the reference one, see [`machine_speed`]).
    pub fn bounded(&self, speed: f64) -> bool {
        self.cpu_ns as f64 <= self.estimate_ns as f64 * speed
            && self.peak_bytes <= self.estimate_bytes
    }
}

/// Why a case was not measured: the service would not run it either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skip {
    /// The body is refused when parsed (422), before anything is priced.
    Invalid,
    /// The schema does not compile (422: a remote reference, a pattern the engine refuses…).
    Uncompilable,
    /// Refused while priced (a chain deeper than the walk follows: 422).
    Refused,
}

/// Compile, price (without a ceiling) and run one request `runs` times, as the service does
/// (compile, price, check, sign, on one meter): the least CPU time, the highest peak, against
/// the meter's total at the end (the estimate, with schema errors charged before they are
/// collected).
pub fn measure(
    name: &str,
    engine: &Engine,
    signer: &SigningIdentity,
    body: &[u8],
    runs: usize,
) -> Result<Measured, Skip> {
    measure_under(name, engine, signer, body, runs, UNLIMITED)
}

/// [`measure`] under `budget`, as the service runs a request: work refused at the budget (schema
/// errors whose collection would pass it) stops there, and what was done until then is measured
/// against the estimate at that point.
pub fn measure_under(
    name: &str,
    engine: &Engine,
    signer: &SigningIdentity,
    body: &[u8],
    runs: usize,
    budget: Budget,
) -> Result<Measured, Skip> {
    let req = engine.parse(body).map_err(|_| Skip::Invalid)?;
    let now = time::OffsetDateTime::now_utc();
    let mut best_cpu = u64::MAX;
    let mut peak = 0;
    let mut estimate = None;
    for _ in 0..runs.max(1) {
        let base = CURRENT.load(Relaxed);
        PEAK.store(base, Relaxed);
        let started = verifier_engine::cost::thread_cpu_ns();
        let mut m = Meter::new(budget);
        let compiled = CompiledSchema::compile_metered(
            &req.expected_schema.value,
            req.expected_schema.canonical.len(),
            &SchemaOptions::default(),
            &mut m,
        )
        .map_err(|_| Skip::Uncompilable)?;
        engine
            .price(&req, &compiled, body.len(), &mut m)
            .map_err(|_| Skip::Refused)?;
        // A refusal at the budget (collecting errors) ends the run, as in the service.
        let v = engine.verify_metered(&req, &compiled, &mut m, signer, now);
        best_cpu = best_cpu.min(verifier_engine::cost::thread_cpu_ns() - started);
        peak = peak.max(PEAK.load(Relaxed).saturating_sub(base));
        estimate.get_or_insert((m.total().cpu_ns, m.peak_bytes()));
        drop(v);
        drop(compiled);
    }
    let (estimate_ns, estimate_bytes) = estimate.unwrap_or_default();
    // The parsed request itself was allocated before; the estimate counts it (Parse).
    Ok(Measured {
        name: name.to_owned(),
        estimate_ns,
        estimate_bytes,
        cpu_ns: best_cpu,
        peak_bytes: peak as u64,
    })
}

/// Measure `body` and, while its CPU is over its estimate, again (the least run counts): other
/// processes inflate CPU time (a thread's cache and frequency are shared), a real underestimate
/// stays over.
pub fn measure_settled(
    name: &str,
    engine: &Engine,
    signer: &SigningIdentity,
    body: &[u8],
    speed: f64,
    budget: Budget,
) -> Result<Measured, Skip> {
    let mut m = measure_under(name, engine, signer, body, 3, budget)?;
    for _ in 0..5 {
        if m.cpu_ns as f64 <= m.estimate_ns as f64 * speed {
            break;
        }
        if let Ok(again) = measure_under(name, engine, signer, body, 3, budget) {
            m.cpu_ns = m.cpu_ns.min(again.cpu_ns);
        }
    }
    Ok(m)
}

/// How much slower per operation this machine is than the reference machine the cost model's
/// constants were measured on (1.0 there or faster; 2.0 on a machine twice as slow): the
/// calibration's speed probe timed against [`c::REFERENCE_PROBE_NS`]. The cost tests multiply
/// estimates by it, as an operator of such a machine sets `--cost-scale`.
pub fn machine_speed(engine: &Engine, signer: &SigningIdentity) -> f64 {
    let body = c::speed_probe_body();
    let mut best = u64::MAX;
    for _ in 0..3 {
        if let Ok(m) = measure("speed probe", engine, signer, &body, 5) {
            best = best.min(m.cpu_ns);
        }
    }
    (best as f64 / c::REFERENCE_PROBE_NS as f64).max(1.0)
}
