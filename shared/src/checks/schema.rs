//! Compiling the caller's JSON Schema (offline, linear-time regexes, draft chosen by `$schema`)
//! and turning validation errors into report findings.

use super::cost::{MAX_APPLICATIONS, applications};
use super::count::{Expansion, SchemaIndex, count_checks, expansion};
use super::{Finding, Findings, Severity, describe_value};
use crate::path::Location;
use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, PatternOptions, Retrieve, ValidationError, Validator};
use serde_json::Value;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A compiled schema, shared through the cache.
pub struct CompiledSchema {
    validator: Validator,
    schema: Value,
    index: SchemaIndex,
    draft: Draft,
    expansion: Expansion,
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
    /// Validating this output would apply more than [`MAX_APPLICATIONS`] subschemas (recursive
    /// references inside anyOf/oneOf grow exponentially with the output's depth).
    #[error(
        "is too complex for this output: validating it would apply more than {MAX_APPLICATIONS} subschemas"
    )]
    TooComplexForOutput,
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
            SchemaError::TooComplexForOutput => {
                "Avoid recursive $refs inside anyOf/oneOf (each level multiplies the work), or verify a smaller output."
            }
            SchemaError::Invalid(_) => {
                "Fix the schema so it validates against its draft's meta-schema."
            }
        }
    }
}

/// The most subschemas a schema may expand to with every `$ref` followed. Validation work grows
/// with this number; the cap keeps one request's work bounded (a 2 KB schema with nested
/// repeated `$ref`s can otherwise expand to millions of subschemas).
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

impl CompiledSchema {
    /// Compile a schema.
    pub fn compile(schema: &Value, options: &SchemaOptions) -> Result<Self, SchemaError> {
        let draft = match options.draft {
            Some(d) => d,
            None => match Draft::default().detect(schema) {
                Draft::Unknown => return Err(SchemaError::UnknownDraft),
                d => d,
            },
        };
        let mut builder = jsonschema::options()
            .with_draft(draft)
            .with_pattern_options(PatternOptions::regex());
        builder = match &options.retriever {
            Some(r) => builder.with_retriever(ArcRetriever(r.clone())),
            None => builder.offline(),
        };
        if let Some(v) = options.validate_formats {
            builder = builder.should_validate_formats(v);
        }
        let validator = builder
            .build(schema)
            .map_err(|e| classify_build_error(&e))?;
        let formats = options.validate_formats.unwrap_or(matches!(
            draft,
            Draft::Draft4 | Draft::Draft6 | Draft::Draft7
        ));
        let index = SchemaIndex::build(schema, draft, formats);
        let expansion = expansion(schema, &index, MAX_EXPANDED_SUBSCHEMAS);
        if expansion.size > MAX_EXPANDED_SUBSCHEMAS {
            return Err(SchemaError::TooComplex);
        }
        Ok(CompiledSchema {
            index,
            expansion,
            validator,
            schema: schema.clone(),
            draft,
        })
    }

    /// The draft in force.
    pub fn draft(&self) -> Draft {
        self.draft
    }

    /// Whether validating `instance` surely stays within [`MAX_APPLICATIONS`] without walking
    /// it against the schema: an acyclic schema applies each node of its expansion at most once
    /// per instance value, so its size times the number of values bounds the work.
    fn work_is_bounded_for(&self, instance: &Value) -> bool {
        if self.expansion.cyclic {
            return false;
        }
        // Twice: `propertyNames` also applies once per key of each object it meets.
        let most_values = MAX_APPLICATIONS / (2 * self.expansion.size.max(1));
        values_within(instance, most_values).is_some()
    }

    /// Whether an instance is valid (fast path, no findings).
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// Validate an instance: count the checks and add every error to `findings`. The work is
    /// bounded first ([`MAX_APPLICATIONS`]), and errors are streamed, never all held at once.
    pub fn check(
        &self,
        instance: &Value,
        want_blank_required: bool,
        findings: &mut Findings,
    ) -> Result<SchemaOutcome, SchemaError> {
        if !self.work_is_bounded_for(instance) {
            applications(&self.schema, &self.index, instance, MAX_APPLICATIONS)
                .map_err(|_| SchemaError::TooComplexForOutput)?;
        }
        let counted = count_checks(&self.schema, &self.index, instance, want_blank_required);
        let mut failed_keys: HashSet<u64> = HashSet::new();
        if !self.validator.is_valid(instance) {
            for error in self.validator.iter_errors(instance) {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                error.instance_path().as_str().hash(&mut h);
                collapse(error.evaluation_path().as_str()).hash(&mut h);
                failed_keys.insert(h.finish());
                findings.push(finding_of(&error, instance));
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

/// How many values `value` holds, itself included, or `None` past `limit`.
fn values_within(value: &Value, limit: usize) -> Option<usize> {
    let mut count = 0usize;
    let mut pending: Vec<&Value> = vec![value];
    while let Some(v) = pending.pop() {
        count += 1;
        if count > limit {
            return None;
        }
        match v {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.values()),
            _ => {}
        }
    }
    Some(count)
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

fn classify_build_error(e: &ValidationError<'_>) -> SchemaError {
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
            let keyword = if is_schema_keyword(last) {
                format!("the '{last}' keyword")
            } else {
                "a keyword".into()
            };
            SchemaError::Invalid(format!(
                "{keyword} breaks the meta-schema's '{}' rule",
                kind.keyword()
            ))
        }
    }
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
