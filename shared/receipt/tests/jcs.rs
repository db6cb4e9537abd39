//! RFC 8785 (JCS) conformance of `verifier_receipt::canonical::to_jcs`: the cyberphone test data
//! (input → output bytes and their hex form) and 20,000 ES6 number serializations.

use serde_json::Value;
use std::path::{Path, PathBuf};
use verifier_receipt::canonical::to_jcs;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/jcs/testdata")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn parse_hex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|pair| {
            u8::from_str_radix(pair, 16).unwrap_or_else(|e| panic!("bad hex byte {pair:?}: {e}"))
        })
        .collect()
}

#[test]
fn every_input_file_canonicalizes_to_its_output_and_outhex() {
    let mut names: Vec<String> = std::fs::read_dir(testdata().join("input"))
        .expect("the jcs input directory is present")
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "arrays.json",
            "french.json",
            "structures.json",
            "unicode.json",
            "values.json",
            "weird.json"
        ],
        "the six RFC 8785 sample files"
    );
    for name in &names {
        let input =
            String::from_utf8(read(&testdata().join("input").join(name))).expect("input is UTF-8");
        let value: Value =
            serde_json::from_str(&input).unwrap_or_else(|e| panic!("{name}: input parses: {e}"));
        let ours = to_jcs(&value).unwrap_or_else(|e| panic!("{name}: canonicalizes: {e}"));

        let expected = read(&testdata().join("output").join(name));
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&expected),
            "{name}: canonical bytes differ from output/{name}"
        );
        assert_eq!(ours, expected, "{name}: canonical bytes (exact)");

        let hex_name = name.replace(".json", ".txt");
        let hex_text = String::from_utf8(read(&testdata().join("outhex").join(&hex_name)))
            .expect("outhex is ASCII");
        let from_hex = parse_hex(&hex_text);
        assert!(!from_hex.is_empty(), "{hex_name} holds bytes");
        assert_eq!(
            ours, from_hex,
            "{name}: canonical bytes differ from outhex/{hex_name}"
        );

        // Canonical form is a fixed point.
        let again: Value = serde_json::from_slice(&ours).expect("canonical output parses");
        assert_eq!(
            to_jcs(&again).expect("canonicalizes again"),
            ours,
            "{name}: idempotent"
        );
    }
}

#[test]
fn es6_number_serialization_matches_20k_vectors() {
    let text = String::from_utf8(read(&testdata().join("es6-numbers-20k.txt"))).expect("ASCII");
    let mut checked = 0usize;
    let mut skipped = 0usize;
    let mut mismatches = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let (hex_bits, expected) = line
            .split_once(',')
            .unwrap_or_else(|| panic!("line {}: no comma", n + 1));
        let bits = u64::from_str_radix(hex_bits, 16)
            .unwrap_or_else(|e| panic!("line {}: bad hex: {e}", n + 1));
        let f = f64::from_bits(bits);
        if !f.is_finite() {
            skipped += 1;
            continue;
        }
        let value = Value::from(f);
        assert!(
            value.is_number(),
            "line {}: a finite double is a JSON number",
            n + 1
        );
        let ours = String::from_utf8(to_jcs(&value).expect("a finite number canonicalizes"))
            .expect("UTF-8");
        if ours != expected {
            mismatches.push(format!(
                "line {}: {hex_bits}: got {ours}, expected {expected}",
                n + 1
            ));
        }

        // The expected text parsed back (float_roundtrip) canonicalizes to itself.
        let reparsed: Value = serde_json::from_str(expected)
            .unwrap_or_else(|e| panic!("line {}: reparse: {e}", n + 1));
        let round = String::from_utf8(to_jcs(&reparsed).expect("canonicalizes")).expect("UTF-8");
        if round != expected {
            mismatches.push(format!(
                "line {}: {expected} reparsed canonicalizes to {round}",
                n + 1
            ));
        }
        checked += 1;
    }
    println!("es6 numbers: {checked} checked, {skipped} non-finite skipped");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert_eq!(checked + skipped, 20_000, "every line of the file was read");
    assert_eq!(checked, 20_000, "the file holds no NaN or infinity");
}

#[test]
fn es6_sample_lines_from_the_readme() {
    for (bits, expected) in [
        (0x4340000000000001u64, "9007199254740994"),
        (0x4340000000000002, "9007199254740996"),
        (0x444b1ae4d6e2ef50, "1e+21"),
        (0x3eb0c6f7a0b5ed8d, "0.000001"),
        (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
        (0x8000000000000000, "0"),
        (0, "0"),
    ] {
        let ours = to_jcs(&Value::from(f64::from_bits(bits))).expect("canonicalizes");
        assert_eq!(
            String::from_utf8(ours).expect("UTF-8"),
            expected,
            "{bits:016x}"
        );
    }
}
