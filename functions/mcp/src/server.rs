//! The MCP server handler: server info, `tools/list`, `tools/call`.

use crate::handoff::Handoff;
use crate::reply::{PAYMENT_KEY, error, tool_result};
use crate::tools::{RECORD, VERIFY, tools};
use axum::body::Bytes;
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value};
use std::sync::Arc;
use verifier_engine::FieldProblem;
use verifier_engine::json::{JsonError, parse_strict_value};
use verifier_engine::problem::json_problem;
use verifier_service::config::ServiceConfig;
use verifier_service::errors::ApiError;
use verifier_service::listings::Listing;
use verifier_service::payments::PaymentInput;
use verifier_service::score::{self, check_agent_id};
use verifier_service::telemetry::Transport;
use verifier_service::verify::{BodyCall, verify_body};
use verifier_service::{ClientAddr, ReceivedBytes};
use verifier_service::{Reply, Resource, Services};

/// How long `tools/list` may be cached (2026-07-28 `ttlMs`): the tools change only with a
/// new deployment.
const TOOLS_TTL_MS: u64 = 300_000;

/// One MCP server instance (rmcp makes one per request in stateless mode; cheap).
#[derive(Clone)]
pub struct VerifierMcp {
    services: Arc<Services>,
    /// The tool list, built once per process (it depends only on the configuration).
    tools: Arc<Vec<Tool>>,
}

impl VerifierMcp {
    /// A handler over the shared services and their tool list ([`VerifierMcp::tools_of`]).
    pub fn new(services: Arc<Services>, tools: Arc<Vec<Tool>>) -> Self {
        VerifierMcp { services, tools }
    }

    /// The tool list of `services`, to build once and share between instances.
    pub fn tools_of(services: &Services) -> Arc<Vec<Tool>> {
        Arc::new(tools(&services.config))
    }
}

/// The caller as the allowance counts it, from the address the edge put on the HTTP request.
fn client_of(ctx: &RequestContext<RoleServer>, config: &ServiceConfig) -> Option<String> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<ClientAddr>())
        .map(|c| config.client_key(&c.0))
}

/// The size of the request's body as received.
fn received_bytes(ctx: &RequestContext<RoleServer>) -> Option<usize> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<ReceivedBytes>())
        .map(|b| b.0)
}

/// The guard's [`Handoff`] of this call, if it made one.
fn handoff_of(ctx: &RequestContext<RoleServer>) -> Option<Handoff> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<Handoff>())
        .cloned()
}

/// `params._meta["x402/payment"]` (rmcp hands the request `_meta` over in the context).
fn payment_of(params: &CallToolRequestParams, ctx: &RequestContext<RoleServer>) -> PaymentInput {
    ctx.meta
        .get(PAYMENT_KEY)
        .or_else(|| params.meta.as_ref().and_then(|m| m.get(PAYMENT_KEY)))
        .cloned()
        .map_or(PaymentInput::None, PaymentInput::Object)
}

fn invalid(field: &str, problem: &str, fix: &str) -> ApiError {
    ApiError::InvalidRequest(vec![FieldProblem::new(field, problem, fix)])
}

impl ServerHandler for VerifierMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agent-output-verifier",
                verifier_engine::engine::VERIFIER_VERSION,
            ))
            .with_instructions(
                "Call verify_schema to check an AI agent's JSON output against a JSON Schema and rules \
                 before paying for it; get_verification_record returns an agent's signed trust score. \
                 Results carry Ed25519-signed receipts (keys in /.well-known/agent-card.json). Paid calls \
                 use x402: when a result asks for payment, call again with _meta[\"x402/payment\"].",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut result = ListToolsResult::with_all_items(self.tools.as_ref().clone());
        result.ttl_ms = Some(TOOLS_TTL_MS);
        Ok(result)
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let config = &self.services.config;
        let Some(client) = client_of(&context, config) else {
            tracing::error!("no client address on the MCP request; the edge must supply it");
            return Ok(error(&ApiError::Internal, config).into());
        };
        let payment = payment_of(&request, &context);
        let handoff = handoff_of(&context);
        // The arguments as received (the guard's handoff), or, where the guard made none (no
        // arguments, or the handler called without the guard), those rmcp parsed, written out.
        let arguments = match handoff.as_ref().and_then(Handoff::take_arguments) {
            Some(received) => received,
            None => Bytes::from(
                serde_json::to_vec(&request.arguments.take().unwrap_or_default())
                    .unwrap_or_default(),
            ),
        };
        // Boxed: rmcp moves the handler's future into the tasks it spawns per request, and a
        // verification's state is kilobytes.
        let reply = match request.name.as_ref() {
            VERIFY => {
                let received = received_bytes(&context);
                Box::pin(self.verify_tool(&client, &payment, arguments.clone(), received)).await
            }
            RECORD => Box::pin(self.record_tool(&client, &payment, &arguments)).await,
            _ => return Err(ErrorData::invalid_params("tool not found", None)),
        };
        if let (Some(handoff), Reply::Error(ApiError::InvalidRequest(_))) = (&handoff, &reply)
            && matches!(
                parse_strict_value(&arguments),
                Err(JsonError::DuplicateKey { .. })
            )
        {
            handoff.refuse(-32600);
        }
        Ok(tool_result(reply, config, handoff.as_ref()).into())
    }
}

impl VerifierMcp {
    /// `verify_schema`: the REST verification of the arguments, its free size measured on the
    /// whole message received (`received`; the arguments' own size without one).
    async fn verify_tool(
        &self,
        client: &str,
        payment: &PaymentInput,
        arguments: Bytes,
        received: Option<usize>,
    ) -> Reply {
        let s = &self.services;
        let size = received.unwrap_or(arguments.len());
        if size > s.config.hard_body_limit {
            return Reply::Error(ApiError::BodyTooLarge {
                limit: s.config.hard_body_limit,
            });
        }
        let call = BodyCall {
            client,
            size,
            transport: Transport::Mcp,
            body: arguments,
            payment,
            resource: Resource {
                url: "mcp://tool/verify_schema".into(),
                description: verifier_service::verify::DESCRIPTION,
                listing: Listing::MCP_VERIFY,
                path_param: None,
            },
            share: None,
        };
        verify_body(s, call).await
    }

    /// `get_verification_record`: the signed score of `agent_id`, the only argument.
    async fn record_tool(&self, client: &str, payment: &PaymentInput, arguments: &[u8]) -> Reply {
        let s = &self.services;
        let arguments = match parse_strict_value(arguments) {
            Ok(Value::Object(map)) => map,
            Ok(_) => Map::new(),
            Err(e) => {
                return Reply::Error(ApiError::InvalidRequest(vec![json_problem("arguments", e)]));
            }
        };
        let agent_id = match arguments.get("agent_id") {
            Some(Value::String(agent_id)) if arguments.len() == 1 => agent_id,
            _ => {
                return Reply::Error(invalid(
                    "agent_id",
                    "is required (a string) and must be the only argument",
                    "Send {\"agent_id\": \"<1 to 200 characters>\"}.",
                ));
            }
        };
        if let Err(e) = check_agent_id(agent_id) {
            return Reply::Error(e);
        }
        let resource = Resource {
            url: "mcp://tool/get_verification_record".into(),
            description: score::DESCRIPTION,
            listing: Listing::MCP_RECORD,
            path_param: None,
        };
        score::score(s, client, agent_id, payment, resource).await
    }
}
