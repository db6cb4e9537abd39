//! The bazaar listing of each paid resource (x402's `bazaar` extension), built once, on the
//! first 402 that needs it, from the engine's own worked examples: a real request and the
//! signed answer the service gives it.

use super::examples::{EXAMPLE_AGENT, corrected_request, response_to, score_example};
use super::{Resource, Services};
use crate::payments::bazaar;
use serde_json::{Value, json};
use std::sync::OnceLock;
use verifier_engine::request_schema::{
    agent_id_schema, bound_schema, record_tool_input_schema, request_body_schema, rule_schema,
    verify_tool_input_schema,
};

/// Which paid resource a 402 is for, as the Bazaar catalogues it. Each carries the function
/// that builds its listing, so a binary links only the builders of the listings it names: the
/// score function, which names only `HTTP_SCORE`, does not link the schema engine through the
/// verification examples.
#[derive(Clone, Copy)]
pub struct Listing {
    index: usize,
    build: fn(&Services) -> Value,
}

impl Listing {
    const fn new(index: usize, build: fn(&Services) -> Value) -> Self {
        Listing { index, build }
    }

    /// `POST /verify/schema` and `POST /verify/deliverable`.
    pub const HTTP_VERIFY: Listing = Listing::new(0, http_verify);
    /// `GET /score/{agent_id}`.
    pub const HTTP_SCORE: Listing = Listing::new(1, http_score);
    /// The MCP tool `verify_schema`.
    pub const MCP_VERIFY: Listing = Listing::new(2, mcp_verify);
    /// The MCP tool `get_verification_record`.
    pub const MCP_RECORD: Listing = Listing::new(3, mcp_record);
}

impl PartialEq for Listing {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}

impl Eq for Listing {}

impl std::fmt::Debug for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = ["HTTP_VERIFY", "HTTP_SCORE", "MCP_VERIFY", "MCP_RECORD"];
        f.write_str(name.get(self.index).copied().unwrap_or("?"))
    }
}

/// The listings, each built on first use.
#[derive(Default)]
pub struct Listings {
    built: [OnceLock<Value>; 4],
}

impl Listings {
    /// The `extensions.bazaar` object for `listing`, with its examples.
    pub fn get(&self, s: &Services, listing: Listing) -> Value {
        self.built[listing.index]
            .get_or_init(|| (listing.build)(s))
            .clone()
    }

    /// The `extensions.bazaar` object a 402 for `resource` carries: a route with a path
    /// parameter names this request's value in `info.input.pathParams`, as the spec asks.
    pub fn for_resource(&self, s: &Services, resource: &Resource) -> Value {
        let mut listing = self.get(s, resource.listing);
        if let (true, Some(agent_id)) = (
            resource.listing == Listing::HTTP_SCORE,
            &resource.path_param,
        ) {
            listing["info"]["input"]["pathParams"]["agent_id"] = agent_id.as_str().into();
        }
        listing
    }
}

/// The example verification request: the corrected hosted invoice (it passes), compact answer.
pub fn verify_example() -> Value {
    let mut request = corrected_request(EXAMPLE_AGENT);
    request["detail"] = "compact".into();
    request
}

fn http_verify(s: &Services) -> Value {
    let request = verify_example();
    let answer = response_to(s, &request);
    bazaar::http_body(
        request,
        request_body_schema("#/$defs/Rule", "#/$defs/Bound"),
        json!({"Rule": rule_schema(), "Bound": bound_schema()}),
        answer,
    )
}

fn http_score(s: &Services) -> Value {
    bazaar::http_get_path(
        "/score/:agent_id",
        "agent_id",
        EXAMPLE_AGENT,
        agent_id_schema(),
        score_example(s),
    )
}

fn mcp_verify(s: &Services) -> Value {
    let request = verify_example();
    let answer = response_to(s, &request);
    bazaar::mcp_tool(
        "verify_schema",
        super::verify::DESCRIPTION,
        verify_tool_input_schema(),
        request,
        answer,
    )
}

fn mcp_record(s: &Services) -> Value {
    bazaar::mcp_tool(
        "get_verification_record",
        super::score::DESCRIPTION,
        record_tool_input_schema(),
        json!({"agent_id": EXAMPLE_AGENT}),
        score_example(s),
    )
}
