//! The rotate-key Lambda function: the EventBridge schedule, the template's first-key custom
//! resource, or `aws lambda invoke` by hand (a rotation, or `{"revoke": VERSION}`).

use lambda_runtime::{Error, LambdaEvent, service_fn};
use rotate_key_function::{RotateSettings, handle};
use serde_json::Value;
use std::sync::Arc;

// One event at a time per instance: one runtime thread, no thread handing work to another
// (the costly verifications still run on the work pool's own thread).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let emf = verifier_aws_sdk::emf::install();
    let settings = Arc::new(
        RotateSettings::from_env().inspect_err(|e| tracing::error!(error = %e, "init failed"))?,
    );
    let sdk = verifier_aws_sdk::aws_sdk_config()
        .await
        .inspect_err(|e| tracing::error!(error = %e, "init failed"))?;
    let client = Arc::new(aws_sdk_ssm::Client::new(&sdk));
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let settings = settings.clone();
        let client = client.clone();
        async move {
            let done = handle(&client, &settings, &event.payload).await;
            if let Some(emf) = emf {
                verifier_aws_sdk::emf::flush(emf);
            }
            Ok::<_, Error>(done?)
        }
    }))
    .await
}
