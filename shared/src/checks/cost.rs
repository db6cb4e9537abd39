//! The work a validation would do, bounded before it is done.
//!
//! A validator applies subschemas to instance locations. Through a recursive `$ref` inside a
//! multi-branch combinator (`anyOf: [{$ref: "#"}, {$ref: "#"}]`) the number of applications
//! grows exponentially with the instance's depth, so a 150-byte request can otherwise take
//! minutes and gigabytes. This walk follows every applicator the validator may follow — all
//! branches of `anyOf`/`oneOf`, `not`, `if`/`then`/`else`, `contains`, pattern and
//! unevaluated keywords included — counting (subschema, instance location) applications, and
//! stops as soon as the count passes the budget.

use super::count::SchemaIndex;
use super::keywords::Keywords;
use jsonschema::Draft;
use serde_json::{Map, Value};

/// The most subschema applications one validation may need.
pub const MAX_APPLICATIONS: usize = 1_000_000;

/// The walk passed its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

struct Walk<'s> {
    root: &'s Value,
    index: &'s SchemaIndex,
    budget: usize,
    spent: usize,
    stack: Vec<(*const Value, *const Value)>,
}

/// How many subschema applications validating `instance` takes (at most `budget`), or
/// [`OverBudget`].
pub fn applications(
    schema: &Value,
    index: &SchemaIndex,
    instance: &Value,
    budget: usize,
) -> Result<usize, OverBudget> {
    let mut walk = Walk {
        root: schema,
        index,
        budget,
        spent: 0,
        stack: Vec::new(),
    };
    walk.node(schema, instance)?;
    Ok(walk.spent)
}

impl<'s> Walk<'s> {
    fn node(&mut self, schema: &'s Value, instance: &Value) -> Result<(), OverBudget> {
        self.spent += 1;
        if self.spent > self.budget {
            return Err(OverBudget);
        }
        let Value::Object(map) = schema else {
            return Ok(());
        };
        let key = (schema as *const Value, instance as *const Value);
        if self.stack.contains(&key) {
            return Ok(());
        }
        self.stack.push(key);
        let result = self.object(map, instance);
        self.stack.pop();
        result
    }

    fn each(&mut self, subs: Option<&'s Value>, instance: &Value) -> Result<(), OverBudget> {
        match subs {
            Some(Value::Array(list)) => {
                for sub in list {
                    self.node(sub, instance)?;
                }
                Ok(())
            }
            Some(sub) => self.node(sub, instance),
            None => Ok(()),
        }
    }

    fn reference(&mut self, target: Option<&'s Value>, instance: &Value) -> Result<(), OverBudget> {
        match target {
            Some(t) => self.node(t, instance),
            None => Ok(()),
        }
    }

    fn object(&mut self, map: &'s Map<String, Value>, instance: &Value) -> Result<(), OverBudget> {
        let k = Keywords::of(map);
        if let Some(Value::String(r)) = k.reference {
            self.reference(self.index.resolve(self.root, r), instance)?;
            if matches!(
                self.index.draft(),
                Draft::Draft4 | Draft::Draft6 | Draft::Draft7
            ) {
                return Ok(());
            }
        }
        for dynamic in [k.dynamic_ref, k.recursive_ref] {
            if let Some(Value::String(r)) = dynamic {
                self.reference(self.index.resolve_dynamic(self.root, r), instance)?;
            }
        }
        for subs in [k.all_of, k.any_of, k.one_of, k.not, k.if_, k.then, k.else_] {
            self.each(subs, instance)?;
        }
        match instance {
            Value::Array(items) => self.array(&k, items),
            Value::Object(obj) => self.properties(&k, instance, obj),
            _ => Ok(()),
        }
    }

    fn array(&mut self, k: &Keywords<'s>, items: &[Value]) -> Result<(), OverBudget> {
        for (i, item) in items.iter().enumerate() {
            for list in [k.prefix_items, k.items] {
                match list {
                    Some(Value::Array(prefix)) => {
                        if let Some(sub) = prefix.get(i) {
                            self.node(sub, item)?;
                        }
                    }
                    Some(sub) => self.node(sub, item)?,
                    None => {}
                }
            }
            for sub in [k.additional_items, k.contains, k.unevaluated_items]
                .into_iter()
                .flatten()
            {
                self.node(sub, item)?;
            }
        }
        Ok(())
    }

    fn properties(
        &mut self,
        k: &Keywords<'s>,
        instance: &Value,
        obj: &Map<String, Value>,
    ) -> Result<(), OverBudget> {
        for deps in [k.dependent_schemas, k.dependencies] {
            if let Some(Value::Object(deps)) = deps {
                for (name, dep) in deps {
                    if obj.contains_key(name) && dep.is_object() {
                        self.node(dep, instance)?;
                    }
                }
            }
        }
        let declared = k.properties.and_then(Value::as_object);
        let patterns = k.pattern_properties.and_then(Value::as_object);
        for (name, value) in obj {
            if let Some(sub) = declared.and_then(|p| p.get(name)) {
                self.node(sub, value)?;
            }
            // Every pattern may match: an upper bound of the work.
            for sub in patterns.into_iter().flat_map(|p| p.values()) {
                self.node(sub, value)?;
            }
            for sub in [k.additional_properties, k.unevaluated_properties]
                .into_iter()
                .flatten()
            {
                self.node(sub, value)?;
            }
            if let Some(sub) = k.property_names {
                // Applied to the key, a string: one application.
                self.spent += 1;
                if sub.is_object() && self.spent > self.budget {
                    return Err(OverBudget);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cost(schema: Value, instance: Value) -> Result<usize, OverBudget> {
        let index = SchemaIndex::build(&schema, Draft::Draft202012, false);
        applications(&schema, &index, &instance, 100_000)
    }

    #[test]
    fn linear_schemas_cost_about_the_instance_size() {
        let schema = json!({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}});
        let items: Vec<Value> = (0..1000).map(|i| json!({"a": i})).collect();
        let n = cost(schema, Value::Array(items)).expect("within budget");
        assert!((2000..=3000).contains(&n), "{n}");
    }

    #[test]
    fn recursive_combinators_are_over_budget() {
        let schema = json!({"type": "array", "items": {"anyOf": [{"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"}]}});
        let mut deep = json!(1);
        for _ in 0..14 {
            deep = json!([deep]);
        }
        assert_eq!(cost(schema, deep), Err(OverBudget));
    }

    #[test]
    fn self_references_terminate() {
        assert!(cost(json!({"$ref": "#"}), json!({"a": [1, 2, 3]})).is_ok());
    }
}
