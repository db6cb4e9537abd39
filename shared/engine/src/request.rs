//! The verification request (SERVICE.md §3): strict parsing and validation that reports every
//! problem at once as `{field, problem, fix}`, never echoing the caller's values.

use crate::expression::{self, ExpressionRule};
use crate::json::{self, JsonError, MAX_FIELD_DEPTH};
use crate::path::FieldPath;
pub use crate::problem::{FieldProblem, InvalidRequest};
use crate::problem::{depth_exceeds, json_problem};
use crate::schema_doc::{SchemaDoc, SchemaDocs};

use serde_json::{Map, Value};
use std::sync::Arc;

/// Longest `task_id` / `agent_id`, in characters.
pub const MAX_ID_CHARS: usize = 200;
/// Default rule tolerance.
pub use verifier_receipt::hashes::DEFAULT_TOLERANCE;

/// The request's top-level fields, in the contract's order.
pub const FIELDS: &[&str] = &[
    "task_id",
    "agent_id",
    "expected_schema",
    "submitted_output",
    "strict_content_check",
    "bounds",
    "rules",
    "enforce_rules",
    "detail",
    "format_assertion",
    "agent_signature",
];
/// The keys a rule object may have.
pub const RULE_KEYS: &[&str] = &[
    "type",
    "field",
    "equals_field",
    "equals",
    "other_field",
    "value",
    "in_field",
    "values",
    "tolerance",
    "if_present",
    "rule",
];
const FIX_SCHEMA_TYPE: &str = "Send a JSON Schema object, e.g. {\"type\": \"object\"}.";

/// The keys a bound object may have.
pub const BOUND_KEYS: &[&str] = &["min", "max", "if_present"];
const RULE_TYPES_FIX: &str =
    "Use one of: 'sum_equals', 'gte', 'lte', 'exists_in', 'unique' or 'expression'.";

/// The response shape the caller asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    #[default]
    Full,
    Compact,
}

/// The five rule types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleType {
    SumEquals,
    Gte,
    Lte,
    ExistsIn,
    Unique,
}

impl RuleType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "sum_equals" => RuleType::SumEquals,
            "gte" => RuleType::Gte,
            "lte" => RuleType::Lte,
            "exists_in" => RuleType::ExistsIn,
            "unique" => RuleType::Unique,
            _ => return None,
        })
    }

    /// The name as the API spells it.
    pub fn name(self) -> &'static str {
        match self {
            RuleType::SumEquals => "sum_equals",
            RuleType::Gte => "gte",
            RuleType::Lte => "lte",
            RuleType::ExistsIn => "exists_in",
            RuleType::Unique => "unique",
        }
    }

    /// The check name in reports: `consistency:sum_equals`.
    pub fn check_name(self) -> &'static str {
        match self {
            RuleType::SumEquals => "consistency:sum_equals",
            RuleType::Gte => "consistency:gte",
            RuleType::Lte => "consistency:lte",
            RuleType::ExistsIn => "consistency:exists_in",
            RuleType::Unique => "consistency:unique",
        }
    }
}

/// What a rule compares against.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// No operand (the `unique` rule).
    None,
    /// A constant number (`equals`, `value`).
    Number(f64, Value),
    /// The single number at another path (`equals_field`, `other_field`).
    Field(FieldPath),
    /// A constant list (`values`).
    List(Vec<Value>),
}

/// A validated rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub kind: RuleType,
    pub field: FieldPath,
    pub operand: Operand,
    pub tolerance: f64,
    pub if_present: bool,
}

/// A validated bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub field: FieldPath,
    pub min: Option<(f64, Value)>,
    pub max: Option<(f64, Value)>,
    pub if_present: bool,
}

/// A parsed, valid verification request.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    pub task_id: String,
    pub agent_id: Option<String>,
    /// The key a key-based `agent_id` names (`None` for a plain label or no ID).
    pub agent_key: Option<crate::identity::AgentKey>,
    /// The agent's signature of the deliverable message (required for a key-based ID, refused
    /// for a label), checked before any check runs.
    pub agent_signature: Option<String>,
    /// The schema with its canonical form and hash (shared with the schema cache).
    pub expected_schema: Arc<SchemaDoc>,
    pub submitted_output: Value,
    pub strict_content_check: bool,
    pub enforce_rules: bool,
    /// Whether `format` is an assertion (the default, in every draft) or only an annotation.
    pub format_assertion: bool,
    pub detail: Detail,
    /// `bounds` exactly as sent (null when absent).
    pub bounds_sent: Value,
    /// `rules` exactly as sent (null when absent).
    pub rules_sent: Value,
    pub bounds: Vec<Bound>,
    pub rules: Vec<Rule>,
    /// The rules of type `expression` (CEL), with their positions in `rules`.
    pub expressions: Vec<ExpressionRule>,
    /// Where `expected_schema`'s text is in the body it was parsed from (to remember the
    /// schema by its text once the request is served).
    pub schema_text: Option<std::ops::Range<usize>>,
}

impl VerifyRequest {
    /// The fields its four receipt hashes are computed from.
    pub fn hash_input(&self) -> verifier_receipt::HashInput<'_> {
        verifier_receipt::HashInput {
            task_id: &self.task_id,
            agent_id: self.agent_id.as_deref(),
            agent_signature: self.agent_signature.as_deref(),
            submitted_output: &self.submitted_output,
            schema_canonical: &self.expected_schema.canonical,
            schema_digest: Some(self.expected_schema.digest),
            rules_sent: &self.rules_sent,
            bounds_sent: &self.bounds_sent,
            enforce_rules: self.enforce_rules,
            strict_content_check: self.strict_content_check,
            format_assertion: self.format_assertion,
        }
    }

    /// Its four receipt hashes (what a receipt about this request states).
    pub fn receipt_hashes(
        &self,
    ) -> Result<verifier_receipt::ReceiptHashes, verifier_receipt::canonical::CanonicalError> {
        verifier_receipt::receipt_hashes(&self.hash_input())
    }

    /// Parse and validate a request body.
    pub fn from_body(body: &[u8]) -> Result<Self, InvalidRequest> {
        Self::from_body_with(body, None)
    }

    /// Parse and validate a request body, taking `expected_schema` from `schemas` when the
    /// same schema text was seen before (it is then neither parsed nor hashed again).
    pub fn from_body_with(
        body: &[u8],
        schemas: Option<&SchemaDocs>,
    ) -> Result<Self, InvalidRequest> {
        let (value, [schema_text]) =
            json::parse_strict_capturing(body, FIELDS, &["expected_schema"]).map_err(|e| {
                let field = e.field.unwrap_or("body");
                InvalidRequest::one(json_problem(field, e.error))
            })?;
        let schema = schema_text.map(|text| {
            let origin = json::origin_of(body, text.as_bytes());
            match schemas {
                Some(cache) => cache.lookup(text, origin),
                None => SchemaDoc::from_text(text, origin).map(Arc::new),
            }
        });
        // The parser bounds the body's depth already.
        let mut request = Self::validate(value, Some(schema), false)?;
        request.schema_text = schema_text.map(|text| {
            let start = (text.as_ptr() as usize).saturating_sub(body.as_ptr() as usize);
            start..start + text.len()
        });
        Ok(request)
    }

    /// Validate a request body that will not be run (it goes to payment) with every check
    /// [`VerifyRequest::from_body`] makes, without building `submitted_output` (checked in
    /// place) or an `expected_schema` larger than `max_schema_bytes` (checked in place too; the
    /// caller then cannot screen it). Returns the schema when it was built.
    pub fn screen_body(
        body: &[u8],
        schemas: &SchemaDocs,
        max_schema_bytes: usize,
    ) -> Result<Option<Arc<SchemaDoc>>, InvalidRequest> {
        let (mut value, [schema_text, output_text]) =
            json::parse_strict_capturing(body, FIELDS, &["expected_schema", "submitted_output"])
                .map_err(|e| {
                    let field = e.field.unwrap_or("body");
                    InvalidRequest::one(json_problem(field, e.error))
                })?;
        let in_place = |field: &str, text: &str| {
            json::check_strict(text, MAX_FIELD_DEPTH)
                .map_err(|e| json_problem(field, e.shifted(json::origin_of(body, text.as_bytes()))))
        };
        let mut checked_schema: Option<Result<(), FieldProblem>> = None;
        let schema = match schema_text {
            Some(text) if text.len() > max_schema_bytes => {
                let checked = in_place("expected_schema", text).and_then(|()| {
                    let first = text.trim_start().as_bytes().first();
                    match first {
                        Some(b'{' | b't' | b'f') => Ok(()),
                        _ => Err(FieldProblem::new(
                            "expected_schema",
                            "must be a JSON Schema: an object or a boolean",
                            FIX_SCHEMA_TYPE,
                        )),
                    }
                });
                checked_schema = Some(checked);
                None
            }
            Some(text) => Some(schemas.lookup(text, json::origin_of(body, text.as_bytes()))),
            None => None,
        };
        let mut problems = Vec::new();
        if let Some(text) = output_text {
            if let Err(problem) = in_place("submitted_output", text) {
                problems.push(problem);
            }
            // Present (its value is not needed to decide the price).
            if let Value::Object(map) = &mut value {
                map.insert("submitted_output".into(), Value::Null);
            }
        }
        let validated = match (schema, checked_schema) {
            (Some(built), _) => {
                Self::validate(value, Some(Some(built)), false).map(|r| Some(r.expected_schema))
            }
            (None, Some(checked)) => {
                // Validate everything else against a stand-in schema, then report the schema's
                // own problem if it had one.
                let stand_in = Arc::new(
                    SchemaDoc::from_value(Value::Bool(true)).map_err(InvalidRequest::one)?,
                );
                let rest = Self::validate(value, Some(Some(Ok(stand_in))), false).map(|_| None);
                match (rest, checked) {
                    (Ok(_), Err(problem)) => Err(InvalidRequest::one(problem)),
                    (Err(mut invalid), Err(problem)) => {
                        invalid.problems.push(problem);
                        Err(invalid)
                    }
                    (rest, Ok(())) => rest,
                }
            }
            (None, None) => {
                Self::validate(value, Some(None), false).map(|r| Some(r.expected_schema))
            }
        };
        match validated {
            Ok(schema) if problems.is_empty() => Ok(schema),
            Ok(_) => Err(InvalidRequest { problems }),
            Err(mut invalid) => {
                invalid.problems.extend(problems);
                Err(invalid)
            }
        }
    }

    /// Validate an already-parsed request object (MCP tool arguments arrive this way).
    pub fn from_value(value: Value) -> Result<Self, InvalidRequest> {
        Self::validate(value, None, true)
    }

    /// Validate the request object. `schema` is the already-resolved `expected_schema` when
    /// the parser captured it (`Some(None)`: it was absent); with `None` it is read from the
    /// object. `check_output_depth` bounds `submitted_output` for values not from the parser.
    fn validate(
        value: Value,
        schema: Option<Option<Result<Arc<SchemaDoc>, FieldProblem>>>,
        check_output_depth: bool,
    ) -> Result<Self, InvalidRequest> {
        let Value::Object(mut map) = value else {
            return Err(InvalidRequest::one(FieldProblem::new(
                "body",
                "is not a JSON object",
                "Send a JSON object with at least task_id, expected_schema and submitted_output.",
            )));
        };
        let mut problems = Vec::new();
        let unknown = map.keys().filter(|k| !FIELDS.contains(&k.as_str())).count();
        let schema = schema.unwrap_or_else(|| {
            map.remove("expected_schema")
                .map(|v| SchemaDoc::from_value(v).map(Arc::new))
        });
        if unknown > 0 {
            problems.push(FieldProblem::new(
                "body",
                format!("has {unknown} field(s) this API does not know"),
                format!("Send only these fields: {}.", FIELDS.join(", ")),
            ));
        }
        let task_id = id_field(&mut problems, map.get("task_id"), "task_id", true);
        let agent_id = id_field(&mut problems, map.get("agent_id"), "agent_id", false);
        let (agent_key, agent_signature) = agent_identity(
            &mut problems,
            agent_id.as_deref(),
            map.get("agent_signature"),
        );
        let expected_schema = match schema {
            None => {
                problems.push(missing(
                    "expected_schema",
                    "Send a JSON Schema object, e.g. {\"type\": \"object\"}.",
                ));
                None
            }
            Some(Ok(doc)) => Some(doc),
            Some(Err(problem)) => {
                problems.push(problem);
                None
            }
        };
        let submitted_output = match map.remove("submitted_output") {
            Some(v) => v,
            None => {
                problems.push(missing(
                    "submitted_output",
                    "Send the output under test; null is allowed but the key must be present.",
                ));
                Value::Null
            }
        };
        if check_output_depth && depth_exceeds(&submitted_output, MAX_FIELD_DEPTH) {
            problems.push(json_problem("submitted_output", JsonError::TooDeep));
        }
        let strict_content_check = bool_field(
            &mut problems,
            map.get("strict_content_check"),
            "strict_content_check",
        );
        let enforce_rules = bool_field(&mut problems, map.get("enforce_rules"), "enforce_rules");
        let format_assertion = match map.get("format_assertion") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                problems.push(FieldProblem::new(
                    "format_assertion",
                    "has the wrong type",
                    "Send true or false (or leave the field out for true: formats are asserted).",
                ));
                true
            }
        };
        let detail = match map.get("detail") {
            None => Detail::Full,
            Some(Value::String(s)) if s == "full" => Detail::Full,
            Some(Value::String(s)) if s == "compact" => Detail::Compact,
            Some(_) => {
                problems.push(FieldProblem::new(
                    "detail",
                    "is not one of the allowed values",
                    "Use 'full' or 'compact'.",
                ));
                Detail::Full
            }
        };
        let bounds_sent = map.remove("bounds").unwrap_or(Value::Null);
        let bounds = parse_bounds(&mut problems, &bounds_sent);
        let rules_sent = map.remove("rules").unwrap_or(Value::Null);
        let (rules, expressions) = parse_rules(&mut problems, &rules_sent);
        let Some(expected_schema) = expected_schema.filter(|_| problems.is_empty()) else {
            return Err(InvalidRequest { problems });
        };
        Ok(VerifyRequest {
            task_id: task_id.unwrap_or_default(),
            agent_id,
            agent_key,
            agent_signature,
            expected_schema,
            submitted_output,
            strict_content_check,
            enforce_rules,
            format_assertion,
            detail,
            bounds_sent,
            rules_sent,
            bounds,
            rules,
            expressions,
            schema_text: None,
        })
    }

    /// Whether this verification feeds the agent's history (not for `test-` IDs or no ID).
    pub fn records_history(&self) -> bool {
        self.agent_id
            .as_deref()
            .is_some_and(|id| !id.starts_with("test-"))
    }

    /// The value `rules_hash` is computed over: the bounds and rules exactly as sent.
    pub fn rules_document(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("bounds".into(), self.bounds_sent.clone());
        doc.insert("rules".into(), self.rules_sent.clone());
        Value::Object(doc)
    }

    /// The value `request_hash` is computed over: the eight fields with every default filled
    /// (and `format_assertion: false` when the caller turned format assertion off),
    /// including every omitted field of every rule and bound. Empty `bounds`/`rules` count as
    /// null, as the hosted service's published reference code does. This is the readable
    /// definition; the hash itself streams the same bytes from
    /// [`verifier_receipt::hashes::write_request_document`] (a test keeps the two equal).
    pub fn request_document(&self) -> Value {
        let parts = self.request_document_parts();
        let mut doc = Map::new();
        doc.insert("task_id".into(), Value::String(self.task_id.clone()));
        doc.insert("agent_id".into(), parts.agent_id);
        if let Some(signature) = &self.agent_signature {
            // Only when sent: requests without it hash as they always did.
            doc.insert("agent_signature".into(), Value::String(signature.clone()));
        }
        doc.insert("expected_schema".into(), self.expected_schema.value.clone());
        doc.insert("submitted_output".into(), self.submitted_output.clone());
        doc.insert(
            "strict_content_check".into(),
            Value::Bool(self.strict_content_check),
        );
        doc.insert("bounds".into(), parts.bounds);
        doc.insert("rules".into(), parts.rules);
        doc.insert("enforce_rules".into(), Value::Bool(self.enforce_rules));
        if !self.format_assertion {
            // Only when asked: requests without the field hash as they always did.
            doc.insert("format_assertion".into(), Value::Bool(false));
        }
        Value::Object(doc)
    }

    /// The request document's members that differ from the fields as sent.
    fn request_document_parts(&self) -> RequestDocumentParts {
        RequestDocumentParts {
            agent_id: self.agent_id.clone().map_or(Value::Null, Value::String),
            bounds: filled_bounds(&self.bounds_sent),
            rules: filled_rules(&self.rules_sent),
        }
    }
}

/// `agent_id`, `bounds` and `rules` with every default filled.
struct RequestDocumentParts {
    agent_id: Value,
    bounds: Value,
    rules: Value,
}

fn filled_bounds(sent: &Value) -> Value {
    match sent {
        Value::Object(map) if !map.is_empty() => Value::Object(
            map.iter()
                .map(|(path, bound)| {
                    let mut full = Map::new();
                    full.insert("min".into(), Value::Null);
                    full.insert("max".into(), Value::Null);
                    full.insert("if_present".into(), Value::Bool(false));
                    if let Value::Object(given) = bound {
                        full.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                    (path.clone(), Value::Object(full))
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

fn filled_rules(sent: &Value) -> Value {
    match sent {
        Value::Array(rules) if !rules.is_empty() => Value::Array(
            rules
                .iter()
                .map(|rule| {
                    let mut full = Map::new();
                    for key in [
                        "equals_field",
                        "equals",
                        "other_field",
                        "value",
                        "in_field",
                        "values",
                    ] {
                        full.insert(key.into(), Value::Null);
                    }
                    full.insert("tolerance".into(), DEFAULT_TOLERANCE.into());
                    full.insert("if_present".into(), Value::Bool(false));
                    if let Value::Object(given) = rule {
                        full.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
                    }
                    Value::Object(full)
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

fn missing(field: &str, fix: &str) -> FieldProblem {
    FieldProblem::new(field, "is required but missing", fix)
}

fn id_field(
    problems: &mut Vec<FieldProblem>,
    value: Option<&Value>,
    name: &str,
    required: bool,
) -> Option<String> {
    let fix = || {
        format!(
            "Send {name} as a string of 1 to {MAX_ID_CHARS} characters{}.",
            if required { "" } else { ", or null" }
        )
    };
    match value {
        None if required => {
            problems.push(missing(name, &fix()));
            None
        }
        None => None,
        Some(Value::Null) if !required => None,
        Some(Value::String(s)) => {
            let n = s.chars().count();
            if n == 0 {
                problems.push(FieldProblem::new(name, "is empty", fix()));
                None
            } else if n > MAX_ID_CHARS {
                problems.push(FieldProblem::new(
                    name,
                    format!("is longer than {MAX_ID_CHARS} characters"),
                    fix(),
                ));
                None
            } else {
                Some(s.clone())
            }
        }
        Some(_) => {
            problems.push(FieldProblem::new(name, "has the wrong type", fix()));
            None
        }
    }
}

/// The longest `agent_signature` accepted (an EIP-191 signature is 132 characters of hex, an
/// Ed25519 one about 88 of base58).
const MAX_SIGNATURE_CHARS: usize = 200;

/// A key-based `agent_id`'s key and its `agent_signature` (required then; refused for a label).
fn agent_identity(
    problems: &mut Vec<FieldProblem>,
    agent_id: Option<&str>,
    signature: Option<&Value>,
) -> (Option<crate::identity::AgentKey>, Option<String>) {
    let key = match agent_id.map(crate::identity::parse) {
        Some(Ok(key)) => key,
        Some(Err(e)) => {
            problems.push(FieldProblem::new("agent_id", e.to_string(), e.fix()));
            None
        }
        None => None,
    };
    let signature = match signature {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_SIGNATURE_CHARS => {
            Some(s.clone())
        }
        Some(_) => {
            problems.push(FieldProblem::new(
                "agent_signature",
                format!("is not a string of 1 to {MAX_SIGNATURE_CHARS} characters"),
                crate::identity::IdentityError::MalformedSignature.fix(),
            ));
            return (key, None);
        }
    };
    match (&key, &signature) {
        (Some(_), None) if agent_id.is_some() => problems.push(FieldProblem::new(
            "agent_signature",
            "is required: agent_id names a key, and only its holder may add to its history",
            crate::identity::IdentityError::BadSignature.fix(),
        )),
        (None, Some(_)) if !problems.iter().any(|p| p.field == "agent_id") => {
            problems.push(FieldProblem::new(
                "agent_signature",
                "applies only to a key-based agent_id (did:key, eip155, solana)",
                "Leave agent_signature out for a plain agent_id label, or use a key-based agent_id.",
            ))
        }
        _ => {}
    }
    (key, signature)
}

fn bool_field(problems: &mut Vec<FieldProblem>, value: Option<&Value>, name: &str) -> bool {
    match value {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            problems.push(FieldProblem::new(
                name,
                "has the wrong type",
                "Send true or false (or leave the field out for false).",
            ));
            false
        }
    }
}

fn path_at(
    problems: &mut Vec<FieldProblem>,
    value: &Value,
    at: impl FnOnce() -> String,
) -> Option<FieldPath> {
    const FIX: &str = "Send a path of dotted field names, with [] for every element of an array, e.g. 'total' or 'items[].price'.";
    match value {
        Value::String(s) => match FieldPath::parse(s) {
            Ok(p) => Some(p),
            Err(e) => {
                problems.push(FieldProblem::new(
                    at(),
                    format!("is not a valid path: it {e}"),
                    FIX,
                ));
                None
            }
        },
        _ => {
            problems.push(FieldProblem::new(at(), "has the wrong type", FIX));
            None
        }
    }
}

fn number_at(
    problems: &mut Vec<FieldProblem>,
    value: &Value,
    at: impl FnOnce() -> String,
) -> Option<(f64, Value)> {
    match value.as_f64() {
        Some(n) if value.is_number() => Some((n, value.clone())),
        _ => {
            problems.push(FieldProblem::new(
                at(),
                "has the wrong type",
                "Send a number.",
            ));
            None
        }
    }
}

fn parse_bounds(problems: &mut Vec<FieldProblem>, sent: &Value) -> Vec<Bound> {
    let map = match sent {
        Value::Null => return Vec::new(),
        Value::Object(map) => map,
        _ => {
            problems.push(FieldProblem::new(
                "bounds",
                "has the wrong type",
                "Send an object mapping a path to {min, max, if_present}, e.g. {\"items[].price\": {\"min\": 0, \"max\": 100}}, or null.",
            ));
            return Vec::new();
        }
    };
    let mut out = Vec::with_capacity(map.len());
    for (i, (path_text, spec)) in map.iter().enumerate() {
        // A bound's key is the caller's path text; report it by position, not by quoting it.
        let at = format!("bounds[{i}]");
        let path = path_at(problems, &Value::String(path_text.clone()), || {
            format!("{at} (key)")
        });
        let Value::Object(spec) = spec else {
            problems.push(FieldProblem::new(
                at,
                "has the wrong type",
                "Send {\"min\": <number>, \"max\": <number>, \"if_present\": <bool>}.",
            ));
            continue;
        };
        let unknown = spec
            .keys()
            .filter(|k| !BOUND_KEYS.contains(&k.as_str()))
            .count();
        if unknown > 0 {
            problems.push(FieldProblem::new(
                at.clone(),
                format!("has {unknown} key(s) this API does not know"),
                "Use only min, max and if_present.",
            ));
        }
        let min = opt_number(problems, spec.get("min"), || format!("{at}.min"));
        let max = opt_number(problems, spec.get("max"), || format!("{at}.max"));
        let if_present = opt_bool(problems, spec.get("if_present"), || {
            format!("{at}.if_present")
        });
        if spec.get("min").is_none_or(Value::is_null) && spec.get("max").is_none_or(Value::is_null)
        {
            problems.push(FieldProblem::new(
                at.clone(),
                "has neither min nor max",
                "Give min, max or both.",
            ));
        }
        if let (Some((lo, _)), Some((hi, _))) = (&min, &max)
            && lo > hi
        {
            problems.push(FieldProblem::new(
                at.clone(),
                "has min greater than max",
                "Give min ≤ max.",
            ));
        }
        if let Some(field) = path {
            out.push(Bound {
                field,
                min,
                max,
                if_present,
            });
        }
    }
    out
}

fn opt_number(
    problems: &mut Vec<FieldProblem>,
    value: Option<&Value>,
    at: impl FnOnce() -> String,
) -> Option<(f64, Value)> {
    match value {
        None | Some(Value::Null) => None,
        Some(v) => number_at(problems, v, at),
    }
}

fn opt_bool(
    problems: &mut Vec<FieldProblem>,
    value: Option<&Value>,
    at: impl FnOnce() -> String,
) -> bool {
    match value {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            problems.push(FieldProblem::new(
                at(),
                "has the wrong type",
                "Send true or false.",
            ));
            false
        }
    }
}

fn parse_rules(problems: &mut Vec<FieldProblem>, sent: &Value) -> (Vec<Rule>, Vec<ExpressionRule>) {
    let list = match sent {
        Value::Null => return (Vec::new(), Vec::new()),
        Value::Array(list) => list,
        _ => {
            problems.push(FieldProblem::new(
                "rules",
                "has the wrong type",
                "Send an array of rule objects, e.g. [{\"type\": \"sum_equals\", \"field\": \"items[].price\", \"equals_field\": \"total\"}], or null.",
            ));
            return (Vec::new(), Vec::new());
        }
    };
    let mut rules = Vec::new();
    let mut expressions = Vec::new();
    let mut expression_bytes = expression::MAX_EXPRESSION_BYTES_PER_REQUEST;
    for (i, rule) in list.iter().enumerate() {
        match rule {
            Value::Object(spec)
                if spec.get("type").and_then(Value::as_str) == Some("expression") =>
            {
                expressions.extend(expression::rule::parse(
                    problems,
                    spec,
                    i,
                    &mut expression_bytes,
                ));
            }
            _ => rules.extend(parse_rule(problems, rule, format!("rules[{i}]"))),
        }
    }
    (rules, expressions)
}

fn parse_rule(problems: &mut Vec<FieldProblem>, rule: &Value, at: String) -> Option<Rule> {
    let Value::Object(spec) = rule else {
        problems.push(FieldProblem::new(
            at,
            "has the wrong type",
            "Send a rule object such as {\"type\": \"unique\", \"field\": \"items[].id\"}.",
        ));
        return None;
    };
    let before = problems.len();
    let unknown = spec
        .keys()
        .filter(|k| !RULE_KEYS.contains(&k.as_str()) || k.as_str() == "rule")
        .count();
    if unknown > 0 {
        problems.push(FieldProblem::new(
            at.clone(),
            format!("has {unknown} key(s) this API does not know"),
            format!("Use only: {}.", RULE_KEYS.join(", ")),
        ));
    }
    let given = |k: &str| spec.get(k).filter(|v| !v.is_null());
    let kind = match spec.get("type") {
        None | Some(Value::Null) => {
            problems.push(FieldProblem::new(
                format!("{at}.type"),
                "is required but missing",
                RULE_TYPES_FIX,
            ));
            None
        }
        Some(Value::String(s)) => {
            let t = RuleType::parse(s);
            if t.is_none() {
                problems.push(FieldProblem::new(
                    format!("{at}.type"),
                    "is not one of the allowed values",
                    RULE_TYPES_FIX,
                ));
            }
            t
        }
        Some(_) => {
            problems.push(FieldProblem::new(
                format!("{at}.type"),
                "has the wrong type",
                RULE_TYPES_FIX,
            ));
            None
        }
    };
    let field = match given("field") {
        None => {
            problems.push(FieldProblem::new(
                format!("{at}.field"),
                "is required but missing",
                "Send the path the rule checks, e.g. 'items[].price'.",
            ));
            None
        }
        Some(v) => path_at(problems, v, || format!("{at}.field")),
    };
    let tolerance = match given("tolerance") {
        None => DEFAULT_TOLERANCE,
        Some(v) => match v.as_f64() {
            Some(t) if t >= 0.0 => t,
            _ => {
                problems.push(FieldProblem::new(
                    format!("{at}.tolerance"),
                    "must be a number ≥ 0",
                    "Send a non-negative number, e.g. 0.01.",
                ));
                DEFAULT_TOLERANCE
            }
        },
    };
    let if_present = opt_bool(
        problems,
        spec.get("if_present").filter(|v| !v.is_null()),
        || format!("{at}.if_present"),
    );
    let operand = kind.and_then(|kind| parse_operand(problems, kind, &given, &at));
    if problems.len() > before {
        return None;
    }
    Some(Rule {
        kind: kind?,
        field: field?,
        operand: operand?,
        tolerance,
        if_present,
    })
}

fn parse_operand<'a>(
    problems: &mut Vec<FieldProblem>,
    kind: RuleType,
    given: &dyn Fn(&str) -> Option<&'a Value>,
    at: &str,
) -> Option<Operand> {
    // (field-reference key, constant key) for each type; `unique` takes neither.
    let (field_key, const_key) = match kind {
        RuleType::SumEquals => ("equals_field", "equals"),
        RuleType::Gte | RuleType::Lte => ("other_field", "value"),
        RuleType::ExistsIn => ("in_field", "values"),
        RuleType::Unique => ("", ""),
    };
    for key in [
        "equals_field",
        "equals",
        "other_field",
        "value",
        "in_field",
        "values",
    ] {
        if key != field_key && key != const_key && given(key).is_some() {
            problems.push(FieldProblem::new(
                format!("{at}.{key}"),
                format!("does not apply to a '{}' rule", kind.name()),
                "Remove it or set it to null.",
            ));
        }
    }
    if kind == RuleType::Unique {
        return Some(Operand::None);
    }
    match (given(field_key), given(const_key)) {
        (Some(_), Some(_)) => {
            problems.push(FieldProblem::new(
                format!("{at}.{field_key}"),
                format!("is given together with {const_key}"),
                format!("Give either {field_key} or {const_key}, not both."),
            ));
            None
        }
        (None, None) => {
            problems.push(FieldProblem::new(
                format!("{at}.{field_key}"),
                format!("is required when {const_key} is not given"),
                format!("Give {field_key} (a path) or {const_key} (a constant)."),
            ));
            None
        }
        (Some(path), None) => {
            path_at(problems, path, || format!("{at}.{field_key}")).map(Operand::Field)
        }
        (None, Some(constant)) => match kind {
            RuleType::ExistsIn => match constant {
                Value::Array(list) => Some(Operand::List(list.clone())),
                _ => {
                    problems.push(FieldProblem::new(
                        format!("{at}.values"),
                        "has the wrong type",
                        "Send an array of allowed values.",
                    ));
                    None
                }
            },
            _ => number_at(problems, constant, || format!("{at}.{const_key}"))
                .map(|(n, v)| Operand::Number(n, v)),
        },
    }
}
