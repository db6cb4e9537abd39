//! What the guard and a tool hand each other beside rmcp, so that a `tools/call`'s arguments
//! and its answer are not parsed and written again by rmcp.
//!
//! For a `tools/call` whose `arguments` is an object the guard finds the arguments' bytes in
//! the message (one scan that builds nothing), checks the rest of the message as before and
//! gives rmcp the message with `"arguments":{}` in their place. rmcp still sees everything it
//! checks — the headers (Accept, `MCP-Protocol-Version`, SEP-2243's `Mcp-Method`/`Mcp-Name`,
//! Origin, Host), the method, the id, the tool name and `_meta` — and our tools annotate no
//! argument as a header, so no check of rmcp's reads the arguments. The tool takes the
//! arguments' bytes from here and parses them as REST parses its body (`verify_schema` is the
//! REST verification of those bytes: strict parse, heavy-body pool, schema cache, screening).
//! A repeated key in the arguments (which REST answers 400) is the same -32600 as anywhere
//! else in the message: the tool finds it when the arguments do not parse and asks the guard
//! for that error. For an answer (not a payment demand or an error) the tool keeps the answer's
//! JSON here and gives rmcp a result with marks in place of `structuredContent` and the text
//! mirror (rmcp writes the rest: the id, `isError`, `_meta`, and what the protocol version adds,
//! such as `resultType`); the guard puts the answer in place of the marks ([`fill`]), only when
//! rmcp answered with a result, i.e. after all of rmcp's checks let the call run.

use axum::body::Bytes;
#[cfg(test)]
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// The slots of one `tools/call` (a request extension; clones share the slots).
#[derive(Clone, Default)]
pub struct Handoff(Arc<Slots>);

#[derive(Default)]
struct Slots {
    arguments: Mutex<Option<Bytes>>,
    answer: Mutex<Option<Vec<u8>>>,
    refusal: Mutex<Option<i64>>,
}

impl Handoff {
    /// A handoff carrying a call's arguments (their bytes as received).
    pub fn with_arguments(arguments: Bytes) -> Self {
        let handoff = Handoff::default();
        if let Ok(mut slot) = handoff.0.arguments.lock() {
            *slot = Some(arguments);
        }
        handoff
    }

    /// The arguments' bytes, once.
    pub fn take_arguments(&self) -> Option<Bytes> {
        self.0.arguments.lock().ok()?.take()
    }

    /// Keep the answer's JSON for the guard to put in the tool result.
    pub fn put_answer(&self, result: Vec<u8>) {
        if let Ok(mut slot) = self.0.answer.lock() {
            *slot = Some(result);
        }
    }

    /// Answer the call with this JSON-RPC error instead (a repeated key in the arguments:
    /// -32600, as anywhere else in the message).
    pub fn refuse(&self, code: i64) {
        if let Ok(mut slot) = self.0.refusal.lock() {
            *slot = Some(code);
        }
    }

    /// The JSON-RPC error the tool asked for, if any.
    pub fn take_refusal(&self) -> Option<i64> {
        self.0.refusal.lock().ok()?.take()
    }

    /// The answer's JSON, if the tool kept one.
    pub fn take_answer(&self) -> Option<Vec<u8>> {
        self.0.answer.lock().ok()?.take()
    }
}

/// The members of a message the split reads; every other member is skipped unbuilt.
#[derive(serde::Deserialize)]
struct CallShape<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<ParamsShape<'a>>,
}

#[derive(serde::Deserialize)]
struct ParamsShape<'a> {
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// Where a `tools/call`'s object `arguments` lie in `message`, if it is one (a message that is
/// not well-formed JSON, repeats `method`, `params` or `arguments`, or is anything else gets
/// `None` and is checked whole as before).
pub fn arguments_of(message: &[u8]) -> Option<Range<usize>> {
    let shape: CallShape<'_> = serde_json::from_slice(message).ok()?;
    if shape.method.as_deref() != Some("tools/call") {
        return None;
    }
    let raw = shape.params?.arguments?.get();
    if !raw.starts_with('{') {
        return None;
    }
    let start = (raw.as_ptr() as usize).checked_sub(message.as_ptr() as usize)?;
    let range = start..start + raw.len();
    (message.get(range.clone())? == raw.as_bytes()).then_some(range)
}

/// `message` with the bytes in `range` replaced by `{}`.
pub fn without_arguments(message: &[u8], range: Range<usize>) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() - range.len() + 2);
    out.extend_from_slice(&message[..range.start]);
    out.extend_from_slice(b"{}");
    out.extend_from_slice(&message[range.end..]);
    out
}

/// What the tool's empty result holds in place of the answer's text mirror (a JSON string).
pub const TEXT_MARK: &str = "agent-output-verifier:answer-text";
/// The one member of the object the tool's result holds in place of `structuredContent`
/// (`{"agent-output-verifier:answer":true}`: rmcp moves a `structuredContent` that is not an
/// object into `content` for older peers, so the mark is an object).
pub const STRUCTURED_MARK: &str = "agent-output-verifier:answer";

/// The object standing for `structuredContent` in the tool's result.
pub fn structured_mark() -> serde_json::Value {
    serde_json::json!({ STRUCTURED_MARK: true })
}

/// rmcp's JSON-RPC response with the answer put in place of the marks: `answer` (its JSON
/// text) as `structuredContent` and, escaped, as the text mirror. rmcp wrote everything else
/// (the id, `isError`, `_meta`, what its protocol version adds); `result_at` is where its
/// result starts, so nothing before it (the caller's id) is searched. `None` when a mark is
/// missing or the answer is not text.
pub fn fill(response: &[u8], result_at: usize, answer: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(answer).ok()?;
    let text_mark = serde_json::to_vec(TEXT_MARK).ok()?;
    let structured_mark = serde_json::to_vec(&structured_mark()).ok()?;
    let result = response.get(result_at..)?;
    let find = |mark: &[u8]| result.windows(mark.len()).position(|w| w == mark);
    let (t, s) = (find(&text_mark)?, find(&structured_mark)?);
    let mut escaped = Vec::with_capacity(answer.len() + answer.len() / 4 + 2);
    serde_json::to_writer(&mut escaped, text).ok()?;
    let mut spans = [
        (result_at + t, text_mark.len(), &escaped[..]),
        (result_at + s, structured_mark.len(), answer),
    ];
    spans.sort_by_key(|span| span.0);
    let mut out = Vec::with_capacity(response.len() + escaped.len() + answer.len());
    let mut at = 0;
    for (start, len, with) in spans {
        out.extend_from_slice(&response[at..start]);
        out.extend_from_slice(with);
        at = start + len;
    }
    out.extend_from_slice(&response[at..]);
    Some(out)
}

/// [`fill`]'s fallback, should rmcp ever write the marks differently: the response parsed,
/// its result's `structuredContent` and text mirror set to the answer, written again.
pub fn fill_parsed(response: &[u8], answer: &[u8]) -> Option<Vec<u8>> {
    let mut message: serde_json::Value = serde_json::from_slice(response).ok()?;
    let result = message.get_mut("result")?.as_object_mut()?;
    let text = std::str::from_utf8(answer).ok()?;
    result.insert(
        "structuredContent".into(),
        serde_json::from_slice(answer).ok()?,
    );
    result.insert(
        "content".into(),
        serde_json::json!([{"type": "text", "text": text}]),
    );
    serde_json::to_vec(&message).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slots_are_shared_by_clones_and_taken_once() {
        let handoff = Handoff::with_arguments(Bytes::from_static(b"{\"a\":1}"));
        let tool_side = handoff.clone();
        assert_eq!(
            tool_side.take_arguments().as_deref(),
            Some(&b"{\"a\":1}"[..])
        );
        assert_eq!(handoff.take_arguments(), None);
        tool_side.put_answer(b"{}".to_vec());
        assert_eq!(handoff.take_answer(), Some(b"{}".to_vec()));
        assert_eq!(handoff.take_answer(), None);
    }

    #[test]
    fn a_tool_calls_object_arguments_are_found_and_cut_out() {
        let message = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify_schema","arguments":{"a":[1,{"b":"}"}]},"_meta":{"x":1}}}"#;
        let range = arguments_of(message).expect("found");
        assert_eq!(&message[range.clone()], br#"{"a":[1,{"b":"}"}]}"#);
        assert_eq!(
            without_arguments(message, range),
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify_schema","arguments":{},"_meta":{"x":1}}}"#.to_vec()
        );
        // An escaped method name is the same method.
        let escaped = br#"{"method":"tools\/call","params":{"arguments":{}}}"#;
        assert!(arguments_of(escaped).is_some());
    }

    #[test]
    fn anything_else_is_left_whole() {
        for message in [
            &br#"{"method":"tools/list","params":{"arguments":{}}}"#[..],
            br#"{"method":"tools/call","params":{"arguments":[1]}}"#,
            br#"{"method":"tools/call","params":{"name":"x"}}"#,
            br#"{"method":"tools/call","params":{"arguments":{},"arguments":{}}}"#,
            br#"{"method":"tools/call","method":"tools/call","params":{"arguments":{}}}"#,
            br#"{"method":"tools/call","params":{"arguments":{}}"#,
            br#"[{"method":"tools/call","params":{"arguments":{}}}]"#,
            br#"{"method":"tools/call","params":"x"}"#,
        ] {
            assert_eq!(
                arguments_of(message),
                None,
                "{}",
                String::from_utf8_lossy(message)
            );
        }
    }

    #[test]
    fn the_answer_fills_the_marks_and_nothing_before_the_result_is_touched() {
        let response = format!(
            r#"{{"jsonrpc":"2.0","id":"{t}","result":{{"content":[{{"type":"text","text":"{t}"}}],"structuredContent":{{"{s}":true}},"isError":false,"_meta":{{"a":1}},"resultType":"complete"}}}}"#,
            t = TEXT_MARK,
            s = STRUCTURED_MARK
        );
        let result_at = response.find(r#""result":"#).expect("result") + 9;
        let answer = br#"{"result":"pass","note":"a \"quoted\" word"}"#;
        let filled = fill(response.as_bytes(), result_at, answer).expect("filled");
        let v: Value = serde_json::from_slice(&filled).expect("json");
        assert_eq!(v["id"], TEXT_MARK, "the id is the caller's, left as it was");
        let answer_value: Value = serde_json::from_slice(answer).expect("answer");
        assert_eq!(v["result"]["structuredContent"], answer_value);
        assert_eq!(
            v["result"]["content"][0]["text"],
            std::str::from_utf8(answer).expect("utf-8")
        );
        assert_eq!(v["result"]["resultType"], "complete");
        assert_eq!(v["result"]["_meta"]["a"], 1);
        assert_eq!(fill(b"{}", 0, answer), None, "no marks: nothing to fill");
        let parsed = fill_parsed(response.as_bytes(), answer).expect("the fallback");
        assert_eq!(
            serde_json::from_slice::<Value>(&parsed).expect("json"),
            v,
            "the fallback gives the same message"
        );
    }
}
