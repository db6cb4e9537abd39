//! The price of `contentEncoding` and `contentMediaType`, which drafts 6 and 7 assert: at every
//! application the validator decodes the string (base64, base32, base16) and parses the
//! decoded text as JSON (`application/json`, the one media type it knows), building a whole
//! JSON tree and dropping it again.
//!
//! A parse costs per byte, per value and, most, per container (each array or object is a
//! vector or map allocated and grown), so the string is scanned once (memoized by the walk)
//! for an upper bound of its values and containers: every `[`/`{` byte may open a container
//! and every `[`, `,` or `:` byte may precede a value, every `:` ends a member's key, inside
//! JSON strings too (which only over-counts). Encoded text cannot be scanned before it is decoded, so its decoded form is
//! priced as the dearest text of its length (every byte a container).

use super::calibration as c;

/// An upper bound of the JSON a string may parse into.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextShape {
    pub bytes: u64,
    pub values: u64,
    pub containers: u64,
    /// Object members (`:` bytes): each a key string and a map insert.
    pub members: u64,
}

impl TextShape {
    /// Scan `text` (one pass over its bytes).
    pub fn of(text: &str) -> Self {
        let mut values = 1u64;
        let mut containers = 0u64;
        let mut members = 0u64;
        for b in text.bytes() {
            match b {
                b'[' | b'{' => {
                    containers += 1;
                    values += 1;
                }
                b',' => values += 1,
                b':' => {
                    values += 1;
                    members += 1;
                }
                _ => {}
            }
        }
        TextShape {
            bytes: text.len() as u64,
            values,
            containers,
            members,
        }
    }

    /// The dearest JSON text of `bytes` bytes (what encoded text may decode into).
    pub fn worst(bytes: u64) -> Self {
        TextShape {
            bytes,
            values: bytes,
            containers: bytes,
            members: bytes,
        }
    }
}

/// What one content check of a string costs: CPU, and the memory it holds for the moment
/// the check runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContentCost {
    pub cpu_ns: u64,
    pub peak_bytes: u64,
}

/// Parsing `shape` into a JSON tree.
pub fn parse_cost(shape: &TextShape) -> ContentCost {
    let cpu = c::CONTENT_JSON_NS_PER_BYTE
        .saturating_mul(shape.bytes)
        .saturating_add(c::CONTENT_JSON_NS_PER_VALUE.saturating_mul(shape.values))
        .saturating_add(c::CONTENT_JSON_NS_PER_CONTAINER.saturating_mul(shape.containers))
        .saturating_add(c::CONTENT_JSON_NS_PER_MEMBER.saturating_mul(shape.members));
    let peak = c::CONTENT_JSON_BYTES_PER_BYTE
        .saturating_mul(shape.bytes)
        .saturating_add(c::CONTENT_JSON_BYTES_PER_VALUE.saturating_mul(shape.values))
        .saturating_add(c::CONTENT_JSON_BYTES_PER_CONTAINER.saturating_mul(shape.containers));
    ContentCost {
        cpu_ns: cpu,
        peak_bytes: peak,
    }
}

/// One check of a string of `shape` with `contentEncoding` (`decode`) and/or
/// `contentMediaType` (`parse`). Any encoding or media type is priced as the dearest the
/// validator knows (an unknown one compiles to no check, and costs less).
pub fn check_cost(shape: &TextShape, decode: bool, parse: bool) -> ContentCost {
    let mut cost = ContentCost {
        cpu_ns: c::CONTENT_KEYWORD_BASE_NS,
        peak_bytes: 0,
    };
    if decode {
        cost.cpu_ns = cost
            .cpu_ns
            .saturating_add(c::CONTENT_DECODE_NS_PER_BYTE.saturating_mul(shape.bytes));
        cost.peak_bytes = c::CONTENT_DECODE_BYTES_PER_BYTE.saturating_mul(shape.bytes);
    }
    if parse {
        // Decoding never makes the text longer than the string.
        let parsed = if decode {
            parse_cost(&TextShape::worst(shape.bytes))
        } else {
            parse_cost(shape)
        };
        cost.cpu_ns = cost.cpu_ns.saturating_add(parsed.cpu_ns);
        cost.peak_bytes = cost.peak_bytes.saturating_add(parsed.peak_bytes);
    }
    cost
}

/// Scanning a string for its [`TextShape`] (once per distinct string).
pub fn scan_ns(bytes: u64) -> u64 {
    c::CONTENT_SCAN_NS_PER_BYTE.saturating_mul(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_bounds_values_and_containers() {
        let s = TextShape::of(r#"{"a":[1,2,{"b":"x,y"}]}"#);
        assert_eq!(s.containers, 3);
        // 1 + 3 openers + 2 colons + 3 commas (one inside a string: over-counted).
        assert_eq!(s.values, 9);
        let flat = check_cost(&TextShape::of(&"0,".repeat(1000)), false, true);
        let deep = check_cost(&TextShape::of(&"[]".repeat(1000)), false, true);
        assert!(deep.cpu_ns > flat.cpu_ns && deep.peak_bytes > flat.peak_bytes);
        let encoded = check_cost(&TextShape::of(&"A".repeat(2000)), true, true);
        assert!(
            encoded.cpu_ns >= deep.cpu_ns,
            "encoded text is priced as the worst"
        );
    }
}
