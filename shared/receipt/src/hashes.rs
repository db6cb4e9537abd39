//! The four receipt hashes of SERVICE.md §5. The request document's canonical bytes are
//! spliced from the canonical bytes of its parts (JCS of an object with fixed keys is the
//! concatenation of its sorted members) and streamed into the hash, so the output is
//! canonicalized once and the schema's canonical bytes come with the parsed schema.

use crate::canonical::{CanonicalError, sha256_hex, value_to_jcs, write_string, write_value};
use serde_json::{Map, Value};

/// A rule's `tolerance` when it sends none.
pub const DEFAULT_TOLERANCE: f64 = 1e-9;

/// What the four hashes are computed from: a verification request's fields as the service
/// read them (the engine's `VerifyRequest::hash_input` gives them for a parsed request).
#[derive(Debug, Clone, Copy)]
pub struct HashInput<'a> {
    pub task_id: &'a str,
    pub agent_id: Option<&'a str>,
    pub agent_signature: Option<&'a str>,
    pub submitted_output: &'a Value,
    /// The RFC 8785 bytes of `expected_schema`.
    pub schema_canonical: &'a [u8],
    /// Their SHA-256 when known already (computed from them otherwise).
    pub schema_digest: Option<[u8; 32]>,
    /// `rules` and `bounds` as sent (`Value::Null` when absent).
    pub rules_sent: &'a Value,
    pub bounds_sent: &'a Value,
    pub enforce_rules: bool,
    pub strict_content_check: bool,
    pub format_assertion: bool,
}

/// The four hashes of a request, lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptHashes {
    pub output_hash: String,
    pub schema_hash: String,
    pub rules_hash: String,
    pub request_hash: String,
    /// Raw SHA-256 of the schema's canonical form (the compiled-schema cache key).
    pub schema_digest: [u8; 32],
}

/// The value of a member a rule or bound omitted.
#[derive(Clone, Copy)]
enum Filler {
    Null,
    False,
    Tolerance,
}

/// The members a rule gets when omitted, in canonical (sorted) key order.
const RULE_DEFAULTS: &[(&str, Filler)] = &[
    ("equals", Filler::Null),
    ("equals_field", Filler::Null),
    ("if_present", Filler::False),
    ("in_field", Filler::Null),
    ("other_field", Filler::Null),
    ("tolerance", Filler::Tolerance),
    ("value", Filler::Null),
    ("values", Filler::Null),
];

/// The members a bound gets when omitted, in canonical key order.
const BOUND_DEFAULTS: &[(&str, Filler)] = &[
    ("if_present", Filler::False),
    ("max", Filler::Null),
    ("min", Filler::Null),
];

fn write_default(out: &mut Vec<u8>, d: Filler) {
    match d {
        Filler::Null => out.extend_from_slice(b"null"),
        Filler::False => out.extend_from_slice(b"false"),
        Filler::Tolerance => write_value(out, &Value::from(DEFAULT_TOLERANCE)),
    }
}

/// Write `given` with every default it omits filled in, canonically. Given members win.
/// Keys of a valid rule or bound are ASCII, so byte order is the canonical order.
fn write_filled(
    out: &mut Vec<u8>,
    given: Option<&Map<String, Value>>,
    defaults: &[(&str, Filler)],
) {
    let mut sent: Vec<(&str, &Value)> = given
        .into_iter()
        .flat_map(|g| g.iter().map(|(k, v)| (k.as_str(), v)))
        .collect();
    sent.sort_unstable_by(|a, b| crate::canonical::utf16_cmp(a.0, b.0));
    // Merge two sorted lists; a member sent wins over the default of the same key.
    let (mut sent, mut defaults) = (sent.into_iter().peekable(), defaults.iter().peekable());
    out.push(b'{');
    let mut first = true;
    loop {
        let take_sent = match (sent.peek(), defaults.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((key, _)), Some((default, _))) => {
                let order = crate::canonical::utf16_cmp(key, default);
                if order == std::cmp::Ordering::Equal {
                    defaults.next();
                }
                order != std::cmp::Ordering::Greater
            }
        };
        if !first {
            out.push(b',');
        }
        first = false;
        if take_sent {
            if let Some((key, value)) = sent.next() {
                write_string(out, key);
                out.push(b':');
                write_value(out, value);
            }
        } else if let Some((key, filler)) = defaults.next() {
            write_string(out, key);
            out.push(b':');
            write_default(out, *filler);
        }
    }
    out.push(b'}');
}

/// `rules` with every default filled (null when absent or empty).
fn write_filled_rules(out: &mut Vec<u8>, sent: &Value) {
    match sent {
        Value::Array(rules) if !rules.is_empty() => {
            out.push(b'[');
            for (i, rule) in rules.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_filled(out, rule.as_object(), RULE_DEFAULTS);
            }
            out.push(b']');
        }
        _ => out.extend_from_slice(b"null"),
    }
}

/// `bounds` with every default filled (null when absent or empty).
fn write_filled_bounds(out: &mut Vec<u8>, sent: &Value) {
    match sent {
        Value::Object(map) if !map.is_empty() => {
            let mut paths: Vec<(&String, &Value)> = map.iter().collect();
            paths.sort_unstable_by(|a, b| crate::canonical::utf16_cmp(a.0, b.0));
            out.push(b'{');
            for (i, (path, bound)) in paths.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(out, path);
                out.push(b':');
                write_filled(out, bound.as_object(), BOUND_DEFAULTS);
            }
            out.push(b'}');
        }
        _ => out.extend_from_slice(b"null"),
    }
}

/// The canonical bytes of the request document (the eight fields, every default filled, and
/// `format_assertion: false` when the caller turned format assertion off, `agent_signature`
/// when sent),
/// written from its parts: `request_hash` covers exactly these bytes.
pub fn write_request_document(out: &mut Vec<u8>, req: &HashInput<'_>, output_jcs: &[u8]) {
    let bool_text = |b: bool| if b { &b"true"[..] } else { &b"false"[..] };
    out.extend_from_slice(b"{\"agent_id\":");
    match req.agent_id {
        Some(id) => write_string(out, id),
        None => out.extend_from_slice(b"null"),
    }
    if let Some(signature) = req.agent_signature {
        out.extend_from_slice(b",\"agent_signature\":");
        write_string(out, signature);
    }
    out.extend_from_slice(b",\"bounds\":");
    write_filled_bounds(out, req.bounds_sent);
    out.extend_from_slice(b",\"enforce_rules\":");
    out.extend_from_slice(bool_text(req.enforce_rules));
    out.extend_from_slice(b",\"expected_schema\":");
    out.extend_from_slice(req.schema_canonical);
    if !req.format_assertion {
        out.extend_from_slice(b",\"format_assertion\":false");
    }
    out.extend_from_slice(b",\"rules\":");
    write_filled_rules(out, req.rules_sent);
    out.extend_from_slice(b",\"strict_content_check\":");
    out.extend_from_slice(bool_text(req.strict_content_check));
    out.extend_from_slice(b",\"submitted_output\":");
    out.extend_from_slice(output_jcs);
    out.extend_from_slice(b",\"task_id\":");
    write_string(out, req.task_id);
    out.push(b'}');
}

/// Compute all four hashes.
pub fn receipt_hashes(req: &HashInput<'_>) -> Result<ReceiptHashes, CanonicalError> {
    let output = value_to_jcs(req.submitted_output);

    let mut rules_doc = Vec::with_capacity(256);
    rules_doc.extend_from_slice(b"{\"bounds\":");
    write_value(&mut rules_doc, req.bounds_sent);
    rules_doc.extend_from_slice(b",\"rules\":");
    write_value(&mut rules_doc, req.rules_sent);
    rules_doc.push(b'}');

    let mut doc = Vec::with_capacity(output.len() + req.schema_canonical.len() + 512);
    write_request_document(&mut doc, req, &output);

    let schema_digest = req
        .schema_digest
        .unwrap_or_else(|| crate::canonical::sha256(req.schema_canonical));
    Ok(ReceiptHashes {
        output_hash: sha256_hex(&output),
        schema_hash: crate::canonical::digest_hex(&schema_digest),
        rules_hash: sha256_hex(&rules_doc),
        request_hash: sha256_hex(&doc),
        schema_digest,
    })
}
