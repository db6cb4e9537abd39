//! A store call to an endpoint that accepts the connection and never answers ends, with an
//! error, within the SDK's operation timeout (`verifier_aws_sdk::sdk_timeouts`): before, the
//! SDK had no read or operation timeout, and such a call waited for ever.

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use std::net::TcpListener;
use std::time::{Duration, Instant};
use verifier_aws_sdk::{SDK_OPERATION_TIMEOUT, aws_https_client, sdk_timeouts};
use verifier_ports::store::Store;
use verifier_store_dynamo::DynamoStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_endpoint_fails_the_call_within_the_operation_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    // Accept every connection and keep it open, answering nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(url)
        .http_client(aws_https_client().expect("client"))
        .timeout_config(sdk_timeouts())
        .build();
    let store = DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(config), "silent");
    let started = Instant::now();
    let answer = tokio::time::timeout(
        SDK_OPERATION_TIMEOUT + Duration::from_secs(10),
        store.free_used("203.0.113.7", "2026-12-06"),
    )
    .await
    .expect("the call ends within the operation timeout");
    assert!(
        answer.is_err(),
        "a silent endpoint gave an answer: {answer:?}"
    );
    assert!(
        started.elapsed() <= SDK_OPERATION_TIMEOUT + Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
}
