//! The verification pipeline: hashes, schema (through the compiled-schema cache), bounds,
//! rules, content checks, report, signature, serialization.

use crate::attest::{VERIFY_CONTEXT, attest, with_attestation};
use crate::checks::schema::SchemaError;
use crate::checks::schema::{CompiledSchema, SchemaOptions};
use crate::checks::{Findings, bounds, content, rules};
use crate::hashes::receipt_hashes;
use crate::keys::SigningIdentity;
use crate::report::{Details, Ratio, Summary, VerifyBlock, VerifyResponse, next_actions};
use crate::request::{Detail, FieldProblem, InvalidRequest, VerifyRequest};
use crate::schema_doc::{SchemaDoc, SchemaDocs};
use quick_cache::sync::Cache;
use serde_json::Value;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

/// The service's version, as receipts state it.
pub const VERIFIER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Base URL of the service, used in the receipt's `verify` block.
    pub public_url: String,
    /// Longest list in a response (`errors`, `flags`, …); the rest is counted as omitted.
    pub list_cap: usize,
    /// Compiled schemas kept in memory.
    pub cache_capacity: usize,
    /// Bytes of schema text remembered to skip parsing repeated schemas.
    pub schema_text_cache_bytes: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            public_url: "http://127.0.0.1:8080".into(),
            list_cap: 50,
            cache_capacity: 1024,
            schema_text_cache_bytes: 16 << 20,
        }
    }
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
}

/// An internal failure that is not the caller's fault.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the request is invalid")]
    Invalid(#[from] InvalidRequest),
    #[error("a value could not be canonicalized")]
    Canonical(#[from] crate::canonical::CanonicalError),
    #[error("the response could not be serialized")]
    Serialize(#[from] serde_json::Error),
}

/// The verifier: configuration plus the compiled-schema cache.
pub struct Engine {
    config: EngineConfig,
    cache: Cache<[u8; 32], Arc<CompiledSchema>>,
    schema_docs: SchemaDocs,
    schema_options: SchemaOptions,
}

/// Most (rule or bound) × output-value pairs one verification may evaluate: each rule and
/// bound walks the output, so their product bounds the work.
pub const MAX_RULE_WORK: usize = 5_000_000;

/// The number of JSON values in `v`, counting stops past `limit`.
fn value_count(v: &Value, limit: usize) -> usize {
    let mut stack = vec![v];
    let mut n = 0;
    while let Some(v) = stack.pop() {
        n += 1;
        if n > limit {
            break;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    n
}

/// A schema that cannot be used, as the caller's problem with `expected_schema`.
fn schema_problem(e: &SchemaError) -> InvalidRequest {
    InvalidRequest::one(FieldProblem::new("expected_schema", e.to_string(), e.fix()))
}

/// Format a time as RFC 3339 with microseconds and `+00:00`.
pub fn rfc3339_micros(t: OffsetDateTime) -> String {
    const MICROS_UTC: &[time::format_description::BorrowedFormatItem<'_>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]+00:00"
    );
    // Formatting a UTC time with this description cannot fail (years stay within 0..=9999).
    t.to_offset(time::UtcOffset::UTC)
        .format(MICROS_UTC)
        .unwrap_or_default()
}

impl Engine {
    /// A new engine.
    pub fn new(config: EngineConfig) -> Self {
        Self::with_schema_options(config, SchemaOptions::default())
    }

    /// A new engine with non-default schema options (tests serve remote schemas from memory).
    pub fn with_schema_options(config: EngineConfig, schema_options: SchemaOptions) -> Self {
        Engine {
            cache: Cache::new(config.cache_capacity.max(1)),
            schema_docs: SchemaDocs::new(config.schema_text_cache_bytes),
            config,
            schema_options,
        }
    }

    /// Parse and validate a request body, reusing schemas seen before.
    pub fn parse(&self, body: &[u8]) -> Result<VerifyRequest, InvalidRequest> {
        VerifyRequest::from_body_with(body, Some(&self.schema_docs))
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The compiled schema, by its canonical digest; compiled on a miss.
    pub fn compiled(&self, schema: &SchemaDoc) -> Result<Arc<CompiledSchema>, InvalidRequest> {
        if let Some(hit) = self.cache.get(&schema.digest) {
            return Ok(hit);
        }
        let compiled = CompiledSchema::compile(&schema.value, &self.schema_options)
            .map_err(|e| schema_problem(&e))?;
        let compiled = Arc::new(compiled);
        self.cache.insert(schema.digest, compiled.clone());
        Ok(compiled)
    }

    /// Run every check and build the unsigned response; `key_version` names the key that
    /// will sign it. Returns the response and whether it passed.
    pub fn report(
        &self,
        req: &VerifyRequest,
        key_version: &str,
        now: OffsetDateTime,
    ) -> Result<(VerifyResponse, bool), EngineError> {
        let hashes = receipt_hashes(req)?;
        let schema = self.compiled(&req.expected_schema)?;
        let output = &req.submitted_output;

        let mut findings = Findings::new(self.config.list_cap);
        let outcome = schema
            .check(output, req.strict_content_check, &mut findings)
            .map_err(|e| schema_problem(&e))?;
        let checks = req.rules.len() + req.bounds.len();
        if checks > 0 && checks.saturating_mul(value_count(output, MAX_RULE_WORK)) > MAX_RULE_WORK {
            return Err(EngineError::Invalid(InvalidRequest::one(
                FieldProblem::new(
                    "rules",
                    format!(
                        "with the bounds, would evaluate more than {MAX_RULE_WORK} (rule, value) pairs over this output"
                    ),
                    "Send fewer rules or bounds, or split the output across several requests.",
                ),
            )));
        }
        let mut integrity_failed = 0;
        for bound in &req.bounds {
            if let Some(f) = bounds::check_bound(bound, output) {
                integrity_failed += 1;
                findings.push(f);
            }
        }
        for rule in &req.rules {
            if let Some(f) = rules::check_rule(rule, output, req.enforce_rules) {
                integrity_failed += 1;
                findings.push(f);
            }
        }
        let mut integrity_total = req.bounds.len() + req.rules.len();
        if req.strict_content_check {
            let found = content::check_content(output, &outcome.blank_required);
            integrity_total += content::CHECK_COUNT;
            integrity_failed += found.len();
            for f in found {
                findings.push(f);
            }
        }
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
            verify: VerifyBlock::new(&self.config.public_url, key_version),
        };
        if req.detail == Detail::Full {
            response.set_details(Details::from_findings(
                &findings,
                Ratio::new(outcome.total - outcome.failed, outcome.total),
                Ratio::new(integrity_total - integrity_failed, integrity_total),
            ));
        }
        Ok((response, passed))
    }

    /// Run every check, build the report and sign it.
    pub fn verify(
        &self,
        req: &VerifyRequest,
        signer: &SigningIdentity,
        now: OffsetDateTime,
    ) -> Result<Verification, EngineError> {
        let (response, passed) = self.report(req, signer.key_version(), now)?;
        let verified_at = response.verified_at.clone();
        let verification_id = response.verification_id.clone();
        let attestation = attest(VERIFY_CONTEXT, &response, signer, &verified_at)?;
        let body = with_attestation(response.to_json()?, &attestation)?;
        Ok(Verification {
            body,
            passed,
            verification_id,
            verified_at,
        })
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
