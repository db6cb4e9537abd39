//! The cost of applying a schema to an output, priced before the validator runs.
//!
//! A validator applies subschemas to values. This walk follows every applicator the validator
//! may follow — every branch of `anyOf`/`oneOf`, `not`, `if`/`then`/`else`, `contains`, every
//! pattern of `patternProperties` on every key, `unevaluated*` (which also re-evaluates the
//! in-place applicators beside it), every target a `$dynamicRef` may have — and prices each
//! (subschema, value) application from what it scans: the keywords it reads, its patterns and
//! formats over the string's bytes, `enum`/`const` over the candidates, `uniqueItems` over the
//! array. It is memoized on the pair, so a recursive reference inside a multi-branch combinator
//! (whose applications grow exponentially with the output's depth) is priced in time
//! proportional to the distinct pairs, and every charge goes through the [`Meter`], which stops
//! the walk at the first step past the budget.

use super::calibration as c;
use super::content::{TextShape, check_cost, scan_ns};
use super::patterns::PatternCost;
use super::size::{Shape, container_sizes};
use super::{Cost, Meter, OverBudget, Part, Resource};
use crate::checks::count::SchemaIndex;
use crate::checks::keywords::Keywords;
use jsonschema::Draft;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{Map, Value};

/// Deepest chain of applications priced; deeper schemas are refused as too complex (the
/// validator would recurse as deep).
pub const MAX_DEPTH: usize = 1_000;

/// Costs that depend on the schema alone, computed once when it compiles.
#[derive(Debug, Default)]
pub struct StaticCosts {
    /// Each pattern by the address of its text in the schema (a `pattern` value or a
    /// `patternProperties` key).
    pub patterns: FxHashMap<usize, PatternCost>,
    /// `enum` and `const`: comparing one value against the candidates, by the keyword value's
    /// address.
    pub comparisons: FxHashMap<usize, Comparison>,
    /// Whether some `$ref` leads outside the schema (a bundled meta-schema).
    pub external_refs: bool,
    /// Whether some error may be made owned (`anyOf`, `oneOf`, `propertyNames`): only then
    /// does the walk size the instances errors are about.
    pub owned_errors: bool,
    /// Schema nodes (objects, arrays and scalars outside `enum`, `const`, `default` and
    /// `examples`): what compiling costs per node.
    pub nodes: u64,
}

/// How jsonschema compares a value against `enum`/`const` candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// Integers (and null): a binary search.
    Integers { candidates: u64 },
    /// Strings (and null): compared one by one up to ten, hashed above.
    Strings {
        candidates: u64,
        longest: u64,
        hashed: bool,
    },
    /// Anything else: compared one by one, each at most as far as the candidate goes.
    Values { candidates: u64, bytes: u64 },
}

impl Comparison {
    /// How jsonschema will compare against `value` (an `enum` array, or a `const`).
    pub fn of(value: &Value, is_enum: bool) -> Self {
        let one = [value.clone()];
        let items: &[Value] = match value {
            Value::Array(items) if is_enum => items,
            _ => &one,
        };
        let candidates = items.len() as u64;
        if candidates > 1 && items.iter().all(|v| v.is_null() || v.as_i64().is_some()) {
            return Comparison::Integers { candidates };
        }
        if candidates > 1 && items.iter().all(|v| v.is_string() || v.is_null()) {
            return Comparison::Strings {
                candidates,
                longest: items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.len() as u64)
                    .max()
                    .unwrap_or(0),
                hashed: candidates > 10,
            };
        }
        Comparison::Values {
            candidates,
            bytes: items
                .iter()
                .map(|v| Shape::of(v).jcs_bytes)
                .fold(0, u64::saturating_add),
        }
    }

    /// Comparing one value (of `string_len` bytes when it is a string) against the candidates.
    pub fn ns(&self, string_len: Option<u64>) -> u64 {
        match *self {
            Comparison::Integers { candidates } => {
                c::EQUAL_NS_PER_CANDIDATE * (1 + u64::from(candidates.max(1).ilog2()))
            }
            Comparison::Strings {
                candidates,
                longest,
                hashed,
            } => {
                let n = string_len.unwrap_or(0);
                if hashed {
                    c::EQUAL_NS_PER_CANDIDATE + c::EQUAL_NS_PER_BYTE.saturating_mul(n)
                } else {
                    candidates.saturating_mul(
                        c::EQUAL_NS_PER_CANDIDATE + c::EQUAL_NS_PER_BYTE * n.min(longest),
                    )
                }
            }
            Comparison::Values { candidates, bytes } => c::EQUAL_NS_PER_CANDIDATE
                .saturating_mul(candidates)
                .saturating_add(c::EQUAL_NS_PER_BYTE.saturating_mul(bytes)),
        }
    }
}

/// What the walk found besides the charges it made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalkSummary {
    /// Schema errors the output could have at most: each is priced only if the output turns
    /// out to be invalid, as it is collected.
    pub potential_errors: u64,
    /// Subschema applications, with multiplicity.
    pub applications: u64,
    /// (subschema, value) pairs priced (each memoized pair once).
    pub pairs: u64,
    /// CPU of applying the schema to the output once (patterns and formats included).
    pub cpu_ns: u64,
    /// Bytes the potential errors copy besides themselves: a `not` subschema, a pattern, the
    /// unexpected keys of `additionalProperties: false`, and the instance of every error made
    /// owned under `anyOf`/`oneOf`/`propertyNames` (jsonschema collects every error of an
    /// invalid output at once, see [`Meter::note_errors`]).
    pub error_copies: u64,
}

/// Price applying `schema` to `output`, charging the meter as it goes. With `pair_cap`, the
/// walk also stops after that many distinct pairs, returning the estimate so far as an
/// [`OverBudget`] that is not past the meter's budget (undecided).
pub fn price(
    schema: &Value,
    index: &SchemaIndex,
    statics: &StaticCosts,
    formats: bool,
    output: &Value,
    meter: &mut Meter,
    pair_cap: Option<usize>,
) -> Result<WalkSummary, OverBudget> {
    let mut walk = Walk {
        pair_cap: pair_cap.unwrap_or(usize::MAX),
        priced: 0,
        root: schema,
        index,
        statics,
        formats,
        legacy: matches!(index.draft(), Draft::Draft4 | Draft::Draft6 | Draft::Draft7),
        asserts_content: matches!(index.draft(), Draft::Draft6 | Draft::Draft7),
        meter,
        memo: FxHashMap::with_capacity_and_hasher(1024, Default::default()),
        arrays: FxHashMap::default(),
        sizes: FxHashMap::default(),
        warmed: FxHashSet::default(),
        texts: FxHashMap::default(),
        tree_sizes: FxHashMap::default(),
        output,
        sized_output: false,
    };
    let acc = walk.pair(schema, Inst::Value(output), 0)?;
    Ok(WalkSummary {
        potential_errors: acc.errors,
        applications: acc.apps,
        pairs: walk.priced as u64,
        cpu_ns: acc
            .walk
            .saturating_add(acc.patterns)
            .saturating_add(acc.formats)
            .saturating_add(acc.values)
            .saturating_add(acc.content),
        error_copies: acc.err_copies,
    })
}

/// A value the schema applies to: a JSON value, or an object key (`propertyNames`).
#[derive(Clone, Copy)]
enum Inst<'i> {
    Value(&'i Value),
    Key(&'i str),
}

impl Inst<'_> {
    fn address(self) -> usize {
        match self {
            Inst::Value(v) => v as *const Value as usize,
            Inst::Key(k) => (k.as_ptr() as usize) ^ (1 << (usize::BITS - 1)),
        }
    }
}

/// The cost of one pair and everything it applies, by part.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    walk: u64,
    patterns: u64,
    formats: u64,
    values: u64,
    formats_mem: u64,
    /// CPU of `contentEncoding`/`contentMediaType` (decoding and parsing strings).
    content: u64,
    /// The largest tree one content check builds and drops again (a transient peak).
    content_peak: u64,
    errors: u64,
    /// Bytes the errors copy (see [`WalkSummary::error_copies`]).
    err_copies: u64,
    /// The instances' tree bytes summed over the errors (what they copy when made owned).
    err_inst: u64,
    apps: u64,
}

impl Acc {
    fn add(&mut self, o: &Acc) {
        self.walk = self.walk.saturating_add(o.walk);
        self.patterns = self.patterns.saturating_add(o.patterns);
        self.formats = self.formats.saturating_add(o.formats);
        self.values = self.values.saturating_add(o.values);
        self.formats_mem = self.formats_mem.saturating_add(o.formats_mem);
        self.content = self.content.saturating_add(o.content);
        self.content_peak = self.content_peak.max(o.content_peak);
        self.errors = self.errors.saturating_add(o.errors);
        self.err_copies = self.err_copies.saturating_add(o.err_copies);
        self.err_inst = self.err_inst.saturating_add(o.err_inst);
        self.apps = self.apps.saturating_add(o.apps);
    }

    fn cpu_only(&self) -> Acc {
        Acc {
            walk: self.walk,
            patterns: self.patterns,
            formats: self.formats,
            values: self.values,
            content: self.content,
            ..Acc::default()
        }
    }

    fn charge(&self, meter: &mut Meter) -> Result<(), OverBudget> {
        meter.charge(Part::SchemaWalk, Cost::cpu(self.walk))?;
        meter.charge(Part::Patterns, Cost::cpu(self.patterns))?;
        meter.charge(Part::Formats, Cost::new(self.formats, self.formats_mem))?;
        meter.charge(Part::ValueChecks, Cost::cpu(self.values))?;
        meter.charge(Part::ContentKeywords, Cost::cpu(self.content))?;
        meter.charge_transient(Part::ContentKeywords, self.content_peak)
    }
}

struct Walk<'s, 'm> {
    pair_cap: usize,
    /// Pairs priced so far (memoized or not): what `pair_cap` limits.
    priced: usize,
    root: &'s Value,
    index: &'s SchemaIndex,
    statics: &'s StaticCosts,
    formats: bool,
    legacy: bool,
    /// Whether `contentEncoding`/`contentMediaType` assert (drafts 6 and 7; later drafts only
    /// annotate with them).
    asserts_content: bool,
    meter: &'m mut Meter,
    /// Priced pairs; `None` while a pair is being priced (a cycle back to it costs one
    /// application, as the validator stops there too).
    memo: FxHashMap<(usize, usize), Option<Acc>>,
    /// Canonical size bounds of arrays under `uniqueItems`, by address.
    arrays: FxHashMap<usize, u64>,
    /// Value counts of what external references apply to, by address.
    sizes: FxHashMap<usize, u64>,
    /// Patterns whose lazy DFA warm-up was charged already.
    warmed: FxHashSet<usize>,
    /// What the strings content keywords apply to may parse into, by address.
    texts: FxHashMap<usize, TextShape>,
    /// Tree bytes of output containers and `not` subschemas, by address (what errors copy).
    tree_sizes: FxHashMap<usize, u64>,
    /// The output, and whether its containers were sized into `tree_sizes`.
    output: &'s Value,
    sized_output: bool,
}

fn too_deep() -> OverBudget {
    OverBudget {
        part: Part::SchemaWalk,
        resource: Resource::Cpu,
        estimate: u64::MAX,
        limit: 0,
    }
}

fn address(v: &Value) -> usize {
    v as *const Value as usize
}

fn count(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_array).map_or(0, |a| a.len() as u64)
}

impl<'s> Walk<'s, '_> {
    fn pair<'i>(
        &mut self,
        schema: &'s Value,
        inst: Inst<'i>,
        depth: usize,
    ) -> Result<Acc, OverBudget> {
        if depth > MAX_DEPTH {
            return Err(too_deep());
        }
        let map = match schema {
            Value::Object(map) => map,
            // `true` costs nothing but the application; `false` always fails.
            _ => {
                let acc = Acc {
                    walk: c::APPLICATION_NS,
                    errors: u64::from(schema == &Value::Bool(false)),
                    apps: 1,
                    ..Acc::default()
                };
                acc.charge(self.meter)?;
                return Ok(acc);
            }
        };
        let k = Keywords::of(map);
        if self.priced >= self.pair_cap {
            let estimate = self.meter.total().cpu_ns;
            return Err(OverBudget {
                part: Part::SchemaWalk,
                resource: Resource::Cpu,
                estimate,
                limit: self.meter.budget().cpu_ns.max(estimate),
            });
        }
        self.priced += 1;
        if k.is_leaf() {
            // Applies nothing further: priced directly (a memo only pays for recursion).
            return self.object(&k, map.len(), inst, depth);
        }
        let key = (address(schema), inst.address());
        match self.memo.get(&key) {
            Some(Some(done)) => {
                let done = *done;
                done.charge(self.meter)?;
                return Ok(done);
            }
            Some(None) => {
                let cycle = Acc {
                    walk: c::APPLICATION_NS,
                    apps: 1,
                    ..Acc::default()
                };
                cycle.charge(self.meter)?;
                return Ok(cycle);
            }
            None => {}
        }
        self.memo.insert(key, None);
        self.meter
            .charge(Part::SchemaWalk, Cost::mem(c::WALK_BYTES_PER_PAIR))?;
        let acc = self.object(&k, map.len(), inst, depth)?;
        self.memo.insert(key, Some(acc));
        Ok(acc)
    }

    /// A `$ref` the index cannot resolve: a bundled meta-schema (priced per value of what it
    /// applies to), or a target the validator resolved by base-URI rules the index does not
    /// follow (priced as the root and every `$defs`/`definitions` member applying).
    fn unresolved<'i>(&mut self, inst: Inst<'i>, depth: usize) -> Result<Acc, OverBudget> {
        let values = match inst {
            Inst::Value(v) => *self
                .sizes
                .entry(address(v))
                .or_insert_with(|| Shape::of(v).values),
            Inst::Key(_) => 1,
        };
        let mut acc = Acc {
            walk: c::EXTERNAL_REF_NS_PER_VALUE.saturating_mul(values),
            errors: values,
            ..Acc::default()
        };
        acc.charge(self.meter)?;
        acc.add(&self.pair(self.root, inst, depth + 1)?);
        for defs in ["$defs", "definitions"] {
            if let Some(Value::Object(members)) = self.root.get(defs) {
                for sub in members.values() {
                    acc.add(&self.pair(sub, inst, depth + 1)?);
                }
            }
        }
        Ok(acc)
    }

    fn each<'i>(
        &mut self,
        subs: Option<&'s Value>,
        inst: Inst<'i>,
        depth: usize,
        into: &mut Acc,
    ) -> Result<(), OverBudget> {
        match subs {
            Some(Value::Array(list)) => {
                for sub in list {
                    into.add(&self.pair(sub, inst, depth + 1)?);
                }
            }
            Some(sub) => into.add(&self.pair(sub, inst, depth + 1)?),
            None => {}
        }
        Ok(())
    }

    fn object<'i>(
        &mut self,
        k: &Keywords<'s>,
        members: usize,
        inst: Inst<'i>,
        depth: usize,
    ) -> Result<Acc, OverBudget> {
        let mut own = Acc {
            walk: c::APPLICATION_NS + c::KEYWORD_NS * members as u64,
            apps: 1,
            ..Acc::default()
        };
        // In-place applicators (same value): also re-evaluated by `unevaluated*`.
        let mut in_place = Acc::default();
        if let Some(Value::String(r)) = k.reference {
            let priced = match self.index.resolve(self.root, r) {
                Some(target) => self.pair(target, inst, depth + 1)?,
                None => self.unresolved(inst, depth)?,
            };
            in_place.add(&priced);
            if self.legacy {
                own.charge(self.meter)?;
                own.add(&in_place);
                return Ok(own);
            }
        }
        for (dynamic, recursive) in [(k.dynamic_ref, false), (k.recursive_ref, true)] {
            if let Some(Value::String(r)) = dynamic {
                for target in self.index.dynamic_candidates(self.root, r, recursive) {
                    in_place.add(&self.pair(target, inst, depth + 1)?);
                }
            }
        }
        for subs in [k.all_of, k.not, k.if_, k.then, k.else_] {
            self.each(subs, inst, depth, &mut in_place)?;
        }
        // The errors of failed `anyOf`/`oneOf` branches are made owned: each copies its
        // instance.
        let mut branches = Acc::default();
        for subs in [k.any_of, k.one_of] {
            self.each(subs, inst, depth, &mut branches)?;
        }
        branches.err_copies = branches.err_copies.saturating_add(branches.err_inst);
        in_place.add(&branches);
        if let Some(not) = k.not {
            // A `not` error carries a copy of its subschema.
            own.err_copies = own.err_copies.saturating_add(self.tree_bytes(not));
        }
        // Composites that fail as a whole, and the type/enum/const assertions.
        own.errors += [k.any_of, k.one_of, k.not, k.if_, k.type_, k.enum_, k.const_]
            .iter()
            .filter(|v| v.is_some())
            .count() as u64;
        let string_len = match inst {
            Inst::Key(s) => Some(s.len() as u64),
            Inst::Value(Value::String(s)) => Some(s.len() as u64),
            Inst::Value(_) => None,
        };
        for v in [k.enum_, k.const_].into_iter().flatten() {
            let priced = self
                .statics
                .comparisons
                .get(&address(v))
                .map_or(c::EQUAL_NS_PER_CANDIDATE, |cmp| cmp.ns(string_len));
            own.values = own.values.saturating_add(priced);
        }
        let mut children = Acc::default();
        match inst {
            Inst::Key(s) => self.string(k, s, &mut own),
            Inst::Value(Value::String(s)) => self.string(k, s, &mut own),
            Inst::Value(Value::Number(n)) => {
                if let Some(Value::Number(multiple)) = k.multiple_of {
                    own.walk = own.walk.saturating_add(multiple_of_ns(n, multiple));
                }
                own.errors += [
                    k.minimum,
                    k.maximum,
                    k.multiple_of,
                    k.exclusive_minimum,
                    k.exclusive_maximum,
                ]
                .iter()
                .filter(|v| v.is_some())
                .count() as u64;
            }
            Inst::Value(array @ Value::Array(items)) => {
                self.array(k, array, items, depth, &mut own, &mut children)?;
            }
            Inst::Value(Value::Object(obj)) => {
                self.properties(k, inst, obj, depth, &mut own, &mut in_place, &mut children)?;
            }
            Inst::Value(_) => {}
        }
        if k.unevaluated_items.is_some() || k.unevaluated_properties.is_some() {
            // Which members the in-place applicators evaluated is worked out by applying them
            // again.
            own.add(&in_place.cpu_only());
        }
        // Each error at this pair is about this instance (copied only where errors are made
        // owned, which only some keywords do).
        if own.errors > 0 && self.statics.owned_errors {
            let size = self.inst_bytes(inst);
            own.err_inst = own.err_inst.saturating_add(own.errors.saturating_mul(size));
        }
        own.charge(self.meter)?;
        own.add(&in_place);
        own.add(&children);
        Ok(own)
    }

    fn string(&mut self, k: &Keywords<'s>, s: &str, own: &mut Acc) {
        let n = s.len() as u64;
        if let Some(p) = k.pattern
            && let Some(pattern) = self.statics.patterns.get(&address(p))
        {
            own.patterns = own.patterns.saturating_add(pattern.match_ns(n));
            if self.warmed.insert(address(p)) {
                own.patterns = own.patterns.saturating_add(pattern.warm_up_ns());
            }
            own.errors += 1;
            // A pattern error carries a copy of the pattern.
            own.err_copies = own
                .err_copies
                .saturating_add(p.as_str().map_or(0, |t| t.len() as u64));
        }
        if self.formats
            && let Some(Value::String(format)) = k.format
        {
            own.formats = own
                .formats
                .saturating_add(c::FORMAT_BASE_NS + c::FORMAT_NS_PER_BYTE * n);
            if format == "regex" {
                own.formats_mem = own
                    .formats_mem
                    .saturating_add(c::FORMAT_REGEX_BYTES_PER_BYTE * n + 64);
            }
            own.errors += 1;
        }
        for limit in [k.min_length, k.max_length].into_iter().flatten() {
            let _ = limit;
            own.walk = own.walk.saturating_add(c::CHARS_NS_PER_BYTE * n);
            own.errors += 1;
        }
        if self.asserts_content {
            self.content(k, s, own);
        }
    }

    /// Tree bytes of an instance (memoized for containers): what an error about it copies when
    /// it is made owned.
    fn inst_bytes(&mut self, inst: Inst<'_>) -> u64 {
        match inst {
            Inst::Key(s) => s.len() as u64 + 24,
            Inst::Value(Value::String(s)) => s.len() as u64 + 72,
            Inst::Value(v @ (Value::Array(_) | Value::Object(_))) => self.tree_bytes(v),
            Inst::Value(_) => 72,
        }
    }

    /// Tree bytes of a value: for the output's containers from one pass over the output made
    /// the first time one is asked for, for a schema value (a `not` subschema) memoized.
    fn tree_bytes(&mut self, v: &Value) -> u64 {
        if let Some(size) = self.tree_sizes.get(&address(v)) {
            return *size;
        }
        if !self.sized_output {
            self.sized_output = true;
            let containers = container_sizes(self.output, &mut self.tree_sizes);
            // Not charged through the meter's result: a failure here only loses accuracy.
            let _ = self.meter.charge(
                Part::SchemaWalk,
                Cost::new(
                    containers.saturating_mul(c::WALK_NS_PER_PAIR),
                    containers.saturating_mul(c::WALK_BYTES_PER_PAIR),
                ),
            );
            if let Some(size) = self.tree_sizes.get(&address(v)) {
                return *size;
            }
        }
        *self
            .tree_sizes
            .entry(address(v))
            .or_insert_with(|| Shape::of(v).tree_bytes)
    }

    /// `contentEncoding`/`contentMediaType` over `s` (drafts 6 and 7), see [`super::content`].
    fn content(&mut self, k: &Keywords<'s>, s: &str, own: &mut Acc) {
        let decode = matches!(k.content_encoding, Some(Value::String(_)));
        let parse = matches!(k.content_media_type, Some(Value::String(_)));
        if !(decode || parse) {
            return;
        }
        let shape = match self.texts.get(&(s.as_ptr() as usize)) {
            Some(shape) => *shape,
            None => {
                let shape = TextShape::of(s);
                self.texts.insert(s.as_ptr() as usize, shape);
                own.content = own.content.saturating_add(scan_ns(shape.bytes));
                shape
            }
        };
        let cost = check_cost(&shape, decode, parse);
        own.content = own.content.saturating_add(cost.cpu_ns);
        own.content_peak = own.content_peak.max(cost.peak_bytes);
        own.errors += 1;
    }

    fn array<'i>(
        &mut self,
        k: &Keywords<'s>,
        array: &'i Value,
        items: &'i [Value],
        depth: usize,
        own: &mut Acc,
        children: &mut Acc,
    ) -> Result<(), OverBudget> {
        for (i, item) in items.iter().enumerate() {
            let item = Inst::Value(item);
            for list in [k.prefix_items, k.items] {
                match list {
                    Some(Value::Array(prefix)) => {
                        if let Some(sub) = prefix.get(i) {
                            children.add(&self.pair(sub, item, depth + 1)?);
                        }
                    }
                    Some(sub) => children.add(&self.pair(sub, item, depth + 1)?),
                    None => {}
                }
            }
            for sub in [k.additional_items, k.contains, k.unevaluated_items]
                .into_iter()
                .flatten()
            {
                children.add(&self.pair(sub, item, depth + 1)?);
            }
        }
        if k.unique_items == Some(&Value::Bool(true)) {
            let bytes = *self
                .arrays
                .entry(address(array))
                .or_insert_with(|| Shape::of(array).jcs_bytes);
            let compared = (items.len() as u64).min(16);
            own.values = own.values.saturating_add(
                c::UNIQUE_NS_PER_BYTE
                    .saturating_mul(bytes)
                    .saturating_mul(compared),
            );
        }
        if k.unevaluated_items.is_some() {
            // Its error lists the items it did not evaluate, each written as JSON text.
            let bytes = *self
                .arrays
                .entry(address(array))
                .or_insert_with(|| Shape::of(array).jcs_bytes);
            own.err_copies = own
                .err_copies
                .saturating_add(bytes.saturating_add(24 * items.len() as u64));
        }
        own.errors += [
            k.unique_items,
            k.min_items,
            k.max_items,
            k.contains,
            k.unevaluated_items,
        ]
        .iter()
        .filter(|v| v.is_some())
        .count() as u64;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn properties<'i>(
        &mut self,
        k: &Keywords<'s>,
        inst: Inst<'i>,
        obj: &'i Map<String, Value>,
        depth: usize,
        own: &mut Acc,
        in_place: &mut Acc,
        children: &mut Acc,
    ) -> Result<(), OverBudget> {
        let keys = obj.len() as u64;
        let lookups = |n: u64| c::LOOKUP_NS.saturating_mul(n);
        let required = count(k.required);
        own.walk = own.walk.saturating_add(lookups(required));
        own.errors += required;
        for deps in [k.dependent_schemas, k.dependencies] {
            if let Some(Value::Object(deps)) = deps {
                for (name, dep) in deps {
                    match dep {
                        Value::Array(names) => {
                            own.walk = own.walk.saturating_add(lookups(1 + names.len() as u64));
                            own.errors += names.len() as u64;
                        }
                        sub if obj.contains_key(name) => {
                            in_place.add(&self.pair(sub, inst, depth + 1)?);
                        }
                        _ => own.walk = own.walk.saturating_add(lookups(1)),
                    }
                }
            }
        }
        if let Some(Value::Object(deps)) = k.dependent_required {
            for names in deps.values() {
                let n = names.as_array().map_or(0, |a| a.len() as u64);
                own.walk = own.walk.saturating_add(lookups(1 + n));
                own.errors += n;
            }
        }
        let declared = k.properties.and_then(Value::as_object);
        if let Some(props) = declared {
            own.walk = own.walk.saturating_add(lookups(props.len() as u64 + keys));
            for (name, sub) in props {
                if let Some(value) = obj.get(name) {
                    children.add(&self.pair(sub, Inst::Value(value), depth + 1)?);
                }
            }
        }
        if let Some(Value::Object(patterns)) = k.pattern_properties {
            for (pattern, sub) in patterns {
                let priced = self
                    .statics
                    .patterns
                    .get(&(pattern.as_ptr() as usize))
                    .copied();
                for (name, value) in obj {
                    if let Some(p) = &priced {
                        own.patterns = own.patterns.saturating_add(p.match_ns(name.len() as u64));
                    }
                    // Every pattern may match every key: an upper bound.
                    children.add(&self.pair(sub, Inst::Value(value), depth + 1)?);
                }
            }
        }
        for sub in [k.additional_properties, k.unevaluated_properties]
            .into_iter()
            .flatten()
        {
            own.walk = own.walk.saturating_add(lookups(keys));
            let unevaluated = Some(sub) == k.unevaluated_properties;
            if sub == &Value::Bool(false) || unevaluated {
                own.errors += if unevaluated { keys.max(1) } else { keys };
                // The error lists the unexpected keys.
                let names: u64 = obj.keys().map(|k| k.len() as u64 + 24).sum();
                own.err_copies = own.err_copies.saturating_add(names);
            }
            for value in obj.values() {
                children.add(&self.pair(sub, Inst::Value(value), depth + 1)?);
            }
        }
        if let Some(sub) = k.property_names {
            // Each error about a key is made owned (a copy of the key) and wrapped in an error
            // about the object: made owned in turn (under `anyOf`/`oneOf`), each of those copies
            // the whole object.
            let mut names = Acc::default();
            for name in obj.keys() {
                names.add(&self.pair(sub, Inst::Key(name), depth + 1)?);
            }
            names.err_copies = names.err_copies.saturating_add(names.err_inst);
            names.err_inst = if self.statics.owned_errors {
                names.errors.saturating_mul(self.inst_bytes(inst))
            } else {
                0
            };
            children.add(&names);
        }
        own.errors += [k.min_properties, k.max_properties]
            .iter()
            .filter(|v| v.is_some())
            .count() as u64;
        Ok(())
    }
}

/// `multipleOf` on one number (see the calibration's `MULTIPLE_OF_*`): integers divide
/// natively; other numbers within ±1e20 split into decimal parts; beyond, exact big fractions.
fn multiple_of_ns(n: &serde_json::Number, multiple: &serde_json::Number) -> u64 {
    if n.is_i64() && multiple.as_i64().is_some_and(|m| m != 0) {
        return 0;
    }
    let in_range =
        |x: Option<f64>| x.is_some_and(|x| x == 0.0 || (1e-20..=1e20).contains(&x.abs()));
    if in_range(n.as_f64()) && in_range(multiple.as_f64()) {
        c::MULTIPLE_OF_DECIMAL_NS
    } else {
        c::MULTIPLE_OF_BIG_NS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::Budget;
    use serde_json::json;

    fn priced(
        schema: Value,
        output: Value,
        budget: Budget,
    ) -> Result<(WalkSummary, Meter), OverBudget> {
        let index = SchemaIndex::build(&schema, Draft::Draft202012, false);
        let mut meter = Meter::new(budget);
        let summary = price(
            &schema,
            &index,
            &StaticCosts::default(),
            false,
            &output,
            &mut meter,
            None,
        )?;
        Ok((summary, meter))
    }

    #[test]
    fn linear_schemas_cost_about_the_output_size() {
        let schema = json!({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}});
        let items: Vec<Value> = (0..1000).map(|i| json!({"a": i})).collect();
        let (s, meter) =
            priced(schema, Value::Array(items), Budget::ms_mib(1000, 64)).expect("fits");
        assert_eq!(s.applications, 2001);
        assert_eq!(s.pairs, 2001);
        assert!(meter.part(Part::SchemaWalk).cpu_ns >= 2001 * c::APPLICATION_NS);
    }

    #[test]
    fn exponential_recursion_is_priced_from_distinct_pairs_and_stops_at_the_budget() {
        let schema = json!({"$defs": {"n": {"anyOf": [
            {"type": "array", "items": {"$ref": "#/$defs/n"}},
            {"type": "array", "items": {"$ref": "#/$defs/n"}},
            {"type": "array", "items": {"$ref": "#/$defs/n"}},
            {"type": "integer"}]}}, "$ref": "#/$defs/n"});
        let mut deep = json!(1);
        for _ in 0..120 {
            deep = json!([deep]);
        }
        let started = std::time::Instant::now();
        let over = priced(schema, deep, Budget::ms_mib(1000, 128)).expect_err("3^120 applications");
        assert!(started.elapsed() < std::time::Duration::from_millis(50));
        assert_eq!(over.resource, Resource::Cpu);
    }

    #[test]
    fn self_references_terminate() {
        let (s, _) = priced(
            json!({"$ref": "#"}),
            json!({"a": [1, 2, 3]}),
            Budget::ms_mib(10, 10),
        )
        .expect("fits");
        assert!(s.applications <= 3);
    }

    #[test]
    fn dynamic_references_are_priced_for_every_target() {
        let schema = json!({
            "$dynamicAnchor": "node",
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$dynamicRef": "#node"}}},
            "$defs": {"other": {"$dynamicAnchor": "node", "properties": {"x": {"minLength": 1}}}}
        });
        let output = json!({"kids": [{"kids": []}, {"x": "y"}]});
        let (s, _) = priced(schema, output, Budget::ms_mib(10, 10)).expect("fits");
        // Each kid is priced under the root and under $defs/other.
        assert!(s.applications >= 7, "{s:?}");
    }

    #[test]
    fn chains_deeper_than_the_limit_are_refused() {
        let mut defs = serde_json::Map::new();
        for i in 0..1500 {
            defs.insert(
                format!("d{i}"),
                json!({"$ref": format!("#/$defs/d{}", i + 1)}),
            );
        }
        defs.insert("d1500".into(), json!({"type": "integer"}));
        let schema = json!({"$defs": defs, "$ref": "#/$defs/d0"});
        let over = priced(schema, json!(1), Budget::ms_mib(1000, 128)).expect_err("too deep");
        assert_eq!(over.estimate, u64::MAX);
    }
}
