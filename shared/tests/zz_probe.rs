use serde_json::{json, Value, Map};
use std::time::Instant;
use verifier_core::{VerifyRequest, Engine, EngineConfig, SigningIdentity};
#[test]
fn probe() {
    for n in [10usize, 15, 20, 22, 24] {
        let mut defs = Map::new();
        for i in 0..n {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(format!("d{i}"), json!({"allOf": [{"$ref": next}, {"$ref": next}]}));
        }
        defs.insert(format!("d{n}"), json!({"type": "integer", "minimum": 5}));
        let schema = json!({"$defs": defs, "$ref": "#/$defs/d0"});
        for out in [json!(7), json!(1)] {
        let e = Engine::new(EngineConfig::default());
        let s = SigningIdentity::from_seed("t", &[1;32]).unwrap();
        let r = VerifyRequest::from_value(json!({"task_id":"a","expected_schema":schema.clone(),"submitted_output":out})).unwrap();
        let t = Instant::now();
        let v = e.verify(&r, &s, time::OffsetDateTime::now_utc());
        match v { Ok(v) => { let b: Value = serde_json::from_slice(&v.body).unwrap(); println!("n={n} {:?} {} {} errors_total={}", t.elapsed(), b["result"], b["schema_compliance"], b["errors_total"]); }
        Err(e) => println!("n={n} {:?} ERR {e:?}", t.elapsed()) }
        }
    }
}
