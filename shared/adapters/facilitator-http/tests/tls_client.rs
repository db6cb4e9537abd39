//! Our HTTPS client (the facilitator's) over a real TLS handshake on loopback: it speaks TLS
//! with AWS-LC's provider and refuses a certificate no public root signed, so a payment is never
//! sent to a server it cannot authenticate (and the error says nothing was sent).

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::TcpListener;
use std::sync::Arc;
use verifier_facilitator_http::{Facilitator, FacilitatorError, HttpFacilitator};

/// A TLS server for one connection with a self-signed certificate for `localhost`; returns
/// how its handshake ended.
fn self_signed_server() -> (u16, std::thread::JoinHandle<Result<(), rustls::Error>>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("a self-signed certificate");
    let cert: CertificateDer<'static> = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .expect("the server's certificate");
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("the client connects");
        let mut conn = rustls::ServerConnection::new(Arc::new(config))?;
        while conn.is_handshaking() {
            conn.complete_io(&mut stream).map_err(|e| {
                e.into_inner()
                    .and_then(|inner| inner.downcast::<rustls::Error>().ok())
                    .map_or(rustls::Error::HandshakeNotComplete, |e| *e)
            })?;
        }
        Ok(())
    });
    (port, handle)
}

#[tokio::test]
async fn the_facilitator_client_refuses_a_certificate_no_public_root_signed() {
    let (port, server) = self_signed_server();
    let facilitator =
        HttpFacilitator::new(&format!("https://localhost:{port}"), None).expect("a client");
    match facilitator.supported().await {
        Err(FacilitatorError::Unreachable(_)) => {}
        other => panic!("expected an unreachable facilitator, got {other:?}"),
    }
    // The server saw the client's alert: the handshake ran and our side rejected the issuer.
    let ended = server.join().expect("the server thread");
    assert!(
        matches!(
            ended,
            Err(rustls::Error::AlertReceived(
                rustls::AlertDescription::UnknownCA
            ))
        ),
        "{ended:?}"
    );
    assert!(
        FacilitatorError::Unreachable(String::new()).never_sent(),
        "a refused handshake counts as never sent: the payer is not charged"
    );
}
