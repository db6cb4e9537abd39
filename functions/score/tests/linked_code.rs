//! What the score package carries. The score function compiles no caller's schema, so its
//! binary must not link the schema engine: issue 17's 4 MB package target rests on it (when
//! the init's warm-up was chosen by a runtime value, the engine came back into score through
//! it, 5.1 MB zipped instead of 3.8). The release test build shows it as the Lambda build
//! does: the linker keeps only reachable code, and each crate's code leaves its source path
//! (panic locations) in the binary.

/// Whether `haystack` contains `needle`.
fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[test]
fn the_score_binary_does_not_link_the_schema_engine() {
    let binary = std::fs::read(env!("CARGO_BIN_EXE_score")).expect("the score binary");
    // A crate score does link leaves its path: without it the check below would prove nothing.
    assert!(
        contains(&binary, "aws-sdk-dynamodb-"),
        "no crate source paths in the score binary"
    );
    for engine in ["jsonschema-0.", "fancy-regex-"] {
        assert!(
            !contains(&binary, engine),
            "the score binary links {engine}…: code reachable from its init or routes compiles schemas"
        );
    }
}
