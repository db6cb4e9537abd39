//! Compiling the caller's JSON Schema (offline, linear-time regexes under size limits, draft
//! chosen by `$schema`), priced as it compiles, and turning validation errors into report
//! findings.

use super::count::{SchemaIndex, count_checks, expansion};
use super::{Finding, Findings, Severity, describe_value};
use crate::cost::calibration as c;
use crate::cost::patterns::{DFA_CACHE_BYTES, MAX_NFA_BYTES, PatternCost, TooLarge};
use crate::cost::size::Shape;
use crate::cost::walk::{Comparison, StaticCosts, WalkSummary, price};
use crate::cost::{Budget, Cost, Meter, OverBudget, Part, Resource};
use crate::path::Location;
use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, PatternOptions, Retrieve, ValidationError, Validator};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A compiled schema, shared through the cache, with what it costs to apply.
pub struct CompiledSchema {
    validator: Validator,
    /// The schema the costs point into (boxed: its address never moves).
    schema: Box<Value>,
    index: SchemaIndex,
    draft: Draft,
    formats: bool,
    statics: StaticCosts,
    /// Memory this compiled schema holds (its weight in the cache).
    held_bytes: u64,
    /// Whether a verification with it cost more than its estimate (it then runs on the
    /// bounded pool, see `service::overruns`).
    mispriced: std::sync::atomic::AtomicBool,
}

/// Why a schema cannot be used; never carries the schema's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// `$schema` names a meta-schema this service does not know.
    #[error("names a meta-schema ($schema) this service does not support")]
    UnknownDraft,
    /// A `$ref` points outside the schema; nothing is fetched.
    #[error("has a $ref to a remote or file resource, which is never fetched")]
    ExternalRef,
    /// A `$ref` that cannot be resolved inside the schema.
    #[error("has a $ref that does not resolve inside the schema")]
    UnresolvableRef,
    /// A `pattern` with lookaround or backreferences, which the linear-time engine refuses.
    #[error(
        "has a pattern with lookaround or backreferences, which the linear-time regex engine does not support"
    )]
    UnsupportedPattern,
    /// A `pattern` that does not compile: bad syntax, or a repetition too large.
    #[error(
        "has a pattern that is not a valid regular expression, or whose repetitions are too large to compile"
    )]
    BadPattern,
    /// Following every `$ref` expands the schema past [`MAX_EXPANDED_SUBSCHEMAS`].
    #[error(
        "is too complex: following its $refs expands it to more than {MAX_EXPANDED_SUBSCHEMAS} subschemas"
    )]
    TooComplex,
    /// The schema breaks its draft's meta-schema.
    #[error("is not a valid JSON Schema for its draft ({0})")]
    Invalid(String),
}

impl SchemaError {
    /// What the caller should do.
    pub fn fix(&self) -> &'static str {
        match self {
            SchemaError::UnknownDraft => {
                "Omit $schema (draft 2020-12 is the default) or use draft 4, 6, 7, 2019-09 or 2020-12."
            }
            SchemaError::ExternalRef => {
                "Inline the referenced schema under $defs and point $ref at '#/$defs/...'."
            }
            SchemaError::UnresolvableRef => {
                "Point every $ref at a location inside the schema, such as '#/$defs/...'."
            }
            SchemaError::UnsupportedPattern => {
                "Rewrite the pattern without lookaround ((?=, (?!, (?<=, (?<!) or backreferences (\\1, \\k<name>)."
            }
            SchemaError::BadPattern => {
                "Check the pattern's syntax (ECMA-262 regular expressions) and keep repetition counts small (e.g. {1,1000})."
            }
            SchemaError::TooComplex => {
                "Reference shared subschemas fewer times (each repeated $ref multiplies the work), or split the check into several requests."
            }
            SchemaError::Invalid(_) => {
                "Fix the schema so it validates against its draft's meta-schema."
            }
        }
    }
}

/// Why a schema was not compiled: it is invalid, or compiling it would pass the budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error("the schema {0}")]
    Invalid(#[from] SchemaError),
    #[error(transparent)]
    OverBudget(#[from] OverBudget),
}

/// The most subschemas a schema may expand to with every `$ref` followed. Compile and
/// validation work grow with this number; the cap keeps one request's work bounded (a 2 KB
/// schema with nested repeated `$ref`s can otherwise expand to millions of subschemas).
pub const MAX_EXPANDED_SUBSCHEMAS: usize = 10_000;

/// Compile options; the service uses the defaults (offline).
#[derive(Clone, Default)]
pub struct SchemaOptions {
    /// Resources served from memory instead of refusing every external `$ref` (tests only).
    pub retriever: Option<Arc<dyn Retrieve>>,
    /// Force a draft instead of detecting it from `$schema`.
    pub draft: Option<Draft>,
    /// Force format assertion on or off (default: the draft's own rule).
    pub validate_formats: Option<bool>,
}

/// What one validation counted (its findings go to the caller's collector).
pub struct SchemaOutcome {
    /// How many assertion checks applied.
    pub total: usize,
    /// How many of them failed.
    pub failed: usize,
    /// Locations of required string properties that are blank (used by content checks).
    pub blank_required: Vec<Location>,
}

/// A ceiling no schema of the test suites reaches (tools and tests that compile outside a
/// request).
const UNMETERED: Budget = Budget {
    cpu_ns: u64::MAX,
    mem_bytes: u64::MAX,
};

impl CompiledSchema {
    /// Compile a schema outside any request (tests and tools): no budget but the regex limits.
    pub fn compile(schema: &Value, options: &SchemaOptions) -> Result<Self, SchemaError> {
        let canonical_len = verifier_receipt::canonical::value_to_jcs(schema).len();
        match Self::compile_metered(schema, canonical_len, options, &mut Meter::new(UNMETERED)) {
            Ok(compiled) => Ok(compiled),
            Err(CompileError::Invalid(e)) => Err(e),
            Err(CompileError::OverBudget(_)) => Err(SchemaError::BadPattern),
        }
    }

    /// Compile a schema, charging the meter for the compile (schema size, each pattern's
    /// automaton) and the memory the result holds; stops before compiling when the estimate
    /// passes the budget.
    pub fn compile_metered(
        schema: &Value,
        canonical_len: usize,
        options: &SchemaOptions,
        meter: &mut Meter,
    ) -> Result<Self, CompileError> {
        let draft = match options.draft {
            Some(d) => d,
            None => match Draft::default().detect(schema) {
                Draft::Unknown => return Err(SchemaError::UnknownDraft.into()),
                d => d,
            },
        };
        let shape = Shape::of(schema);
        let schema = Box::new(schema.clone());
        let formats = options.validate_formats.unwrap_or(matches!(
            draft,
            Draft::Draft4 | Draft::Draft6 | Draft::Draft7
        ));
        let index = SchemaIndex::build(&schema, draft, formats);
        if expansion(&schema, &index, MAX_EXPANDED_SUBSCHEMAS) > MAX_EXPANDED_SUBSCHEMAS {
            return Err(SchemaError::TooComplex.into());
        }
        let before = meter.total();
        let statics = static_costs(&schema, &index, meter)?;
        meter.charge(
            Part::SchemaCompile,
            Cost::new(
                c::COMPILE_BASE_NS
                    .saturating_add(c::COMPILE_NS_PER_NODE.saturating_mul(statics.nodes))
                    .saturating_add(
                        c::COMPILE_NS_PER_SCHEMA_BYTE.saturating_mul(canonical_len as u64),
                    ),
                shape
                    .tree_bytes
                    .saturating_mul(c::COMPILE_BYTES_PER_TREE_BYTE + 1),
            ),
        )?;
        let mut builder = jsonschema::options()
            .with_draft(draft)
            .with_pattern_options(
                PatternOptions::regex()
                    .size_limit(MAX_NFA_BYTES as usize)
                    .dfa_size_limit(DFA_CACHE_BYTES as usize),
            );
        builder = match &options.retriever {
            Some(r) => builder.with_retriever(ArcRetriever(r.clone())),
            None => builder.offline(),
        };
        if let Some(v) = options.validate_formats {
            builder = builder.should_validate_formats(v);
        }
        let validator = builder
            .build(&schema)
            .map_err(|e| classify_build_error(&e, &schema))?;
        let held_bytes = meter.total().mem_bytes.saturating_sub(before.mem_bytes);
        Ok(CompiledSchema {
            validator,
            schema,
            index,
            draft,
            formats,
            statics,
            held_bytes,
            mispriced: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The draft in force.
    pub fn draft(&self) -> Draft {
        self.draft
    }

    /// Memory this compiled schema holds (its weight in the cache).
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Note that a verification with this schema cost more than its estimate.
    pub fn mark_mispriced(&self) {
        self.mispriced
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a verification with this schema cost more than its estimate.
    pub fn is_mispriced(&self) -> bool {
        self.mispriced.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Price applying this schema to `instance`, charging the meter (see [`crate::cost::walk`]);
    /// with `pair_cap`, stop undecided after that many distinct (subschema, value) pairs.
    pub fn price(
        &self,
        instance: &Value,
        meter: &mut Meter,
        pair_cap: Option<usize>,
    ) -> Result<WalkSummary, OverBudget> {
        price(
            &self.schema,
            &self.index,
            &self.statics,
            self.formats,
            instance,
            meter,
            pair_cap,
        )
    }

    /// Whether an instance is valid (fast path, no findings).
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// Validate an instance: count the checks and add every error to `findings`, charging the
    /// meter for each error collected (errors are streamed, never all held at once; a flood of
    /// them stops at the budget).
    pub fn check(
        &self,
        instance: &Value,
        want_blank_required: bool,
        findings: &mut Findings,
        meter: &mut Meter,
    ) -> Result<SchemaOutcome, OverBudget> {
        let counted = count_checks(&self.schema, &self.index, instance, want_blank_required);
        let mut failed_keys: HashSet<u64> = HashSet::new();
        if !self.validator.is_valid(instance) {
            // Collecting the errors applies the schema again, and jsonschema collects every
            // error before returning the first: all of it is charged before it is asked for.
            meter.charge(Part::SchemaErrors, meter.error_collection())?;
            // The findings the lists may keep, and write into the report, are charged by their
            // real size (a finding names the keyword's value: a long const, a pattern).
            let kept = 2 * findings.cap();
            for (i, error) in self.validator.iter_errors(instance).enumerate() {
                meter.charge(Part::SchemaErrors, Cost::new(c::ERROR_NS, c::ERROR_BYTES))?;
                let mut h = std::collections::hash_map::DefaultHasher::new();
                error.instance_path().as_str().hash(&mut h);
                collapse(error.evaluation_path().as_str()).hash(&mut h);
                failed_keys.insert(h.finish());
                let finding = finding_of(&error, instance);
                if i < kept {
                    let text = finding.text_bytes();
                    meter.charge(
                        Part::SchemaErrors,
                        Cost::new(
                            text.saturating_mul(c::FINDING_NS_PER_TEXT_BYTE),
                            text.saturating_mul(c::FINDING_BYTES_PER_TEXT_BYTE),
                        ),
                    )?;
                }
                findings.push(finding);
            }
        }
        let failed = failed_keys.len();
        Ok(SchemaOutcome {
            total: counted.checks.max(failed),
            failed,
            blank_required: counted.blank_required,
        })
    }
}

/// Whether a schema could compile, judged without compiling it: a known draft, valid against
/// its meta-schema, every pattern a regular expression the engine accepts (its size is left to
/// the compile). Linear in the schema's size; used for requests answered with a 402, for which
/// nothing is compiled or cached.
pub fn screen(schema: &Value) -> Result<(), SchemaError> {
    if Draft::default().detect(schema) == Draft::Unknown {
        return Err(SchemaError::UnknownDraft);
    }
    if let Err(e) = jsonschema::meta::validate(schema) {
        return Err(classify_build_error(&e, schema));
    }
    let mut stack: Vec<&Value> = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("pattern", Value::String(p)) => screen_pattern(p)?,
                        ("patternProperties", Value::Object(patterns)) => {
                            for (p, sub) in patterns {
                                screen_pattern(p)?;
                                stack.push(sub);
                            }
                        }
                        ("enum" | "const" | "default" | "examples", _) => {}
                        (_, Value::Object(_) | Value::Array(_)) => stack.push(value),
                        _ => {}
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    Ok(())
}

/// A pattern the regex engine accepts, by its syntax alone.
fn screen_pattern(pattern: &str) -> Result<(), SchemaError> {
    let refused = || pattern_refusal(pattern);
    let translated = jsonschema_regex::to_rust_regex(pattern).map_err(|()| refused())?;
    regex_automata::util::syntax::parse(&translated).map_err(|_| refused())?;
    Ok(())
}

/// Price every pattern of the schema (compiling its automaton under what the budget has left)
/// and every `enum`/`const` comparison, by the address of the keyword's value.
fn static_costs(
    schema: &Value,
    index: &SchemaIndex,
    meter: &mut Meter,
) -> Result<StaticCosts, CompileError> {
    let mut statics = StaticCosts::default();
    let mut pricer = PatternPricer::default();
    let mut stack: Vec<&Value> = vec![schema];
    while let Some(node) = stack.pop() {
        statics.nodes += 1;
        match node {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("pattern", Value::String(p)) => {
                            let priced = pricer.price(p, meter)?;
                            statics
                                .patterns
                                .insert(value as *const Value as usize, priced);
                        }
                        ("patternProperties", Value::Object(patterns)) => {
                            for (p, sub) in patterns {
                                let priced = pricer.price(p, meter)?;
                                statics.patterns.insert(p.as_ptr() as usize, priced);
                                stack.push(sub);
                            }
                        }
                        ("enum" | "const", v) => {
                            statics.comparisons.insert(
                                v as *const Value as usize,
                                Comparison::of(v, key == "enum"),
                            );
                        }
                        ("anyOf" | "oneOf" | "propertyNames", _) => {
                            statics.owned_errors = true;
                            if matches!(value, Value::Object(_) | Value::Array(_)) {
                                stack.push(value);
                            }
                        }
                        ("$ref", Value::String(r))
                            if !statics.external_refs && index.resolve(schema, r).is_none() =>
                        {
                            // A target outside the schema that still compiles: one of the
                            // bundled meta-schemas, which jsonschema compiles along.
                            statics.external_refs = true;
                            meter.charge(
                                Part::SchemaCompile,
                                Cost::new(
                                    c::EXTERNAL_REF_COMPILE_NS,
                                    c::EXTERNAL_REF_COMPILE_BYTES,
                                ),
                            )?;
                        }
                        ("default" | "examples", _) => {}
                        (_, Value::Object(_) | Value::Array(_)) => stack.push(value),
                        _ => {}
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    Ok(statics)
}

/// Prices each distinct pattern text once (jsonschema compiles each once per schema too).
#[derive(Default)]
struct PatternPricer<'s> {
    by_text: HashMap<&'s str, PatternCost>,
}

impl<'s> PatternPricer<'s> {
    fn price(&mut self, text: &'s str, meter: &mut Meter) -> Result<PatternCost, CompileError> {
        if let Some(p) = self.by_text.get(text) {
            return Ok(*p);
        }
        let over = |meter: &Meter, more: u64| OverBudget {
            part: Part::Patterns,
            resource: Resource::Memory,
            estimate: meter.total().mem_bytes.saturating_add(more),
            limit: meter.budget().mem_bytes,
        };
        // Compile at most what the budget has left: memory for the compile's peak, CPU for
        // the time it takes.
        let nfa_left = (meter.mem_left() / c::REGEX_PEAK_BYTES_PER_NFA_BYTE)
            .min(meter.cpu_left() / c::REGEX_COMPILE_NS_PER_NFA_BYTE);
        let priced = match PatternCost::analyze(text, nfa_left) {
            Ok(priced) => priced,
            // Past the regex engine's own size limit: no budget could compile it.
            Err(TooLarge) if nfa_left >= MAX_NFA_BYTES => {
                return Err(SchemaError::BadPattern.into());
            }
            Err(TooLarge) => return Err(over(meter, nfa_left + 1).into()),
        };
        meter.charge(Part::Patterns, priced.compile)?;
        meter.charge_transient(Part::Patterns, priced.compile_peak)?;
        self.by_text.insert(text, priced);
        Ok(priced)
    }
}

/// Errors below a composite keyword (anyOf, oneOf, not, if/then/else, contains, …) count
/// against that one composite check.
fn collapse(evaluation_path: &str) -> String {
    const OPAQUE: &[&str] = &[
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "patternProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
    ];
    let mut out = String::new();
    for seg in evaluation_path.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        if OPAQUE.contains(&seg) {
            let seg = if seg == "then" || seg == "else" {
                "if"
            } else {
                seg
            };
            out.push_str(seg);
            return out;
        }
        out.push_str(seg);
    }
    out
}

struct ArcRetriever(Arc<dyn Retrieve>);

impl Retrieve for ArcRetriever {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        self.0.retrieve(uri)
    }
}

fn classify_build_error(e: &ValidationError<'_>, schema: &Value) -> SchemaError {
    match e.kind() {
        ValidationErrorKind::Referencing(r) => {
            let text = r.to_string();
            if text.contains("Retrieval is disabled") || text.contains("retrieving it failed") {
                SchemaError::ExternalRef
            } else {
                SchemaError::UnresolvableRef
            }
        }
        ValidationErrorKind::Format { format } if format == "regex" => pattern_error(e),
        kind => {
            // Name the keyword of the meta-schema that failed and where, as a keyword name
            // from the meta-schema only (never the schema's own values or property names).
            let path = e.instance_path().as_str();
            let last = path.rsplit('/').next().unwrap_or("");
            if last == "pattern" || path.contains("/patternProperties") {
                return pattern_error(e);
            }
            let located = locate(path, schema);
            let keyword = match located.role {
                Role::Keyword(k) if is_schema_keyword(k) => format!("the '{k}' keyword"),
                Role::Subschema => "a subschema".into(),
                Role::Keyword(_) | Role::InValue(_) => "a keyword".into(),
            };
            let allowed = match located.role {
                Role::Subschema => Some("a schema (an object or a boolean)"),
                Role::Keyword(k) | Role::InValue(k) => allowed_value(k),
            }
            .map(|a| format!("; allowed there: {a}"))
            .unwrap_or_default();
            SchemaError::Invalid(format!(
                "{keyword} at {} breaks the meta-schema's '{}' rule{allowed}",
                located.shown,
                kind.keyword()
            ))
        }
    }
}

/// What the failing location of a schema is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role<'a> {
    /// A keyword's value (`type`, `minLength`, …).
    Keyword(&'a str),
    /// A schema inside another: a member of `properties`, an element of `allOf`, …
    Subschema,
    /// Something inside a keyword's value (an element of `required`, …): that keyword.
    InValue(&'a str),
}

/// A failing location: its role, and its pointer as an error may show it.
struct Located<'a> {
    role: Role<'a>,
    shown: String,
}

/// Walk a JSON pointer into `schema`, telling keywords from property names: keywords and
/// array indices are shown as they are; a property name (the caller's text) never is: it is
/// shown as `{n}`, its position among its object's members (1 for the first).
fn locate<'p>(pointer: &'p str, schema: &Value) -> Located<'p> {
    /// Keywords whose value maps names to schemas.
    const MAPS: &[&str] = &[
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "dependentSchemas",
    ];
    /// Keywords whose value is an array of schemas.
    const ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
    /// Keywords whose value is one schema (`items` also an array of them before 2020-12: an
    /// index where a keyword would be is that form).
    const ONE: &[&str] = &[
        "items",
        "additionalItems",
        "additionalProperties",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
    ];
    #[derive(Clone, Copy)]
    enum Next<'a> {
        Keyword,
        Name,
        Index,
        Value(&'a str),
    }
    let index = |seg: &str| !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit());
    let mut next = Next::Keyword;
    let mut role = Role::Subschema;
    let mut shown = String::new();
    let mut node = Some(schema);
    let mut named = false;
    for seg in pointer.split('/').skip(1) {
        let key = seg.replace("~1", "/").replace("~0", "~");
        let parent = node;
        node = parent.and_then(|n| match n {
            Value::Object(m) => m.get(&key),
            Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        });
        let position = || {
            parent
                .and_then(Value::as_object)
                .and_then(|m| m.keys().position(|k| *k == key))
                .map_or_else(|| "{?}".to_owned(), |i| format!("{{{}}}", i + 1))
        };
        let (this, after, safe) = match next {
            Next::Keyword if index(seg) => (Role::Subschema, Next::Keyword, true),
            Next::Keyword => {
                let after = if MAPS.contains(&seg) {
                    Next::Name
                } else if ARRAYS.contains(&seg) {
                    Next::Index
                } else if ONE.contains(&seg) {
                    Next::Keyword
                } else {
                    Next::Value(seg)
                };
                (Role::Keyword(seg), after, is_schema_keyword(seg))
            }
            Next::Name => (Role::Subschema, Next::Keyword, false),
            Next::Index => (Role::Subschema, Next::Keyword, index(seg)),
            Next::Value(k) => (Role::InValue(k), Next::Value(k), index(seg)),
        };
        role = this;
        next = after;
        shown.push('/');
        if safe {
            shown.push_str(seg);
        } else {
            named = true;
            shown.push_str(&position());
        }
    }
    let shown = if shown.is_empty() {
        "the schema's root".to_owned()
    } else if named {
        format!("'{shown}' ({{n}}: the n-th member there, its name not repeated)")
    } else {
        format!("'{shown}'")
    };
    Located { role, shown }
}

/// What a keyword's value must be, for the keywords whose value has a fixed shape.
fn allowed_value(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "type" => {
            "one of the seven type names (array, boolean, integer, null, number, object, string), or an array of them without repeats"
        }
        "enum" => "an array of values",
        "required" => "an array of unique strings",
        "multipleOf" => "a number greater than 0",
        "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" => {
            "a number (in draft 4, exclusiveMaximum and exclusiveMinimum are booleans)"
        }
        "maxLength" | "minLength" | "maxItems" | "minItems" | "maxProperties" | "minProperties"
        | "maxContains" | "minContains" => "a non-negative integer",
        "uniqueItems" => "true or false",
        "pattern" => "a string holding an ECMA-262 regular expression",
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
            "an object whose values are schemas (objects or booleans)"
        }
        "items" => {
            "a schema (an object or a boolean); before draft 2020-12 also an array of schemas"
        }
        "prefixItems" | "allOf" | "anyOf" | "oneOf" => "a non-empty array of schemas",
        "additionalProperties"
        | "additionalItems"
        | "contains"
        | "propertyNames"
        | "not"
        | "if"
        | "then"
        | "else"
        | "unevaluatedItems"
        | "unevaluatedProperties" => "a schema (an object or a boolean)",
        "dependentRequired" => "an object whose values are arrays of unique strings",
        "format" | "$ref" | "$id" | "$anchor" | "$comment" | "title" | "description" => "a string",
        _ => return None,
    })
}

/// Tell unsupported regex features from plain syntax errors by looking at the pattern (or, for
/// `patternProperties`, the property name that is the pattern); never quoted back.
fn pattern_error(e: &ValidationError<'_>) -> SchemaError {
    let text = match e.instance().as_ref() {
        Value::String(s) => s.clone(),
        _ => e
            .instance_path()
            .as_str()
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_owned(),
    };
    pattern_refusal(&text)
}

/// Why the engine refuses a pattern, from its text: lookaround or backreferences (which the
/// linear-time engine does not support), or anything else (syntax, size).
fn pattern_refusal(text: &str) -> SchemaError {
    let lookaround = ["(?=", "(?!", "(?<=", "(?<!"]
        .iter()
        .any(|t| text.contains(t));
    let bytes = text.as_bytes();
    let backreference = bytes
        .windows(2)
        .any(|w| w[0] == b'\\' && (w[1].is_ascii_digit() && w[1] != b'0' || w[1] == b'k'));
    if lookaround || backreference {
        SchemaError::UnsupportedPattern
    } else {
        SchemaError::BadPattern
    }
}

fn is_schema_keyword(s: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "properties",
        "patternProperties",
        "additionalProperties",
        "items",
        "prefixItems",
        "additionalItems",
        "contains",
        "propertyNames",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "$ref",
        "$defs",
        "definitions",
        "$id",
        "$schema",
        "$anchor",
        "format",
        "dependencies",
        "dependentSchemas",
        "unevaluatedItems",
        "unevaluatedProperties",
    ];
    KEYWORDS.contains(&s)
}

/// Render a JSON Pointer into the instance as `$.a[0].b`, telling indexes from keys by the
/// instance itself.
pub fn render_pointer(pointer: &str, instance: &Value) -> String {
    let mut at = Location::default();
    let mut cur = Some(instance);
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        match cur {
            Some(Value::Array(items)) => {
                let i = seg.parse::<usize>().unwrap_or(usize::MAX);
                at = at.index(i);
                cur = items.get(i);
            }
            Some(Value::Object(map)) => {
                cur = map.get(&seg);
                at = at.key(&seg);
            }
            _ => {
                at = at.key(&seg);
                cur = None;
            }
        }
    }
    at.render()
}

fn finding_of(error: &ValidationError<'_>, root: &Value) -> Finding {
    let kind = error.kind();
    let keyword = kind.keyword();
    let instance = error.instance();
    let found = describe_value(instance);
    let (expected, found) = match kind {
        ValidationErrorKind::Type { kind } => (format!("type {}", type_names(kind)), found),
        ValidationErrorKind::Required { property } => {
            (format!("property {property} present"), "missing".to_owned())
        }
        ValidationErrorKind::Enum { .. } => ("one of the enum values".to_owned(), found),
        ValidationErrorKind::Constant { .. } => ("the const value".to_owned(), found),
        ValidationErrorKind::Minimum { limit } => (format!(">= {limit}"), found),
        ValidationErrorKind::Maximum { limit } => (format!("<= {limit}"), found),
        ValidationErrorKind::ExclusiveMinimum { limit } => (format!("> {limit}"), found),
        ValidationErrorKind::ExclusiveMaximum { limit } => (format!("< {limit}"), found),
        ValidationErrorKind::MinLength { limit } => (format!("at least {limit} characters"), found),
        ValidationErrorKind::MaxLength { limit } => (format!("at most {limit} characters"), found),
        ValidationErrorKind::MinItems { limit } => (format!("at least {limit} items"), found),
        ValidationErrorKind::MaxItems { limit } => (format!("at most {limit} items"), found),
        ValidationErrorKind::Pattern { pattern } => (format!("a string matching {pattern}"), found),
        ValidationErrorKind::Format { format } => (format!("a valid {format}"), found),
        ValidationErrorKind::AdditionalProperties { .. } => {
            ("no properties beyond those declared".to_owned(), found)
        }
        _ => (format!("valid under '{keyword}'"), found),
    };
    let path = render_pointer(error.instance_path().as_str(), root);
    let short = path.strip_prefix("$.").unwrap_or(&path).to_owned();
    let message = format!("schema:{keyword} at '{short}': {}", error.masked());
    Finding {
        check: format!("schema:{keyword}"),
        source: "schema",
        path,
        field: short,
        expected,
        found,
        detail: error.masked().to_string(),
        message,
        severity: Severity::Error,
        blocking: true,
    }
}

fn type_names(kind: &jsonschema::error::TypeKind) -> String {
    match kind {
        jsonschema::error::TypeKind::Single(t) => t.to_string(),
        jsonschema::error::TypeKind::Multiple(set) => set
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

#[cfg(test)]
mod location_tests {
    use super::*;

    fn problem(schema: Value) -> String {
        match CompiledSchema::compile(&schema, &SchemaOptions::default()) {
            Err(SchemaError::Invalid(text)) => text,
            other => panic!("expected an invalid schema, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn an_invalid_schema_is_located_by_pointer_with_what_is_allowed_there() {
        let typo = problem(serde_json::json!({"type": "strin"}));
        assert!(typo.starts_with("the 'type' keyword at '/type'"), "{typo}");
        assert!(
            typo.contains("allowed there: one of the seven type names"),
            "{typo}"
        );
        assert!(
            !typo.contains("strin\""),
            "the value is never quoted: {typo}"
        );
        let nested = problem(serde_json::json!({"properties": {"total": {"minimum": "0"}}}));
        assert!(
            nested.contains("at '/properties/{1}/minimum' ({n}: the n-th member there"),
            "{nested}"
        );
        assert!(!nested.contains("total"), "{nested}");
        assert!(nested.contains("allowed there: a number"), "{nested}");
        // A property named like a keyword is a subschema there, not that keyword.
        let named = problem(serde_json::json!({"properties": {"type": 5}}));
        assert!(
            named.starts_with("a subschema at '/properties/{1}'"),
            "{named}"
        );
        assert!(named.contains("allowed there: a schema"), "{named}");
        // A property name is never shown: its position is.
        let odd = problem(
            serde_json::json!({"properties": {"a": {}, "z<script>x</script>": {"type": 1}}}),
        );
        assert!(odd.contains("at '/properties/{2}/type'"), "{odd}");
        assert!(!odd.contains("script"), "{odd}");
        let listed = problem(serde_json::json!({"required": ["a", 7]}));
        assert!(listed.contains("at '/required/1'"), "{listed}");
        assert!(listed.contains("an array of unique strings"), "{listed}");
        let deep = problem(serde_json::json!({"allOf": [{"items": {"maxItems": -1}}]}));
        assert!(
            deep.contains("at '/allOf/0/items/maxItems'")
                && deep.contains("a non-negative integer"),
            "{deep}"
        );
    }
}
