//! What a function's binary links, for the tests that keep the schema engine (and, for
//! discovery, the DynamoDB client) out of the packages that do not need them (issue 17's 4 MB package target rests on it). A release build
//! shows it as the Lambda build does: the linker keeps only reachable code, and each crate's
//! code leaves its source path (panic locations) in the binary.

/// Whether `binary` contains `needle`.
pub fn contains(binary: &[u8], needle: &str) -> bool {
    binary
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// The schema engine's crates, by the source paths their code leaves.
pub const SCHEMA_ENGINE: [&str; 2] = ["jsonschema-", "fancy-regex-"];

/// Panic unless the binary at `path` (function `name`) has crate source paths at all (it links
/// the SSM client, as every function does) and none of `crates` (source path prefixes such as
/// [`SCHEMA_ENGINE`]'s).
pub fn assert_links_none_of(name: &str, path: &str, crates: &[&str]) {
    let binary = std::fs::read(path).unwrap_or_else(|e| panic!("the {name} binary {path}: {e}"));
    // Without paths of crates the function does link, the check below would prove nothing.
    assert!(
        contains(&binary, "aws-sdk-ssm-"),
        "no crate source paths in the {name} binary"
    );
    for unwanted in crates {
        assert!(
            !contains(&binary, unwanted),
            "the {name} binary links {unwanted}…: code reachable from its init or routes uses it"
        );
    }
}
