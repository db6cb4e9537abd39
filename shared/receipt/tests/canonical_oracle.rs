//! Our RFC 8785 writer against the reference crate `serde_json_canonicalizer` on random
//! documents (keys with characters above U+FFFF, control characters, every number shape).

use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use verifier_receipt::canonical::value_to_jcs;

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53)..(1i64 << 53)).prop_map(|i| Value::Number(i.into())),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| Value::Number(Number::from_f64(f).unwrap_or_else(|| 0.into()))),
        "[\\u{0}-\\u{7f}\\u{e9}\\u{2028}\\u{fb33}\\u{1f602}]{0,12}".prop_map(Value::String),
    ]
}

fn document() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                ("[a-z\\u{e9}\\u{fb33}\\u{1f602}\\u{10000}]{0,4}", inner),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn matches_the_reference_canonicalizer(doc in document()) {
        let reference = serde_json_canonicalizer::to_vec(&doc).expect("reference canonicalizes");
        prop_assert_eq!(value_to_jcs(&doc), reference);
    }
}
