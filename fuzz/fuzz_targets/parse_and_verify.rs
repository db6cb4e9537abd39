//! Request parsing plus the engine: arbitrary bytes as a verification request body go through
//! `Engine::parse`; every request that parses is verified and signed. Nothing may panic, and
//! a parsed request must verify or be refused as invalid (`EngineError::Invalid`, a 400, e.g.
//! a schema that does not compile): any other `EngineError` is an internal failure, a 500.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use time::macros::datetime;
use verifier_engine::{Engine, EngineConfig, EngineError, SigningIdentity};

struct Fixture {
    engine: Engine,
    signer: SigningIdentity,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| Fixture {
        // A small cache, so eviction is exercised too.
        engine: Engine::new(EngineConfig {
            cache_bytes: 4 << 20,
            ..EngineConfig::default()
        }),
        signer: SigningIdentity::from_seed("fuzz", &[7u8; 32]).expect("seed"),
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    if let Ok(req) = f.engine.parse(data) {
        let now = datetime!(2026-12-03 12:00:00.123456 UTC);
        match f.engine.verify(&req, &f.signer, now) {
            Ok(v) => assert!(!v.body.is_empty(), "an empty response body"),
            Err(EngineError::Invalid(_)) => {}
            Err(e) => panic!("a request that parsed failed to verify (a 500): {e:?}"),
        }
    }
});
