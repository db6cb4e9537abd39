//! Worked examples for the documents and the bazaar listings, computed by the engine itself
//! (never pasted): the hosted invoice draft (it fails its sum rule), the corrected invoice (it
//! passes), and a signed trust score.

use super::Services;
use serde_json::{Value, json};
use verifier_ports::store::AgentHistory;

/// The invoice draft request: three line items whose totals do not add up to `total`.
pub fn invoice_request(agent_id: &str) -> Value {
    json!({
        "task_id": "invoice-7731-draft",
        "agent_id": agent_id,
        "expected_schema": {
            "type": "object",
            "required": ["invoice_id", "currency", "line_items", "total"],
            "properties": {
                "invoice_id": {"type": "string", "pattern": "^INV-[0-9]{4}$"},
                "currency": {"enum": ["USD", "EUR"]},
                "line_items": {
                    "type": "array", "minItems": 1,
                    "items": {
                        "type": "object", "required": ["sku", "qty", "line_total"],
                        "properties": {
                            "sku": {"type": "string"},
                            "qty": {"type": "integer", "minimum": 1},
                            "line_total": {"type": "number", "minimum": 0}
                        }
                    }
                },
                "total": {"type": "number"}
            }
        },
        "submitted_output": {
            "invoice_id": "INV-7731",
            "currency": "USD",
            "line_items": [
                {"sku": "CRWL-100", "qty": 3, "line_total": 87.0},
                {"sku": "CRWL-200", "qty": 1, "line_total": 42.5}
            ],
            "total": 135.0
        },
        "rules": [{"type": "sum_equals", "field": "line_items[].line_total", "equals_field": "total"}],
        "enforce_rules": true,
        "detail": "full"
    })
}

/// The corrected invoice: the totals add up.
pub fn corrected_request(agent_id: &str) -> Value {
    let mut r = invoice_request(agent_id);
    r["task_id"] = "invoice-7731".into();
    r["submitted_output"]["total"] = 129.5.into();
    r
}

/// An invoice checked with expression rules (CEL): its totals add up, but one line's total is
/// not its quantity times its unit price, and it is due before it was issued.
pub fn expression_request(agent_id: &str) -> Value {
    json!({
        "task_id": "invoice-8120",
        "agent_id": agent_id,
        "expected_schema": {"type": "object", "required": ["lines", "subtotal", "tax", "total"]},
        "submitted_output": {
            "currency": "EUR", "vat_id": "DE811907980",
            "issue_date": "2026-03-01", "due_date": "2026-02-15",
            "lines": [
                {"sku": "A-1", "qty": 3, "unit_price": 0.1, "line_total": 0.3},
                {"sku": "B-2", "qty": 0, "unit_price": 10.0, "line_total": 50.0}
            ],
            "subtotal": 50.3, "tax": 9.56, "total": 59.86
        },
        "rules": [
            {"type": "expression", "rule": "self.total == self.subtotal + self.tax", "tolerance": 0.005},
            {"type": "expression", "rule": "self.lines.all(l, l.line_total == l.qty * l.unit_price)"},
            {"type": "expression", "rule": "date(self.due_date) > date(self.issue_date)"},
            {"type": "expression", "rule": "self.currency != 'EUR' || has(self.vat_id)"}
        ],
        "enforce_rules": true,
        "detail": "full"
    })
}

/// The signed response the engine gives a request (a `test-` agent: nothing is recorded).
pub fn response_to(s: &Services, request: &Value) -> Value {
    let body = serde_json::to_vec(request).unwrap_or_default();
    let signer = s.keys.current();
    s.engine
        .parse(&body)
        .ok()
        .and_then(|req| s.engine.verify(&req, &signer, s.clock.now()).ok())
        .and_then(|v| serde_json::from_slice(&v.body).ok())
        .unwrap_or(Value::Null)
}

/// The agent ID the score examples name.
pub const EXAMPLE_AGENT: &str = "example-invoice-agent";

/// A signed trust score for an agent with 47 passes and 3 fails, 12 of them paid, covering 630
/// checks (nothing is read or recorded).
pub fn score_example(s: &Services) -> Value {
    let history = AgentHistory {
        passes: 47,
        fails: 3,
        paid: 12,
        checks: 630,
        first_seen: Some("2026-11-02T09:14:05.000000+00:00".into()),
        last_seen: Some("2026-12-01T17:40:12.000000+00:00".into()),
        recent: Vec::new(),
    };
    super::score::signed_score(s, EXAMPLE_AGENT, &history)
        .ok()
        .and_then(|body| serde_json::from_slice(&body).ok())
        .unwrap_or(Value::Null)
}
