//! The verification pipeline: hashes, schema (through the compiled-schema cache), bounds,
//! rules, content checks, report, signature, serialization.

use crate::checks::schema::{CompileError, CompiledSchema, SchemaError, SchemaOptions};
use crate::checks::tally::Tally;
use crate::checks::{Findings, bounds, content, expressions, rules};
use crate::cost::request::{
    RequestShape, charge_content, charge_parse, charge_receipt, charge_rules,
};
use crate::cost::size::Shape;
use crate::cost::{Budget, Budgets, Cost, Meter, OverBudget};
use crate::expression::eval::Subject;
use crate::report::{Details, Ratio, Summary, VerifyBlock, VerifyResponse, next_actions};
use crate::request::{Detail, FieldProblem, InvalidRequest, VerifyRequest};
use crate::schema_doc::{SchemaDoc, SchemaDocs};
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;
use verifier_receipt::attest::{VERIFY_CONTEXT, attest, with_attestation};
use verifier_receipt::hashes::receipt_hashes;
use verifier_receipt::keys::SigningIdentity;

/// The service's version, as receipts state it.
pub const VERIFIER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Base URL of the service, used in the receipt's `verify` block (none: the signing key
    /// is published nowhere, and the block says so).
    pub public_url: Option<String>,
    /// Longest list in a response (`errors`, `flags`, …); the rest is counted as omitted.
    pub list_cap: usize,
    /// Bytes of memory the compiled schemas kept in the cache may hold (each weighed by what
    /// its validator, patterns and lazy-DFA caches hold).
    pub cache_bytes: u64,
    /// Bytes of schema text remembered to skip parsing repeated schemas.
    pub schema_text_cache_bytes: u64,
    /// CPU estimates are multiplied by this, in millionths (1,000,000: this machine is as
    /// fast as the reference machine the constants were measured on; see the calibrate
    /// example).
    pub cost_scale_ppm: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            public_url: Some("http://127.0.0.1:8080".into()),
            list_cap: 50,
            cache_bytes: 32 << 20,
            schema_text_cache_bytes: 4 << 20,
            cost_scale_ppm: crate::cost::UNSCALED_PPM,
        }
    }
}

/// What collecting every schema error `walk` found possible costs: each error and its
/// locations (as long as the output's longest path), and what the errors copy.
fn error_collection(walk: &crate::cost::walk::WalkSummary, shape: &RequestShape) -> Cost {
    use crate::cost::calibration as c;
    let per_error = c::ERROR_HELD_BYTES.saturating_add(shape.output.longest_path.saturating_mul(2));
    Cost::new(
        walk.potential_errors
            .saturating_mul(c::ERROR_COLLECT_NS)
            .saturating_add(walk.error_copies.saturating_mul(c::ERROR_CLONE_NS_PER_BYTE)),
        walk.potential_errors
            .saturating_mul(per_error)
            .saturating_add(
                walk.error_copies
                    .saturating_mul(c::ERROR_CLONE_BYTES_PER_BYTE),
            ),
    )
}

/// A finished, signed verification.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The response body, serialized.
    pub body: Vec<u8>,
    /// Whether the result is `pass`.
    pub passed: bool,
    /// The `verification_id`.
    pub verification_id: String,
    /// The `verified_at` timestamp.
    pub verified_at: String,
    /// How many checks applied (schema assertions, rule and bound checks, content checks).
    /// A verification that checked nothing is evidence of nothing and enters no history.
    pub checks: usize,
    /// For a key-based agent: SHA-256 of the deliverable message its key signed (recorded once).
    pub signed_deliverable: Option<String>,
}

/// What a report established besides its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the result is `pass`.
    pub passed: bool,
    /// How many checks applied.
    pub checks: usize,
    /// For a key-based agent: SHA-256 of the deliverable message its key signed.
    pub signed_deliverable: Option<String>,
}

/// An internal failure that is not the caller's fault.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the request is invalid")]
    Invalid(#[from] InvalidRequest),
    #[error("a value could not be canonicalized")]
    Canonical(#[from] verifier_receipt::canonical::CanonicalError),
    #[error("the response could not be serialized")]
    Serialize(#[from] serde_json::Error),
    /// The work would pass (or passed, for metered schema errors) the request's budget.
    #[error(transparent)]
    OverBudget(#[from] OverBudget),
}

impl From<CompileError> for EngineError {
    fn from(e: CompileError) -> Self {
        match e {
            CompileError::Invalid(e) => EngineError::Invalid(schema_problem(&e)),
            CompileError::OverBudget(o) => EngineError::OverBudget(o),
        }
    }
}

/// Weighs a compiled schema by the memory it holds.
#[derive(Clone)]
struct HeldBytes;

/// A compiled schema's cache key: its canonical digest and whether formats are asserted.
type SchemaKey = ([u8; 32], bool);

impl Weighter<SchemaKey, Arc<CompiledSchema>> for HeldBytes {
    fn weight(&self, _key: &SchemaKey, compiled: &Arc<CompiledSchema>) -> u64 {
        compiled.held_bytes().max(1)
    }
}

/// The verifier: configuration plus the compiled-schema cache.
pub struct Engine {
    config: EngineConfig,
    cache: Cache<SchemaKey, Arc<CompiledSchema>, HeldBytes>,
    schema_docs: SchemaDocs,
    schema_options: SchemaOptions,
}

/// A schema that cannot be used, as the caller's problem with `expected_schema`.
fn schema_problem(e: &SchemaError) -> InvalidRequest {
    InvalidRequest::one(FieldProblem::new("expected_schema", e.to_string(), e.fix()))
}

/// Work over a budget, as the caller's problem with the field that drives it: what would cost
/// too much, about how much, and the limit (never any of the caller's content).
pub fn over_budget_problem(over: &OverBudget) -> FieldProblem {
    let problem = if over.estimate == u64::MAX {
        format!(
            "makes {} too complex to bound (its references nest deeper than {} levels or its work grows without limit)",
            over.part.describe(),
            crate::cost::walk::MAX_DEPTH
        )
    } else {
        let (estimate, limit) = over.amounts();
        let what = match over.resource {
            crate::cost::Resource::Cpu => "of CPU",
            crate::cost::Resource::Memory => "of memory",
        };
        format!(
            "would cost more than {estimate} {what} (mostly {}), over the limit of {limit}",
            over.part.describe()
        )
    };
    FieldProblem::new(over.part.field(), problem, over.part.fix())
}

/// Build, once per process, what jsonschema builds on its first compile of each draft (its
/// meta-schema validators: ~1.3 ms), so no request pays for it beyond its estimate.
/// [`Engine::new`] calls it; a process that uses [`Engine::without_warm_up`] and verifies
/// calls it itself at start.
pub fn warm_up() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for draft in [
            "http://json-schema.org/draft-04/schema#",
            "http://json-schema.org/draft-06/schema#",
            "http://json-schema.org/draft-07/schema#",
            "https://json-schema.org/draft/2019-09/schema",
            "https://json-schema.org/draft/2020-12/schema",
        ] {
            let schema = serde_json::json!({"$schema": draft, "properties": {"a": {"pattern": "^a[0-9]+$", "format": "date"}}});
            let _ = CompiledSchema::compile(&schema, &SchemaOptions::default());
            let _ = crate::checks::schema::screen(&schema);
        }
    });
}

/// A key-based agent's signature over this deliverable (agent, task, output hash), checked
/// before any check runs: a missing or wrong one is the caller's problem with
/// `agent_signature`, never a recorded outcome.
/// Returns the SHA-256 of the signed message (the deliverable's identity) for a key.
fn check_agent_signature(
    req: &VerifyRequest,
    output_hash: &str,
) -> Result<Option<String>, EngineError> {
    let (Some(key), Some(agent_id)) = (&req.agent_key, &req.agent_id) else {
        return Ok(None);
    };
    let message = crate::identity::deliverable_message(agent_id, &req.task_id, output_hash);
    let signature = req.agent_signature.as_deref().unwrap_or_default();
    crate::identity::verify(key, &message, signature).map_err(|e| {
        EngineError::Invalid(InvalidRequest::one(FieldProblem::new(
            "agent_signature",
            e.to_string(),
            e.fix(),
        )))
    })?;
    Ok(Some(verifier_receipt::canonical::sha256_hex(
        message.as_bytes(),
    )))
}

pub use verifier_receipt::timestamp::rfc3339_micros;

impl Engine {
    /// A new engine.
    pub fn new(config: EngineConfig) -> Self {
        Self::with_schema_options(config, SchemaOptions::default())
    }

    /// A new engine that leaves the schema library's warm-up ([`warm_up`]) to its caller: a
    /// Lambda function that answers no verification (score, discovery) neither pays for it at
    /// init nor links the schema engine through it.
    pub fn without_warm_up(config: EngineConfig) -> Self {
        Self::build(config, SchemaOptions::default())
    }

    /// A new engine with non-default schema options (tests serve remote schemas from memory).
    pub fn with_schema_options(config: EngineConfig, schema_options: SchemaOptions) -> Self {
        warm_up();
        Self::build(config, schema_options)
    }

    fn build(config: EngineConfig, schema_options: SchemaOptions) -> Self {
        let bytes = config.cache_bytes.max(1);
        Engine {
            cache: Cache::with_weighter(
                (bytes / (64 << 10)).clamp(16, 1 << 16) as usize,
                bytes,
                HeldBytes,
            ),
            schema_docs: SchemaDocs::new(config.schema_text_cache_bytes),
            config,
            schema_options,
        }
    }

    /// Parse and validate a request body, reusing schemas seen before.
    pub fn parse(&self, body: &[u8]) -> Result<VerifyRequest, InvalidRequest> {
        VerifyRequest::from_body_with(body, Some(&self.schema_docs))
    }

    /// Check a body that goes to payment without building its output (or a schema over the
    /// free size limit); the schema when it was built, to screen it.
    pub fn screen_body(
        &self,
        body: &[u8],
        max_schema_bytes: usize,
    ) -> Result<Option<Arc<SchemaDoc>>, InvalidRequest> {
        VerifyRequest::screen_body(body, &self.schema_docs, max_schema_bytes)
    }

    /// Remember a served request's schema by its text, so the same text is neither parsed nor
    /// hashed again.
    pub fn remember_schema(&self, body: &[u8], req: &VerifyRequest) {
        if let Some(text) = req
            .schema_text
            .clone()
            .and_then(|span| body.get(span))
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
        {
            self.schema_docs.remember(text, &req.expected_schema);
        }
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// An empty meter under `budget`, with this engine's CPU scale.
    pub fn meter(&self, budget: Budget) -> Meter {
        Meter::new(budget).with_cpu_scale(self.config.cost_scale_ppm)
    }

    /// The compiled schema, by its canonical digest, formats asserted; compiled on a miss under
    /// the paid ceiling (tests and tools; requests go through [`Engine::compile`]).
    pub fn compiled(&self, schema: &SchemaDoc) -> Result<Arc<CompiledSchema>, InvalidRequest> {
        let mut meter = self.meter(Budgets::default().paid);
        self.compile(schema, true, &mut meter, true)
            .map_err(|e| match e {
                EngineError::Invalid(invalid) => invalid,
                EngineError::OverBudget(over) => InvalidRequest::one(over_budget_problem(&over)),
                _ => schema_problem(&SchemaError::BadPattern),
            })
    }

    /// Whether this schema is compiled already with formats asserted or not (a cache hit costs
    /// nothing to compile).
    pub fn has_compiled(&self, schema: &SchemaDoc, format_assertion: bool) -> bool {
        self.cache
            .peek(&(schema.digest, format_assertion))
            .is_some()
    }

    /// The compiled schema from the cache, or compiled under `meter` (which is charged for the
    /// compile and the memory it holds) and kept in the cache when `keep`. `format_assertion`
    /// is the request's choice; engine-wide schema options (tests) override it.
    pub fn compile(
        &self,
        schema: &SchemaDoc,
        format_assertion: bool,
        meter: &mut Meter,
        keep: bool,
    ) -> Result<Arc<CompiledSchema>, EngineError> {
        let key = (schema.digest, format_assertion);
        if let Some(hit) = self.cache.get(&key) {
            return Ok(hit);
        }
        let options = SchemaOptions {
            validate_formats: Some(
                self.schema_options
                    .validate_formats
                    .unwrap_or(format_assertion),
            ),
            ..self.schema_options.clone()
        };
        let compiled = Arc::new(CompiledSchema::compile_metered(
            &schema.value,
            schema.canonical.len(),
            &options,
            meter,
        )?);
        if keep {
            self.cache.insert(key, compiled.clone());
        }
        Ok(compiled)
    }

    /// Price a request against its compiled schema: reading it, applying the schema, the rules
    /// and bounds, the content checks and the receipt, charged to `meter`; `body_len` is the
    /// size of the request as received.
    pub fn price(
        &self,
        req: &VerifyRequest,
        schema: &CompiledSchema,
        body_len: usize,
        meter: &mut Meter,
    ) -> Result<(), OverBudget> {
        self.price_capped(req, schema, body_len, meter, None)
    }

    /// [`Engine::price`] whose schema walk stops undecided after `pair_cap` distinct pairs:
    /// a cheap second look at whether a request over one budget is past another one too.
    pub fn price_capped(
        &self,
        req: &VerifyRequest,
        schema: &CompiledSchema,
        body_len: usize,
        meter: &mut Meter,
        pair_cap: Option<usize>,
    ) -> Result<(), OverBudget> {
        let shape = RequestShape::of(req, body_len);
        charge_parse(meter, &shape)?;
        charge_rules(meter, req, &shape)?;
        charge_content(meter, req, &shape)?;
        let walk = schema.price(&req.submitted_output, meter, pair_cap)?;
        meter.note_validation(walk.cpu_ns);
        meter.note_errors(error_collection(&walk, &shape));
        let content_checks = if req.strict_content_check {
            content::CHECK_COUNT
        } else {
            0
        };
        let findings = walk.potential_errors.saturating_add(
            (req.rules.len() + req.expressions.len() + req.bounds.len() + content_checks) as u64,
        );
        charge_receipt(meter, req, &shape, findings, self.config.list_cap)?;
        Ok(())
    }

    /// Run every check and build the unsigned response; `key_version` names the key that
    /// will sign it. Returns the response and whether it passed.
    pub fn report(
        &self,
        req: &VerifyRequest,
        key_version: &str,
        now: OffsetDateTime,
    ) -> Result<(VerifyResponse, Verdict), EngineError> {
        let mut meter = self.meter(Budgets::default().paid);
        let schema = self.compile(&req.expected_schema, req.format_assertion, &mut meter, true)?;
        self.price(req, &schema, 0, &mut meter)?;
        self.report_metered(req, &schema, &mut meter, key_version, now)
    }

    /// Check a request and answer it unsigned (for offline use with no signing key): the
    /// response document without the `verify` block and the `attestation`, since no key signed
    /// it, and whether it passed.
    pub fn verify_unsigned(
        &self,
        req: &VerifyRequest,
        now: OffsetDateTime,
    ) -> Result<(serde_json::Value, bool), EngineError> {
        let (response, verdict) = self.report(req, "", now)?;
        let mut value = serde_json::to_value(&response)?;
        if let Some(map) = value.as_object_mut() {
            map.remove("verify");
        }
        Ok((value, verdict.passed))
    }

    /// Run every check against a compiled (and priced) schema and build the unsigned response;
    /// schema errors are charged to `meter` as they are collected.
    pub fn report_metered(
        &self,
        req: &VerifyRequest,
        schema: &CompiledSchema,
        meter: &mut Meter,
        key_version: &str,
        now: OffsetDateTime,
    ) -> Result<(VerifyResponse, Verdict), EngineError> {
        let hashes = receipt_hashes(&req.hash_input())?;
        let signed_deliverable = check_agent_signature(req, &hashes.output_hash)?;
        let output = &req.submitted_output;

        let mut findings = Findings::new(self.config.list_cap);
        let outcome = schema.check(output, req.strict_content_check, &mut findings, meter)?;
        let mut integrity = Tally::default();
        for bound in &req.bounds {
            let (finding, tally) = bounds::check_bound(bound, output);
            integrity.merge(tally);
            if let Some(f) = finding {
                findings.push(f);
            }
        }
        for rule in &req.rules {
            let (finding, tally) = rules::check_rule(rule, output, req.enforce_rules);
            integrity.merge(tally);
            if let Some(f) = finding {
                findings.push(f);
            }
        }
        if !req.expressions.is_empty() {
            let subject = Subject::of(output);
            // Priced already (the price is kept on the rule); measured only if not.
            let shape = std::cell::OnceCell::new();
            for rule in &req.expressions {
                let priced = rule.price(output, || *shape.get_or_init(|| Shape::of(output)));
                let (finding, tally) = expressions::check_expression(
                    rule,
                    &subject,
                    priced,
                    meter.budget().cpu_ns,
                    req.enforce_rules,
                );
                integrity.merge(tally);
                if let Some(f) = finding {
                    findings.push(f);
                }
            }
        }
        if req.strict_content_check {
            let found = content::check_content(output, &outcome.blank_required);
            integrity.add(content::CHECK_COUNT, found.len());
            for f in found {
                findings.push(f);
            }
        }
        let (integrity_total, integrity_failed) =
            (integrity.total, integrity.total - integrity.passed);
        let findings = findings.finish();
        let blocking_checks = findings.blocking_checks.clone();
        let passed = blocking_checks.is_empty();
        let result = if passed { "pass" } else { "fail" };
        let verified_at = rfc3339_micros(now);
        let verification_id = Uuid::new_v4().to_string();
        let mut response = VerifyResponse {
            summary: Summary {
                result,
                blocking_checks,
            },
            next_actions: next_actions(passed),
            result,
            verification_id,
            task_id: req.task_id.clone(),
            agent_id: req.agent_id.clone(),
            output_hash: hashes.output_hash,
            schema_hash: hashes.schema_hash,
            rules_hash: hashes.rules_hash,
            request_hash: (req.detail == Detail::Full).then_some(hashes.request_hash),
            verified_at,
            verifier_version: VERIFIER_VERSION,
            enforce_rules: req.enforce_rules,
            format_assertion: req.format_assertion,
            identity: req
                .agent_id
                .as_ref()
                .map(|_| crate::identity::label_of(req.agent_key.as_ref())),
            strict_content_check: req.strict_content_check,
            errors: None,
            errors_total: None,
            errors_omitted: None,
            errors_detail: None,
            errors_detail_total: None,
            errors_detail_omitted: None,
            flags: None,
            flags_total: None,
            flags_omitted: None,
            hints: None,
            hints_total: None,
            hints_omitted: None,
            schema_compliance: None,
            integrity_checks: None,
            overall: None,
            verify: VerifyBlock::new(self.config.public_url.as_deref(), key_version),
        };
        if req.detail == Detail::Full {
            response.set_details(Details::from_findings(
                &findings,
                Ratio::new(outcome.total - outcome.failed, outcome.total),
                Ratio::new(integrity_total - integrity_failed, integrity_total),
            ));
        }
        let checks = outcome.total + integrity_total;
        Ok((
            response,
            Verdict {
                passed,
                checks,
                signed_deliverable,
            },
        ))
    }

    /// Run every check, build the report and sign it.
    pub fn verify(
        &self,
        req: &VerifyRequest,
        signer: &SigningIdentity,
        now: OffsetDateTime,
    ) -> Result<Verification, EngineError> {
        let (response, verdict) = self.report(req, signer.key_version(), now)?;
        self.sign(Unsigned { response, verdict }, signer)
    }

    /// Run every check against a compiled, priced schema and sign the report.
    pub fn verify_metered(
        &self,
        req: &VerifyRequest,
        schema: &CompiledSchema,
        meter: &mut Meter,
        signer: &SigningIdentity,
        now: OffsetDateTime,
    ) -> Result<Verification, EngineError> {
        let unsigned = self.check_metered(req, schema, meter, signer.key_version(), now)?;
        self.sign(unsigned, signer)
    }

    /// Run every check against a compiled, priced schema: the report, to be signed with
    /// [`Engine::sign`] under the key `key_version` names.
    pub fn check_metered(
        &self,
        req: &VerifyRequest,
        schema: &CompiledSchema,
        meter: &mut Meter,
        key_version: &str,
        now: OffsetDateTime,
    ) -> Result<Unsigned, EngineError> {
        let (response, verdict) = self.report_metered(req, schema, meter, key_version, now)?;
        Ok(Unsigned { response, verdict })
    }

    /// Sign a report and serialize the response.
    pub fn sign(
        &self,
        unsigned: Unsigned,
        signer: &SigningIdentity,
    ) -> Result<Verification, EngineError> {
        let Unsigned { response, verdict } = unsigned;
        let verified_at = response.verified_at.clone();
        let verification_id = response.verification_id.clone();
        let attestation = attest(VERIFY_CONTEXT, &response, signer, &verified_at)?;
        let body = with_attestation(response.to_json()?, &attestation)?;
        Ok(Verification {
            body,
            passed: verdict.passed,
            verification_id,
            verified_at,
            checks: verdict.checks,
            signed_deliverable: verdict.signed_deliverable,
        })
    }
}

/// A verification whose checks have run, not signed yet: what its outcome is, before the
/// signature (so the store can record it while the report is signed).
#[derive(Debug)]
pub struct Unsigned {
    response: VerifyResponse,
    verdict: Verdict,
}

impl Unsigned {
    /// Whether the result is `pass`.
    pub fn passed(&self) -> bool {
        self.verdict.passed
    }

    /// How many checks applied.
    pub fn checks(&self) -> usize {
        self.verdict.checks
    }

    /// The `verification_id`.
    pub fn verification_id(&self) -> &str {
        &self.response.verification_id
    }

    /// The `verified_at` timestamp.
    pub fn verified_at(&self) -> &str {
        &self.response.verified_at
    }

    /// For a key-based agent: SHA-256 of the deliverable message its key signed.
    pub fn signed_deliverable(&self) -> Option<&str> {
        self.verdict.signed_deliverable.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_zero_padded_utc_with_microseconds() {
        let t = time::macros::datetime!(2026-01-02 03:04:05.000_007 +02:00);
        assert_eq!(rfc3339_micros(t), "2026-01-02T01:04:05.000007+00:00");
        let t = time::macros::datetime!(2026-12-31 23:59:59.999_999 UTC);
        assert_eq!(rfc3339_micros(t), "2026-12-31T23:59:59.999999+00:00");
    }
}
