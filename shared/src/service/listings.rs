//! The bazaar listing of each paid resource (x402's `bazaar` extension), built once, on the
//! first 402 that needs it, from the engine's own worked examples: a real request and the
//! signed answer the service gives it.

use super::examples::{EXAMPLE_AGENT, corrected_request, response_to, score_example};
use super::{Resource, Services};
use crate::payments::bazaar;
use crate::request_schema::{
    agent_id_schema, bound_schema, record_tool_input_schema, request_body_schema, rule_schema,
    verify_tool_input_schema,
};
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Which paid resource a 402 is for, as the Bazaar catalogues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// `POST /verify/schema` and `POST /verify/deliverable`.
    HttpVerify,
    /// `GET /score/{agent_id}`.
    HttpScore,
    /// The MCP tool `verify_schema`.
    McpVerify,
    /// The MCP tool `get_verification_record`.
    McpRecord,
}

/// The listings, built on first use.
#[derive(Default)]
pub struct Listings {
    built: OnceLock<[Value; 4]>,
}

impl Listings {
    /// The `extensions.bazaar` object for `listing`, with its examples.
    pub fn get(&self, s: &Services, listing: Listing) -> Value {
        let built = self.built.get_or_init(|| build(s));
        built[listing as usize].clone()
    }

    /// The `extensions.bazaar` object a 402 for `resource` carries: a route with a path
    /// parameter names this request's value in `info.input.pathParams`, as the spec asks.
    pub fn for_resource(&self, s: &Services, resource: &Resource) -> Value {
        let mut listing = self.get(s, resource.listing);
        if let (Listing::HttpScore, Some(agent_id)) = (resource.listing, &resource.path_param) {
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

fn build(s: &Services) -> [Value; 4] {
    let request = verify_example();
    let answer = response_to(s, &request);
    let score = score_example(s);
    [
        bazaar::http_body(
            request.clone(),
            request_body_schema("#/$defs/Rule", "#/$defs/Bound"),
            json!({"Rule": rule_schema(), "Bound": bound_schema()}),
            answer.clone(),
        ),
        bazaar::http_get_path(
            "/score/:agent_id",
            "agent_id",
            EXAMPLE_AGENT,
            agent_id_schema(),
            score.clone(),
        ),
        bazaar::mcp_tool(
            "verify_schema",
            super::verify::DESCRIPTION,
            verify_tool_input_schema(),
            request,
            answer,
        ),
        bazaar::mcp_tool(
            "get_verification_record",
            super::score::DESCRIPTION,
            record_tool_input_schema(),
            json!({"agent_id": EXAMPLE_AGENT}),
            score,
        ),
    ]
}
