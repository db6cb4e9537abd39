//! The verification response of SERVICE.md §4, full and compact, in the contract's key order.

use crate::checks::Finding;
use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

/// The `summary` block.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub result: &'static str,
    pub blocking_checks: Vec<String>,
}

/// One `next_actions` entry.
#[derive(Debug, Serialize)]
pub struct NextAction {
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub using: Option<&'static str>,
    #[serde(rename = "for", skip_serializing_if = "Option::is_none")]
    pub for_: Option<&'static str>,
}

/// The next actions for a result.
pub fn next_actions(passed: bool) -> Vec<NextAction> {
    let act = |action, using, for_| NextAction {
        action,
        using,
        for_,
    };
    if passed {
        vec![
            act("attach_receipt", None, Some("seller")),
            act("proceed_to_payment", None, Some("buyer")),
        ]
    } else {
        vec![
            act("repair_and_reverify", Some("hints"), None),
            act("withhold_payment", None, Some("buyer")),
        ]
    }
}

/// `{ratio, passed, total}`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Ratio {
    pub ratio: f64,
    pub passed: usize,
    pub total: usize,
}

impl Ratio {
    /// `passed/total` rounded to 6 decimals; 1.0 when nothing was checked.
    pub fn new(passed: usize, total: usize) -> Self {
        let ratio = if total == 0 {
            1.0
        } else {
            (passed as f64 / total as f64 * 1e6).round() / 1e6
        };
        Ratio {
            ratio,
            passed,
            total,
        }
    }
}

/// An `errors_detail` entry.
#[derive(Debug, Serialize)]
pub struct ErrorDetail {
    pub check: String,
    pub path: String,
    pub expected: String,
    pub found: String,
    pub message: String,
}

/// A `flags` entry.
#[derive(Debug, Serialize)]
pub struct Flag {
    pub check: String,
    pub field: String,
    pub severity: &'static str,
    pub detail: String,
}

/// A `hints` entry.
#[derive(Debug, Serialize)]
pub struct Hint {
    pub source: &'static str,
    pub check: String,
    pub path: String,
    pub expected: String,
    pub found: String,
}

/// The `verify` block: how to check the receipt.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyBlock {
    pub public_key_url: String,
    pub key_version: String,
    pub canonicalization: &'static str,
    pub hash_algorithm: &'static str,
    pub service: &'static str,
    pub mcp: String,
}

impl VerifyBlock {
    /// The block for a service at `public_url` signing with `key_version`.
    pub fn new(public_url: &str, key_version: &str) -> Self {
        let base = public_url.trim_end_matches('/');
        VerifyBlock {
            public_key_url: format!("{base}/.well-known/agent-card.json"),
            key_version: key_version.to_owned(),
            canonicalization: "RFC 8785 (JCS)",
            hash_algorithm: "SHA-256",
            service: "Agent Output Verifier",
            mcp: format!("{base}/mcp"),
        }
    }
}

/// The lists and ratios only the full response carries.
#[derive(Debug, Serialize)]
pub struct Details {
    pub errors: Vec<String>,
    pub errors_total: usize,
    pub errors_omitted: usize,
    pub errors_detail: Vec<ErrorDetail>,
    pub errors_detail_total: usize,
    pub errors_detail_omitted: usize,
    pub flags: Vec<Flag>,
    pub flags_total: usize,
    pub flags_omitted: usize,
    pub hints: Vec<Hint>,
    pub hints_total: usize,
    pub hints_omitted: usize,
    pub schema_compliance: Ratio,
    pub integrity_checks: Ratio,
    pub overall: Ratio,
}

impl Details {
    /// Build the lists from sorted findings, each capped at `cap` entries.
    pub fn from_findings(
        findings: &[Finding],
        cap: usize,
        schema: Ratio,
        integrity: Ratio,
    ) -> Self {
        let blocking: Vec<&Finding> = findings.iter().filter(|f| f.blocking).collect();
        let errors: Vec<String> = blocking
            .iter()
            .take(cap)
            .map(|f| f.message.clone())
            .collect();
        let errors_detail: Vec<ErrorDetail> = blocking
            .iter()
            .take(cap)
            .map(|f| ErrorDetail {
                check: f.check.clone(),
                path: f.path.clone(),
                expected: f.expected.clone(),
                found: f.found.clone(),
                message: f.message.clone(),
            })
            .collect();
        let flags: Vec<Flag> = findings
            .iter()
            .take(cap)
            .map(|f| Flag {
                check: f.check.clone(),
                field: f.field.clone(),
                severity: f.severity.as_str(),
                detail: f.detail.clone(),
            })
            .collect();
        let hints: Vec<Hint> = findings
            .iter()
            .take(cap)
            .map(|f| Hint {
                source: f.source,
                check: f.check.clone(),
                path: f.path.clone(),
                expected: f.expected.clone(),
                found: f.found.clone(),
            })
            .collect();
        let n = blocking.len();
        let all = findings.len();
        Details {
            errors_total: n,
            errors_omitted: n - errors.len(),
            errors,
            errors_detail_total: n,
            errors_detail_omitted: n - errors_detail.len(),
            errors_detail,
            flags_total: all,
            flags_omitted: all - flags.len(),
            flags,
            hints_total: all,
            hints_omitted: all - hints.len(),
            hints,
            overall: Ratio::new(
                schema.passed + integrity.passed,
                schema.total + integrity.total,
            ),
            schema_compliance: schema,
            integrity_checks: integrity,
        }
    }
}

impl Details {
    /// Write the fields into an enclosing object (they sit inline in the response).
    fn serialize_fields<S: SerializeStruct>(&self, st: &mut S) -> Result<(), S::Error> {
        st.serialize_field("errors", &self.errors)?;
        st.serialize_field("errors_total", &self.errors_total)?;
        st.serialize_field("errors_omitted", &self.errors_omitted)?;
        st.serialize_field("errors_detail", &self.errors_detail)?;
        st.serialize_field("errors_detail_total", &self.errors_detail_total)?;
        st.serialize_field("errors_detail_omitted", &self.errors_detail_omitted)?;
        st.serialize_field("flags", &self.flags)?;
        st.serialize_field("flags_total", &self.flags_total)?;
        st.serialize_field("flags_omitted", &self.flags_omitted)?;
        st.serialize_field("hints", &self.hints)?;
        st.serialize_field("hints_total", &self.hints_total)?;
        st.serialize_field("hints_omitted", &self.hints_omitted)?;
        st.serialize_field("schema_compliance", &self.schema_compliance)?;
        st.serialize_field("integrity_checks", &self.integrity_checks)?;
        st.serialize_field("overall", &self.overall)
    }
}

/// The verification response without its attestation (what the signature covers).
/// Serialized in the contract's key order, with the full-detail fields inline.
#[derive(Debug)]
pub struct VerifyResponse {
    pub summary: Summary,
    pub next_actions: Vec<NextAction>,
    pub result: &'static str,
    pub verification_id: String,
    pub task_id: String,
    pub agent_id: Option<String>,
    pub output_hash: String,
    pub schema_hash: String,
    pub rules_hash: String,
    pub request_hash: Option<String>,
    pub verified_at: String,
    pub verifier_version: &'static str,
    pub enforce_rules: bool,
    pub strict_content_check: bool,
    pub details: Option<Details>,
    pub verify: VerifyBlock,
}

impl Serialize for VerifyResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut st = serializer.serialize_struct("VerifyResponse", 31)?;
        st.serialize_field("summary", &self.summary)?;
        st.serialize_field("next_actions", &self.next_actions)?;
        st.serialize_field("result", self.result)?;
        st.serialize_field("verification_id", &self.verification_id)?;
        st.serialize_field("task_id", &self.task_id)?;
        st.serialize_field("agent_id", &self.agent_id)?;
        st.serialize_field("output_hash", &self.output_hash)?;
        st.serialize_field("schema_hash", &self.schema_hash)?;
        st.serialize_field("rules_hash", &self.rules_hash)?;
        if let Some(hash) = &self.request_hash {
            st.serialize_field("request_hash", hash)?;
        }
        st.serialize_field("verified_at", &self.verified_at)?;
        st.serialize_field("verifier_version", self.verifier_version)?;
        st.serialize_field("enforce_rules", &self.enforce_rules)?;
        st.serialize_field("strict_content_check", &self.strict_content_check)?;
        if let Some(details) = &self.details {
            details.serialize_fields(&mut st)?;
        }
        st.serialize_field("verify", &self.verify)?;
        st.end()
    }
}
