//! Recently compiled expressions by their exact text and tolerance, so an agent that sends the
//! same rules on every call pays the parse once per process (the parser takes about 12 µs for
//! an 80-byte expression; a hit, a hash and a lookup). Bounded by the memory the entries hold
//! ([`CACHE_BYTES`]); errors are not kept (a bad expression costs a parse, within the 4 KiB a
//! request may carry).

use super::{Expression, ExpressionError};
use quick_cache::Weighter;
use quick_cache::sync::Cache;
use std::sync::{Arc, LazyLock};

/// Memory the cache may hold, in bytes.
pub const CACHE_BYTES: u64 = 8 << 20;

type Key = (Box<str>, u64);

#[derive(Clone)]
struct HeldBytes;

impl Weighter<Key, Arc<Expression>> for HeldBytes {
    fn weight(&self, key: &Key, expr: &Arc<Expression>) -> u64 {
        key.0.len() as u64 + expr.held_bytes
    }
}

static CACHE: LazyLock<Cache<Key, Arc<Expression>, HeldBytes>> =
    LazyLock::new(|| Cache::with_weighter(4_096, CACHE_BYTES, HeldBytes));

/// The compiled expression for `source` and `tolerance`: from the cache, or compiled and kept.
pub fn compiled(source: &str, tolerance: f64) -> Result<Arc<Expression>, ExpressionError> {
    let key: Key = (source.into(), tolerance.to_bits());
    if let Some(hit) = CACHE.get(&key) {
        return Ok(hit);
    }
    let expression = Arc::new(Expression::compile(source, tolerance)?);
    CACHE.insert(key, expression.clone());
    Ok(expression)
}
