//! The TLS configuration of our own HTTPS clients (the facilitator, the offline receipt check's
//! key fetch): rustls with AWS-LC as its crypto provider — the library the AWS SDK's client and
//! the signer already link, so no binary carries `ring` as a second one — and Mozilla's root
//! certificates, so it works in a container without a system CA bundle. (The AWS SDK clients'
//! equivalent is `verifier-aws-sdk`.)

use std::sync::Arc;

/// Why the TLS configuration cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// A client configuration: TLS 1.2 and 1.3 with AWS-LC's safe defaults, Mozilla's roots,
/// HTTP/1.1 offered by ALPN. Give it to reqwest with `use_preconfigured_tls`.
pub fn client_config() -> Result<rustls::ClientConfig, TlsError> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // What reqwest offers with its own configuration when it speaks only HTTP/1.1.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// reqwest's client builder with [`client_config`] as its TLS. Every reqwest client starts
/// here (or passes [`client_config`] to `use_preconfigured_tls` itself): reqwest is built
/// without a crypto provider of its own, and its `build` panics when given none.
pub fn reqwest_builder() -> Result<reqwest::ClientBuilder, TlsError> {
    Ok(reqwest::Client::builder().use_preconfigured_tls(client_config()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_uses_aws_lc_and_trusts_the_mozilla_roots() {
        let config = client_config().expect("a client configuration");
        assert!(!webpki_roots::TLS_SERVER_ROOTS.is_empty());
        // AWS-LC's provider offers both TLS 1.3 and TLS 1.2 suites.
        let suites: Vec<_> = config
            .crypto_provider()
            .cipher_suites
            .iter()
            .map(|s| s.version().version)
            .collect();
        assert!(suites.contains(&rustls::ProtocolVersion::TLSv1_3));
        assert!(suites.contains(&rustls::ProtocolVersion::TLSv1_2));
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        // reqwest takes it as its TLS backend (an unknown type would fail `build`).
        reqwest::Client::builder()
            .use_preconfigured_tls(config)
            .build()
            .expect("reqwest accepts the configuration");
        reqwest_builder()
            .expect("a builder")
            .build()
            .expect("a client");
    }
}
