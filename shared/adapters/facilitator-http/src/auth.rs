//! Credentials for a hosted facilitator: a static bearer token, or a Coinbase CDP API key that
//! signs a fresh short-lived JWT per request (ES256 with a P-256 PEM key, or EdDSA with a
//! base64 Ed25519 key). The JWT envelope is written here because its header carries a `nonce`
//! member that common JWT crates cannot add; the signatures come from AWS-LC.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair,
};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;

/// Seconds a CDP JWT stays valid.
const JWT_LIFETIME: u64 = 120;

enum CdpKey {
    Es256(EcdsaKeyPair),
    EdDsa(Ed25519KeyPair),
}

/// How requests to the facilitator are authenticated.
pub enum FacilitatorAuth {
    /// `Authorization: Bearer <token>` (self-hosted facilitators).
    Bearer(String),
    /// A CDP API key: `Authorization: Bearer <JWT>`, signed per request.
    Cdp { key_id: String, key: CdpKeyPair },
}

/// A CDP API key's private half.
pub struct CdpKeyPair(CdpKey);

impl std::fmt::Debug for FacilitatorAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FacilitatorAuth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            FacilitatorAuth::Cdp { key_id, .. } => write!(f, "Cdp({key_id})"),
        }
    }
}

impl CdpKeyPair {
    /// Read a CDP key secret: a PEM EC P-256 private key (SEC1 or PKCS#8), or base64 of a
    /// 64-byte Ed25519 key (seed then public key).
    pub fn parse(secret: &str) -> Result<Self, String> {
        let secret = secret.trim();
        if secret.starts_with("-----BEGIN") {
            let body: String = secret
                .lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<Vec<_>>()
                .join("");
            let der = STANDARD
                .decode(body.trim())
                .map_err(|_| "the PEM key is not base64".to_owned())?;
            let key = EcdsaKeyPair::from_private_key_der(&ECDSA_P256_SHA256_FIXED_SIGNING, &der)
                .or_else(|_| EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der))
                .map_err(|_| "the PEM key is not an EC P-256 private key".to_owned())?;
            return Ok(CdpKeyPair(CdpKey::Es256(key)));
        }
        let raw = STANDARD
            .decode(secret)
            .map_err(|_| "the key is neither PEM nor base64".to_owned())?;
        if raw.len() != 64 {
            return Err("a base64 Ed25519 key must hold 64 bytes".into());
        }
        let key = Ed25519KeyPair::from_seed_and_public_key(&raw[..32], &raw[32..])
            .map_err(|_| "the Ed25519 seed and public key do not match".to_owned())?;
        Ok(CdpKeyPair(CdpKey::EdDsa(key)))
    }

    /// The public key bytes (uncompressed P-256 point, or the 32-byte Ed25519 key).
    pub fn public_key(&self) -> Vec<u8> {
        match &self.0 {
            CdpKey::Es256(k) => k.public_key().as_ref().to_vec(),
            CdpKey::EdDsa(k) => k.public_key().as_ref().to_vec(),
        }
    }

    fn alg(&self) -> &'static str {
        match &self.0 {
            CdpKey::Es256(_) => "ES256",
            CdpKey::EdDsa(_) => "EdDSA",
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        match &self.0 {
            CdpKey::Es256(k) => k
                .sign(&SystemRandom::new(), message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| "ES256 signing failed".to_owned()),
            CdpKey::EdDsa(k) => Ok(k.sign(message).as_ref().to_vec()),
        }
    }
}

/// `host/path` of a base URL (the JWT's `uri` claim names host and path, no scheme).
fn host_and_path(base: &str) -> &str {
    base.split_once("://").map_or(base, |(_, rest)| rest)
}

/// A CDP JWT for one request.
pub fn cdp_jwt(
    key_id: &str,
    key: &CdpKeyPair,
    method: &str,
    base: &str,
    path: &str,
    now: u64,
) -> Result<String, String> {
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).map_err(|_| "no random source".to_owned())?;
    let header =
        json!({"alg": key.alg(), "kid": key_id, "typ": "JWT", "nonce": hex::encode(nonce)});
    let claims = json!({
        "sub": key_id,
        "iss": "cdp",
        "nbf": now,
        "exp": now + JWT_LIFETIME,
        "uri": format!("{method} {}{path}", host_and_path(base)),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key.sign(signing_input.as_bytes())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

impl FacilitatorAuth {
    /// The `Authorization` header value for a request.
    pub fn header(&self, method: &str, base: &str, path: &str) -> Result<String, String> {
        match self {
            FacilitatorAuth::Bearer(token) => Ok(format!("Bearer {token}")),
            FacilitatorAuth::Cdp { key_id, key } => {
                let now = time::OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
                Ok(format!(
                    "Bearer {}",
                    cdp_jwt(key_id, key, method, base, path, now)?
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, ED25519, UnparsedPublicKey};

    fn parts(jwt: &str) -> (serde_json::Value, serde_json::Value, Vec<u8>, String) {
        let pieces: Vec<&str> = jwt.split('.').collect();
        assert_eq!(pieces.len(), 3);
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).expect("base64url");
        (
            serde_json::from_slice(&decode(pieces[0])).expect("header"),
            serde_json::from_slice(&decode(pieces[1])).expect("claims"),
            decode(pieces[2]),
            format!("{}.{}", pieces[0], pieces[1]),
        )
    }

    #[test]
    fn eddsa_jwt_carries_the_cdp_claims_and_verifies() {
        let seed = [9u8; 32];
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).expect("seed");
        let secret = STANDARD.encode([&seed[..], pair.public_key().as_ref()].concat());
        let key = CdpKeyPair::parse(&secret).expect("key");
        let jwt = cdp_jwt(
            "kid-1",
            &key,
            "POST",
            "https://api.cdp.coinbase.com/platform/v2/x402",
            "/settle",
            1_000,
        )
        .expect("jwt");
        let (header, claims, sig, input) = parts(&jwt);
        assert_eq!(header["alg"], "EdDSA");
        assert_eq!(header["kid"], "kid-1");
        assert_eq!(header["nonce"].as_str().map(str::len), Some(32));
        assert_eq!(claims["iss"], "cdp");
        assert_eq!(claims["sub"], "kid-1");
        assert_eq!(claims["exp"], 1_120);
        assert_eq!(
            claims["uri"],
            "POST api.cdp.coinbase.com/platform/v2/x402/settle"
        );
        UnparsedPublicKey::new(&ED25519, key.public_key())
            .verify(input.as_bytes(), &sig)
            .expect("signature verifies");
    }

    #[test]
    fn es256_pem_keys_sign_verifiable_jwts() {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        let key = CdpKeyPair::parse(&pem).expect("pem");
        let jwt = cdp_jwt("k", &key, "GET", "https://h/x", "/supported", 5).expect("jwt");
        let (header, _, sig, input) = parts(&jwt);
        assert_eq!(header["alg"], "ES256");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key())
            .verify(input.as_bytes(), &sig)
            .expect("signature verifies");
        assert!(CdpKeyPair::parse("not a key").is_err());
    }
}
