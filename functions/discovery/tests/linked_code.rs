//! What the discovery package carries. The documents whose examples are the engine's signed
//! answers (`/llms-full.txt`, `/.well-known/x402.json`) are served by the verify function, and
//! discovery's init builds no table client (`WithoutTable`), so its binary links neither the
//! schema engine nor the DynamoDB client (with both it was 5.8 MB zipped; without, 4.1).

use function_common::linked_code::{SCHEMA_ENGINE, assert_links_none_of};

#[test]
fn the_discovery_binary_links_neither_the_schema_engine_nor_the_table_client() {
    let [jsonschema, fancy_regex] = SCHEMA_ENGINE;
    assert_links_none_of(
        "discovery",
        env!("CARGO_BIN_EXE_discovery"),
        &[jsonschema, fancy_regex, "aws-sdk-dynamodb-"],
    );
}
