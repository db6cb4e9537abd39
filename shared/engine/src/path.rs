//! The field-path language of rules and bounds: dotted names with `[]` meaning "every element
//! of this array" (`total`, `items[].price`, `a.b[].c[].d`).

use serde_json::Value;
use std::fmt::Write as _;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Each,
}

/// A parsed field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    steps: Vec<Step>,
}

/// Why a path text is not a valid path (never carries the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("is empty")]
    Empty,
    #[error("has an empty name between dots")]
    EmptySegment,
    #[error("has a bracket that is not `[]`")]
    BadBracket,
}

/// A concrete location in a document, as element indexes and keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location(Vec<LocStep>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum LocStep {
    Key(String),
    Index(usize),
}

impl Location {
    /// Render from the root: `$`, `$.items[1].qty`.
    pub fn render(&self) -> String {
        let mut out = String::from("$");
        for step in &self.0 {
            match step {
                LocStep::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
                LocStep::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
            }
        }
        out
    }

    /// Build a location from a JSON Pointer (as the schema validator reports it).
    pub fn from_pointer_segments<'a>(segments: impl Iterator<Item = PointerSeg<'a>>) -> Self {
        Location(
            segments
                .map(|s| match s {
                    PointerSeg::Key(k) => LocStep::Key(k.to_owned()),
                    PointerSeg::Index(i) => LocStep::Index(i),
                })
                .collect(),
        )
    }

    /// A child location.
    pub fn key(&self, key: &str) -> Self {
        let mut next = self.clone();
        next.0.push(LocStep::Key(key.to_owned()));
        next
    }

    /// An element location.
    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(LocStep::Index(index));
        next
    }
}

/// A segment of a JSON Pointer.
pub enum PointerSeg<'a> {
    Key(&'a str),
    Index(usize),
}

/// What a path found in a document.
#[derive(Debug, Default)]
pub struct Resolved<'v> {
    /// Every value the path reached, with its concrete location.
    pub found: Vec<(Location, &'v Value)>,
    /// Locations where a named field was absent (or the value was not an object/array as the
    /// path needs).
    pub missing: Vec<Location>,
    /// Arrays the path fanned out over at its `[]` steps.
    pub arrays: usize,
}

impl FieldPath {
    /// Parse a path.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        if text.is_empty() {
            return Err(PathError::Empty);
        }
        let mut steps = Vec::new();
        for (n, segment) in text.split('.').enumerate() {
            let name_end = segment.find('[').unwrap_or(segment.len());
            let (name, mut brackets) = segment.split_at(name_end);
            if name.contains(']') {
                return Err(PathError::BadBracket);
            }
            if name.is_empty() && (n > 0 || brackets.is_empty()) {
                return Err(PathError::EmptySegment);
            }
            if !name.is_empty() {
                steps.push(Step::Key(name.to_owned()));
            }
            while !brackets.is_empty() {
                match brackets.strip_prefix("[]") {
                    Some(rest) => {
                        steps.push(Step::Each);
                        brackets = rest;
                    }
                    None => return Err(PathError::BadBracket),
                }
            }
        }
        Ok(FieldPath {
            text: text.to_owned(),
            steps,
        })
    }

    /// The path as the caller wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The path from the root, as reports write it: `$.line_items[].line_total`.
    pub fn rooted(&self) -> String {
        if self.text.starts_with('[') {
            format!("${}", self.text)
        } else {
            format!("$.{}", self.text)
        }
    }

    /// Whether the path fans out over arrays.
    pub fn is_multi(&self) -> bool {
        self.steps.contains(&Step::Each)
    }

    /// Every value the path reaches in `doc`.
    pub fn resolve<'v>(&self, doc: &'v Value) -> Resolved<'v> {
        let mut out = Resolved::default();
        walk(&self.steps, doc, Location::default(), &mut out);
        out
    }
}

fn walk<'v>(steps: &[Step], value: &'v Value, at: Location, out: &mut Resolved<'v>) {
    let Some((first, rest)) = steps.split_first() else {
        out.found.push((at, value));
        return;
    };
    match (first, value) {
        (Step::Key(k), Value::Object(map)) => match map.get(k) {
            Some(child) => walk(rest, child, at.key(k), out),
            None => out.missing.push(at.key(k)),
        },
        (Step::Key(k), _) => out.missing.push(at.key(k)),
        (Step::Each, Value::Array(items)) => {
            out.arrays += 1;
            for (i, item) in items.iter().enumerate() {
                walk(rest, item, at.index(i), out);
            }
        }
        (Step::Each, _) => out.missing.push(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_the_documented_shapes() {
        for ok in ["total", "items[].price", "a.b[].c[].d", "[].x", "m[][]"] {
            assert!(FieldPath::parse(ok).is_ok(), "{ok}");
        }
        assert_eq!(FieldPath::parse(""), Err(PathError::Empty));
        assert_eq!(FieldPath::parse("a..b"), Err(PathError::EmptySegment));
        assert_eq!(FieldPath::parse("a[0]"), Err(PathError::BadBracket));
        assert_eq!(FieldPath::parse("a]"), Err(PathError::BadBracket));
        assert_eq!(FieldPath::parse(".a"), Err(PathError::EmptySegment));
    }

    #[test]
    fn resolves_nested_arrays_and_reports_missing() {
        let doc = json!({"a": {"b": [{"c": [{"d": 1}, {"d": 2}]}, {"c": [{"x": 3}]}]}});
        let r = FieldPath::parse("a.b[].c[].d").unwrap().resolve(&doc);
        let locs: Vec<_> = r.found.iter().map(|(l, _)| l.render()).collect();
        assert_eq!(locs, ["$.a.b[0].c[0].d", "$.a.b[0].c[1].d"]);
        assert_eq!(r.missing.len(), 1);
        assert_eq!(r.missing[0].render(), "$.a.b[1].c[0].d");
        assert_eq!(r.arrays, 3, "b, and c under each of its two elements");
        assert_eq!(
            FieldPath::parse("items[].price").unwrap().rooted(),
            "$.items[].price"
        );
    }
}
