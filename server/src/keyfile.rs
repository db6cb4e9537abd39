//! The local signing key: `signing-key.json` in the data directory, made on first run with
//! file mode 0600, plus `public-keys.json`, the ring of every public key this server used.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::path::Path;
use verifier_core::keys::{PublicKeyEntry, SigningIdentity, StaticKeys};

#[derive(Serialize, Deserialize)]
struct KeyFile {
    key_version: String,
    seed_base64: String,
    created_at: String,
}

/// Problems with the key files.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("cannot read or write {0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0} is not a valid key file")]
    Format(String),
    #[error("cannot make a key: {0}")]
    Key(#[from] verifier_core::keys::KeyError),
}

/// Load the local key, making it on first run.
pub fn load_or_create(dir: &Path) -> Result<StaticKeys, KeyFileError> {
    std::fs::create_dir_all(dir).map_err(|e| KeyFileError::Io(dir.display().to_string(), e))?;
    let key_path = dir.join("signing-key.json");
    let ring_path = dir.join("public-keys.json");
    let identity = if key_path.exists() {
        let text = std::fs::read_to_string(&key_path)
            .map_err(|e| KeyFileError::Io(key_path.display().to_string(), e))?;
        let file: KeyFile = serde_json::from_str(&text)
            .map_err(|_| KeyFileError::Format(key_path.display().to_string()))?;
        let seed = STANDARD
            .decode(&file.seed_base64)
            .map_err(|_| KeyFileError::Format(key_path.display().to_string()))?;
        SigningIdentity::from_seed(file.key_version, &seed)?
    } else {
        let now = time::OffsetDateTime::now_utc();
        let fresh = SigningIdentity::generate("pending")?;
        // The version names the day and the first bytes of the public key: unique and readable.
        let public = fresh.public_entry().public_key;
        let tag: String = public
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(6)
            .collect();
        let version = format!(
            "local-{:04}-{:02}-{:02}-{tag}",
            now.year(),
            u8::from(now.month()),
            now.day()
        );
        let identity = SigningIdentity::from_seed(version, &fresh.seed())?;
        let file = KeyFile {
            key_version: identity.key_version().to_owned(),
            seed_base64: STANDARD.encode(identity.seed()),
            created_at: verifier_core::engine::rfc3339_micros(now),
        };
        write_private(
            &key_path,
            &serde_json::to_vec_pretty(&file).unwrap_or_default(),
        )?;
        identity
    };
    let mut ring: Vec<PublicKeyEntry> = match std::fs::read_to_string(&ring_path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|_| KeyFileError::Format(ring_path.display().to_string()))?,
        Err(_) => Vec::new(),
    };
    let entry = identity.public_entry();
    if !ring.iter().any(|k| k.key_version == entry.key_version) {
        ring.push(entry);
        std::fs::write(
            &ring_path,
            serde_json::to_vec_pretty(&ring).unwrap_or_default(),
        )
        .map_err(|e| KeyFileError::Io(ring_path.display().to_string(), e))?;
    }
    Ok(StaticKeys::new(identity, ring))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), KeyFileError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .map_err(|e| KeyFileError::Io(path.display().to_string(), e))?;
    file.write_all(bytes)
        .map_err(|e| KeyFileError::Io(path.display().to_string(), e))
}
