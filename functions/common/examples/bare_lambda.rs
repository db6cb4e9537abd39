//! The yardstick of `scripts/lambda-costs.sh`: the smallest `lambda_http` function (the crate's
//! own hello-world shape: multi-threaded tokio, one handler answering every event), so our
//! functions' init is compared with the runtime's own floor on the same machine, in the same run.
//! Not deployed.

use lambda_http::{Body, Error, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(|_: Request| async {
        Ok::<_, Error>(Response::new(Body::from("ok")))
    }))
    .await
}
