//! The AWS SDK's configuration for the adapters that call AWS (DynamoDB, SSM, KMS) from a Lambda
//! function: the SDK's timeouts, and an HTTPS client that trusts Mozilla's roots (rustls with
//! AWS-LC) instead of reading the system's certificate files at every cold start. (The local
//! server's DynamoDB client keeps the SDK's default, the system's roots, so a CA a user added
//! to their system, e.g. behind a TLS-inspecting proxy, still counts.)

pub mod emf;

use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use aws_smithy_http_client::tls::{Provider, TlsContext, TrustStore};
use aws_smithy_http_client::{Builder, ConnectorBuilder};
use base64::Engine as _;

/// Why the SDK's HTTPS client cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("TLS configuration of the AWS SDK's client: {0}")]
    AwsClient(#[from] aws_smithy_http_client::HttpClientError),
}

/// The AWS SDK's configuration from the environment (region, credentials, endpoints, as
/// `aws_config::load_defaults`), with [`aws_https_client`] as its HTTP client and
/// [`sdk_timeouts`], and without the SDK's stalled-stream protection: its throughput check
/// wraps every request and response body (about 5 % of a `GetItem`'s instructions, measured
/// with callgrind) to catch a transfer that stalls, which the attempt timeout already bounds
/// for calls whose bodies are a few kilobytes (DynamoDB, SSM, KMS).
pub async fn aws_sdk_config() -> Result<aws_config::SdkConfig, TlsError> {
    Ok(aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(aws_https_client()?)
        .timeout_config(sdk_timeouts())
        .stalled_stream_protection(
            aws_config::stalled_stream_protection::StalledStreamProtectionConfig::disabled(),
        )
        .load()
        .await)
}

/// One attempt of an AWS call (DynamoDB, SSM, KMS) that gets no answer within this is
/// abandoned and retried on a fresh connection (the SDK's retries classify it as transient).
pub const SDK_ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// An AWS call, its retries included, gives up after this: the store's caller then gets a
/// retryable 503, well inside Lambda's 30 s and API Gateway's 30 s.
pub const SDK_OPERATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(16);

/// The SDK's timeouts. Its default sets only a 3.1 s connect timeout, so a connection that
/// was accepted and then never answered held a call (and the request waiting on it) until
/// Lambda's timeout, or for ever on the local server with `--store dynamodb`.
pub fn sdk_timeouts() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(std::time::Duration::from_millis(3100))
        .operation_attempt_timeout(SDK_ATTEMPT_TIMEOUT)
        .operation_timeout(SDK_OPERATION_TIMEOUT)
        .build()
}

/// The client the SDK's `default-https-client` feature builds — hyper, rustls with AWS-LC, the
/// proxy from the environment, the SDK's timeouts and sleep — trusting Mozilla's roots. The
/// default trusts the system's roots, which it reads and parses at every cold start: the
/// certificate file and then every file of the certificate directory (on Debian 292 files;
/// a function's init is about 0.5 ms shorter without them, docs/performance.md, "On Lambda").
pub fn aws_https_client() -> Result<aws_smithy_runtime_api::client::http::SharedHttpClient, TlsError>
{
    let context = TlsContext::builder()
        .with_trust_store(TrustStore::empty().with_pem_certificate(mozilla_roots_pem()))
        .build()?;
    Ok(
        Builder::new().build_with_connector_fn(move |settings, components| {
            let mut connector =
                ConnectorBuilder::default().tls_provider(Provider::Rustls(CryptoMode::AwsLc));
            connector.set_tls_context(context.clone());
            connector.set_connector_settings(settings.cloned());
            if let Some(components) = components {
                connector.set_sleep_impl(components.sleep_impl());
            }
            connector.set_proxy_config(Some(ProxyConfig::from_env()));
            connector.build()
        }),
    )
}

/// Mozilla's root certificates (`webpki-root-certs`, the set `webpki-roots` carries) as one PEM
/// document, the form the SDK's trust store takes.
fn mozilla_roots_pem() -> Vec<u8> {
    let mut pem = Vec::new();
    for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        let body = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
        pem.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
        for line in body.as_bytes().chunks(64) {
            pem.extend_from_slice(line);
            pem.push(b'\n');
        }
        pem.extend_from_slice(b"-----END CERTIFICATE-----\n");
    }
    pem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aws_clients_trust_every_mozilla_root_and_the_ones_aws_chains_to() {
        use rustls::pki_types::pem::PemObject;
        // The SDK's trust store parses this PEM and adds each certificate, panicking on one it
        // cannot parse: every certificate must come back whole and be a usable trust anchor.
        let pem = mozilla_roots_pem();
        let certs: Vec<_> = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .expect("valid PEM");
        assert_eq!(certs.len(), webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        assert!(certs.len() > 100);
        let mut store = rustls::RootCertStore::empty();
        for cert in &certs {
            store.add(cert.clone()).expect("a usable trust anchor");
        }
        // AWS's endpoints chain to Amazon Root CA 1–4 (and Starfield, cross-signing them).
        for name in [
            "Amazon Root CA 1",
            "Amazon Root CA 2",
            "Amazon Root CA 3",
            "Amazon Root CA 4",
            "Starfield Services Root Certificate Authority - G2",
        ] {
            assert!(
                certs
                    .iter()
                    .any(|c| c.as_ref().windows(name.len()).any(|w| w == name.as_bytes())),
                "{name} is trusted"
            );
        }
        aws_https_client().expect("the SDK's client");
    }
}
