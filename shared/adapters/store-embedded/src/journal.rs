//! The embedded store's write-ahead journal: what makes an answered call durable with one small
//! write and one `fdatasync`, instead of a B-tree commit's many pages.
//!
//! The file has a fixed size, written once with zeros when it is created, so an append
//! overwrites allocated blocks and its `fdatasync` flushes only the data written. It starts
//! with a 16-byte header: a format tag and a random salt, new at every reset. Entries follow: a
//! 16-byte header (payload length, CRC-32 of the salt, the sequence number and the payload,
//! sequence number; little-endian) and the payload. Reading stops at the first entry that is
//! empty, torn, out of sequence or written under another salt, so nothing written before the
//! last reset is ever read again. Once the store has made the entries durable itself (a
//! checkpoint), the journal is reset. A journal whose reset or append failed is out of order
//! until a reset succeeds: it takes no entries meanwhile (the store commits durably instead).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Bytes of an entry's header, and of the file's.
const HEADER: usize = 16;
/// The file header's format tag.
const FORMAT: &[u8; 8] = b"VJOURNL1";

/// One journal entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub seq: u64,
    pub payload: Vec<u8>,
}

/// Whether an append was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Written and on disk.
    Written,
    /// Not written: the entry does not fit in what is left of the file.
    Full,
}

/// The journal file, open for appending.
pub struct Journal {
    file: File,
    capacity: u64,
    /// Where the next entry goes.
    end: u64,
    /// Where the last entry appended since the last reset starts.
    last: Option<u64>,
    /// The salt entries are written under.
    salt: u64,
    /// False after a failed append or reset, until a reset succeeds.
    in_order: bool,
}

fn checksum(salt: u64, seq: u64, payload: &[u8]) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&salt.to_le_bytes());
    crc.update(&seq.to_le_bytes());
    crc.update(payload);
    crc.finalize()
}

/// Read exactly `buf.len()` bytes; false at the end of the file.
fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<bool> {
    match file.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// The entries of the file (`len` bytes), read from its start up to the first empty, torn,
/// out-of-sequence or differently salted one: only what they hold is read, not the whole file.
fn read_entries(file: &mut File, len: u64) -> std::io::Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    let mut header = [0u8; HEADER];
    if !read_full(file, &mut header)? || &header[..8] != FORMAT {
        return Ok(entries);
    }
    let salt = u64::from_le_bytes(header[8..16].try_into().unwrap_or_default());
    let mut at = HEADER as u64;
    while read_full(file, &mut header)? {
        let len_of = u32::from_le_bytes(header[0..4].try_into().unwrap_or_default()) as u64;
        let crc = u32::from_le_bytes(header[4..8].try_into().unwrap_or_default());
        let seq = u64::from_le_bytes(header[8..16].try_into().unwrap_or_default());
        let in_sequence = entries
            .last()
            .is_none_or(|prev| prev.seq.checked_add(1) == Some(seq));
        if len_of == 0 || !in_sequence || len_of > len.saturating_sub(at + HEADER as u64) {
            break;
        }
        let mut payload = vec![0u8; len_of as usize];
        if !read_full(file, &mut payload)? || checksum(salt, seq, &payload) != crc {
            break;
        }
        entries.push(Entry { seq, payload });
        at += HEADER as u64 + len_of;
    }
    Ok(entries)
}

impl Journal {
    /// Open the journal at `path` (created with `capacity` bytes of zeros when missing, owner
    /// only) and read the entries it holds. Appends start at the beginning of the file, so
    /// the caller makes the returned entries durable elsewhere, then calls [`Journal::reset`],
    /// before its first append.
    pub fn open(path: &Path, capacity: u64) -> std::io::Result<(Journal, Vec<Entry>)> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(path)?;
        crate::private::make_private(path)?;
        let len = file.metadata()?.len();
        if len < capacity {
            file.seek(SeekFrom::Start(len))?;
            let zeros = vec![0u8; 1 << 20];
            let mut left = capacity - len;
            while left > 0 {
                let n = left.min(zeros.len() as u64) as usize;
                file.write_all(&zeros[..n])?;
                left -= n as u64;
            }
            file.sync_all()?;
            // The new file's directory entry must survive a crash too.
            if let Some(dir) = path.parent() {
                File::open(dir)?.sync_all()?;
            }
        }
        let capacity = capacity.max(len);
        let entries = read_entries(&mut file, capacity)?;
        Ok((
            Journal {
                file,
                capacity,
                end: HEADER as u64,
                last: None,
                salt: 0,
                // Until the caller's reset: the entries read are not durable elsewhere yet.
                in_order: false,
            },
            entries,
        ))
    }

    /// Write an entry after the last one, without flushing it: the caller makes it durable
    /// ([`Journal::flush`]) before relying on it.
    /// [`Appended::Full`] when it does not fit or the journal is out of order (nothing is
    /// written then). A failed append puts the journal out of order.
    pub fn append(&mut self, seq: u64, payload: &[u8]) -> std::io::Result<Appended> {
        let size = (HEADER + payload.len()) as u64;
        let Ok(len) = u32::try_from(payload.len()) else {
            return Ok(Appended::Full);
        };
        if !self.in_order || payload.is_empty() || size > self.capacity - self.end {
            return Ok(Appended::Full);
        }
        let mut entry = Vec::with_capacity(HEADER + payload.len());
        entry.extend_from_slice(&len.to_le_bytes());
        entry.extend_from_slice(&checksum(self.salt, seq, payload).to_le_bytes());
        entry.extend_from_slice(&seq.to_le_bytes());
        entry.extend_from_slice(payload);
        let written = self.write_at(self.end, &entry);
        if written.is_err() {
            self.in_order = false;
        }
        written?;
        self.last = Some(self.end);
        self.end += size;
        Ok(Appended::Written)
    }

    /// Take back the last entry appended since the last reset (its writes did not happen): its
    /// header is zeroed and flushed, so reading stops before it, and the next append takes its
    /// place. A failed retraction leaves the journal out of order; the entry may then still be
    /// read, until a reset.
    pub fn retract(&mut self) -> std::io::Result<()> {
        let Some(at) = self.last.take() else {
            return Ok(());
        };
        let zeroed = self.write_at(at, &[0u8; HEADER]);
        if zeroed.is_err() {
            self.in_order = false;
        }
        zeroed?;
        self.flush()?;
        self.end = at;
        Ok(())
    }

    /// Start writing the last entry appended to disk without waiting for it (Linux
    /// `sync_file_range`), so that work done before [`Journal::flush`] overlaps the write; the
    /// flush then waits only for what is left (the disk's cache flush). Advisory: an error
    /// here shows in the flush.
    pub fn start_writeback(&self) {
        #[cfg(target_os = "linux")]
        if let Some(at) = self.last {
            use std::os::fd::AsRawFd;
            // SAFETY: a system call on a descriptor this journal owns and keeps open; no
            // pointers are passed.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    at as libc::off64_t,
                    (self.end - at) as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
    }

    /// Make what was appended durable (`fdatasync`). A failed flush puts the journal out of
    /// order: after one, the kernel may have dropped the unwritten data and report the next
    /// flush clean.
    pub fn flush(&mut self) -> std::io::Result<()> {
        let flushed = self.file.sync_data();
        if flushed.is_err() {
            self.in_order = false;
        }
        flushed
    }

    /// Forget every entry (the store made them durable itself): a new salt and an empty first
    /// entry go to disk, and appends start at the beginning again. A failed reset leaves the
    /// journal out of order.
    pub fn reset(&mut self) -> std::io::Result<()> {
        self.in_order = false;
        let mut salt = [0u8; 8];
        getrandom::fill(&mut salt).map_err(|e| std::io::Error::other(e.to_string()))?;
        let salt = u64::from_le_bytes(salt);
        let mut header = [0u8; 2 * HEADER];
        header[..8].copy_from_slice(FORMAT);
        header[8..16].copy_from_slice(&salt.to_le_bytes());
        self.write_at(0, &header)?;
        self.file.sync_data()?;
        self.salt = salt;
        self.end = HEADER as u64;
        self.last = None;
        self.in_order = true;
        Ok(())
    }

    fn write_at(&mut self, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(at))?;
        self.file.write_all(bytes)
    }

    /// Bytes of entries written since the last reset.
    pub fn used(&self) -> u64 {
        self.end - HEADER as u64
    }

    /// The file's size.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(dir: &Path) -> (Journal, Vec<Entry>) {
        Journal::open(&dir.join("j"), 4096).expect("journal opens")
    }

    /// Each entry's sequence number and payload.
    fn pairs(entries: &[Entry]) -> Vec<(u64, &[u8])> {
        entries
            .iter()
            .map(|e| (e.seq, e.payload.as_slice()))
            .collect()
    }

    fn seqs(dir: &Path) -> Vec<u64> {
        journal(dir).1.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn entries_survive_reopening_and_a_reset_forgets_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut j, found) = journal(dir.path());
        assert!(found.is_empty());
        let size = std::fs::metadata(dir.path().join("j")).map(|m| m.len());
        assert_eq!(size.ok(), Some(4096));
        // Out of order until the first reset: what was read is not durable elsewhere yet.
        assert_eq!(j.append(7, b"first").ok(), Some(Appended::Full));
        j.reset().expect("reset");
        assert_eq!(j.append(7, b"first").ok(), Some(Appended::Written));
        assert_eq!(j.append(8, b"second").ok(), Some(Appended::Written));
        assert_eq!(j.used(), 2 * 16 + 5 + 6);
        drop(j);
        let (mut j, found) = journal(dir.path());
        assert_eq!(pairs(&found), vec![(7, &b"first"[..]), (8, &b"second"[..])]);
        j.reset().expect("reset");
        drop(j);
        assert!(seqs(dir.path()).is_empty());
    }

    #[test]
    fn nothing_written_before_a_reset_is_read_again_and_a_torn_entry_ends_the_journal() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = journal(dir.path());
        j.reset().expect("reset");
        for seq in 1..=4 {
            j.append(seq, b"0123456789").expect("append");
        }
        // New entries overwrite the first old ones; the old ones after them are not read,
        // even when their sequence numbers follow (as after a database restored from a
        // backup, whose sequence starts lower).
        j.reset().expect("reset");
        j.append(1, b"abcdefghij").expect("append");
        drop(j);
        assert_eq!(seqs(dir.path()), vec![1]);
        let (mut j, _) = journal(dir.path());
        j.reset().expect("reset");
        j.append(5, b"abcdefghij").expect("append");
        j.append(6, b"klmnopqrst").expect("append");
        drop(j);
        assert_eq!(seqs(dir.path()), vec![5, 6]);
        // A torn second entry (one payload byte changed): only the first is read.
        let path = dir.path().join("j");
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[16 + 26 + 16 + 3] ^= 0xff;
        std::fs::write(&path, &bytes).expect("write");
        assert_eq!(seqs(dir.path()), vec![5]);
    }

    #[test]
    fn a_retracted_entry_is_not_read_and_the_next_append_takes_its_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = journal(dir.path());
        j.reset().expect("reset");
        j.append(1, b"kept").expect("append");
        j.append(2, b"not applied").expect("append");
        j.retract().expect("retract");
        assert_eq!(j.used(), 16 + 4);
        drop(j);
        assert_eq!(seqs(dir.path()), vec![1]);
        let (mut j, _) = journal(dir.path());
        j.reset().expect("reset");
        j.append(1, b"kept").expect("append");
        j.append(2, b"not applied").expect("append");
        j.retract().expect("retract");
        j.append(2, b"applied").expect("append");
        // Only the last entry is taken back, once.
        j.retract().expect("retract");
        j.retract().expect("a second retract does nothing");
        j.append(2, b"applied").expect("append");
        drop(j);
        let found = journal(dir.path()).1;
        assert_eq!(pairs(&found), vec![(1, &b"kept"[..]), (2, &b"applied"[..])]);
    }

    #[test]
    fn an_entry_that_does_not_fit_is_not_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = journal(dir.path());
        j.reset().expect("reset");
        assert_eq!(j.append(1, &[1u8; 4000]).ok(), Some(Appended::Written));
        assert_eq!(j.append(2, &[2u8; 100]).ok(), Some(Appended::Full));
        assert_eq!(j.append(2, &[]).ok(), Some(Appended::Full));
        drop(j);
        assert_eq!(seqs(dir.path()), vec![1]);
    }
}
