//! An agent's recent outcomes, kept inside its counters' item as the list `recent` (oldest
//! first, in commit order): one plain `UpdateItem` counts an outcome and appends it, so no
//! outcome is counted without its entry or twice (the entry is the update's own condition).
//!
//! An entry is 26–35 bytes of binary: the verification time in microseconds since the epoch
//! (8, big-endian), the verification ID's 16 UUID bytes, one flags byte (`pass`, `paid`) and
//! the check count (LEB128). An outcome whose time or ID is not in the form the engine writes
//! (an RFC 3339 UTC time with microseconds, a hyphenated lowercase UUID) is kept as a JSON
//! string instead, so nothing is lost to the compact form. At [`TRIM_AT`] entries the list is
//! trimmed to the newest [`KEEP`], so the item stays under 1 KB (one write unit) for agent IDs
//! of up to about 100 bytes: about 180 bytes of key and counters plus 28 per entry.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use verifier_ports::store::{Outcome, RECENT_OUTCOMES_KEPT};
use verifier_receipt::timestamp::rfc3339_micros;

/// The entries a trim keeps: what `/reputation` lists.
pub const KEEP: usize = RECENT_OUTCOMES_KEPT;
/// An append that leaves this many entries is followed by a trim to [`KEEP`].
pub const TRIM_AT: usize = KEEP + 8;
/// A plain append is refused (its condition) while the list holds this many: a bound that
/// holds when trims lose races with concurrent appends. A transaction's append (a signed
/// deliverable), whose answer cannot say the list's length, is refused at [`TRIM_AT`] and
/// trims then.
pub const CAP: usize = KEEP + 12;

const PASS: u8 = 1;
const PAID: u8 = 2;

/// The entry recording `o`.
pub fn encode(o: &Outcome) -> AttributeValue {
    compact(o).map_or_else(
        || {
            AttributeValue::S(
                serde_json::json!({
                    "verification_id": o.verification_id,
                    "result": o.result,
                    "verified_at": o.verified_at,
                    "paid": o.paid,
                    "checks": o.checks,
                })
                .to_string(),
            )
        },
        |bytes| AttributeValue::B(Blob::new(bytes)),
    )
}

/// The binary form, when `o` round-trips through it exactly.
fn compact(o: &Outcome) -> Option<Vec<u8>> {
    let at = OffsetDateTime::parse(&o.verified_at, &Rfc3339).ok()?;
    if rfc3339_micros(at) != o.verified_at {
        return None;
    }
    let id = uuid::Uuid::try_parse(&o.verification_id).ok()?;
    if id.hyphenated().to_string() != o.verification_id {
        return None;
    }
    let flags = match o.result.as_str() {
        "pass" => PASS,
        "fail" => 0,
        _ => return None,
    } | if o.paid { PAID } else { 0 };
    let micros = i64::try_from(at.unix_timestamp_nanos() / 1_000).ok()?;
    let mut bytes = Vec::with_capacity(35);
    bytes.extend_from_slice(&micros.to_be_bytes());
    bytes.extend_from_slice(id.as_bytes());
    bytes.push(flags);
    let mut checks = o.checks;
    loop {
        let low = (checks & 0x7f) as u8;
        checks >>= 7;
        if checks == 0 {
            bytes.push(low);
            break;
        }
        bytes.push(low | 0x80);
    }
    Some(bytes)
}

/// The outcome an entry records; `None` for an entry this version cannot read.
pub fn decode(agent_id: &str, entry: &AttributeValue) -> Option<Outcome> {
    match entry {
        AttributeValue::B(blob) => expand(agent_id, blob.as_ref()),
        AttributeValue::S(text) => {
            let v: serde_json::Value = serde_json::from_str(text).ok()?;
            Some(Outcome {
                agent_id: agent_id.to_owned(),
                verification_id: v["verification_id"].as_str()?.to_owned(),
                result: v["result"].as_str()?.to_owned(),
                verified_at: v["verified_at"].as_str()?.to_owned(),
                signed_deliverable: None,
                paid: v["paid"].as_bool().unwrap_or(false),
                checks: v["checks"].as_u64().unwrap_or(0),
            })
        }
        _ => None,
    }
}

fn expand(agent_id: &str, bytes: &[u8]) -> Option<Outcome> {
    let micros = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    let id = uuid::Uuid::from_slice(bytes.get(8..24)?).ok()?;
    let flags = *bytes.get(24)?;
    let mut checks = 0u64;
    for (i, b) in bytes.get(25..)?.iter().enumerate().take(10) {
        checks |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            break;
        }
    }
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000).ok()?;
    Some(Outcome {
        agent_id: agent_id.to_owned(),
        verification_id: id.hyphenated().to_string(),
        result: if flags & PASS != 0 { "pass" } else { "fail" }.to_owned(),
        verified_at: rfc3339_micros(at),
        signed_deliverable: None,
        paid: flags & PAID != 0,
        checks,
    })
}

/// The verification time of an entry, unix seconds (for the outcome retention).
pub fn unix_seconds(o: &Outcome) -> Option<i64> {
    OffsetDateTime::parse(&o.verified_at, &Rfc3339)
        .ok()
        .map(OffsetDateTime::unix_timestamp)
}

/// The entries of an item's `recent` list.
pub fn entries(item: &std::collections::HashMap<String, AttributeValue>) -> &[AttributeValue] {
    match item.get("recent") {
        Some(AttributeValue::L(list)) => list,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(id: &str, at: &str, result: &str, paid: bool, checks: u64) -> Outcome {
        Outcome {
            agent_id: "a".into(),
            verification_id: id.into(),
            result: result.into(),
            verified_at: at.into(),
            signed_deliverable: None,
            paid,
            checks,
        }
    }

    #[test]
    fn the_engines_outcomes_take_the_compact_form_and_come_back_whole() {
        for (checks, paid, result) in [
            (1, false, "pass"),
            (300, true, "fail"),
            (u64::MAX, true, "pass"),
        ] {
            let o = outcome(
                "e5d02dbb-e87c-4f49-bd10-c25c12457fef",
                "2026-10-14T19:12:05.645221+00:00",
                result,
                paid,
                checks,
            );
            let entry = encode(&o);
            let AttributeValue::B(bytes) = &entry else {
                panic!("not compact: {entry:?}");
            };
            assert!(bytes.as_ref().len() <= 35);
            assert_eq!(decode("a", &entry), Some(o));
        }
    }

    #[test]
    fn other_forms_are_kept_as_text_and_come_back_whole() {
        for o in [
            outcome(
                "e5d02dbb-e87c-4f49-bd10-c25c12457fef",
                "2026-12-07T10:00:00Z",
                "pass",
                false,
                2,
            ),
            outcome(
                "E5D02DBB-E87C-4F49-BD10-C25C12457FEF",
                "2026-10-14T19:12:05.645221+00:00",
                "pass",
                false,
                2,
            ),
            outcome(
                "not-a-uuid",
                "2026-10-14T19:12:05.645221+00:00",
                "fail",
                true,
                7,
            ),
            outcome(
                "e5d02dbb-e87c-4f49-bd10-c25c12457fef",
                "2026-10-14T19:12:05.645221+00:00",
                "error",
                false,
                1,
            ),
        ] {
            let entry = encode(&o);
            assert!(matches!(entry, AttributeValue::S(_)), "{entry:?}");
            assert_eq!(decode("a", &entry), Some(o));
        }
    }

    #[test]
    fn an_unreadable_entry_is_skipped_not_a_panic() {
        assert_eq!(
            decode("a", &AttributeValue::B(Blob::new(vec![1, 2, 3]))),
            None
        );
        assert_eq!(decode("a", &AttributeValue::S("{".into())), None);
        assert_eq!(decode("a", &AttributeValue::N("1".into())), None);
    }
}
