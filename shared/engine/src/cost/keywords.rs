//! Every keyword the pinned validator (jsonschema 0.61) compiles, by draft, and how the cost
//! model prices it.
//!
//! A keyword the validator runs but the model does not price is work nobody paid for (issue 35:
//! `contentMediaType` parsed a 60 KB string at each of 1,600 applications, 35× the unpaid
//! ceiling, priced as nothing). `shared/engine/tests/keyword_prices.rs` reads the validator's own
//! keyword table from its source and fails for any (draft, keyword) it compiles that is not
//! listed here, so an upgrade of jsonschema cannot add unpriced work silently.

use jsonschema::Draft;

/// How the model prices a keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pricing {
    /// Applies subschemas: the walk follows it and prices every (subschema, value) pair.
    Applicator,
    /// Asserts something of the value: priced per application from what it scans.
    Assertion,
    /// Priced with another keyword of the same schema object (`minContains` with `contains`,
    /// `then`/`else` with `if`).
    WithParent(&'static str),
    /// Compiles to a validator that asserts nothing and scans nothing (an annotation): only
    /// the per-keyword share of its application.
    Annotation,
}

/// One keyword: where the validator compiles it and how it is priced.
#[derive(Debug, Clone, Copy)]
pub struct KeywordPrice {
    pub name: &'static str,
    pub drafts: &'static [Draft],
    pub pricing: Pricing,
    /// What the price is computed from.
    pub priced_from: &'static str,
}

const ALL: &[Draft] = &[
    Draft::Draft4,
    Draft::Draft6,
    Draft::Draft7,
    Draft::Draft201909,
    Draft::Draft202012,
];
const FROM_6: &[Draft] = &[
    Draft::Draft6,
    Draft::Draft7,
    Draft::Draft201909,
    Draft::Draft202012,
];
const FROM_7: &[Draft] = &[Draft::Draft7, Draft::Draft201909, Draft::Draft202012];
const FROM_2019: &[Draft] = &[Draft::Draft201909, Draft::Draft202012];
const DRAFTS_6_7: &[Draft] = &[Draft::Draft6, Draft::Draft7];
const ONLY_2019: &[Draft] = &[Draft::Draft201909];
const ONLY_2020: &[Draft] = &[Draft::Draft202012];

const fn kw(
    name: &'static str,
    drafts: &'static [Draft],
    pricing: Pricing,
    priced_from: &'static str,
) -> KeywordPrice {
    KeywordPrice {
        name,
        drafts,
        pricing,
        priced_from,
    }
}

use Pricing::{Annotation, Applicator, Assertion, WithParent};

/// The table.
pub const KEYWORDS: &[KeywordPrice] = &[
    kw(
        "$ref",
        ALL,
        Applicator,
        "the target applied in place (a bundled meta-schema per value)",
    ),
    kw(
        "$recursiveRef",
        ONLY_2019,
        Applicator,
        "every target it may resolve to",
    ),
    kw(
        "$dynamicRef",
        ONLY_2020,
        Applicator,
        "every target it may resolve to",
    ),
    kw("allOf", ALL, Applicator, "each branch applied in place"),
    kw("anyOf", ALL, Applicator, "every branch applied in place"),
    kw("oneOf", ALL, Applicator, "every branch applied in place"),
    kw("not", ALL, Applicator, "its subschema applied in place"),
    kw("if", FROM_7, Applicator, "its subschema applied in place"),
    kw(
        "then",
        FROM_7,
        WithParent("if"),
        "its subschema applied in place",
    ),
    kw(
        "else",
        FROM_7,
        WithParent("if"),
        "its subschema applied in place",
    ),
    kw(
        "dependencies",
        ALL,
        Applicator,
        "its schemas applied in place, its name lists looked up",
    ),
    kw(
        "dependentSchemas",
        FROM_2019,
        Applicator,
        "its schemas applied in place",
    ),
    kw(
        "dependentRequired",
        FROM_2019,
        Assertion,
        "one lookup per listed name",
    ),
    kw(
        "properties",
        ALL,
        Applicator,
        "one lookup per declared and present property; each present value",
    ),
    kw(
        "patternProperties",
        ALL,
        Applicator,
        "every pattern matched against every key; every value",
    ),
    kw(
        "additionalProperties",
        ALL,
        Applicator,
        "one lookup per key; every value",
    ),
    kw(
        "unevaluatedProperties",
        FROM_2019,
        Applicator,
        "every value, and the in-place applicators again",
    ),
    kw("propertyNames", FROM_6, Applicator, "every key as a string"),
    kw("items", ALL, Applicator, "every item"),
    kw("prefixItems", ONLY_2020, Applicator, "the items it covers"),
    kw("additionalItems", ALL, Applicator, "every item"),
    kw("contains", FROM_6, Applicator, "every item"),
    kw(
        "minContains",
        FROM_2019,
        WithParent("contains"),
        "the count `contains` keeps",
    ),
    kw(
        "maxContains",
        FROM_2019,
        WithParent("contains"),
        "the count `contains` keeps",
    ),
    kw(
        "unevaluatedItems",
        FROM_2019,
        Applicator,
        "every item, and the in-place applicators again",
    ),
    kw("type", ALL, Assertion, "one comparison"),
    kw(
        "enum",
        ALL,
        Assertion,
        "jsonschema's comparison strategy over the candidates' bytes",
    ),
    kw(
        "const",
        FROM_6,
        Assertion,
        "a comparison over the candidate's bytes",
    ),
    kw("minimum", ALL, Assertion, "one comparison"),
    kw("maximum", ALL, Assertion, "one comparison"),
    kw("exclusiveMinimum", FROM_6, Assertion, "one comparison"),
    kw("exclusiveMaximum", FROM_6, Assertion, "one comparison"),
    kw("multipleOf", ALL, Assertion, "one division"),
    kw(
        "minLength",
        ALL,
        Assertion,
        "the string's bytes (characters are counted)",
    ),
    kw(
        "maxLength",
        ALL,
        Assertion,
        "the string's bytes (characters are counted)",
    ),
    kw(
        "pattern",
        ALL,
        Assertion,
        "the pattern's compiled automaton over the string's bytes",
    ),
    kw(
        "format",
        ALL,
        Assertion,
        "the string's bytes, when formats are asserted",
    ),
    kw("minItems", ALL, Assertion, "one comparison"),
    kw("maxItems", ALL, Assertion, "one comparison"),
    kw(
        "uniqueItems",
        ALL,
        Assertion,
        "the array's canonical bytes per compared item",
    ),
    kw("minProperties", ALL, Assertion, "one comparison"),
    kw("maxProperties", ALL, Assertion, "one comparison"),
    kw("required", ALL, Assertion, "one lookup per listed name"),
    kw(
        "contentMediaType",
        DRAFTS_6_7,
        Assertion,
        "the string decoded and parsed as JSON at every application (bytes, and the parsed tree's memory)",
    ),
    kw(
        "contentEncoding",
        DRAFTS_6_7,
        Assertion,
        "the string decoded at every application (bytes, and the decoded copy's memory)",
    ),
    kw(
        "contentMediaType",
        FROM_2019,
        Annotation,
        "an annotation from 2019-09 on",
    ),
    kw(
        "contentEncoding",
        FROM_2019,
        Annotation,
        "an annotation from 2019-09 on",
    ),
    kw(
        "contentSchema",
        FROM_2019,
        Annotation,
        "an annotation from 2019-09 on",
    ),
];

/// How `name` is priced in `draft`, if the model knows it there.
pub fn pricing(draft: Draft, name: &str) -> Option<&'static KeywordPrice> {
    KEYWORDS
        .iter()
        .find(|k| k.name == name && k.drafts.contains(&draft))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_keyword_has_one_pricing_per_draft() {
        for k in KEYWORDS {
            for d in k.drafts {
                let found = KEYWORDS
                    .iter()
                    .filter(|o| o.name == k.name && o.drafts.contains(d))
                    .count();
                assert_eq!(found, 1, "{} in {d:?}", k.name);
            }
        }
        assert_eq!(
            pricing(Draft::Draft7, "contentMediaType").map(|k| k.pricing),
            Some(Pricing::Assertion)
        );
        assert_eq!(
            pricing(Draft::Draft202012, "contentMediaType").map(|k| k.pricing),
            Some(Pricing::Annotation)
        );
        assert!(pricing(Draft::Draft4, "const").is_none());
    }
}
