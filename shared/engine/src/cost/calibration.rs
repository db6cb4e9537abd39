//! The cost model's constants: what one unit of work costs on the reference machine.
//!
//! Measured on the project's machine (2 vCPU Intel Xeon VM, release build, `cargo run --release
//! -p verifier-engine --example calibrate` prints the ratios again) and then raised by a margin of
//! about 2–3×, so that a slow moment of the machine still stays under the estimate. The
//! `estimates_bound_the_real_work` test (`shared/engine/tests/cost_bound.rs`) runs every case of the
//! JSON-Schema-Test-Suite and of the adversarial corpus and fails if the measured CPU time or
//! allocated memory of a verification ever passes its estimate.
//!
//! Each constant says what was measured.

/// A fixed verification whose CPU time tells how fast a machine is against the reference
/// machine (the calibrate example and the cost tests time it; [`REFERENCE_PROBE_NS`]): a
/// schema of properties, items, a pattern and a minimum over 200 items, one rule.
pub fn speed_probe_body() -> Vec<u8> {
    let items: Vec<serde_json::Value> = (0..200)
        .map(|i| serde_json::json!({"id": format!("item-{i}"), "qty": i}))
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "task_id": "speed-probe",
        "expected_schema": {"type": "object", "properties": {"items": {"type": "array",
            "items": {"type": "object", "required": ["id", "qty"], "properties": {
                "id": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"},
                "qty": {"type": "integer", "minimum": 0}}}}}},
        "submitted_output": {"items": items},
        "rules": [{"type": "unique", "field": "items[].id"}],
    }))
    .unwrap_or_default()
}

/// The speed probe's CPU time (compile, price, checks, receipt) on the reference machine, the least
/// of its runs when this constant was set (225–229 µs over three runs of the calibrate
/// example).
pub const REFERENCE_PROBE_NS: u64 = 225_000;

/// Fixed cost of one verification besides its parts: request bookkeeping, the report, the
/// signing document and the Ed25519 signature of a small response (measured 28 µs for the
/// whole hosted invoice example, signature 13 µs).
pub const REQUEST_BASE_NS: u64 = 60_000;
/// Checking a key-based agent's signature: a generous ceiling for one secp256k1 recovery or
/// one Ed25519 verification (tens of microseconds each).
pub const AGENT_SIGNATURE_NS: u64 = 150_000;
/// Fixed memory of one verification (response, findings heaps, signing buffers).
pub const REQUEST_BASE_BYTES: u64 = 256 << 10;

/// Strict parsing, per body byte (measured 3–6 ns).
pub const PARSE_NS_PER_BYTE: u64 = 15;
/// Writing RFC 8785 bytes and hashing them with SHA-256, per byte (measured 3–4 ns; the
/// output and schema are hashed twice: on their own and inside the request document).
pub const JCS_NS_PER_BYTE: u64 = 6;
/// Signing and serializing the response, per byte of lists in it (serialized twice, JSON and
/// RFC 8785, and hashed by the signature: measured ~4 ns).
pub const RESPONSE_NS_PER_BYTE: u64 = 6;
/// Bytes one reported finding adds to the response's four lists, besides its location
/// (written about five times).
pub const RESPONSE_BYTES_PER_FINDING: u64 = 500;

/// Compiling a schema with jsonschema, per schema node, patterns apart (measured ~500 ns on a
/// schema of 1,000 properties).
pub const COMPILE_NS_PER_NODE: u64 = 1_200;
/// Compiling a schema, per byte of its canonical text (strings and enum data are copied).
pub const COMPILE_NS_PER_SCHEMA_BYTE: u64 = 8;
/// Fixed cost of a compile (measured ~25 µs for a tiny schema; up to ~120 µs for small schemas
/// with dynamic references, which register every scope).
pub const COMPILE_BASE_NS: u64 = 150_000;
/// Memory a compiled validator holds, per byte of the schema's parsed tree (validator nodes,
/// locations, the index and the kept copy of the schema).
pub const COMPILE_BYTES_PER_TREE_BYTE: u64 = 6;

/// Compiling a schema whose `$ref` leads to a bundled meta-schema (jsonschema compiles the
/// meta-schema along: measured ~1 ms).
pub const EXTERNAL_REF_COMPILE_NS: u64 = 3_000_000;
pub const EXTERNAL_REF_COMPILE_BYTES: u64 = 2 << 20;
/// Applying a bundled meta-schema, per value of what it applies to.
pub const EXTERNAL_REF_NS_PER_VALUE: u64 = 20_000;

/// One application of a subschema to one value: jsonschema's `is_valid` (measured 9 ns), the
/// check-counting walk (measured 45 ns) and this cost walk.
pub const APPLICATION_NS: u64 = 150;
/// One keyword of a subschema looked at during an application.
pub const KEYWORD_NS: u64 = 8;
/// One property looked up or compared (`properties`, `required`, `additionalProperties`).
pub const LOOKUP_NS: u64 = 40;
/// Counting characters (`minLength`, `maxLength`), per byte.
pub const CHARS_NS_PER_BYTE: u64 = 2;
/// A `format` check, per byte of the string (worst measured: `regex` and `idn-hostname`, 8 ns).
pub const FORMAT_NS_PER_BYTE: u64 = 25;
/// A `format` check, fixed part.
pub const FORMAT_BASE_NS: u64 = 1_500;
/// Memory a `format: regex` check keeps per byte of the string (jsonschema caches each one).
pub const FORMAT_REGEX_BYTES_PER_BYTE: u64 = 3;
/// `multipleOf` when the quotient is not an integer division: the number and the multiple
/// split into decimal mantissa and exponent (measured up to 370 ns with its error).
pub const MULTIPLE_OF_DECIMAL_NS: u64 = 1_000;
/// `multipleOf` when either magnitude is beyond what that split holds: exact fractions of big
/// integers (measured 270–640 ns for 1e-300 and 5e-324; 1.9 µs for 0.1 against 1.7e308).
pub const MULTIPLE_OF_BIG_NS: u64 = 5_000;
/// Comparing values for `enum`/`const`, per byte of the candidates' canonical text.
pub const EQUAL_NS_PER_BYTE: u64 = 4;
/// Comparing values for `enum`/`const`, per candidate.
pub const EQUAL_NS_PER_CANDIDATE: u64 = 20;
/// `uniqueItems`, per byte of the array's canonical text and per compared item (pairwise
/// below 16 items, hashed above).
pub const UNIQUE_NS_PER_BYTE: u64 = 6;

/// A pattern matched by jsonschema without a regex engine (a literal, a prefix, an
/// alternation of literals, a counted character class), per byte.
pub const MATCH_LINEAR_NS_PER_BYTE: u64 = 4;
/// A pattern whose lazy DFA fits its cache, per byte (measured 1.9 ns).
pub const MATCH_DFA_NS_PER_BYTE: u64 = 6;
/// Building one lazy-DFA state, per NFA state it holds (paid once per state and cache).
pub const DFA_STATE_NS_PER_NFA_STATE: u64 = 30;
/// A pattern run by the PikeVM (Unicode word boundaries on non-ASCII text, or an automaton too
/// large for a DFA), per byte; measured up to 30 ns with a handful of states.
pub const MATCH_PIKE_NS_PER_BYTE: u64 = 100;
/// The PikeVM, per byte and NFA state (measured up to 1.12 ns).
pub const MATCH_PIKE_NS_PER_STATE_BYTE: u64 = 5;
/// Any match, fixed part.
pub const MATCH_BASE_NS: u64 = 150;

/// Building a pattern's NFA, per byte of it: how much of the budget a pattern may compile
/// before it is refused (measured 7–17 ns; Unicode classes cost more, which the timed builds
/// below account for).
pub const REGEX_COMPILE_NS_PER_NFA_BYTE: u64 = 45;
/// Building a pattern's regex, fixed part (measured ~2–30 µs).
pub const REGEX_COMPILE_BASE_NS: u64 = 60_000;
/// The regex crate's build time per unit of our own NFA build time (measured up to 2.2× on
/// large automata, up to 6× on tiny ones whose full DFA it builds too).
pub const REGEX_COMPILE_PER_NFA_BUILD: u64 = 5;
/// The regex crate's build time per unit of our own determinization time (its full DFAs for
/// small automata; `(?i)hello world`: 192 µs against 11 µs of NFA).
pub const REGEX_COMPILE_PER_DFA_BUILD: u64 = 4;
/// Memory a compiled regex holds, per byte of its NFA (forward and reverse NFAs and the
/// engines built from them; measured 3.2×).
pub const REGEX_HELD_BYTES_PER_NFA_BYTE: u64 = 4;
/// Memory while a regex compiles, per byte of its NFA (measured 7.3×).
pub const REGEX_PEAK_BYTES_PER_NFA_BYTE: u64 = 8;
/// A compiled regex's fixed memory (measured ~6 KB; ~20 KB after first use).
pub const REGEX_BASE_BYTES: u64 = 48 << 10;
/// The matching engines' scratch space (PikeVM and backtracker caches), per NFA state.
pub const REGEX_SCRATCH_BYTES_PER_STATE: u64 = 160;

/// jsonschema (0.61) collecting one schema error: it collects every error of an invalid output
/// before it returns the first (measured 92–95 ns an error on flat outputs, 145 with a long
/// pattern to copy; the calibrate example's "schema errors" lines).
pub const ERROR_COLLECT_NS: u64 = 250;
/// What one collected error holds until every error is returned, besides its locations (as
/// long as the output's longest path) and copies (measured 363 bytes).
pub const ERROR_HELD_BYTES: u64 = 800;
/// Copying what an error carries of its own — a `not` subschema, a pattern, the keys of
/// `additionalProperties: false`, the instance of an error under `anyOf`/`oneOf`/
/// `propertyNames` (made owned) — per byte of the copied tree (measured: a `not` subschema of
/// 200 enum objects, 57 µs and 88 KB an error for about 50 KB of tree).
pub const ERROR_CLONE_NS_PER_BYTE: u64 = 2;
pub const ERROR_CLONE_BYTES_PER_BYTE: u64 = 3;
/// Collecting one schema error and turning it into a finding (measured 1.4–1.5 µs).
pub const ERROR_NS: u64 = 4_000;
/// A kept finding's texts, per byte: held in the lists, and written about five times into the
/// report (its four lists and the RFC 8785 copy the signature hashes).
pub const FINDING_NS_PER_TEXT_BYTE: u64 = 30;
pub const FINDING_BYTES_PER_TEXT_BYTE: u64 = 12;
/// Memory per collected schema error kept for de-duplication.
pub const ERROR_BYTES: u64 = 96;

/// A rule or bound resolving its path, per output value it may visit (each found value gets
/// its location built: measured ~100 ns with a two-step path).
pub const RULE_NS_PER_VALUE: u64 = 150;
/// `exists_in` and `unique`: canonical bytes of each value, per byte.
pub const RULE_NS_PER_BYTE: u64 = 20;
/// Memory a rule holds per value it may visit (its location and a hash-set entry).
pub const RULE_BYTES_PER_VALUE: u64 = 160;
/// Strict content checks, per output value and per string byte (lower-casing).
pub const CONTENT_NS_PER_VALUE: u64 = 40;
pub const CONTENT_NS_PER_BYTE: u64 = 6;

/// The cost walk's memo entry, per distinct (subschema, value) pair: the key and the priced
/// parts (about 120 bytes) in a hash table that may have twice the room it uses (measured
/// 2.7 MB for 5,000 items under `unevaluatedProperties`, about 240 bytes a pair).
pub const WALK_BYTES_PER_PAIR: u64 = 320;
/// The cost walk, per distinct (subschema, value) pair it prices.
pub const WALK_NS_PER_PAIR: u64 = 120;

/// `contentMediaType: application/json` (asserted in drafts 6 and 7): parsing the string into a
/// JSON tree at each application (`serde_json::from_str`), per byte of it (measured 0.95 ns on
/// one long string of escapes; floats with long mantissas cost more per byte). The calibrate
/// example prints each variant's margin: the least is about 2× (arrays of one-item arrays,
/// floats).
pub const CONTENT_JSON_NS_PER_BYTE: u64 = 4;
/// The same, per value it may hold (measured 12.6 ns: `[0,0,…]`).
pub const CONTENT_JSON_NS_PER_VALUE: u64 = 30;
/// The same, per container it may open (measured 128 ns: arrays nested 100 deep, each level a
/// vector allocated).
pub const CONTENT_JSON_NS_PER_CONTAINER: u64 = 250;
/// The same, per object member it may hold (a key string allocated and hashed into the
/// map: measured about 70 ns with its value, an object of unique keys).
pub const CONTENT_JSON_NS_PER_MEMBER: u64 = 100;
/// The tree that parse builds, held until the check returns: per byte (strings are copied;
/// measured 0.9).
pub const CONTENT_JSON_BYTES_PER_BYTE: u64 = 4;
/// Per value (a 72-byte value in a vector that may have twice the room it uses: measured 79
/// for `[0,…]`, 118 for `["",…]`).
pub const CONTENT_JSON_BYTES_PER_VALUE: u64 = 240;
/// Per container (an array's vector starts with room for four values: measured 286 with its
/// value, arrays nested 100 deep).
pub const CONTENT_JSON_BYTES_PER_CONTAINER: u64 = 400;
/// Scanning a string for its values and containers, per byte (once per distinct string).
pub const CONTENT_SCAN_NS_PER_BYTE: u64 = 2;
/// `contentEncoding` (drafts 6 and 7): decoding base64/base32/base16, per byte of the string
/// (measured up to 4.9 ns: base16 over non-ASCII text, which is upper-cased whole first;
/// 0.4 ns on hex digits).
pub const CONTENT_DECODE_NS_PER_BYTE: u64 = 12;
/// The decoded copy (and base16's upper-cased one), per byte of the string (measured 1.5).
pub const CONTENT_DECODE_BYTES_PER_BYTE: u64 = 3;
/// A content check, fixed part.
pub const CONTENT_KEYWORD_BASE_NS: u64 = 300;

/// Expression rules (CEL), per node evaluated: the interpreter's dispatch, a variable or field
/// looked up and its value borrowed or cloned (measured about 150 ns a node on a 10,000-item
/// `all()`).
pub const EXPR_NODE_NS: u64 = 150;
/// A function call beyond its node: arguments converted, a custom function (the money rule's
/// comparisons, `date()`, the budget tick) dispatched.
pub const EXPR_CALL_NS: u64 = 300;
/// One comprehension step: the loop variable bound in a new scope, the step's tick.
pub const EXPR_ITERATION_NS: u64 = 400;
/// Memory of one comprehension step's scope.
pub const EXPR_ITERATION_BYTES: u64 = 256;
/// Copying or comparing a value, per unit (a value or a string byte).
pub const EXPR_COPY_NS_PER_UNIT: u64 = 60;
/// Scanning a string or list once (size, contains, parsing a date), per unit.
pub const EXPR_SCAN_NS_PER_UNIT: u64 = 8;
/// Memory per unit of a value an expression builds (a CEL value is 32–48 bytes, a map entry
/// more).
pub const EXPR_BYTES_PER_UNIT: u64 = 160;
/// Memory of a node's small result.
pub const EXPR_NODE_BYTES: u64 = 64;
/// The output converted into CEL values (a JSON-like tree, then the interpreter's own, both
/// held while the second is built), per unit.
pub const EXPR_SUBJECT_BYTES_PER_UNIT: u64 = 320;
/// Converting the output into CEL values, per unit (one per request with expression rules).
pub const EXPR_CONVERT_NS_PER_UNIT: u64 = 400;
/// One expression rule's fixed part: its context and functions set up.
pub const EXPR_BASE_NS: u64 = 40_000;
pub const EXPR_BASE_BYTES: u64 = 64 << 10;
/// Parsing and checking it, per byte of its text (done before pricing; bounded by
/// `MAX_EXPRESSION_BYTES_PER_REQUEST`).
pub const EXPR_PARSE_NS_PER_BYTE: u64 = 2_000;
