//! The keywords of one schema object, read in a single pass over its members.
//!
//! The counting and cost walks ask a schema node for some forty keywords; asking the map for
//! each one hashes the keyword every time. One pass over the node's few members with a `match`
//! finds them all at once.

use serde_json::{Map, Value};

/// The keywords the walks look at; `None` where the schema object does not have one.
#[derive(Default)]
pub struct Keywords<'s> {
    pub reference: Option<&'s Value>,
    pub dynamic_ref: Option<&'s Value>,
    pub recursive_ref: Option<&'s Value>,
    pub all_of: Option<&'s Value>,
    pub any_of: Option<&'s Value>,
    pub one_of: Option<&'s Value>,
    pub not: Option<&'s Value>,
    pub if_: Option<&'s Value>,
    pub then: Option<&'s Value>,
    pub else_: Option<&'s Value>,
    pub type_: Option<&'s Value>,
    pub enum_: Option<&'s Value>,
    pub const_: Option<&'s Value>,
    pub minimum: Option<&'s Value>,
    pub maximum: Option<&'s Value>,
    pub multiple_of: Option<&'s Value>,
    pub exclusive_minimum: Option<&'s Value>,
    pub exclusive_maximum: Option<&'s Value>,
    pub min_length: Option<&'s Value>,
    pub max_length: Option<&'s Value>,
    pub pattern: Option<&'s Value>,
    pub format: Option<&'s Value>,
    pub prefix_items: Option<&'s Value>,
    pub items: Option<&'s Value>,
    pub additional_items: Option<&'s Value>,
    pub contains: Option<&'s Value>,
    pub unevaluated_items: Option<&'s Value>,
    pub min_items: Option<&'s Value>,
    pub max_items: Option<&'s Value>,
    pub unique_items: Option<&'s Value>,
    pub min_properties: Option<&'s Value>,
    pub max_properties: Option<&'s Value>,
    pub required: Option<&'s Value>,
    pub dependent_required: Option<&'s Value>,
    pub dependencies: Option<&'s Value>,
    pub dependent_schemas: Option<&'s Value>,
    pub properties: Option<&'s Value>,
    pub pattern_properties: Option<&'s Value>,
    pub additional_properties: Option<&'s Value>,
    pub unevaluated_properties: Option<&'s Value>,
    pub property_names: Option<&'s Value>,
    pub content_media_type: Option<&'s Value>,
    pub content_encoding: Option<&'s Value>,
    pub content_schema: Option<&'s Value>,
}

impl<'s> Keywords<'s> {
    /// Read a schema object's keywords; members that are not keywords the walks use are skipped.
    pub fn of(map: &'s Map<String, Value>) -> Self {
        let mut k = Keywords::default();
        for (name, value) in map {
            let slot = match name.as_str() {
                "$ref" => &mut k.reference,
                "$dynamicRef" => &mut k.dynamic_ref,
                "$recursiveRef" => &mut k.recursive_ref,
                "allOf" => &mut k.all_of,
                "anyOf" => &mut k.any_of,
                "oneOf" => &mut k.one_of,
                "not" => &mut k.not,
                "if" => &mut k.if_,
                "then" => &mut k.then,
                "else" => &mut k.else_,
                "type" => &mut k.type_,
                "enum" => &mut k.enum_,
                "const" => &mut k.const_,
                "minimum" => &mut k.minimum,
                "maximum" => &mut k.maximum,
                "multipleOf" => &mut k.multiple_of,
                "exclusiveMinimum" => &mut k.exclusive_minimum,
                "exclusiveMaximum" => &mut k.exclusive_maximum,
                "minLength" => &mut k.min_length,
                "maxLength" => &mut k.max_length,
                "pattern" => &mut k.pattern,
                "format" => &mut k.format,
                "prefixItems" => &mut k.prefix_items,
                "items" => &mut k.items,
                "additionalItems" => &mut k.additional_items,
                "contains" => &mut k.contains,
                "unevaluatedItems" => &mut k.unevaluated_items,
                "minItems" => &mut k.min_items,
                "maxItems" => &mut k.max_items,
                "uniqueItems" => &mut k.unique_items,
                "minProperties" => &mut k.min_properties,
                "maxProperties" => &mut k.max_properties,
                "required" => &mut k.required,
                "dependentRequired" => &mut k.dependent_required,
                "dependencies" => &mut k.dependencies,
                "dependentSchemas" => &mut k.dependent_schemas,
                "properties" => &mut k.properties,
                "patternProperties" => &mut k.pattern_properties,
                "additionalProperties" => &mut k.additional_properties,
                "unevaluatedProperties" => &mut k.unevaluated_properties,
                "propertyNames" => &mut k.property_names,
                "contentMediaType" => &mut k.content_media_type,
                "contentEncoding" => &mut k.content_encoding,
                "contentSchema" => &mut k.content_schema,
                _ => continue,
            };
            *slot = Some(value);
        }
        k
    }

    /// Every slot, found or not.
    pub fn slots(&self) -> [Option<&'s Value>; 44] {
        [
            self.reference,
            self.dynamic_ref,
            self.recursive_ref,
            self.all_of,
            self.any_of,
            self.one_of,
            self.not,
            self.if_,
            self.then,
            self.else_,
            self.type_,
            self.enum_,
            self.const_,
            self.minimum,
            self.maximum,
            self.multiple_of,
            self.exclusive_minimum,
            self.exclusive_maximum,
            self.min_length,
            self.max_length,
            self.pattern,
            self.format,
            self.prefix_items,
            self.items,
            self.additional_items,
            self.contains,
            self.unevaluated_items,
            self.min_items,
            self.max_items,
            self.unique_items,
            self.min_properties,
            self.max_properties,
            self.required,
            self.dependent_required,
            self.dependencies,
            self.dependent_schemas,
            self.properties,
            self.pattern_properties,
            self.additional_properties,
            self.unevaluated_properties,
            self.property_names,
            self.content_media_type,
            self.content_encoding,
            self.content_schema,
        ]
    }

    /// Whether the walks read the keyword `name` (a schema object of that one member fills a slot).
    pub fn reads(name: &str) -> bool {
        let mut map = Map::new();
        map.insert(name.to_owned(), Value::Bool(true));
        Keywords::of(&map).slots().iter().any(Option::is_some)
    }
}

impl Keywords<'_> {
    /// Whether the schema object applies no subschema: it only asserts things of the value.
    pub fn is_leaf(&self) -> bool {
        [
            self.reference,
            self.dynamic_ref,
            self.recursive_ref,
            self.all_of,
            self.any_of,
            self.one_of,
            self.not,
            self.if_,
            self.then,
            self.else_,
            self.prefix_items,
            self.items,
            self.additional_items,
            self.contains,
            self.unevaluated_items,
            self.dependent_schemas,
            self.dependencies,
            self.properties,
            self.pattern_properties,
            self.additional_properties,
            self.unevaluated_properties,
            self.property_names,
        ]
        .iter()
        .all(Option::is_none)
    }
}

/// How many of `values` are present.
pub fn present(values: &[Option<&Value>]) -> usize {
    values.iter().filter(|v| v.is_some()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_keyword_is_found_and_others_are_skipped() {
        let schema = json!({"type": "object", "properties": {"a": {}}, "x-note": 1, "$ref": "#"});
        let map = schema.as_object().expect("object");
        let k = Keywords::of(map);
        assert_eq!(k.type_, Some(&json!("object")));
        assert_eq!(k.reference, Some(&json!("#")));
        assert!(k.properties.is_some());
        assert!(k.items.is_none());
        assert_eq!(present(&[k.type_, k.enum_, k.reference]), 2);
    }
}
