//! What the discovery package carries. The documents whose examples are the engine's signed
//! answers (`/llms-full.txt`, `/.well-known/x402.json`) are served by the verify function, so
//! the discovery binary must not link the schema engine (with them it did: 5.8 MB zipped).

#[test]
fn the_discovery_binary_does_not_link_the_schema_engine() {
    function_common::linked_code::assert_no_schema_engine(
        "discovery",
        env!("CARGO_BIN_EXE_discovery"),
    );
}
