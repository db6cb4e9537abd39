//! Files only their owner may read: the store and its journal.

use std::path::Path;

/// Make a file or directory the owner's only (0600 for a file, 0700 for a directory, on Unix);
/// a no-op when it is already.
pub fn make_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(path)?;
        let mode = meta.permissions().mode() & 0o777;
        let wanted = if meta.is_dir() { 0o700 } else { 0o600 };
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted))?;
        }
    }
    Ok(())
}
