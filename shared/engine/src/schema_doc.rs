//! The caller's `expected_schema` with its canonical form and hash, and a cache of schemas by
//! their exact request text.
//!
//! Buyers send the same schema call after call. The cache maps the schema's bytes, exactly as
//! they appeared in the body, to the parsed value, its RFC 8785 bytes and its SHA-256: an
//! identical text was already parsed strictly and canonicalized, so it is neither parsed nor
//! hashed again. The entry keeps the text and a hit compares it byte for byte, so a hash
//! collision can never substitute one schema for another.

use crate::json::{self, JsonError, MAX_FIELD_DEPTH};
use crate::problem::{FieldProblem, depth_exceeds, json_problem};
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use serde_json::Value;
use std::sync::Arc;
use verifier_receipt::canonical::{sha256, value_to_jcs};

/// A valid `expected_schema`: the value, its canonical bytes and its SHA-256.
#[derive(Debug)]
pub struct SchemaDoc {
    /// The schema as parsed.
    pub value: Value,
    /// Its RFC 8785 canonical bytes (part of the request document's hash).
    pub canonical: Vec<u8>,
    /// SHA-256 of the canonical bytes: the compiled-schema cache key.
    pub digest: [u8; 32],
    /// `schema_hash`: the digest in lowercase hex.
    pub hash: String,
    /// Memory the parsed tree holds.
    pub tree_bytes: u64,
}

const FIX_TYPE: &str = "Send a JSON Schema object, e.g. {\"type\": \"object\"}.";

impl SchemaDoc {
    /// Check that `value` is a schema (an object or a boolean, nested at most [`MAX_FIELD_DEPTH`]
    /// levels) and canonicalize it.
    pub fn from_value(value: Value) -> Result<Self, FieldProblem> {
        if !matches!(value, Value::Object(_) | Value::Bool(_)) {
            return Err(FieldProblem::new(
                "expected_schema",
                "must be a JSON Schema: an object or a boolean",
                FIX_TYPE,
            ));
        }
        if depth_exceeds(&value, MAX_FIELD_DEPTH) {
            return Err(json_problem("expected_schema", JsonError::TooDeep));
        }
        let canonical = value_to_jcs(&value);
        let digest = sha256(&canonical);
        Ok(SchemaDoc {
            tree_bytes: crate::cost::size::Shape::of(&value).tree_bytes,
            hash: verifier_receipt::canonical::digest_hex(&digest),
            value,
            canonical,
            digest,
        })
    }

    /// Parse the schema's request text strictly (duplicate keys, number range, depth);
    /// `origin` is where the text starts in the body, so problems name body positions.
    pub fn from_text(text: &str, origin: (usize, usize)) -> Result<Self, FieldProblem> {
        let value = json::parse_strict_value(text.as_bytes())
            .map_err(|e| json_problem("expected_schema", e.shifted(origin)))?;
        Self::from_value(value)
    }
}

#[derive(Clone)]
struct TextWeight;

impl Weighter<Box<str>, Arc<SchemaDoc>> for TextWeight {
    fn weight(&self, key: &Box<str>, doc: &Arc<SchemaDoc>) -> u64 {
        // The text, the canonical copy and the parsed tree.
        (key.len() + doc.canonical.len()) as u64 + doc.tree_bytes + 64
    }
}

/// Recently seen schemas by their exact request text, bounded by bytes held.
pub struct SchemaDocs {
    cache: Cache<Box<str>, Arc<SchemaDoc>, TextWeight>,
}

impl SchemaDocs {
    /// A cache holding about `max_bytes` of schema text.
    pub fn new(max_bytes: u64) -> Self {
        let entries = (max_bytes / 512).clamp(16, 1 << 20) as usize;
        SchemaDocs {
            cache: Cache::with_weighter(entries, max_bytes.max(1), TextWeight),
        }
    }

    /// The schema for a request text: from the cache when this exact text was seen, else
    /// parsed, checked and remembered.
    pub fn resolve(
        &self,
        text: &str,
        origin: (usize, usize),
    ) -> Result<Arc<SchemaDoc>, FieldProblem> {
        let doc = self.lookup(text, origin)?;
        self.remember(text, &doc);
        Ok(doc)
    }

    /// The schema for a request text: from the cache when this exact text was seen, else
    /// parsed and checked, but not remembered (see [`SchemaDocs::remember`]).
    pub fn lookup(
        &self,
        text: &str,
        origin: (usize, usize),
    ) -> Result<Arc<SchemaDoc>, FieldProblem> {
        match self.cache.get(text) {
            Some(doc) => Ok(doc),
            None => Ok(Arc::new(SchemaDoc::from_text(text, origin)?)),
        }
    }

    /// Remember a schema by its text (a request that was served: a schema that only reached
    /// a 402 is never kept).
    pub fn remember(&self, text: &str, doc: &Arc<SchemaDoc>) {
        if self.cache.peek(text).is_none() {
            self.cache.insert(text.into(), doc.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_text_is_served_from_the_cache() {
        let docs = SchemaDocs::new(1 << 20);
        let a = docs
            .resolve(r#"{"type": "object"}"#, (1, 1))
            .expect("valid");
        let b = docs
            .resolve(r#"{"type": "object"}"#, (1, 1))
            .expect("valid");
        assert!(Arc::ptr_eq(&a, &b));
        // Another spelling of the same schema: a new entry with the same canonical hash.
        let c = docs.resolve(r#"{"type":"object"}"#, (1, 1)).expect("valid");
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(a.hash, c.hash);
        assert_eq!(a.canonical, br#"{"type":"object"}"#);
    }

    #[test]
    fn invalid_texts_are_refused_and_not_cached() {
        let docs = SchemaDocs::new(1 << 20);
        for text in [r#"{"a": 1, "a": 2}"#, "[1]", "9007199254740993", "{"] {
            let problem = docs.resolve(text, (1, 1)).expect_err(text);
            assert_eq!(problem.field, "expected_schema");
            assert!(docs.resolve(text, (1, 1)).is_err());
        }
    }
}
