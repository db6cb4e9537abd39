//! Strict JSON parsing: duplicate keys, non-finite numbers and integers outside the
//! IEEE-754 safe range are refused, and nesting depth is bounded by serde_json's limit.
//!
//! The service signs hashes of RFC 8785 canonical forms; a lossy parse (last duplicate key wins,
//! 2^53+1 silently rounded) would sign something the caller did not send, so it is an error.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// Largest integer magnitude an IEEE-754 double holds exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Deepest nesting of arrays and objects accepted in a request body (serde_json's limit).
pub const MAX_DEPTH: usize = 128;
/// Deepest nesting inside one field of the request (the body's own object and the parser's
/// bookkeeping take the rest of [`MAX_DEPTH`]); the same for every field and transport.
pub const MAX_FIELD_DEPTH: usize = 126;

const DUPLICATE_KEY: &str = "strict: duplicate object key";
const UNSAFE_INTEGER: &str = "strict: integer outside the safe range";
const NON_FINITE: &str = "strict: non-finite number";

/// Why a body could not be parsed; never carries any of the caller's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// The bytes are not JSON (or not UTF-8).
    #[error("the body is not valid JSON (line {line}, column {column})")]
    Syntax { line: usize, column: usize },
    /// An object repeats a key.
    #[error("an object repeats a key (line {line}, column {column})")]
    DuplicateKey { line: usize, column: usize },
    /// An integer beyond ±(2^53−1).
    #[error("an integer is beyond ±(2^53−1) (line {line}, column {column})")]
    UnsafeInteger { line: usize, column: usize },
    /// A number that is not finite or out of the double range.
    #[error("a number is out of the IEEE-754 double range (line {line}, column {column})")]
    NonFinite { line: usize, column: usize },
    /// Arrays and objects nested deeper than [`MAX_FIELD_DEPTH`] inside a field.
    #[error("arrays and objects are nested deeper than {MAX_FIELD_DEPTH} levels")]
    TooDeep,
    /// The body ends early.
    #[error("the body ends before the JSON value is complete")]
    Truncated,
}

impl JsonError {
    /// The same error located in an enclosing text, when this one was found parsing a piece
    /// of it that starts at `origin` (1-based line and column).
    pub fn shifted(self, origin: (usize, usize)) -> JsonError {
        let at = |line: usize, column: usize| {
            if line <= 1 {
                (origin.0, origin.1 + column.saturating_sub(1))
            } else {
                (origin.0 + line - 1, column)
            }
        };
        match self {
            JsonError::Syntax { line, column } => {
                let (line, column) = at(line, column);
                JsonError::Syntax { line, column }
            }
            JsonError::DuplicateKey { line, column } => {
                let (line, column) = at(line, column);
                JsonError::DuplicateKey { line, column }
            }
            JsonError::UnsafeInteger { line, column } => {
                let (line, column) = at(line, column);
                JsonError::UnsafeInteger { line, column }
            }
            JsonError::NonFinite { line, column } => {
                let (line, column) = at(line, column);
                JsonError::NonFinite { line, column }
            }
            other => other,
        }
    }
}

/// The 1-based line and column where `piece` (a sub-slice of `text`) starts.
pub fn origin_of(text: &[u8], piece: &[u8]) -> (usize, usize) {
    let offset = (piece.as_ptr() as usize)
        .saturating_sub(text.as_ptr() as usize)
        .min(text.len());
    let before = &text[..offset];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    (line, offset - line_start + 1)
}

/// The top-level field a parse error happened in, when it was one of `known` keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedJsonError {
    /// The problem.
    pub error: JsonError,
    /// The known top-level field being read when the problem was found.
    pub field: Option<&'static str>,
}

/// Parse a JSON document strictly. `known_fields` names the top-level object keys whose
/// names may be reported back when a problem is found inside them.
pub fn parse_strict(
    bytes: &[u8],
    known_fields: &'static [&'static str],
) -> Result<Value, LocatedJsonError> {
    parse_strict_capturing(bytes, known_fields, &[]).map(|(value, _)| value)
}

/// Like [`parse_strict`], but the top-level members named in `capture` (when present) are not
/// parsed: their exact texts are returned instead (in `capture`'s order), for the caller to
/// parse strictly, find in a cache, or only check. The texts are valid JSON syntax; their keys
/// and numbers are not checked yet.
pub fn parse_strict_capturing<'de, const N: usize>(
    bytes: &'de [u8],
    known_fields: &'static [&'static str],
    capture: &'static [&'static str; N],
) -> Result<(Value, [Option<&'de str>; N]), LocatedJsonError> {
    let captured: [Cell<Option<&'de RawValue>>; N] = std::array::from_fn(|_| Cell::new(None));
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let seed = TopSeed {
        known: known_fields,
        capture,
        captured: &captured,
    };
    SUSPECT.with(|f| f.set(None));
    ZERO.with(|f| f.set(None));
    FIELD.with(|f| f.set(None));
    let result = seed.deserialize(&mut de).and_then(|v| de.end().map(|_| v));
    let value = result.map_err(|e| {
        let mut error = classify(&e);
        // An integer literal beyond the double range overflows as "out of range": it is an
        // unsafe integer, to be sent as a string, not a non-finite number.
        if let JsonError::NonFinite { .. } = error
            && let Some((line, column)) = find_unsafe_integer(bytes)
            && (line, column) <= (e.line(), e.column())
        {
            error = JsonError::UnsafeInteger { line, column };
        }
        LocatedJsonError {
            error,
            field: FIELD.with(Cell::get),
        }
    })?;
    // serde_json hands integers too big for i64/u64 to `visit_f64`; only the text tells them
    // from float spellings such as `1e20`, so look at the text when such a value was seen.
    if let Some(field) = SUSPECT.with(Cell::get)
        && let Some((line, column)) = find_unsafe_integer(bytes)
    {
        return Err(LocatedJsonError {
            error: JsonError::UnsafeInteger { line, column },
            field,
        });
    }
    if let Some(field) = ZERO.with(Cell::get)
        && let Some((line, column)) = find_underflow(bytes)
    {
        return Err(LocatedJsonError {
            error: JsonError::NonFinite { line, column },
            field,
        });
    }
    Ok((value, captured.map(|c| c.get().map(RawValue::get))))
}

thread_local! {
    /// Set when the parse met an integral double of magnitude ≥ 2^53, with the known top-level
    /// field being read then (`Some(None)`: outside any known field).
    static SUSPECT: Cell<Option<Option<&'static str>>> = const { Cell::new(None) };
    /// The known top-level field being read now.
    static FIELD: Cell<Option<&'static str>> = const { Cell::new(None) };
    /// Set when the parse met a double equal to zero, with the field being read then: only
    /// the text tells `0.0` from `1e-400`, which underflowed.
    static ZERO: Cell<Option<Option<&'static str>>> = const { Cell::new(None) };
}

/// The line and column of the first number literal, outside strings, that `hit` accepts.
fn find_literal(bytes: &[u8], hit: impl Fn(&str) -> bool) -> Option<(usize, usize)> {
    let (mut line, mut line_start) = (1, 0);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                let mut end = i + 1;
                while end < bytes.len()
                    && matches!(bytes[end], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    end += 1;
                }
                if hit(std::str::from_utf8(&bytes[start..end]).unwrap_or("")) {
                    return Some((line, start - line_start + 1));
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// An integer literal, or one whose fraction is all zeros and has no exponent
/// (`9007199254740993.0`): judged as the integer it denotes, beyond ±(2^53 − 1).
fn is_unsafe_integer(literal: &str) -> bool {
    let unsigned = literal.strip_prefix('-').unwrap_or(literal);
    if unsigned.contains(['e', 'E']) {
        return false;
    }
    let (digits, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    fraction.bytes().all(|b| b == b'0')
        && (digits.len() > 16 || digits.parse::<u64>().is_ok_and(|v| v > MAX_SAFE_INTEGER))
}

/// A nonzero literal too small for a double, which would be read as 0 (`1e-400`).
fn is_underflow(literal: &str) -> bool {
    let mantissa = literal.split(['e', 'E']).next().unwrap_or("");
    mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
        && literal.parse::<f64>().is_ok_and(|v| v == 0.0)
}

/// The first unsafe integer literal of a text (see [`is_unsafe_integer`]).
fn find_unsafe_integer(bytes: &[u8]) -> Option<(usize, usize)> {
    find_literal(bytes, is_unsafe_integer)
}

/// The first literal of a text that underflows to zero (see [`is_underflow`]).
fn find_underflow(bytes: &[u8]) -> Option<(usize, usize)> {
    find_literal(bytes, is_underflow)
}

/// Check a JSON text as strictly as [`parse_strict_value`] would parse it — duplicate keys,
/// unsafe integers, non-finite numbers, nesting deeper than `max_depth` — without building it:
/// memory stays proportional to the keys of the objects open at once.
pub fn check_strict(text: &str, max_depth: usize) -> Result<(), JsonError> {
    let mut de = serde_json::Deserializer::from_str(text);
    SUSPECT.with(|f| f.set(None));
    ZERO.with(|f| f.set(None));
    let result = Check { depth: max_depth }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if let Err(e) = result {
        let mut error = classify(&e);
        if let JsonError::NonFinite { .. } = error
            && let Some((line, column)) = find_unsafe_integer(text.as_bytes())
            && (line, column) <= (e.line(), e.column())
        {
            error = JsonError::UnsafeInteger { line, column };
        }
        return Err(error);
    }
    if SUSPECT.with(Cell::get).is_some()
        && let Some((line, column)) = find_unsafe_integer(text.as_bytes())
    {
        return Err(JsonError::UnsafeInteger { line, column });
    }
    if ZERO.with(Cell::get).is_some()
        && let Some((line, column)) = find_underflow(text.as_bytes())
    {
        return Err(JsonError::NonFinite { line, column });
    }
    Ok(())
}

/// The strict checks without the tree: what [`check_strict`] runs.
struct Check {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Check {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(v))
    }
}

impl<'de> Visitor<'de> for Check {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        safe_integer(v.unsigned_abs())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        safe_integer(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        if v.abs() >= MAX_SAFE_INTEGER as f64 && v.fract() == 0.0 {
            SUSPECT.with(|f| f.set(Some(None)));
        }
        if v == 0.0 {
            ZERO.with(|f| f.set(Some(None)));
        }
        if v.is_finite() {
            Ok(())
        } else {
            Err(E::custom(NON_FINITE))
        }
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let depth = self.deeper()?;
        while seq.next_element_seed(Check { depth })?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let depth = self.deeper()?;
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            if !seen.insert(key) {
                return Err(de::Error::custom(DUPLICATE_KEY));
            }
            map.next_value_seed(Check { depth })?;
        }
        Ok(())
    }
}

impl Check {
    /// The depth left inside a container, or the error serde_json gives past its own limit.
    fn deeper<E: de::Error>(&self) -> Result<usize, E> {
        self.depth
            .checked_sub(1)
            .ok_or_else(|| E::custom("recursion limit exceeded"))
    }
}

/// Parse any JSON document strictly (no field attribution).
pub fn parse_strict_value(bytes: &[u8]) -> Result<Value, JsonError> {
    parse_strict(bytes, &[]).map_err(|e| e.error)
}

fn classify(e: &serde_json::Error) -> JsonError {
    let (line, column) = (e.line(), e.column());
    let text = e.to_string();
    if text.starts_with(DUPLICATE_KEY) {
        JsonError::DuplicateKey { line, column }
    } else if text.starts_with(UNSAFE_INTEGER) {
        JsonError::UnsafeInteger { line, column }
    } else if text.starts_with(NON_FINITE) || text.starts_with("number out of range") {
        JsonError::NonFinite { line, column }
    } else if text.starts_with("recursion limit exceeded") {
        JsonError::TooDeep
    } else if e.is_eof() {
        JsonError::Truncated
    } else {
        JsonError::Syntax { line, column }
    }
}

struct TopSeed<'a, 'de> {
    known: &'static [&'static str],
    capture: &'static [&'static str],
    captured: &'a [Cell<Option<&'de RawValue>>],
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_, 'de> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor { top: Some(self) })
    }
}

struct StrictSeed;

impl<'de> DeserializeSeed<'de> for StrictSeed {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor { top: None })
    }
}

struct StrictVisitor<'a, 'de> {
    top: Option<TopSeed<'a, 'de>>,
}

fn safe_integer<E: de::Error>(magnitude: u64) -> Result<(), E> {
    if magnitude > MAX_SAFE_INTEGER {
        Err(E::custom(UNSAFE_INTEGER))
    } else {
        Ok(())
    }
}

impl<'de> Visitor<'de> for StrictVisitor<'_, 'de> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        safe_integer(v.unsigned_abs())?;
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        safe_integer(v)?;
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if v.abs() >= MAX_SAFE_INTEGER as f64
            && v.fract() == 0.0
            && SUSPECT.with(Cell::get).is_none()
        {
            SUSPECT.with(|f| f.set(Some(FIELD.with(Cell::get))));
        }
        if v == 0.0 && ZERO.with(Cell::get).is_none() {
            ZERO.with(|f| f.set(Some(FIELD.with(Cell::get))));
        }
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(NON_FINITE))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(v) = seq.next_element_seed(StrictSeed)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if let Some(top) = &self.top {
                FIELD.with(|f| f.set(top.known.iter().find(|k| **k == key).copied()));
            }
            if let Some(top) = &self.top
                && let Some(slot) = top
                    .capture
                    .iter()
                    .position(|c| *c == key)
                    .and_then(|i| top.captured.get(i))
            {
                if slot.get().is_some() {
                    return Err(de::Error::custom(DUPLICATE_KEY));
                }
                slot.set(Some(map.next_value::<&'de RawValue>()?));
                FIELD.with(|f| f.set(None));
                continue;
            }
            if out.contains_key(&key) {
                return Err(de::Error::custom(DUPLICATE_KEY));
            }
            let value = map.next_value_seed(StrictSeed)?;
            if self.top.is_some() {
                FIELD.with(|f| f.set(None));
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_anywhere() {
        let e = parse_strict(br#"{"a":{"b":1,"b":2}}"#, &["a"]).unwrap_err();
        assert!(matches!(e.error, JsonError::DuplicateKey { .. }));
        assert_eq!(e.field, Some("a"));
        assert!(parse_strict_value(br#"{"a":1,"a":1}"#).is_err());
    }

    #[test]
    fn integers_beyond_the_safe_range_are_refused() {
        assert!(parse_strict_value(b"9007199254740991").is_ok());
        assert!(parse_strict_value(b"-9007199254740991").is_ok());
        assert_eq!(
            parse_strict_value(b"9007199254740992"),
            Err(JsonError::UnsafeInteger {
                line: 1,
                column: 16
            })
        );
        assert!(matches!(
            parse_strict_value(b"[-9007199254740993]"),
            Err(JsonError::UnsafeInteger { .. })
        ));
        // A fraction of zeros denotes the integer: judged as one (it would be rounded).
        assert!(matches!(
            parse_strict_value(b"9007199254740993.0"),
            Err(JsonError::UnsafeInteger { .. })
        ));
        assert!(parse_strict_value(b"9007199254740991.000").is_ok());
        // An exponent spelling is a double by choice and stays allowed.
        assert!(parse_strict_value(b"9.007199254740993e15").is_ok());
    }

    #[test]
    fn integers_beyond_u64_are_refused_not_rounded() {
        for text in [
            "18446744073709551617",
            "-9223372036854775809",
            "[1, 123456789012345678901234567890]",
        ] {
            assert!(
                matches!(
                    parse_strict_value(text.as_bytes()),
                    Err(JsonError::UnsafeInteger { .. })
                ),
                "{text}"
            );
        }
        for ok in [
            "1e20",
            "1.8446744073709552e19",
            "[\"123456789012345678901\", 2.0e30]",
            "-1E+300",
        ] {
            assert!(parse_strict_value(ok.as_bytes()).is_ok(), "{ok}");
        }
    }

    #[test]
    fn parse_problems_name_the_right_field() {
        let dup = parse_strict(
            br#"{"task_id":"a","agent_id":"b","task_id":"c"}"#,
            &["task_id", "agent_id"],
        )
        .unwrap_err();
        assert_eq!(dup.field, Some("task_id"));
        let eof = parse_strict(
            br#"{"task_id": "abc", "expected_schema": {}"#,
            &["task_id", "expected_schema"],
        )
        .unwrap_err();
        assert_eq!(eof.field, None);
        let comma = parse_strict(br#"{"task_id": "a", }"#, &["task_id"]).unwrap_err();
        assert_eq!(comma.field, None);
    }

    #[test]
    fn out_of_range_numbers_are_refused() {
        assert!(matches!(
            parse_strict_value(b"1e400"),
            Err(JsonError::NonFinite { .. })
        ));
        assert!(matches!(
            parse_strict_value(b"NaN"),
            Err(JsonError::Syntax { .. })
        ));
    }

    #[test]
    fn nonzero_numbers_that_underflow_are_refused_like_overflows() {
        for bad in [
            "1e-400",
            "[0.0, -2.5e-330]",
            r#"{"a": 0.000e0, "b": 1E-999}"#,
        ] {
            assert!(
                matches!(
                    parse_strict_value(bad.as_bytes()),
                    Err(JsonError::NonFinite { .. })
                ),
                "{bad}"
            );
            assert!(
                matches!(check_strict(bad, 126), Err(JsonError::NonFinite { .. })),
                "{bad}"
            );
        }
        for ok in ["0.0", "-0.0", "0e-400", "5e-324", "[0, 0.000, 1e-300]"] {
            assert!(parse_strict_value(ok.as_bytes()).is_ok(), "{ok}");
            assert_eq!(check_strict(ok, 126), Ok(()), "{ok}");
        }
    }

    #[test]
    fn deep_nesting_is_a_clear_error() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(parse_strict_value(deep.as_bytes()), Err(JsonError::TooDeep));
        let ok = "[".repeat(100) + &"]".repeat(100);
        assert!(parse_strict_value(ok.as_bytes()).is_ok());
    }

    #[test]
    fn checking_without_building_refuses_what_parsing_refuses() {
        for bad in [
            r#"{"a": {"b": 1, "b": 2}}"#,
            "[9007199254740993]",
            "[123456789012345678901234567890]",
            "1e400",
            "{",
            "[1,]",
            "\"\\ud800\"",
        ] {
            assert_eq!(
                check_strict(bad, 126),
                parse_strict_value(bad.as_bytes()).map(|_| ()),
                "{bad}"
            );
        }
        for good in [
            r#"{"a": [1, 2.5, "x", null, true, {"b": {}}]}"#,
            r#"{"k\u0041": 1, "kB": 2}"#,
        ] {
            assert_eq!(check_strict(good, 126), Ok(()), "{good}");
        }
        // Escaped and plain spellings of one key are duplicates.
        assert!(matches!(
            check_strict(r#"{"kA": 1, "k\u0041": 2}"#, 126),
            Err(JsonError::DuplicateKey { .. })
        ));
        let deep = "[".repeat(5) + &"]".repeat(5);
        assert_eq!(check_strict(&deep, 5), Ok(()));
        assert_eq!(check_strict(&deep, 4), Err(JsonError::TooDeep));
    }

    #[test]
    fn truncated_and_trailing_input() {
        assert_eq!(parse_strict_value(br#"{"a":"#), Err(JsonError::Truncated));
        assert!(matches!(
            parse_strict_value(b"{} x"),
            Err(JsonError::Syntax { .. })
        ));
        assert!(parse_strict_value("\"\\ud800\"".as_bytes()).is_err());
    }
}
