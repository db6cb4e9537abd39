//! Re-derive the cost model's constants on this machine.
//!
//! `cargo run --release -p verifier-core --example calibrate [-- --quick]`
//!
//! Each line times one unit of work the model prices (the least of several runs of the thread's
//! own CPU time, so other processes do not inflate it), over the costliest variants we know of
//! its input, and prints the worst measured cost per unit beside the constant in
//! `shared/src/cost/calibration.rs` and their ratio: the **margin**. A margin under 1.0 means
//! this machine is slower than the model assumes for that unit; `cost_bound` (the test) will
//! then find estimates below the real work. The constants were set from this output on the
//! reference machine (a 2-vCPU Intel Xeon VM) with a margin of about 2–3×.
//!
//! Memory lines count the peak bytes this binary's allocator holds during one run.

use serde_json::{Value, json};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use verifier_core::cost::calibration as c;

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(now, Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            let now =
                CURRENT.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
            PEAK.fetch_max(now, Relaxed);
        } else {
            CURRENT.fetch_sub(layout.size() - new_size, Relaxed);
        }
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

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

/// One unit's result: the worst variant's cost per unit against the model's constant.
struct Line {
    name: &'static str,
    unit: &'static str,
    constant: f64,
    worst: f64,
    worst_variant: String,
}

impl Line {
    fn new(name: &'static str, unit: &'static str, constant: u64) -> Self {
        Line {
            name,
            unit,
            constant: constant as f64,
            worst: 0.0,
            worst_variant: String::new(),
        }
    }

    fn record(&mut self, variant: &str, per_unit: f64) {
        if per_unit > self.worst {
            self.worst = per_unit;
            self.worst_variant = variant.to_owned();
        }
    }

    fn print(&self) {
        println!(
            "{:<34} {:>9.2} {:<10} constant {:>6}  margin {:>5.2}x  (worst: {})",
            self.name,
            self.worst,
            self.unit,
            self.constant,
            self.constant / self.worst.max(f64::MIN_POSITIVE),
            self.worst_variant
        );
    }
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

fn content_keywords(runs: usize, n: usize) -> Vec<Line> {
    let mut parse_ns = Line::new(
        "contentMediaType json, CPU",
        "ns/byte",
        c::CONTENT_JSON_NS_PER_BYTE,
    );
    let mut parse_mem = Line::new(
        "contentMediaType json, memory",
        "bytes/byte",
        c::CONTENT_JSON_BYTES_PER_BYTE,
    );
    let mut decode_ns = Line::new(
        "contentEncoding, CPU",
        "ns/byte",
        c::CONTENT_DECODE_NS_PER_BYTE,
    );
    let mut decode_mem = Line::new(
        "contentEncoding, memory",
        "bytes/byte",
        c::CONTENT_DECODE_BYTES_PER_BYTE,
    );
    let media = validator(DRAFT7, json!({"contentMediaType": "application/json"}));
    for (name, text) in json_texts(n) {
        let instance = Value::String(text);
        let len = instance.as_str().map_or(1, str::len) as f64;
        let (ns, peak) = measure(runs, || {
            std::hint::black_box(media.is_valid(&instance));
        });
        parse_ns.record(name, ns as f64 / len);
        parse_mem.record(name, peak as f64 / len);
    }
    use base64::Engine as _;
    let text = json_texts(n).swap_remove(0).1;
    let encoded = [
        (
            "base64",
            base64::engine::general_purpose::STANDARD.encode(&text),
        ),
        ("base16 lower case", hex::encode(&text)),
        ("base16 upper case", hex::encode_upper(&text)),
        ("base64 invalid at the end", {
            let mut s = base64::engine::general_purpose::STANDARD.encode(&text);
            s.push('*');
            s
        }),
    ];
    for (name, string) in &encoded {
        let encoding = if name.starts_with("base16") {
            "base16"
        } else {
            "base64"
        };
        let instance = Value::String(string.clone());
        let len = string.len() as f64;
        let alone = validator(DRAFT7, json!({"contentEncoding": encoding}));
        let (ns, peak) = measure(runs, || {
            std::hint::black_box(alone.is_valid(&instance));
        });
        decode_ns.record(name, ns as f64 / len);
        decode_mem.record(name, peak as f64 / len);
        // With a media type the decoded text is parsed too: the model charges both per byte of
        // the encoded string, so the decode's share is what is left over after the parse.
        let both = validator(
            DRAFT7,
            json!({"contentEncoding": encoding, "contentMediaType": "application/json"}),
        );
        let (ns, peak) = measure(runs, || {
            std::hint::black_box(both.is_valid(&instance));
        });
        let parse_share = c::CONTENT_JSON_NS_PER_BYTE as f64;
        decode_ns.record(
            &format!("{name} with a media type"),
            (ns as f64 / len - parse_share).max(0.0),
        );
        let parse_mem_share = c::CONTENT_JSON_BYTES_PER_BYTE as f64;
        decode_mem.record(
            &format!("{name} with a media type"),
            (peak as f64 / len - parse_mem_share).max(0.0),
        );
    }
    vec![parse_ns, parse_mem, decode_ns, decode_mem]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 3 } else { 9 };
    println!("cost model calibration ({runs} runs per variant; margin = constant / measured)");
    for line in content_keywords(runs, 60_000) {
        line.print();
    }
}
