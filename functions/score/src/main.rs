//! The score Lambda function: GET /score/{agent_id} and GET /reputation/{agent_id} behind API Gateway.
//! Everything is built once at init (configuration, SDK clients, the signing key from SSM);
//! missing configuration fails the init.

/// mimalloc: the request path allocates many small, short-lived values.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// One event at a time per instance, on one thread (`lambda::run`: a blocking Runtime API
// client and a current-thread async runtime; costly verifications run on the work pool's own).
fn main() -> Result<(), function_common::lambda::RunError> {
    function_common::lambda::run(
        function_common::lambda::Nothing,
        function_common::lambda::Dynamo,
        |services, _| score_function::router(services),
    )
}
