//! The size of a JSON value in the units the cost model prices: values, string bytes, the
//! memory its parsed tree holds, and an upper bound of its RFC 8785 text.

use serde_json::Value;

/// Bytes one `serde_json::Value` takes inline (with `preserve_order`, as the AWS SDK turns on).
const VALUE_BYTES: u64 = std::mem::size_of::<Value>() as u64;
/// Bytes one object member takes besides its value and key text (key `String`, hash, index).
const MEMBER_BYTES: u64 = 48;

/// What a value holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// Values, itself included.
    pub values: u64,
    /// Bytes of string values.
    pub string_bytes: u64,
    /// Bytes of object keys.
    pub key_bytes: u64,
    /// Numbers (their canonical text may be longer than they were written: `1e20`).
    pub numbers: u64,
    /// Memory the parsed tree holds (containers may have up to twice the room they use).
    pub tree_bytes: u64,
    /// An upper bound of its RFC 8785 text (every string byte escaped as `\u00XX`).
    pub jcs_bytes: u64,
    /// The longest location of a value in it, as a report renders it (`$.a[10].b`).
    pub longest_path: u64,
}

impl Shape {
    /// An upper bound of its RFC 8785 text when it was written in `text_bytes` bytes: its
    /// strings and keys are never longer canonicalized than written; only numbers may grow.
    pub fn jcs_bound(&self, text_bytes: u64) -> u64 {
        self.jcs_bytes
            .min(text_bytes.saturating_add(24u64.saturating_mul(self.numbers)))
    }

    /// Measure a value (one walk, no allocation beyond its stack).
    pub fn of(value: &Value) -> Shape {
        let mut shape = Shape {
            tree_bytes: VALUE_BYTES,
            ..Shape::default()
        };
        let mut stack: Vec<(&Value, u64)> = vec![(value, 1)];
        while let Some((v, path)) = stack.pop() {
            shape.values += 1;
            shape.longest_path = shape.longest_path.max(path);
            match v {
                Value::Null | Value::Bool(_) => shape.jcs_bytes += 5,
                Value::Number(_) => {
                    shape.numbers += 1;
                    shape.jcs_bytes += 24;
                }
                Value::String(s) => {
                    let n = s.len() as u64;
                    shape.string_bytes += n;
                    shape.tree_bytes += n;
                    shape.jcs_bytes += 6 * n + 2;
                }
                Value::Array(items) => {
                    shape.tree_bytes += 2 * VALUE_BYTES * items.len() as u64;
                    shape.jcs_bytes += 2 + items.len() as u64;
                    let digits = items.len().max(1).ilog10() as u64 + 3;
                    stack.extend(items.iter().map(|item| (item, path + digits)));
                }
                Value::Object(map) => {
                    for (key, item) in map {
                        let k = key.len() as u64;
                        shape.key_bytes += k;
                        shape.tree_bytes += 2 * (VALUE_BYTES + MEMBER_BYTES) + k;
                        shape.jcs_bytes += 6 * k + 4;
                        stack.push((item, path + k + 1));
                    }
                    shape.jcs_bytes += 2;
                }
            }
        }
        shape
    }
}

/// The tree bytes of every array and object in `root` (as [`Shape::of`] counts them, its own
/// value included), by address, in one pass: what errors about them copy. Returns how many
/// containers it measured.
pub fn container_sizes(root: &Value, into: &mut rustc_hash::FxHashMap<usize, u64>) -> u64 {
    // Post-order: a container is finished when its children are.
    let mut stack: Vec<(&Value, bool)> = vec![(root, false)];
    let mut inner: Vec<u64> = Vec::new();
    let mut containers = 0;
    while let Some((v, done)) = stack.pop() {
        match (v, done) {
            (Value::Array(items), false) => {
                stack.push((v, true));
                stack.extend(items.iter().map(|item| (item, false)));
            }
            (Value::Object(map), false) => {
                stack.push((v, true));
                stack.extend(map.values().map(|item| (item, false)));
            }
            (Value::Array(items), true) => {
                let children: u64 = inner.drain(inner.len() - items.len()..).sum();
                let own = 2 * VALUE_BYTES * items.len() as u64 + children;
                into.insert(v as *const Value as usize, VALUE_BYTES + own);
                inner.push(own);
                containers += 1;
            }
            (Value::Object(map), true) => {
                let children: u64 = inner.drain(inner.len() - map.len()..).sum();
                let keys: u64 = map
                    .keys()
                    .map(|k| 2 * (VALUE_BYTES + MEMBER_BYTES) + k.len() as u64)
                    .sum();
                into.insert(v as *const Value as usize, VALUE_BYTES + keys + children);
                inner.push(keys + children);
                containers += 1;
            }
            (Value::String(s), _) => inner.push(s.len() as u64),
            _ => inner.push(0),
        }
    }
    containers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_count_values_bytes_and_paths() {
        let v = json!({"items": [{"price": 1.5}, {"price": 2}], "name": "abc"});
        let s = Shape::of(&v);
        assert_eq!(s.values, 7);
        assert_eq!(s.string_bytes, 3);
        assert_eq!(
            s.key_bytes,
            "items".len() as u64 + 2 * "price".len() as u64 + 4
        );
        // "$.items[0].price": 1 + 6 + 3 + 6
        assert_eq!(s.longest_path, 16);
        let text = verifier_receipt::canonical::value_to_jcs(&v);
        assert!(s.jcs_bytes >= text.len() as u64);
    }

    #[test]
    fn container_sizes_match_the_shapes() {
        let v = json!({"items": [{"price": 1.5, "n": "abc"}, [1, [2, 3]]], "name": "abc"});
        let mut sizes = rustc_hash::FxHashMap::default();
        assert_eq!(container_sizes(&v, &mut sizes), 5);
        assert_eq!(
            sizes[&(&v as *const Value as usize)],
            Shape::of(&v).tree_bytes
        );
        let items = &v["items"];
        assert_eq!(
            sizes[&(items as *const Value as usize)],
            Shape::of(items).tree_bytes
        );
        let inner = &v["items"][1][1];
        assert_eq!(
            sizes[&(inner as *const Value as usize)],
            Shape::of(inner).tree_bytes
        );
    }

    #[test]
    fn the_tree_estimate_bounds_what_the_parser_allocates() {
        // 30,000 zeros parse into 2.36 MB (measured with a counting allocator): 72-byte values
        // (serde_json with `preserve_order`, as the workspace builds it; 32 bytes without, when
        // this crate is tested alone) in a vector that grew by doubling to 32,768 slots.
        let v: Value = serde_json::from_str(&format!("[{}0]", "0,".repeat(29_999))).expect("json");
        let slots = 32_768 * std::mem::size_of::<Value>() as u64;
        assert!(
            Shape::of(&v).tree_bytes >= slots,
            "{}",
            Shape::of(&v).tree_bytes
        );
    }
}
