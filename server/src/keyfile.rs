//! The local signing key: `signing-key.json` in the data directory (mode 0700), made on first
//! run with file mode 0600 and refused when others can read it, plus `public-keys.json`, the
//! ring of every public key this server used.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::path::Path;
use verifier_ports::keys::StaticKeys;
use verifier_receipt::keys::{PublicKeyEntry, SigningIdentity};

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
    Key(#[from] verifier_receipt::keys::KeyError),
    #[error(
        "{0} can be read by other users of this machine (mode {1:o}): run `chmod 600` on it, or delete it to make a new key (receipts signed with it stay verifiable only while its public half is listed)"
    )]
    NotPrivate(String, u32),
}

/// Load the local key, making it on first run.
/// The data directory is made (or kept) owner-only; an existing key file that other users can
/// read is refused: the server does not start with a key others may have copied.
pub fn load_or_create(dir: &Path) -> Result<StaticKeys, KeyFileError> {
    verifier_store_embedded::create_private_dir(dir)
        .map_err(|e| KeyFileError::Io(dir.display().to_string(), e))?;
    let key_path = dir.join("signing-key.json");
    let ring_path = dir.join("public-keys.json");
    let identity = if key_path.exists() {
        read_signing_key(&key_path)?
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
            created_at: verifier_receipt::timestamp::rfc3339_micros(now),
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

/// The signing key in a key file, read only (refused when others can read it).
pub fn read_signing_key(path: &Path) -> Result<SigningIdentity, KeyFileError> {
    refuse_shared(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| KeyFileError::Io(path.display().to_string(), e))?;
    SigningIdentity::from_key_file(&text)
        .map_err(|_| KeyFileError::Format(path.display().to_string()))
}

/// Refuse a key file that others than its owner can read (Unix).
pub(crate) fn refuse_shared(path: &Path) -> Result<(), KeyFileError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| KeyFileError::Io(path.display().to_string(), e))?
            .permissions()
            .mode()
            & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyFileError::NotPrivate(path.display().to_string(), mode));
        }
    }
    Ok(())
}

pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), KeyFileError> {
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn the_data_directory_and_the_key_are_the_owners_only() {
        let parent = tempfile::tempdir().expect("tempdir");
        let dir = parent.path().join("data");
        load_or_create(&dir).expect("a fresh key");
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("signing-key.json")), 0o600);
        // The store's file too.
        drop(verifier_store_embedded::EmbeddedStore::open(&dir).expect("the store opens"));
        assert_eq!(mode(&dir.join("verifier.redb")), 0o600);
        // A directory others could read is tightened.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        load_or_create(&dir).expect("the same key");
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_key_file_others_can_read_stops_the_server() {
        let dir = tempfile::tempdir().expect("tempdir");
        load_or_create(dir.path()).expect("a fresh key");
        let key = dir.path().join("signing-key.json");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = load_or_create(dir.path()).err().expect("refused");
        assert!(matches!(err, KeyFileError::NotPrivate(_, 0o644)), "{err}");
        assert!(err.to_string().contains("chmod 600"));
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        load_or_create(dir.path()).expect("accepted again");
    }
}
