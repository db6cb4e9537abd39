//! The local signing key: `signing-key.json` in the data directory (mode 0700), made on first
//! run with file mode 0600 and refused when others can read it, plus `public-keys.json`, the
//! ring of every public key this server used.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::path::Path;
use verifier_ports::keys::{KeySource, StaticKeys};
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
    #[error("no key with version {0:?} is in the ring (public-keys.json)")]
    UnknownVersion(String),
    #[error("--at is not an RFC 3339 time (e.g. 2026-12-07T10:00:00Z)")]
    RevocationTime,
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
        let identity = SigningIdentity::generate_dated("local-", time::OffsetDateTime::now_utc())?;
        write_private(&key_path, &key_file_bytes(&identity))?;
        identity
    };
    let mut ring = read_ring(&ring_path)?;
    let entry = identity.public_entry();
    if !ring.iter().any(|k| k.key_version == entry.key_version) {
        ring.push(entry);
        write_ring(&ring_path, &ring)?;
    }
    Ok(StaticKeys::new(identity, ring))
}

fn key_file_bytes(identity: &SigningIdentity) -> Vec<u8> {
    let file = KeyFile {
        key_version: identity.key_version().to_owned(),
        seed_base64: STANDARD.encode(identity.seed()),
        created_at: verifier_receipt::timestamp::rfc3339_micros(time::OffsetDateTime::now_utc()),
    };
    serde_json::to_vec_pretty(&file).unwrap_or_default()
}

fn read_ring(path: &Path) -> Result<Vec<PublicKeyEntry>, KeyFileError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|_| KeyFileError::Format(path.display().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(KeyFileError::Io(path.display().to_string(), e)),
    }
}

/// Replace the ring file whole (written beside it, then renamed: never half a ring).
fn write_ring(path: &Path, ring: &[PublicKeyEntry]) -> Result<(), KeyFileError> {
    let io = |e| KeyFileError::Io(path.display().to_string(), e);
    let next = path.with_extension("json.next");
    std::fs::write(&next, serde_json::to_vec_pretty(ring).unwrap_or_default()).map_err(io)?;
    std::fs::rename(&next, path).map_err(io)
}

/// What a rotation or revocation did.
#[derive(Debug)]
pub struct KeyChange {
    /// The key that signs from now on.
    pub active: String,
    /// The key it replaced, if the active key changed.
    pub replaced: Option<String>,
    /// The key marked revoked and when (RFC 3339), for a revocation.
    pub revoked: Option<(String, String)>,
}

/// Make a new signing key: its public half joins the ring first, then it replaces
/// `signing-key.json` (the old seed is gone; its public half stays listed so its receipts
/// keep verifying). A running server signs with the new key after a restart.
pub fn rotate(dir: &Path) -> Result<KeyChange, KeyFileError> {
    let old = load_or_create(dir)?.current().key_version().to_owned();
    let ring_path = dir.join("public-keys.json");
    let identity = SigningIdentity::generate_dated("local-", time::OffsetDateTime::now_utc())?;
    let mut ring = read_ring(&ring_path)?;
    ring.push(identity.public_entry());
    write_ring(&ring_path, &ring)?;
    let key_path = dir.join("signing-key.json");
    let next = dir.join("signing-key.json.next");
    let _ = std::fs::remove_file(&next);
    write_private(&next, &key_file_bytes(&identity))?;
    std::fs::rename(&next, &key_path)
        .map_err(|e| KeyFileError::Io(key_path.display().to_string(), e))?;
    Ok(KeyChange {
        active: identity.key_version().to_owned(),
        replaced: Some(old),
        revoked: None,
    })
}

/// Mark `version` revoked from `at` (RFC 3339; now when absent) in the ring. Revoking the
/// active key rotates first, so the server never signs with a revoked key. A key already
/// revoked keeps the earlier of the two times (a revocation is never undone by this command).
pub fn revoke(dir: &Path, version: &str, at: Option<&str>) -> Result<KeyChange, KeyFileError> {
    use time::format_description::well_known::Rfc3339;
    let at_time = match at {
        Some(text) => {
            time::OffsetDateTime::parse(text, &Rfc3339).map_err(|_| KeyFileError::RevocationTime)?
        }
        None => time::OffsetDateTime::now_utc(),
    };
    let ring_path = dir.join("public-keys.json");
    if !read_ring(&ring_path)?
        .iter()
        .any(|k| k.key_version == version)
    {
        return Err(KeyFileError::UnknownVersion(version.to_owned()));
    }
    let active = load_or_create(dir)?.current().key_version().to_owned();
    let (active, replaced) = if active == version {
        let change = rotate(dir)?;
        (change.active, change.replaced)
    } else {
        (active, None)
    };
    let mut ring = read_ring(&ring_path)?;
    let mut stated = String::new();
    for entry in ring.iter_mut().filter(|k| k.key_version == version) {
        stated = entry.revoke(at_time).to_owned();
    }
    write_ring(&ring_path, &ring)?;
    Ok(KeyChange {
        active,
        replaced,
        revoked: Some((version.to_owned(), stated)),
    })
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

    #[test]
    fn rotate_keeps_the_old_public_half_and_revoke_marks_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path()).expect("a fresh key");
        let first = first.current().key_version().to_owned();
        let change = rotate(dir.path()).expect("rotated");
        assert_eq!(change.replaced.as_deref(), Some(first.as_str()));
        assert_ne!(change.active, first);
        assert_eq!(mode(&dir.path().join("signing-key.json")), 0o600);
        let keys = load_or_create(dir.path()).expect("loads");
        assert_eq!(keys.current().key_version(), change.active);
        let listed: Vec<_> = keys
            .public_keys()
            .into_iter()
            .map(|k| k.key_version)
            .collect();
        assert_eq!(listed, [first.clone(), change.active.clone()]);

        // Revoking an old key marks it; a later time never replaces an earlier one.
        let at = "2026-12-07T10:00:00Z";
        let revoked = revoke(dir.path(), &first, Some(at)).expect("revoked");
        assert_eq!(revoked.replaced, None);
        assert_eq!(
            revoked.revoked.as_ref().map(|r| r.1.as_str()),
            Some("2026-12-07T10:00:00.000000+00:00")
        );
        revoke(dir.path(), &first, Some("2027-01-01T00:00:00Z")).expect("kept");
        let ring = load_or_create(dir.path()).expect("loads").public_keys();
        assert_eq!(
            ring[0].revoked_at.as_deref(),
            Some("2026-12-07T10:00:00.000000+00:00")
        );
        assert_eq!(ring[1].revoked_at, None);

        // Revoking the active key rotates first: the server never signs with a revoked key.
        let active = change.active;
        let revoked = revoke(dir.path(), &active, None).expect("revoked");
        assert_eq!(revoked.replaced.as_deref(), Some(active.as_str()));
        let keys = load_or_create(dir.path()).expect("loads");
        assert_ne!(keys.current().key_version(), active);
        assert!(
            keys.public_keys()
                .iter()
                .any(|k| k.key_version == active && k.revoked_at.is_some())
        );

        assert!(matches!(
            revoke(dir.path(), "nope", None),
            Err(KeyFileError::UnknownVersion(_))
        ));
        assert!(matches!(
            revoke(dir.path(), &first, Some("soon")),
            Err(KeyFileError::RevocationTime)
        ));
    }
}
