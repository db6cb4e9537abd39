//! The deployment's first key as a CloudFormation custom resource: on `Create` and `Update`
//! make the key and ring unless they exist, on `Delete` keep them (receipts signed with them
//! must stay verifiable); always answer CloudFormation at the event's pre-signed `ResponseURL`,
//! so a stack never waits an hour for a function that failed.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The fields of a custom-resource event this function reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CustomResourceEvent {
    pub request_type: String,
    #[serde(rename = "ResponseURL")]
    pub response_url: String,
    pub stack_id: String,
    pub request_id: String,
    pub logical_resource_id: String,
    #[serde(default)]
    pub physical_resource_id: Option<String>,
}

impl CustomResourceEvent {
    /// The event, when `event` is a CloudFormation custom-resource request.
    pub fn of(event: &Value) -> Option<Self> {
        if event.get("RequestType").is_none() || event.get("ResponseURL").is_none() {
            return None;
        }
        serde_json::from_value(event.clone()).ok()
    }
}

/// The answer CloudFormation reads.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct CustomResourceResponse {
    pub status: &'static str,
    pub reason: String,
    pub physical_resource_id: String,
    pub stack_id: String,
    pub request_id: String,
    pub logical_resource_id: String,
    pub data: Value,
}

/// Why CloudFormation could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    #[error("TLS: {0}")]
    Tls(#[from] verifier_facilitator_http::tls::TlsError),
    #[error("the response URL could not be reached: {0}")]
    Http(#[from] reqwest::Error),
    #[error("the response URL answered {0}")]
    Status(u16),
}

/// The response to `event`: SUCCESS with `data`, or FAILED with the reason.
pub fn response(
    event: &CustomResourceEvent,
    physical_id: &str,
    outcome: Result<Value, String>,
) -> CustomResourceResponse {
    let (status, reason, data) = match outcome {
        Ok(data) => ("SUCCESS", "done".to_owned(), data),
        // CloudFormation shows the reason in the stack's events; it holds at most 4 KB.
        Err(reason) => ("FAILED", reason.chars().take(1000).collect(), json!({})),
    };
    CustomResourceResponse {
        status,
        reason,
        physical_resource_id: event
            .physical_resource_id
            .clone()
            .unwrap_or_else(|| physical_id.to_owned()),
        stack_id: event.stack_id.clone(),
        request_id: event.request_id.clone(),
        logical_resource_id: event.logical_resource_id.clone(),
        data,
    }
}

/// PUT the response to the event's pre-signed URL (no content type: the URL is signed
/// without one), within 10 seconds.
pub async fn send(
    event: &CustomResourceEvent,
    answer: &CustomResourceResponse,
) -> Result<(), ResponseError> {
    let client = verifier_facilitator_http::tls::reqwest_builder()?
        .timeout(std::time::Duration::from_secs(10))
        .build()?;
    let body = serde_json::to_vec(answer).unwrap_or_default();
    let sent = client.put(&event.response_url).body(body).send().await?;
    if !sent.status().is_success() {
        return Err(ResponseError::Status(sent.status().as_u16()));
    }
    Ok(())
}
