//! The route table: every method and path the service answers, which function serves it and
//! how it is priced. Routers, the SAM template, the OpenAPI document, the agent card, the x402
//! manifest and llms.txt are all checked against (or generated from) this one table.

/// The Lambda function (and local router) that serves a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    Verify,
    Score,
    Mcp,
    Discovery,
}

impl Function {
    /// The crate and binary name (`functions/<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Function::Verify => "verify",
            Function::Score => "score",
            Function::Mcp => "mcp",
            Function::Discovery => "discovery",
        }
    }
}

/// How a route is paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pricing {
    /// Always free.
    Free,
    /// The free allowance per client address and UTC day, then the verification price.
    Verification,
    /// The score price once the agent is rated; a free signed `no_data` or `unrated` answer
    /// otherwise.
    ScoreLookup,
    /// MCP: each tool is priced as its REST twin.
    PerTool,
}

/// One route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// HTTP method, upper case.
    pub method: &'static str,
    /// Path with `{name}` parameters, as OpenAPI and API Gateway write it.
    pub path: &'static str,
    pub function: Function,
    pub pricing: Pricing,
    /// One line for documents.
    pub summary: &'static str,
    /// Whether documents list it (a 405-only route is routed but not advertised).
    pub documented: bool,
}

const fn route(
    method: &'static str,
    path: &'static str,
    function: Function,
    pricing: Pricing,
    summary: &'static str,
) -> Route {
    Route {
        method,
        path,
        function,
        pricing,
        summary,
        documented: true,
    }
}

/// Every route of the service.
pub const ROUTES: &[Route] = &[
    route(
        "POST",
        "/verify/schema",
        Function::Verify,
        Pricing::Verification,
        "Verify a JSON output against a JSON Schema and business rules; signed receipt",
    ),
    route(
        "POST",
        "/verify/deliverable",
        Function::Verify,
        Pricing::Verification,
        "The same verification under a second name (shares the free allowance)",
    ),
    route(
        "GET",
        "/score/{agent_id}",
        Function::Score,
        Pricing::ScoreLookup,
        "Signed trust score of an agent from its verification history",
    ),
    route(
        "GET",
        "/reputation/{agent_id}",
        Function::Score,
        Pricing::Free,
        "Free, unsigned pass/fail history of an agent",
    ),
    route(
        "POST",
        "/mcp",
        Function::Mcp,
        Pricing::PerTool,
        "MCP over Streamable HTTP: tools verify_schema and get_verification_record",
    ),
    Route {
        documented: false,
        ..route(
            "GET",
            "/mcp",
            Function::Mcp,
            Pricing::Free,
            "No SSE stream: 405",
        )
    },
    Route {
        documented: false,
        ..route(
            "DELETE",
            "/mcp",
            Function::Mcp,
            Pricing::Free,
            "No sessions: 405",
        )
    },
    route(
        "GET",
        "/health",
        Function::Discovery,
        Pricing::Free,
        "Liveness, version and the active key_version",
    ),
    route(
        "GET",
        "/",
        Function::Discovery,
        Pricing::Free,
        "Index of routes and documents (JSON with Accept: application/json, else HTML)",
    ),
    route(
        "GET",
        "/.well-known/agent-card.json",
        Function::Discovery,
        Pricing::Free,
        "A2A 1.0 agent card with every public key ever used to sign receipts",
    ),
    route(
        "GET",
        "/.well-known/agent.json",
        Function::Discovery,
        Pricing::Free,
        "The A2A 0.3 agent card at the legacy path",
    ),
    route(
        "GET",
        "/.well-known/x402",
        Function::Discovery,
        Pricing::Free,
        "x402 discovery manifest: paid resources, prices and payment options",
    ),
    route(
        "GET",
        "/.well-known/x402.json",
        Function::Verify,
        Pricing::Free,
        "x402 per-origin discovery manifest (draft well-known-discovery): items with accepts, input and output",
    ),
    route(
        "GET",
        "/server.json",
        Function::Discovery,
        Pricing::Free,
        "MCP registry entry (server.json, schema 2025-12-11) for this deployment",
    ),
    route(
        "GET",
        "/.well-known/api-catalog",
        Function::Discovery,
        Pricing::Free,
        "RFC 9727 API catalog (linkset)",
    ),
    route(
        "GET",
        "/llms.txt",
        Function::Discovery,
        Pricing::Free,
        "The service described for agents, short",
    ),
    route(
        "GET",
        "/llms-full.txt",
        Function::Verify,
        Pricing::Free,
        "The service described for agents, with full worked examples",
    ),
    route(
        "GET",
        "/openapi.json",
        Function::Discovery,
        Pricing::Free,
        "OpenAPI 3.1 description",
    ),
    route(
        "GET",
        "/docs",
        Function::Discovery,
        Pricing::Free,
        "Interactive API documentation (works offline)",
    ),
    Route {
        documented: false,
        ..route(
            "GET",
            "/docs/{proxy+}",
            Function::Discovery,
            Pricing::Free,
            "Assets of the interactive documentation",
        )
    },
];

/// The routes one function serves.
pub fn routes_of(function: Function) -> impl Iterator<Item = &'static Route> {
    ROUTES.iter().filter(move |r| r.function == function)
}

/// The documented routes, in table order.
pub fn documented() -> impl Iterator<Item = &'static Route> {
    ROUTES.iter().filter(|r| r.documented)
}

/// The paid routes (priced by verification or score).
pub fn paid() -> impl Iterator<Item = &'static Route> {
    ROUTES
        .iter()
        .filter(|r| matches!(r.pricing, Pricing::Verification | Pricing::ScoreLookup))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn routes_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for r in ROUTES {
            assert!(seen.insert((r.method, r.path)), "{} {}", r.method, r.path);
            assert!(r.path.starts_with('/'));
            assert!(["GET", "POST", "DELETE"].contains(&r.method));
        }
        assert_eq!(paid().count(), 3);
    }
}
