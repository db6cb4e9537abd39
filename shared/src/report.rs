//! The verification response of SERVICE.md §4, full and compact, in the contract's key order.

use crate::checks::Finding;
use serde::Serialize;

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

/// The verification response without its attestation (what the signature covers).
#[derive(Debug, Serialize)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<String>,
    pub verified_at: String,
    pub verifier_version: &'static str,
    pub enforce_rules: bool,
    pub strict_content_check: bool,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
    pub verify: VerifyBlock,
}
