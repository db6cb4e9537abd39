//! The embedded store's write-ahead journal: what makes an answered call durable with one small
//! write and one `fdatasync`, instead of a B-tree commit's many pages.
//!
//! The file has a fixed size, written once with zeros when it is created, so an append
//! overwrites allocated blocks and its `fdatasync` flushes only the data written. Entries follow
//! each other from the start of the file: a 16-byte header (payload length, CRC-32 of the
//! sequence number and the payload, sequence number; little-endian) and the payload. Reading
//! stops at the first entry that is empty, torn (its CRC does not match) or out of sequence.
//! Once the store has made the entries durable itself (a checkpoint), the journal is reset:
//! the first header is zeroed and appends start again at the beginning.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Bytes of an entry's header.
const HEADER: usize = 16;

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
    end: u64,
}

fn checksum(seq: u64, payload: &[u8]) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    crc.update(&seq.to_le_bytes());
    crc.update(payload);
    crc.finalize()
}

/// The entries at the start of `bytes`, up to the first empty, torn or out-of-sequence one.
fn parse(bytes: &[u8]) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut at = 0usize;
    while let Some(header) = bytes.get(at..at + HEADER) {
        let word =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let len = word(0) as usize;
        let crc = word(4);
        let mut seq_bytes = [0u8; 8];
        seq_bytes.copy_from_slice(&header[8..16]);
        let seq = u64::from_le_bytes(seq_bytes);
        let Some(payload) = bytes.get(at + HEADER..at + HEADER + len) else {
            break;
        };
        let in_sequence = entries
            .last()
            .is_none_or(|prev| prev.seq.checked_add(1) == Some(seq));
        if len == 0 || !in_sequence || checksum(seq, payload) != crc {
            break;
        }
        entries.push(Entry {
            seq,
            payload: payload.to_vec(),
        });
        at += HEADER + len;
    }
    entries
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
        super::embedded::make_private(path)?;
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
        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(0))?;
        file.read_to_end(&mut bytes)?;
        let entries = parse(&bytes);
        let capacity = capacity.max(len);
        Ok((
            Journal {
                file,
                capacity,
                end: 0,
            },
            entries,
        ))
    }

    /// Append an entry and `fdatasync` it; [`Appended::Full`] when it does not fit (nothing
    /// is written then).
    pub fn append(&mut self, seq: u64, payload: &[u8]) -> std::io::Result<Appended> {
        let size = (HEADER + payload.len()) as u64;
        let Ok(len) = u32::try_from(payload.len()) else {
            return Ok(Appended::Full);
        };
        if payload.is_empty() || size > self.capacity - self.end {
            return Ok(Appended::Full);
        }
        let mut entry = Vec::with_capacity(HEADER + payload.len());
        entry.extend_from_slice(&len.to_le_bytes());
        entry.extend_from_slice(&checksum(seq, payload).to_le_bytes());
        entry.extend_from_slice(&seq.to_le_bytes());
        entry.extend_from_slice(payload);
        self.file.seek(SeekFrom::Start(self.end))?;
        self.file.write_all(&entry)?;
        self.file.sync_data()?;
        self.end += size;
        Ok(Appended::Written)
    }

    /// Forget every entry (the store made them durable itself): the first header is zeroed
    /// on disk, and appends start at the beginning again.
    pub fn reset(&mut self) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(&[0u8; HEADER])?;
        self.file.sync_data()?;
        self.end = 0;
        Ok(())
    }

    /// Bytes written since the last reset.
    pub fn used(&self) -> u64 {
        self.end
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

    #[test]
    fn entries_survive_reopening_and_a_reset_forgets_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut j, found) = journal(dir.path());
        assert!(found.is_empty());
        assert_eq!(
            std::fs::metadata(dir.path().join("j"))
                .map(|m| m.len())
                .ok(),
            Some(4096)
        );
        assert_eq!(j.append(7, b"first").ok(), Some(Appended::Written));
        assert_eq!(j.append(8, b"second").ok(), Some(Appended::Written));
        assert_eq!(j.used(), 2 * 16 + 5 + 6);
        drop(j);
        let (mut j, found) = journal(dir.path());
        let seqs: Vec<(u64, &[u8])> = found
            .iter()
            .map(|e| (e.seq, e.payload.as_slice()))
            .collect();
        assert_eq!(seqs, vec![(7, &b"first"[..]), (8, &b"second"[..])]);
        j.reset().expect("reset");
        drop(j);
        assert!(journal(dir.path()).1.is_empty());
    }

    #[test]
    fn reading_stops_at_a_torn_entry_and_at_stale_entries_after_a_reset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = journal(dir.path());
        for seq in 1..=4 {
            j.append(seq, b"0123456789").expect("append");
        }
        // After a reset, new entries overwrite the first old ones; the old ones after them
        // are out of sequence and not read.
        j.reset().expect("reset");
        j.append(5, b"abcdefghij").expect("append");
        j.append(6, b"klmnopqrst").expect("append");
        drop(j);
        let seqs: Vec<u64> = journal(dir.path()).1.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![5, 6]);
        // A torn second entry (one payload byte changed): only the first is read.
        let path = dir.path().join("j");
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[26 + 16 + 3] ^= 0xff;
        std::fs::write(&path, &bytes).expect("write");
        let seqs: Vec<u64> = journal(dir.path()).1.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![5]);
    }

    #[test]
    fn an_entry_that_does_not_fit_is_not_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut j, _) = journal(dir.path());
        assert_eq!(j.append(1, &[1u8; 4000]).ok(), Some(Appended::Written));
        assert_eq!(j.append(2, &[2u8; 100]).ok(), Some(Appended::Full));
        assert_eq!(j.append(2, &[]).ok(), Some(Appended::Full));
        drop(j);
        assert_eq!(journal(dir.path()).1.len(), 1);
    }
}
