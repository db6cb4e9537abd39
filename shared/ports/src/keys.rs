//! The key port: where the active signing key and the public key ring come from (the local
//! key file, or SSM/KMS through `verifier-keys-aws`).

use verifier_receipt::{PublicKeyEntry, SigningIdentity};

/// Where the active signing key and the public key ring come from.
pub trait KeySource: Send + Sync {
    /// The key to sign with now.
    fn current(&self) -> std::sync::Arc<SigningIdentity>;
    /// Every public key ever used, oldest first.
    fn public_keys(&self) -> Vec<PublicKeyEntry>;
}

/// A fixed key and ring (the local server, tests).
pub struct StaticKeys {
    active: std::sync::Arc<SigningIdentity>,
    ring: Vec<PublicKeyEntry>,
}

impl StaticKeys {
    /// One key; the ring is `ring` plus the active key's entry if missing.
    pub fn new(active: SigningIdentity, mut ring: Vec<PublicKeyEntry>) -> Self {
        let entry = active.public_entry();
        if !ring.iter().any(|k| k.key_version == entry.key_version) {
            ring.push(entry);
        }
        StaticKeys {
            active: std::sync::Arc::new(active),
            ring,
        }
    }
}

impl KeySource for StaticKeys {
    fn current(&self) -> std::sync::Arc<SigningIdentity> {
        self.active.clone()
    }
    fn public_keys(&self) -> Vec<PublicKeyEntry> {
        self.ring.clone()
    }
}
