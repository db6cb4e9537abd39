//! The mcp Lambda function: POST /mcp (MCP Streamable HTTP, stateless) behind API Gateway.
//! Everything is built once at init (configuration, SDK clients, the signing key from SSM);
//! missing configuration fails the init.

use mcp_function::McpAccess;

/// mimalloc: the request path allocates many small, short-lived values.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// One event at a time per instance, on one thread (`lambda::run`: a blocking Runtime API
// client and a current-thread async runtime; costly verifications run on the work pool's own).
fn main() -> Result<(), function_common::lambda::RunError> {
    function_common::lambda::run(
        function_common::lambda::SchemaEngine,
        function_common::lambda::Dynamo,
        |services, settings| {
            let access = McpAccess::behind_gateway(
                &services.config.public_url,
                &settings.mcp_allowed_origins,
                &settings.mcp_allowed_hosts,
            );
            mcp_function::router(services, &access)
        },
    )
}
