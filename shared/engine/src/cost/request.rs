//! The parts of a verification's cost besides compiling and applying the schema: reading the
//! request, the rules and bounds, the content checks, and the receipt (hashes, report,
//! signature).

use super::calibration as c;
use super::size::Shape;
use super::{Cost, Meter, OverBudget, Part};
use crate::expression::price;
use crate::request::{Operand, RuleType, VerifyRequest};

/// The sizes an estimate is made from, measured once per request.
#[derive(Debug, Clone, Copy)]
pub struct RequestShape {
    /// `submitted_output`.
    pub output: Shape,
    /// `expected_schema` (its parsed tree).
    pub schema: Shape,
    /// Bytes of the request as received.
    pub body_bytes: u64,
}

impl RequestShape {
    /// Measure a request.
    pub fn of(req: &VerifyRequest, body_bytes: usize) -> Self {
        RequestShape {
            output: Shape::of(&req.submitted_output),
            schema: Shape::of(&req.expected_schema.value),
            body_bytes: body_bytes as u64,
        }
    }
}

/// Charge reading the request: parsing its bytes and the trees it was parsed into.
pub fn charge_parse(meter: &mut Meter, shape: &RequestShape) -> Result<(), OverBudget> {
    meter.charge(
        Part::Parse,
        Cost::new(
            c::PARSE_NS_PER_BYTE.saturating_mul(shape.body_bytes),
            shape
                .output
                .tree_bytes
                .saturating_add(shape.schema.tree_bytes)
                .saturating_add(shape.body_bytes),
        ),
    )
}

/// Charge the receipt: four canonical hashes (output and schema twice: alone and inside the
/// request document), the report with its lists (at most `list_cap` of the `findings` the
/// request can have), the signature.
pub fn charge_receipt(
    meter: &mut Meter,
    req: &VerifyRequest,
    shape: &RequestShape,
    findings: u64,
    list_cap: usize,
) -> Result<(), OverBudget> {
    let canonical = shape
        .output
        .jcs_bound(shape.body_bytes)
        .saturating_add(req.expected_schema.canonical.len() as u64)
        .saturating_add(Shape::of(&req.rules_sent).jcs_bytes)
        .saturating_add(Shape::of(&req.bounds_sent).jcs_bytes);
    // Each reported finding appears in four lists, naming its location about five times.
    let reported = findings.min(list_cap as u64);
    let lists =
        reported.saturating_mul(5 * shape.output.longest_path + c::RESPONSE_BYTES_PER_FINDING);
    meter.charge(
        Part::Receipt,
        Cost::new(
            c::REQUEST_BASE_NS
                .saturating_add(if req.agent_key.is_some() {
                    c::AGENT_SIGNATURE_NS
                } else {
                    0
                })
                .saturating_add(c::JCS_NS_PER_BYTE.saturating_mul(canonical.saturating_mul(2)))
                .saturating_add(c::RESPONSE_NS_PER_BYTE.saturating_mul(lists)),
            c::REQUEST_BASE_BYTES
                .saturating_add(canonical.saturating_mul(2))
                .saturating_add(lists.saturating_mul(2)),
        ),
    )
}

/// Charge the rules and bounds: each resolves its path (and an operand path) over the output;
/// `exists_in` and `unique` also write the canonical bytes of every value they compare. Each
/// rule's memory is freed before the next one runs.
pub fn charge_rules(
    meter: &mut Meter,
    req: &VerifyRequest,
    shape: &RequestShape,
) -> Result<(), OverBudget> {
    let values = shape.output.values;
    let walk_ns = c::RULE_NS_PER_VALUE.saturating_mul(values);
    let walk_bytes = c::RULE_BYTES_PER_VALUE.saturating_mul(values);
    for _ in &req.bounds {
        meter.charge(Part::Rules, Cost::cpu(walk_ns))?;
        meter.charge_transient(Part::Rules, walk_bytes)?;
    }
    for rule in &req.rules {
        let walks = if matches!(rule.operand, Operand::Field(_)) {
            2
        } else {
            1
        };
        let mut cpu = walk_ns.saturating_mul(walks);
        let mut bytes = walk_bytes.saturating_mul(walks);
        if matches!(rule.kind, RuleType::ExistsIn | RuleType::Unique) {
            let mut canonical = shape.output.jcs_bound(shape.body_bytes);
            if let Operand::List(list) = &rule.operand {
                canonical = canonical.saturating_add(
                    list.iter()
                        .map(|v| Shape::of(v).jcs_bytes)
                        .fold(0u64, u64::saturating_add),
                );
            }
            cpu = cpu.saturating_add(c::RULE_NS_PER_BYTE.saturating_mul(canonical));
            bytes = bytes.saturating_add(canonical.saturating_mul(2));
        }
        meter.charge(Part::Rules, Cost::cpu(cpu))?;
        meter.charge_transient(Part::Rules, bytes)?;
    }
    charge_expressions(meter, req, shape)
}

/// Charge the expression rules: the output converted once, then each expression's estimate
/// (its CPU; its memory while it runs, freed before the next).
fn charge_expressions(
    meter: &mut Meter,
    req: &VerifyRequest,
    shape: &RequestShape,
) -> Result<(), OverBudget> {
    if req.expressions.is_empty() {
        return Ok(());
    }
    meter.charge(Part::Rules, price::subject_cost(&shape.output))?;
    for rule in &req.expressions {
        let priced = rule.price(&req.submitted_output, || shape.output);
        meter.charge(Part::Rules, Cost::cpu(priced.cost.cpu_ns))?;
        meter.charge_transient(Part::Rules, priced.cost.mem_bytes)?;
    }
    Ok(())
}

/// Charge the strict content checks (every string lower-cased and compared).
pub fn charge_content(
    meter: &mut Meter,
    req: &VerifyRequest,
    shape: &RequestShape,
) -> Result<(), OverBudget> {
    if !req.strict_content_check {
        return Ok(());
    }
    meter.charge(
        Part::Content,
        Cost::new(
            c::CONTENT_NS_PER_VALUE
                .saturating_mul(shape.output.values)
                .saturating_add(c::CONTENT_NS_PER_BYTE.saturating_mul(shape.output.string_bytes)),
            shape.output.string_bytes.saturating_mul(4),
        ),
    )
}
