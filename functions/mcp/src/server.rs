//! The MCP server handler: server info, `tools/list`, `tools/call`.

use crate::reply::{PAYMENT_KEY, error, tool_result};
use crate::tools::{RECORD, VERIFY, tools};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use std::sync::Arc;
use verifier_engine::FieldProblem;
use verifier_engine::request::VerifyRequest;
use verifier_service::config::ServiceConfig;
use verifier_service::errors::ApiError;
use verifier_service::listings::Listing;
use verifier_service::payments::PaymentInput;
use verifier_service::score::{self, check_agent_id};
use verifier_service::verify::{VerifyCall, verify};
use verifier_service::{ClientAddr, ReceivedBytes};
use verifier_service::{Resource, Services};

/// How long `tools/list` may be cached (2026-07-28 `ttlMs`): the tools change only with a
/// new deployment.
const TOOLS_TTL_MS: u64 = 300_000;

/// One MCP server instance (rmcp makes one per request in stateless mode; cheap).
#[derive(Clone)]
pub struct VerifierMcp {
    services: Arc<Services>,
}

impl VerifierMcp {
    /// A handler over the shared services.
    pub fn new(services: Arc<Services>) -> Self {
        VerifierMcp { services }
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
        let mut result = ListToolsResult::with_all_items(tools(&self.services.config));
        result.ttl_ms = Some(TOOLS_TTL_MS);
        Ok(result)
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let s = &self.services;
        let config = &s.config;
        let Some(client) = client_of(&context, config) else {
            tracing::error!("no client address on the MCP request; the edge must supply it");
            return Ok(error(&ApiError::Internal, config).into());
        };
        let payment = payment_of(&request, &context);
        let arguments = Value::Object(request.arguments.take().unwrap_or_default());
        let result = match request.name.as_ref() {
            VERIFY => {
                // The bytes received (they hold the arguments); the re-serialized arguments
                // only where no HTTP body was measured.
                let body_len = received_bytes(&context).unwrap_or_else(|| {
                    serde_json::to_vec(&arguments).map_or(usize::MAX, |b| b.len())
                });
                if body_len > config.hard_body_limit {
                    error(
                        &ApiError::BodyTooLarge {
                            limit: config.hard_body_limit,
                        },
                        config,
                    )
                } else {
                    match VerifyRequest::from_value(arguments) {
                        Err(e) => error(&ApiError::InvalidRequest(e.problems), config),
                        Ok(req) => {
                            let call = VerifyCall {
                                client: &client,
                                request: Arc::new(req),
                                body_len,
                                payment: &payment,
                                resource: Resource {
                                    url: "mcp://tool/verify_schema".into(),
                                    description: verifier_service::verify::DESCRIPTION,
                                    listing: Listing::MCP_VERIFY,
                                    path_param: None,
                                },
                            };
                            tool_result(verify(s, call).await, config)
                        }
                    }
                }
            }
            RECORD => match arguments.as_object() {
                Some(args)
                    if args.len() == 1 && args.get("agent_id").is_some_and(Value::is_string) =>
                {
                    let agent_id = args.get("agent_id").and_then(Value::as_str).unwrap_or("");
                    match check_agent_id(agent_id) {
                        Err(e) => error(&e, config),
                        Ok(()) => {
                            let res = Resource {
                                url: "mcp://tool/get_verification_record".into(),
                                description: score::DESCRIPTION,
                                listing: Listing::MCP_RECORD,
                                path_param: None,
                            };
                            tool_result(
                                score::score(s, &client, agent_id, &payment, res).await,
                                config,
                            )
                        }
                    }
                }
                _ => error(
                    &invalid(
                        "agent_id",
                        "is required (a string) and must be the only argument",
                        "Send {\"agent_id\": \"<1 to 200 characters>\"}.",
                    ),
                    config,
                ),
            },
            _ => {
                return Err(ErrorData::invalid_params("tool not found", None));
            }
        };
        Ok(result.into())
    }
}
