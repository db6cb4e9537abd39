//! The verification response of SERVICE.md §4, full and compact, in the contract's key order.

use crate::checks::FindingList;
use serde::Serialize;
use utoipa::ToSchema;

/// The `summary` block.
#[derive(Debug, Serialize, ToSchema)]
pub struct Summary {
    pub result: &'static str,
    pub blocking_checks: Vec<String>,
}

/// One `next_actions` entry.
#[derive(Debug, Serialize, ToSchema)]
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
#[derive(Debug, Clone, Copy, Serialize, PartialEq, ToSchema)]
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
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    pub check: String,
    pub path: String,
    pub expected: String,
    pub found: String,
    pub message: String,
}

/// A `flags` entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct Flag {
    pub check: String,
    pub field: String,
    pub severity: &'static str,
    pub detail: String,
}

/// A `hints` entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct Hint {
    pub source: &'static str,
    pub check: String,
    pub path: String,
    pub expected: String,
    pub found: String,
}

/// The `verify` block: how to check the receipt.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VerifyBlock {
    /// Where the signing key is published (null when the signer publishes it nowhere, e.g. an
    /// offline `verifier verify`).
    pub public_key_url: Option<String>,
    pub key_version: String,
    pub canonicalization: &'static str,
    pub hash_algorithm: &'static str,
    pub service: &'static str,
    pub mcp: Option<String>,
}

impl VerifyBlock {
    /// The block for a service at `public_url` (none: not published) signing with
    /// `key_version`.
    pub fn new(public_url: Option<&str>, key_version: &str) -> Self {
        let base = public_url.map(|url| url.trim_end_matches('/'));
        VerifyBlock {
            public_key_url: base.map(|base| format!("{base}/.well-known/agent-card.json")),
            key_version: key_version.to_owned(),
            canonicalization: "RFC 8785 (JCS)",
            hash_algorithm: "SHA-256",
            service: "Agent Output Verifier",
            mcp: base.map(|base| format!("{base}/mcp")),
        }
    }
}

/// The lists and ratios only the full response carries.
#[derive(Debug)]
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
    /// Build the lists from the collected findings (already capped and sorted).
    pub fn from_findings(list: &FindingList, schema: Ratio, integrity: Ratio) -> Self {
        let errors: Vec<String> = list.blocking.iter().map(|f| f.message.clone()).collect();
        let errors_detail: Vec<ErrorDetail> = list
            .blocking
            .iter()
            .map(|f| ErrorDetail {
                check: f.check.clone(),
                path: f.path.clone(),
                expected: f.expected.clone(),
                found: f.found.clone(),
                message: f.message.clone(),
            })
            .collect();
        let flags: Vec<Flag> = list
            .all
            .iter()
            .map(|f| Flag {
                check: f.check.clone(),
                field: f.field.clone(),
                severity: f.severity.as_str(),
                detail: f.detail.clone(),
            })
            .collect();
        let hints: Vec<Hint> = list
            .all
            .iter()
            .map(|f| Hint {
                source: f.source,
                check: f.check.clone(),
                path: f.path.clone(),
                expected: f.expected.clone(),
                found: f.found.clone(),
            })
            .collect();
        let n = list.blocking_total;
        let all = list.total;
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

/// The verification response without its attestation (what the signature covers), in the
/// contract's key order. The lists and ratios are only in the full response.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerifyResponse {
    pub summary: Summary,
    pub next_actions: Vec<NextAction>,
    /// `pass` or `fail`.
    pub result: &'static str,
    /// UUID v4.
    pub verification_id: String,
    pub task_id: String,
    pub agent_id: Option<String>,
    /// SHA-256 of the RFC 8785 form of `submitted_output`.
    pub output_hash: String,
    /// SHA-256 of the RFC 8785 form of `expected_schema`.
    pub schema_hash: String,
    /// SHA-256 of the RFC 8785 form of `{"bounds": …, "rules": …}` as sent.
    pub rules_hash: String,
    /// SHA-256 of the RFC 8785 form of the request with every default filled (full only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<String>,
    /// RFC 3339 with microseconds; equals `attestation.timestamp`.
    pub verified_at: String,
    pub verifier_version: &'static str,
    pub enforce_rules: bool,
    pub strict_content_check: bool,
    /// Whether `format` was asserted (the default) or only an annotation (the caller's
    /// `format_assertion: false`).
    pub format_assertion: bool,
    /// `verified` when `agent_id` names a key whose holder signed this deliverable (checked),
    /// `unverified` for a plain label anyone may use; null without an agent.
    pub identity: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_total: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_omitted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_detail: Option<Vec<ErrorDetail>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_detail_total: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_detail_omitted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flags: Option<Vec<Flag>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flags_total: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flags_omitted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<Hint>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints_total: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hints_omitted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_compliance: Option<Ratio>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrity_checks: Option<Ratio>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overall: Option<Ratio>,
    pub verify: VerifyBlock,
}

impl VerifyResponse {
    /// Room for a typical full response and its attestation, so the body is written without
    /// growing its buffer.
    const BODY_CAPACITY: usize = 4096;

    /// The response as JSON in the contract's key order (the body, before its attestation).
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        let mut body = Vec::with_capacity(Self::BODY_CAPACITY);
        serde_json::to_writer(&mut body, self)?;
        Ok(body)
    }

    /// Put the full-detail lists and ratios in place.
    pub fn set_details(&mut self, d: Details) {
        self.errors = Some(d.errors);
        self.errors_total = Some(d.errors_total);
        self.errors_omitted = Some(d.errors_omitted);
        self.errors_detail = Some(d.errors_detail);
        self.errors_detail_total = Some(d.errors_detail_total);
        self.errors_detail_omitted = Some(d.errors_detail_omitted);
        self.flags = Some(d.flags);
        self.flags_total = Some(d.flags_total);
        self.flags_omitted = Some(d.flags_omitted);
        self.hints = Some(d.hints);
        self.hints_total = Some(d.hints_total);
        self.hints_omitted = Some(d.hints_omitted);
        self.schema_compliance = Some(d.schema_compliance);
        self.integrity_checks = Some(d.integrity_checks);
        self.overall = Some(d.overall);
    }
}
