//! The MCP registry entry (`server.json`, schema 2025-12-11) of this deployment: its MCP
//! endpoint as a `streamable-http` remote, named in the reverse-DNS namespace of its public
//! host (the registry proves that namespace by DNS or HTTP when it is published with
//! `mcp-publisher`). The repository ships the entry for the example origin
//! [`EXAMPLE_PUBLIC_URL`] as `server.json`; a test keeps that file equal to this function's.

use serde_json::{Value, json};
use verifier_engine::engine::VERIFIER_VERSION;
use verifier_service::config::ServiceConfig;

/// The registry schema the entry follows.
pub const SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
/// The origin of the shipped `server.json`.
pub const EXAMPLE_PUBLIC_URL: &str = "https://verifier.example.com";
/// The server's part of the name, after the namespace.
const SERVER: &str = "agent-output-verifier";

/// The reverse-DNS namespace of a public URL's host (`https://a.b.com:8443/x` → `com.b.a`).
pub fn namespace(public_url: &str) -> String {
    let rest = public_url.split_once("://").map_or(public_url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.split(':').next().unwrap_or(host);
    let labels: Vec<&str> = host.split('.').filter(|l| !l.is_empty()).rev().collect();
    if labels.is_empty() {
        "localhost".to_owned()
    } else {
        labels.join(".")
    }
}

/// The entry for a deployment.
pub fn server_json(c: &ServiceConfig) -> Value {
    json!({
        "$schema": SCHEMA,
        "name": format!("{}/{SERVER}", namespace(&c.public_url)),
        "title": "Agent Output Verifier",
        "description": "Checks an AI agent's JSON output against a JSON Schema and rules; Ed25519-signed receipts.",
        "version": VERIFIER_VERSION,
        "websiteUrl": c.url("/docs"),
        "remotes": [{"type": "streamable-http", "url": c.url("/mcp")}]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_reverse_the_host() {
        assert_eq!(
            namespace("https://verifier.example.com"),
            "com.example.verifier"
        );
        assert_eq!(namespace("http://127.0.0.1:8080/"), "1.0.0.127");
        assert_eq!(namespace("https://u@a.b.org:8443/x?y"), "org.b.a");
    }

    #[test]
    fn the_description_fits_the_registry_limit() {
        let entry = server_json(&ServiceConfig::default());
        assert!(
            entry["description"]
                .as_str()
                .is_some_and(|d| d.len() <= 100)
        );
    }

    /// `UPDATE_SERVER_JSON=1 cargo test -p discovery-function shipped` rewrites the file.
    #[test]
    fn the_shipped_server_json_is_the_generated_one() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../server.json");
        let config = ServiceConfig {
            public_url: EXAMPLE_PUBLIC_URL.into(),
            ..ServiceConfig::default()
        };
        let generated = server_json(&config);
        if std::env::var_os("UPDATE_SERVER_JSON").is_some() {
            let text = serde_json::to_string_pretty(&generated).expect("JSON") + "\n";
            std::fs::write(&path, text).expect("write server.json");
        }
        let shipped: Value = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .expect("server.json at the repository root is JSON");
        assert_eq!(
            shipped, generated,
            "regenerate it: UPDATE_SERVER_JSON=1 cargo test -p discovery-function shipped"
        );
    }
}
