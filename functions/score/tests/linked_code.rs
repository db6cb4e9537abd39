//! What the score package carries. The score function compiles no caller's schema, so its
//! binary must not link the schema engine (when the init's warm-up was chosen by a runtime
//! value, the engine came back into score through it, 5.1 MB zipped instead of 3.8).

use function_common::linked_code::{SCHEMA_ENGINE, assert_links_none_of};

#[test]
fn the_score_binary_does_not_link_the_schema_engine() {
    assert_links_none_of("score", env!("CARGO_BIN_EXE_score"), &SCHEMA_ENGINE);
}
