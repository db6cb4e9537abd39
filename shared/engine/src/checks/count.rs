//! Counting `schema_compliance` checks: one per assertion keyword applied at each instance
//! location (SERVICE.md §4). Applicators (`properties`, `items`, `allOf`, `$ref`, …) are
//! followed, not counted; composites whose branches depend on validity (`anyOf`, `oneOf`,
//! `not`, `if`/`then`/`else`, `contains`, `patternProperties`, `unevaluated*`) count as one
//! check each. Bounded: cycles stop, and at most [`MAX_VISITS`] schema nodes are visited.

use super::keywords::{Keywords, present};
use crate::path::Location;
use jsonschema::Draft;
use rustc_hash::FxHashSet;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Most schema nodes visited while counting one instance.
pub const MAX_VISITS: usize = 100_000;

/// Where `$id`s and anchors live in a schema, as JSON Pointers (built once per schema).
pub struct SchemaIndex {
    ids: HashMap<String, String>,
    anchors: HashMap<String, String>,
    /// Every node with a `$dynamicAnchor`, by name (a `$dynamicRef` may land on any of them).
    dynamic_anchors: HashMap<String, Vec<String>>,
    /// Every node with `$recursiveAnchor: true` (a `$recursiveRef` may land on any of them).
    recursive_anchors: Vec<String>,
    draft: Draft,
    formats: bool,
}

impl SchemaIndex {
    /// Index a schema's `$id`s and anchors.
    pub fn build(schema: &Value, draft: Draft, formats: bool) -> Self {
        let mut index = SchemaIndex {
            ids: HashMap::new(),
            anchors: HashMap::new(),
            dynamic_anchors: HashMap::new(),
            recursive_anchors: Vec::new(),
            draft,
            formats,
        };
        index.scan(schema, String::new(), 0);
        index
    }

    fn scan(&mut self, node: &Value, pointer: String, depth: usize) {
        if depth > 64 {
            return;
        }
        match node {
            Value::Object(map) => {
                let id_key = if self.draft == Draft::Draft4 {
                    "id"
                } else {
                    "$id"
                };
                if let Some(Value::String(id)) = map.get(id_key) {
                    if let Some(anchor) = id.strip_prefix('#') {
                        self.anchors
                            .entry(anchor.to_owned())
                            .or_insert_with(|| pointer.clone());
                    } else {
                        let base = id.split('#').next().unwrap_or(id).to_owned();
                        self.ids.entry(base).or_insert_with(|| pointer.clone());
                    }
                }
                for key in ["$anchor", "$dynamicAnchor"] {
                    if let Some(Value::String(a)) = map.get(key) {
                        self.anchors
                            .entry(a.clone())
                            .or_insert_with(|| pointer.clone());
                    }
                }
                if let Some(Value::String(a)) = map.get("$dynamicAnchor") {
                    self.dynamic_anchors
                        .entry(a.clone())
                        .or_default()
                        .push(pointer.clone());
                }
                if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
                    self.recursive_anchors.push(pointer.clone());
                }
                for (k, v) in map {
                    if k == "enum" || k == "const" {
                        continue;
                    }
                    let child = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                    self.scan(v, child, depth + 1);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.scan(v, format!("{pointer}/{i}"), depth + 1);
                }
            }
            _ => {}
        }
    }

    /// The draft the schema is read as.
    pub fn draft(&self) -> Draft {
        self.draft
    }

    /// Where a `$dynamicRef` / `$recursiveRef` leads without dynamic scope: `#` (or nothing)
    /// to the root, `#name` to the anchor.
    pub(crate) fn resolve_dynamic<'s>(
        &self,
        root: &'s Value,
        reference: &str,
    ) -> Option<&'s Value> {
        match reference.trim_start_matches('#') {
            "" => Some(root),
            anchor => self.resolve(root, &format!("#{anchor}")),
        }
    }

    /// Every schema a `$dynamicRef` / `$recursiveRef` may lead to, whatever the dynamic scope:
    /// its static target and every node carrying the matching dynamic (or recursive) anchor.
    pub(crate) fn dynamic_candidates<'s>(
        &self,
        root: &'s Value,
        reference: &str,
        recursive: bool,
    ) -> Vec<&'s Value> {
        let mut out: Vec<&'s Value> = self.resolve_dynamic(root, reference).into_iter().collect();
        if let Some(target) = self.resolve(root, reference)
            && !out.iter().any(|t| std::ptr::eq(*t, target))
        {
            out.push(target);
        }
        let pointers: &[String] = if recursive {
            &self.recursive_anchors
        } else {
            match reference.rsplit_once('#') {
                Some((_, name)) if !name.is_empty() && !name.starts_with('/') => self
                    .dynamic_anchors
                    .get(name)
                    .map_or(&[][..], Vec::as_slice),
                _ => &[],
            }
        };
        for pointer in pointers {
            if let Some(target) = root.pointer(pointer)
                && !out.iter().any(|t| std::ptr::eq(*t, target))
            {
                out.push(target);
            }
        }
        out
    }

    pub(crate) fn resolve<'s>(&self, root: &'s Value, reference: &str) -> Option<&'s Value> {
        let (base, fragment) = match reference.split_once('#') {
            Some((b, f)) => (b, f),
            None => (reference, ""),
        };
        let start = if base.is_empty() {
            root
        } else {
            let pointer = self.ids.get(base).or_else(|| {
                self.ids
                    .iter()
                    .find(|(id, _)| id.ends_with(&format!("/{base}")))
                    .map(|(_, p)| p)
            })?;
            root.pointer(pointer)?
        };
        if fragment.is_empty() {
            Some(start)
        } else if fragment.starts_with('/') {
            start.pointer(&percent_decode(fragment))
        } else {
            root.pointer(self.anchors.get(fragment)?)
        }
    }
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A schema with every `$ref` followed: how many subschemas it expands to (cycles counted
/// once, stopping at `budget + 1`). Validation time grows with the
/// size, and repeated references make it grow exponentially with the schema's size, so the
/// service caps it.
pub fn expansion(schema: &Value, index: &SchemaIndex, budget: usize) -> usize {
    let mut walk = Expand {
        root: schema,
        index,
        budget,
        memo: HashMap::new(),
        active: Vec::new(),
    };
    walk.node(schema, 0)
}

struct Expand<'s> {
    root: &'s Value,
    index: &'s SchemaIndex,
    budget: usize,
    memo: HashMap<*const Value, usize>,
    active: Vec<*const Value>,
}

impl<'s> Expand<'s> {
    fn node(&mut self, node: &'s Value, depth: usize) -> usize {
        let key = node as *const Value;
        if let Some(n) = self.memo.get(&key) {
            return *n;
        }
        if self.active.contains(&key) || depth > 256 {
            return 1;
        }
        self.active.push(key);
        let mut total = 1usize;
        match node {
            Value::Object(map) => {
                for (k, v) in map {
                    if total > self.budget {
                        break;
                    }
                    let n = match (k.as_str(), v) {
                        ("enum" | "const" | "default" | "examples", _) => 0,
                        ("$ref", Value::String(r)) => match self.index.resolve(self.root, r) {
                            Some(target) => self.node(target, depth + 1),
                            None => 1,
                        },
                        ("$dynamicRef" | "$recursiveRef", Value::String(_)) => {
                            // Resolved at validation time, possibly to an enclosing schema.
                            self.node(self.root, depth + 1)
                        }
                        (_, Value::Object(_) | Value::Array(_)) => self.node(v, depth + 1),
                        _ => 0,
                    };
                    total = total.saturating_add(n);
                }
            }
            Value::Array(items) => {
                for v in items {
                    if total > self.budget {
                        break;
                    }
                    total = total.saturating_add(self.node(v, depth + 1));
                }
            }
            _ => {}
        }
        self.active.pop();
        let total = total.min(self.budget + 1);
        self.memo.insert(key, total);
        total
    }
}

/// What counting found.
pub struct Counted {
    /// Assertion checks applied.
    pub checks: usize,
    /// Required string properties whose value is blank.
    pub blank_required: Vec<Location>,
}

/// Count the checks `schema` applies to `instance`.
pub fn count_checks(
    schema: &Value,
    index: &SchemaIndex,
    instance: &Value,
    want_blank: bool,
) -> Counted {
    let mut walker = Walker {
        root: schema,
        index,
        visits: 0,
        stack: Active::default(),
        path: Vec::new(),
        want_blank,
        blank: Vec::new(),
        checks: 0,
    };
    walker.node(schema, instance);
    Counted {
        checks: walker.checks,
        blank_required: walker.blank,
    }
}

type Pair = (*const Value, *const Value);

/// The pairs a walk is inside of: a short list while the walk is shallow (the common case,
/// cheapest to search), a hash set from the moment it gets deep (a deep output would make
/// every step search a long list).
#[derive(Default)]
struct Active {
    list: Vec<Pair>,
    set: FxHashSet<Pair>,
}

impl Active {
    const LIST_MAX: usize = 16;

    /// Enter a pair; false when the walk is inside it already (a loop).
    fn enter(&mut self, pair: Pair) -> bool {
        if self.set.is_empty() {
            if self.list.contains(&pair) {
                return false;
            }
            if self.list.len() < Self::LIST_MAX {
                self.list.push(pair);
                return true;
            }
            self.set.extend(self.list.drain(..));
        }
        self.set.insert(pair)
    }

    /// Leave the pair entered last.
    fn leave(&mut self, pair: &Pair) {
        if self.set.is_empty() {
            self.list.pop();
        } else {
            self.set.remove(pair);
        }
    }
}

enum Seg<'i> {
    Key(&'i str),
    Index(usize),
}

struct Walker<'s, 'i> {
    root: &'s Value,
    index: &'s SchemaIndex,
    visits: usize,
    /// The (subschema, value) pairs being counted now: one met again is a loop.
    stack: Active,
    path: Vec<Seg<'i>>,
    want_blank: bool,
    blank: Vec<Location>,
    checks: usize,
}

impl<'s, 'i> Walker<'s, 'i> {
    fn node(&mut self, schema: &'s Value, instance: &'i Value) {
        self.visits += 1;
        if self.visits > MAX_VISITS {
            return;
        }
        let map = match schema {
            Value::Bool(false) => {
                self.checks += 1;
                return;
            }
            Value::Object(map) => map,
            _ => return,
        };
        let key = (schema as *const Value, instance as *const Value);
        if !self.stack.enter(key) {
            return;
        }
        self.object(map, instance);
        self.stack.leave(&key);
    }

    fn reference(&mut self, reference: &Value, instance: &'i Value) {
        let target = reference
            .as_str()
            .and_then(|r| self.index.resolve(self.root, r));
        match target {
            Some(t) => self.node(t, instance),
            None => self.checks += 1,
        }
    }

    fn object(&mut self, map: &'s Map<String, Value>, instance: &'i Value) {
        let k = Keywords::of(map);
        let legacy = matches!(
            self.index.draft,
            Draft::Draft4 | Draft::Draft6 | Draft::Draft7
        );
        if let Some(r) = k.reference {
            self.reference(r, instance);
            if legacy {
                return; // siblings of $ref are ignored before 2019-09
            }
        }
        for dynamic in [k.dynamic_ref, k.recursive_ref].into_iter().flatten() {
            let target = self
                .index
                .resolve_dynamic(self.root, dynamic.as_str().unwrap_or(""));
            match target {
                Some(t) => self.node(t, instance),
                None => self.checks += 1,
            }
        }
        self.checks += present(&[k.type_, k.enum_, k.const_, k.any_of, k.one_of, k.not]);
        if k.if_.is_some() && (k.then.is_some() || k.else_.is_some()) {
            self.checks += 1;
        }
        if let Some(Value::Array(all)) = k.all_of {
            for sub in all {
                self.node(sub, instance);
            }
        }
        match instance {
            Value::Number(_) => self.number(&k),
            Value::String(_) => self.string(&k),
            Value::Array(items) => self.array(&k, items),
            Value::Object(obj) => self.properties(&k, instance, obj),
            _ => {}
        }
    }

    fn number(&mut self, k: &Keywords<'s>) {
        self.checks += present(&[k.minimum, k.maximum, k.multiple_of]);
        // Draft 4's boolean form modifies minimum/maximum and is not a check of its own.
        self.checks += [k.exclusive_minimum, k.exclusive_maximum]
            .iter()
            .filter(|v| v.is_some_and(Value::is_number))
            .count();
    }

    fn string(&mut self, k: &Keywords<'s>) {
        self.checks += present(&[k.min_length, k.max_length, k.pattern]);
        if self.index.formats && k.format.is_some() {
            self.checks += 1;
        }
    }

    fn array(&mut self, k: &Keywords<'s>, items: &'i [Value]) {
        self.checks += present(&[
            k.min_items,
            k.max_items,
            k.unique_items,
            k.contains,
            k.unevaluated_items,
        ]);
        let mut first_rest = 0;
        let tuple = match (k.prefix_items, k.items) {
            (Some(Value::Array(prefix)), _) => Some(prefix),
            (None, Some(Value::Array(prefix))) => Some(prefix),
            _ => None,
        };
        if let Some(prefix) = tuple {
            for (i, (sub, item)) in prefix.iter().zip(items).enumerate() {
                self.path.push(Seg::Index(i));
                self.node(sub, item);
                self.path.pop();
            }
            first_rest = prefix.len();
        }
        let rest = match (k.prefix_items, k.items) {
            (Some(_), Some(items)) => Some(items),
            (None, Some(Value::Array(_))) => k.additional_items,
            (None, Some(items)) => Some(items),
            _ => None,
        };
        if let Some(sub) = rest {
            for (i, item) in items.iter().enumerate().skip(first_rest) {
                self.path.push(Seg::Index(i));
                self.node(sub, item);
                self.path.pop();
            }
        }
    }

    fn properties(&mut self, k: &Keywords<'s>, instance: &'i Value, obj: &'i Map<String, Value>) {
        self.checks += present(&[k.min_properties, k.max_properties, k.unevaluated_properties]);
        if let Some(Value::Array(required)) = k.required
            && !required.is_empty()
        {
            self.checks += 1;
            if self.want_blank {
                for name in required.iter().filter_map(Value::as_str) {
                    if let Some(Value::String(s)) = obj.get(name)
                        && s.trim().is_empty()
                    {
                        self.blank.push(self.location().key(name));
                    }
                }
            }
        }
        for deps in [k.dependent_required, k.dependencies, k.dependent_schemas] {
            if let Some(Value::Object(deps)) = deps {
                for (name, dep) in deps {
                    if !obj.contains_key(name) {
                        continue;
                    }
                    match dep {
                        Value::Array(_) => self.checks += 1,
                        sub => self.node(sub, instance),
                    }
                }
            }
        }
        let declared = k.properties.and_then(Value::as_object);
        if let Some(props) = declared {
            for (name, sub) in props {
                if let Some((key, value)) = obj.get_key_value(name) {
                    self.path.push(Seg::Key(key));
                    self.node(sub, value);
                    self.path.pop();
                }
            }
        }
        let has_patterns = k.pattern_properties.is_some();
        if has_patterns && !obj.is_empty() {
            self.checks += 1;
        }
        match k.additional_properties {
            Some(Value::Bool(false)) => self.checks += 1,
            Some(Value::Object(_)) if has_patterns => self.checks += 1,
            Some(sub @ Value::Object(_)) => {
                for (key, value) in obj {
                    if declared.is_some_and(|p| p.contains_key(key)) {
                        continue;
                    }
                    self.path.push(Seg::Key(key));
                    self.node(sub, value);
                    self.path.pop();
                }
            }
            _ => {}
        }
        if let Some(sub) = k.property_names
            && !obj.is_empty()
        {
            self.checks += count_names(sub, obj);
        }
    }

    fn location(&self) -> Location {
        let mut at = Location::default();
        for seg in &self.path {
            at = match seg {
                Seg::Key(k) => at.key(k),
                Seg::Index(i) => at.index(*i),
            };
        }
        at
    }
}

fn count_names(sub: &Value, obj: &Map<String, Value>) -> usize {
    // Property names are strings: count the string assertions the sub-schema applies per key.
    let Some(map) = sub.as_object() else {
        return usize::from(sub == &Value::Bool(false)) * obj.len();
    };
    let per_key = [
        "type",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "pattern",
        "format",
    ]
    .iter()
    .filter(|k| map.contains_key(**k))
    .count();
    per_key * obj.len()
}
