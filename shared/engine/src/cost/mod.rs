//! What a verification will cost, estimated before it runs, in real units: nanoseconds of CPU
//! on the reference machine and bytes of memory.
//!
//! Every part of the work is priced from what it will scan: schema compilation from the
//! schema's size and each pattern's compiled automaton, pattern and format checks from the
//! length of the strings they see, `enum`/`const`/`uniqueItems` from the values compared,
//! subschema applications from a walk of schema × output (memoized, so recursive schemas are
//! priced exactly however many times they apply), rules from the values they visit, the receipt
//! from the bytes it hashes and signs. The constants are measured ([`calibration`]) with a
//! margin, so the estimate is an upper bound of the real work (a test checks it on every case of
//! the JSON-Schema-Test-Suite and of the adversarial corpus).
//!
//! A [`Meter`] adds the parts up against a [`Budget`] and stops at the first charge past it, so
//! the estimate itself stays cheap: it never walks further than the budget it guards.

pub mod calibration;
pub mod content;
pub mod keywords;
pub mod patterns;
pub mod request;
pub mod size;
pub mod walk;

use std::fmt;

/// CPU time and memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Nanoseconds of CPU on the reference machine.
    pub cpu_ns: u64,
    /// Bytes of memory held at once (an upper bound of the peak above idle).
    pub mem_bytes: u64,
}

impl Cost {
    /// Nothing.
    pub const ZERO: Cost = Cost {
        cpu_ns: 0,
        mem_bytes: 0,
    };

    /// CPU and memory.
    pub const fn new(cpu_ns: u64, mem_bytes: u64) -> Self {
        Cost { cpu_ns, mem_bytes }
    }

    /// CPU only.
    pub const fn cpu(cpu_ns: u64) -> Self {
        Cost::new(cpu_ns, 0)
    }

    /// Memory only.
    pub const fn mem(mem_bytes: u64) -> Self {
        Cost::new(0, mem_bytes)
    }

    /// Both added (saturating).
    #[must_use]
    pub fn plus(self, other: Cost) -> Cost {
        Cost::new(
            self.cpu_ns.saturating_add(other.cpu_ns),
            self.mem_bytes.saturating_add(other.mem_bytes),
        )
    }

    /// Both multiplied (saturating).
    #[must_use]
    pub fn times(self, n: u64) -> Cost {
        Cost::new(
            self.cpu_ns.saturating_mul(n),
            self.mem_bytes.saturating_mul(n),
        )
    }
}

/// The parts of a verification a cost is charged to; a refusal names the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// Reading and checking the request body.
    Parse,
    /// Compiling `expected_schema` (its patterns apart).
    SchemaCompile,
    /// Compiling the schema's patterns and matching them against the output's strings.
    Patterns,
    /// `format` checks over the output's strings.
    Formats,
    /// Applying subschemas to the output's values.
    SchemaWalk,
    /// `enum`, `const` and `uniqueItems` comparisons.
    ValueChecks,
    /// Collecting and reporting schema errors.
    SchemaErrors,
    /// Business rules and bounds.
    Rules,
    /// Strict content checks.
    Content,
    /// `contentEncoding`/`contentMediaType`: decoding strings and parsing them as JSON.
    ContentKeywords,
    /// The four hashes, the report and its signature.
    Receipt,
}

impl Part {
    /// Every part, in report order.
    pub const ALL: [Part; 11] = [
        Part::Parse,
        Part::SchemaCompile,
        Part::Patterns,
        Part::Formats,
        Part::SchemaWalk,
        Part::ValueChecks,
        Part::SchemaErrors,
        Part::Rules,
        Part::Content,
        Part::ContentKeywords,
        Part::Receipt,
    ];

    fn index(self) -> usize {
        Part::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }

    /// The request field whose content drives this part.
    pub fn field(self) -> &'static str {
        match self {
            Part::Parse | Part::Receipt => "body",
            Part::SchemaCompile | Part::Patterns | Part::SchemaWalk => "expected_schema",
            Part::Formats
            | Part::ValueChecks
            | Part::SchemaErrors
            | Part::Content
            | Part::ContentKeywords => "submitted_output",
            Part::Rules => "rules",
        }
    }

    /// A stable name for documents and logs.
    pub fn name(self) -> &'static str {
        match self {
            Part::Parse => "parse",
            Part::SchemaCompile => "schema_compile",
            Part::Patterns => "patterns",
            Part::Formats => "formats",
            Part::SchemaWalk => "schema_walk",
            Part::ValueChecks => "value_checks",
            Part::SchemaErrors => "schema_errors",
            Part::Rules => "rules",
            Part::Content => "content",
            Part::ContentKeywords => "content_keywords",
            Part::Receipt => "receipt",
        }
    }

    /// What this part is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Part::Parse => "reading the request",
            Part::SchemaCompile => "compiling the schema",
            Part::Patterns => {
                "compiling its patterns and matching them against the output's strings"
            }
            Part::Formats => "checking formats over the output's strings",
            Part::SchemaWalk => "applying its subschemas to the output's values",
            Part::ValueChecks => "comparing values for enum, const and uniqueItems",
            Part::SchemaErrors => "collecting and reporting the output's schema errors",
            Part::Rules => "running the rules and bounds over the output",
            Part::Content => "running the content checks over the output",
            Part::ContentKeywords => {
                "decoding the output's strings and parsing them as JSON for contentEncoding and contentMediaType"
            }
            Part::Receipt => "hashing, reporting and signing the result",
        }
    }

    /// What the caller can do about it.
    pub fn fix(self) -> &'static str {
        match self {
            Part::Parse | Part::Receipt => "Send a smaller request.",
            Part::SchemaCompile => {
                "Send a smaller schema, or reference shared subschemas instead of repeating them."
            }
            Part::Patterns => {
                "Use simpler patterns (fewer and smaller repetitions), or bound the strings with maxLength before the pattern applies; shorter strings cost less."
            }
            Part::Formats => "Check formats on fewer or shorter strings.",
            Part::SchemaWalk => {
                "Avoid recursive $refs inside anyOf/oneOf and repeated references, or verify a smaller output."
            }
            Part::ValueChecks => "Use smaller enum/const values, or uniqueItems on smaller arrays.",
            Part::SchemaErrors => {
                "Fix the bulk of the output's schema errors first (check a sample), or verify a smaller output."
            }
            Part::Rules => {
                "Send fewer rules or bounds, or split the output across several requests."
            }
            Part::Content => "Verify a smaller output.",
            Part::ContentKeywords => {
                "Apply contentMediaType/contentEncoding to fewer or shorter strings (drafts 6 and 7 check them at every application; from 2019-09 on they only annotate), or verify a smaller output."
            }
        }
    }
}

/// What a cost is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Cpu,
    Memory,
}

/// A ceiling on one request's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Nanoseconds of CPU.
    pub cpu_ns: u64,
    /// Bytes of memory above idle.
    pub mem_bytes: u64,
}

impl Budget {
    /// A ceiling in milliseconds and mebibytes.
    pub const fn ms_mib(ms: u64, mib: u64) -> Self {
        Budget {
            cpu_ns: ms * 1_000_000,
            mem_bytes: mib << 20,
        }
    }

    /// Whether `cost` fits.
    pub fn admits(&self, cost: Cost) -> bool {
        cost.cpu_ns <= self.cpu_ns && cost.mem_bytes <= self.mem_bytes
    }
}

/// The ceilings of unpaid and paid requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    pub unpaid: Budget,
    pub paid: Budget,
}

impl Default for Budgets {
    /// 25 ms and 16 MiB without payment; 1 s and 128 MiB with one.
    fn default() -> Self {
        Budgets {
            unpaid: Budget::ms_mib(25, 16),
            paid: Budget::ms_mib(1000, 128),
        }
    }
}

impl Budgets {
    /// The same ceilings with the paid one never below the unpaid one.
    #[must_use]
    pub fn ordered(self) -> Budgets {
        Budgets {
            unpaid: self.unpaid,
            paid: Budget {
                cpu_ns: self.paid.cpu_ns.max(self.unpaid.cpu_ns),
                mem_bytes: self.paid.mem_bytes.max(self.unpaid.mem_bytes),
            },
        }
    }
}

/// An estimate past its budget: which part, which resource, how far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} would cost more than the limit", part.describe())]
pub struct OverBudget {
    /// The part with the largest share of the exceeded resource.
    pub part: Part,
    pub resource: Resource,
    /// The estimate when it passed the limit (a lower bound of the full estimate).
    pub estimate: u64,
    /// The limit it passed.
    pub limit: u64,
}

impl OverBudget {
    /// Whether the estimate (a lower bound of the full one) is past `budget` too.
    pub fn past(&self, budget: Budget) -> bool {
        match self.resource {
            Resource::Cpu => self.estimate > budget.cpu_ns,
            Resource::Memory => self.estimate > budget.mem_bytes,
        }
    }

    /// The estimate and limit as the caller reads them (`35 ms`, `16 MiB`).
    pub fn amounts(&self) -> (String, String) {
        match self.resource {
            Resource::Cpu => (millis(self.estimate), millis(self.limit)),
            Resource::Memory => (mebibytes(self.estimate), mebibytes(self.limit)),
        }
    }
}

/// The calling thread's own CPU time, in nanoseconds (what the estimates are in; time the
/// thread waited for a CPU is not counted).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer for clock_gettime, which writes only into it.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if status != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

/// Nanoseconds as milliseconds for people (`0.4 ms`, `35 ms`).
pub fn millis(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{} ms", ns / 1_000_000)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}

/// Bytes as mebibytes for people.
pub fn mebibytes(bytes: u64) -> String {
    if bytes >= 10 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    }
}

/// The running estimate of one request, by part, checked against a budget at every charge.
#[derive(Clone)]
pub struct Meter {
    budget: Budget,
    parts: [Cost; Part::ALL.len()],
    total: Cost,
    /// CPU the validator spends applying the schema to the output, as priced: spent again
    /// when the output is invalid and its errors are collected.
    validation_ns: u64,
    /// What collecting every potential schema error costs (see [`Meter::note_errors`]).
    errors: Cost,
    /// The largest memory needed for a moment only (a pattern's compile), on top of the total.
    transient: u64,
    /// CPU charges are multiplied by this, in millionths ([`Meter::with_cpu_scale`]).
    cpu_scale_ppm: u64,
}

/// A CPU scale of 1: the reference machine's speed.
pub const UNSCALED_PPM: u64 = 1_000_000;

impl fmt::Debug for Meter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Meter")
            .field("budget", &self.budget)
            .field("total", &self.total)
            .finish()
    }
}

impl Meter {
    /// An empty meter under `budget`.
    pub fn new(budget: Budget) -> Self {
        Meter {
            budget,
            parts: [Cost::ZERO; Part::ALL.len()],
            total: Cost::ZERO,
            validation_ns: 0,
            errors: Cost::ZERO,
            transient: 0,
            cpu_scale_ppm: UNSCALED_PPM,
        }
    }

    /// The same meter with every CPU charge multiplied by `ppm` millionths: the constants are
    /// nanoseconds of the reference machine, and a machine twice as slow per operation runs
    /// with a scale of 2 (2,000,000), so its ceilings stay in its own milliseconds
    /// (`--cost-scale`).
    #[must_use]
    pub fn with_cpu_scale(mut self, ppm: u64) -> Meter {
        self.cpu_scale_ppm = ppm.max(1);
        self
    }

    fn scaled(&self, cpu_ns: u64) -> u64 {
        if self.cpu_scale_ppm == UNSCALED_PPM {
            return cpu_ns;
        }
        let scaled = u128::from(cpu_ns) * u128::from(self.cpu_scale_ppm) / u128::from(UNSCALED_PPM);
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }

    /// The same estimate under another budget (a request priced under a small ceiling that
    /// then runs under its whole one).
    #[must_use]
    pub fn with_budget(mut self, budget: Budget) -> Meter {
        self.budget = budget;
        self
    }

    /// The budget it checks against.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Add `cost` to `part`; past the budget, say which part and how far.
    pub fn charge(&mut self, part: Part, cost: Cost) -> Result<(), OverBudget> {
        let cost = Cost::new(self.scaled(cost.cpu_ns), cost.mem_bytes);
        let slot = &mut self.parts[part.index()];
        *slot = slot.plus(cost);
        self.total = self.total.plus(cost);
        self.check()
    }

    /// Charge memory needed only for a moment (freed before the next such moment): the peak
    /// is the held total plus the largest of these.
    pub fn charge_transient(&mut self, part: Part, bytes: u64) -> Result<(), OverBudget> {
        if bytes > self.transient {
            self.transient = bytes;
            if self.peak_bytes() > self.budget.mem_bytes {
                let mut over = self.over(Resource::Memory);
                over.part = part;
                return Err(over);
            }
        }
        Ok(())
    }

    /// The memory estimate at its peak: what is held plus the largest transient need.
    pub fn peak_bytes(&self) -> u64 {
        self.total.mem_bytes.saturating_add(self.transient)
    }

    /// Whether the total is still within the budget.
    pub fn check(&self) -> Result<(), OverBudget> {
        if self.total.cpu_ns > self.budget.cpu_ns {
            return Err(self.over(Resource::Cpu));
        }
        if self.peak_bytes() > self.budget.mem_bytes {
            return Err(self.over(Resource::Memory));
        }
        Ok(())
    }

    /// CPU left before the budget is reached, in the reference machine's nanoseconds (what
    /// a charge of that much would add, before the scale).
    pub fn cpu_left(&self) -> u64 {
        let left = self.budget.cpu_ns.saturating_sub(self.total.cpu_ns);
        if self.cpu_scale_ppm == UNSCALED_PPM {
            return left;
        }
        let unscaled = u128::from(left) * u128::from(UNSCALED_PPM) / u128::from(self.cpu_scale_ppm);
        u64::try_from(unscaled).unwrap_or(u64::MAX)
    }

    /// Memory left before the budget is reached (beside what is held).
    pub fn mem_left(&self) -> u64 {
        self.budget.mem_bytes.saturating_sub(self.total.mem_bytes)
    }

    /// Note what applying the schema to the output was priced at (see [`Meter::validation_ns`]).
    pub fn note_validation(&mut self, ns: u64) {
        self.validation_ns = ns;
    }

    /// What applying the schema to the output was priced at: collecting an invalid output's
    /// errors applies it again.
    pub fn validation_ns(&self) -> u64 {
        self.validation_ns
    }

    /// Note what collecting every schema error the output could have costs: jsonschema
    /// collects all of an invalid output's errors before it returns the first, so this is
    /// charged, with the second application, before the errors are asked for.
    pub fn note_errors(&mut self, cost: Cost) {
        self.errors = cost;
    }

    /// Collecting an invalid output's schema errors: applying the schema again, every error
    /// and what it copies (charged before they are collected).
    pub fn error_collection(&self) -> Cost {
        Cost::cpu(self.validation_ns).plus(self.errors)
    }

    /// The estimate so far.
    pub fn total(&self) -> Cost {
        self.total
    }

    /// The estimate of one part so far.
    pub fn part(&self, part: Part) -> Cost {
        self.parts[part.index()]
    }

    /// The part with the largest CPU estimate so far.
    pub fn largest_cpu_part(&self) -> Part {
        self.over(Resource::Cpu).part
    }

    fn over(&self, resource: Resource) -> OverBudget {
        let of = |c: &Cost| match resource {
            Resource::Cpu => c.cpu_ns,
            Resource::Memory => c.mem_bytes,
        };
        let part = Part::ALL
            .iter()
            .copied()
            .max_by_key(|p| of(&self.parts[p.index()]))
            .unwrap_or(Part::SchemaWalk);
        let (estimate, limit) = match resource {
            Resource::Cpu => (self.total.cpu_ns, self.budget.cpu_ns),
            Resource::Memory => (self.peak_bytes(), self.budget.mem_bytes),
        };
        OverBudget {
            part,
            resource,
            estimate,
            limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_stops_at_the_first_charge_past_the_budget_and_names_the_largest_part() {
        let mut m = Meter::new(Budget::ms_mib(1, 1));
        m.charge(Part::Parse, Cost::cpu(100_000)).expect("within");
        m.charge(Part::Patterns, Cost::cpu(800_000))
            .expect("within");
        let over = m.charge(Part::Rules, Cost::cpu(200_000)).expect_err("past");
        assert_eq!(over.part, Part::Patterns);
        assert_eq!(over.resource, Resource::Cpu);
        assert_eq!((over.estimate, over.limit), (1_100_000, 1_000_000));
        let over = Meter::new(Budget::ms_mib(1, 1))
            .charge(Part::SchemaCompile, Cost::mem(2 << 20))
            .expect_err("memory");
        assert_eq!(over.resource, Resource::Memory);
        assert_eq!(over.amounts(), ("2.0 MiB".to_owned(), "1.0 MiB".to_owned()));
    }

    #[test]
    fn costs_saturate_instead_of_wrapping() {
        let huge = Cost::new(u64::MAX - 1, 5).times(3).plus(Cost::cpu(10));
        assert_eq!(huge.cpu_ns, u64::MAX);
        assert_eq!(huge.mem_bytes, 15);
    }

    #[test]
    fn default_budgets_are_the_documented_ones() {
        let b = Budgets::default();
        assert_eq!(b.unpaid, Budget::ms_mib(25, 16));
        assert_eq!(b.paid, Budget::ms_mib(1000, 128));
        assert_eq!(millis(25_000_000), "25 ms");
        assert_eq!(millis(400_000), "0.4 ms");
    }
}
