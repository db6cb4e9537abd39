//! The checks: schema, bounds, business rules and content, each producing [`Finding`]s.

pub mod bounds;
pub mod content;
pub mod count;
pub mod expressions;
pub mod keywords;
pub mod numbers;
pub mod rules;
pub mod schema;
pub mod tally;

use serde_json::Value;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    /// The name reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One failed check, with everything the report needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// `schema:required`, `consistency:sum_equals`, `bounds:range`, `content:placeholder` …
    pub check: String,
    /// `schema`, `integrity` or `content` (the hint's `source`).
    pub source: &'static str,
    /// From the root: `$.line_items[].line_total`.
    pub path: String,
    /// As the caller named it (rules and bounds) or the path without `$.`.
    pub field: String,
    /// What was expected.
    pub expected: String,
    /// What was found.
    pub found: String,
    /// The flag's detail text.
    pub detail: String,
    /// The full error line.
    pub message: String,
    /// Error or warning.
    pub severity: Severity,
    /// Whether it makes the result `fail`.
    pub blocking: bool,
}

/// Describe a value without copying strings or structures into the report.
pub fn describe_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => numbers::py_number(n),
        Value::String(s) => match s.chars().count() {
            1 => "a string of 1 character".into(),
            n => format!("a string of {n} characters"),
        },
        Value::Array(a) => match a.len() {
            1 => "an array of 1 item".into(),
            n => format!("an array of {n} items"),
        },
        Value::Object(o) => match o.len() {
            1 => "an object with 1 property".into(),
            n => format!("an object with {n} properties"),
        },
    }
}

impl Finding {
    /// Bytes of its texts (what holding it and writing it into a report cost).
    pub fn text_bytes(&self) -> u64 {
        [
            &self.check,
            &self.path,
            &self.field,
            &self.expected,
            &self.found,
            &self.detail,
            &self.message,
        ]
        .iter()
        .map(|s| s.len() as u64)
        .sum()
    }

    /// The order reports list findings in: path, then check, then message.
    fn order(&self, other: &Finding) -> std::cmp::Ordering {
        (&self.path, &self.check, &self.message).cmp(&(&other.path, &other.check, &other.message))
    }
}

/// A finding ordered for the bounded heaps (largest first out).
struct Ranked(Finding);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.0.order(&other.0).is_eq()
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.order(&other.0)
    }
}

/// The `cap` first findings in report order, kept in bounded memory however many arrive.
struct Smallest {
    cap: usize,
    heap: std::collections::BinaryHeap<Ranked>,
}

impl Smallest {
    fn new(cap: usize) -> Self {
        Smallest {
            cap,
            heap: std::collections::BinaryHeap::with_capacity(cap.min(64) + 1),
        }
    }

    fn push(&mut self, f: Finding) {
        if self.cap == 0 {
            return;
        }
        if self.heap.len() < self.cap {
            self.heap.push(Ranked(f));
        } else if self.heap.peek().is_some_and(|top| f.order(&top.0).is_lt()) {
            self.heap.pop();
            self.heap.push(Ranked(f));
        }
    }

    fn into_sorted(self) -> Vec<Finding> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

/// Every finding of a verification: counted in full, the first `cap` of each list kept,
/// exact repeats (one error reached twice through a schema loop) dropped.
pub struct Findings {
    all: Smallest,
    blocking: Smallest,
    total: usize,
    blocking_total: usize,
    blocking_checks: std::collections::BTreeSet<String>,
    seen: std::collections::HashSet<u64>,
}

/// The collected findings, sorted, with their totals.
pub struct FindingList {
    /// The first `cap` findings.
    pub all: Vec<Finding>,
    /// The first `cap` blocking findings.
    pub blocking: Vec<Finding>,
    pub total: usize,
    pub blocking_total: usize,
    /// Distinct check names of blocking findings, sorted.
    pub blocking_checks: Vec<String>,
}

impl Findings {
    /// A collector keeping `cap` findings per list.
    pub fn new(cap: usize) -> Self {
        Findings {
            all: Smallest::new(cap),
            blocking: Smallest::new(cap),
            total: 0,
            blocking_total: 0,
            blocking_checks: Default::default(),
            seen: Default::default(),
        }
    }

    /// How many findings each list keeps.
    pub fn cap(&self) -> usize {
        self.all.cap
    }

    /// Add a finding (ignored when an identical one was added before).
    pub fn push(&mut self, f: Finding) {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&f.path, &f.check, &f.message, f.blocking).hash(&mut h);
        if !self.seen.insert(h.finish()) {
            return;
        }
        self.total += 1;
        if f.blocking {
            self.blocking_total += 1;
            if !self.blocking_checks.contains(&f.check) {
                self.blocking_checks.insert(f.check.clone());
            }
            self.blocking.push(f.clone());
        }
        self.all.push(f);
    }

    /// Whether a blocking finding arrived.
    pub fn any_blocking(&self) -> bool {
        self.blocking_total > 0
    }

    /// Sort and return what was kept.
    pub fn finish(self) -> FindingList {
        FindingList {
            all: self.all.into_sorted(),
            blocking: self.blocking.into_sorted(),
            total: self.total,
            blocking_total: self.blocking_total,
            blocking_checks: self.blocking_checks.into_iter().collect(),
        }
    }
}
