//! A chunk that cannot fit is a 413 at once.
//!
//! hyper reads a chunked body's sizes itself and hands its handlers only the data, so a request
//! that declares a chunk of `ffffffffffffffff` bytes and sends none would be waited for until
//! the body read timeout (30 s). This reader sits between the socket and hyper and follows the
//! request framing of HTTP/1.1 (RFC 9112 §6, §7.1) over the bytes hyper reads: each head's
//! `Transfer-Encoding` and `Content-Length`, then the chunk sizes of a chunked body. When a
//! chunk size overflows or would take the body past the hard limit, it raises the connection's
//! [`BodyAlarm`] for that request, and the body reader answers 413 and closes the connection.
//!
//! It only ever reads: bytes pass to hyper unchanged. Heads are read line by line (line ends
//! found with `memchr`; only the two framing headers are looked at); fixed-length bodies and
//! chunk data are skipped by count. Anything it
//! does not follow (a header line longer than [`MAX_LINE`], `CONNECT`) makes it stop watching
//! that connection, which is then served exactly as without it.

use function_common::body::BodyAlarm;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Longest head line followed; a longer one stops the watch for the connection.
pub const MAX_LINE: usize = 8 * 1024;

/// Where the reader is in the request stream.
#[derive(Debug)]
enum State {
    /// In a request head: the current line so far, and what the head said of its body.
    Head {
        line: Vec<u8>,
        first_line: bool,
        chunked: bool,
        length: Option<u64>,
    },
    /// In a body of known length: bytes left.
    Fixed(u64),
    /// In a chunk-size line: the size so far, whether a digit was seen, whether the digits
    /// have ended (an extension or white space follows).
    ChunkSize { size: u64, digit: bool, ended: bool },
    /// In a chunk's data: bytes left.
    ChunkData(u64),
    /// After a chunk's data: up to the line end.
    ChunkEnd,
    /// In the trailer section: the length of the current line.
    Trailers(usize),
    /// Not following this connection any more.
    Blind,
}

impl State {
    fn head() -> State {
        State::Head {
            line: Vec::new(),
            first_line: true,
            chunked: false,
            length: None,
        }
    }
}

/// The request framing of one connection.
#[derive(Debug)]
pub struct Framing {
    state: State,
    /// The request being read (from 0).
    seq: u64,
    /// Chunk bytes declared so far in the current body.
    declared: u64,
    limit: u64,
}

/// What scanning some bytes found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Nothing,
    /// Request `seq`'s body cannot fit the limit.
    TooLarge {
        seq: u64,
    },
}

impl Framing {
    /// A connection's framing, with the hard body limit in bytes.
    pub fn new(limit: u64) -> Self {
        Framing {
            state: State::head(),
            seq: 0,
            declared: 0,
            limit,
        }
    }

    /// Follow `bytes`, the next bytes of the connection.
    pub fn scan(&mut self, mut bytes: &[u8]) -> Found {
        let mut found = Found::Nothing;
        while !bytes.is_empty() {
            let used = match &mut self.state {
                State::Blind => return found,
                State::Fixed(left) | State::ChunkData(left) => {
                    let n = (*left).min(bytes.len() as u64);
                    *left -= n;
                    if *left == 0 {
                        self.state = if matches!(self.state, State::ChunkData(_)) {
                            State::ChunkEnd
                        } else {
                            self.next_request()
                        };
                    }
                    n as usize
                }
                State::ChunkEnd => match bytes.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        self.state = State::ChunkSize {
                            size: 0,
                            digit: false,
                            ended: false,
                        };
                        i + 1
                    }
                    None => bytes.len(),
                },
                State::Trailers(len) => {
                    let b = bytes[0];
                    if b == b'\n' {
                        if *len == 0 {
                            self.state = self.next_request();
                        } else {
                            *len = 0;
                        }
                    } else if b != b'\r' {
                        *len += 1;
                    }
                    1
                }
                State::ChunkSize { size, digit, ended } => {
                    let b = bytes[0];
                    if b == b'\n' {
                        let size = *size;
                        self.declared = self.declared.saturating_add(size);
                        if size == 0 {
                            self.state = State::Trailers(0);
                        } else if self.declared > self.limit {
                            found = Found::TooLarge { seq: self.seq };
                            self.state = State::Blind;
                        } else {
                            self.state = State::ChunkData(size);
                        }
                    } else if !*ended && (b as char).is_ascii_hexdigit() {
                        let value = u64::from((b as char).to_digit(16).unwrap_or(0));
                        match size.checked_mul(16).and_then(|s| s.checked_add(value)) {
                            Some(s) if s <= self.limit => {
                                *size = s;
                                *digit = true;
                            }
                            // Past the limit (or past 64 bits) already: no more digits needed.
                            _ => {
                                found = Found::TooLarge { seq: self.seq };
                                self.state = State::Blind;
                            }
                        }
                    } else if *digit {
                        *ended = true;
                    } else {
                        // Not a size: hyper refuses it; nothing more to follow.
                        self.state = State::Blind;
                    }
                    1
                }
                State::Head { .. } => self.head_bytes(bytes),
            };
            bytes = &bytes[used..];
        }
        found
    }

    /// Some bytes of a head, up to the end of the current line: returns how many were used.
    /// Lines are found with `memchr` and only copied when one spans two reads.
    fn head_bytes(&mut self, bytes: &[u8]) -> usize {
        let State::Head { line, .. } = &mut self.state else {
            return bytes.len();
        };
        let Some(end) = memchr::memchr(b'\n', bytes) else {
            if line.len() + bytes.len() > MAX_LINE {
                self.state = State::Blind;
            } else {
                line.extend_from_slice(bytes);
            }
            return bytes.len();
        };
        if line.is_empty() {
            self.head_line(&bytes[..end]);
        } else if line.len() + end > MAX_LINE {
            self.state = State::Blind;
        } else {
            let mut whole = std::mem::take(line);
            whole.extend_from_slice(&bytes[..end]);
            self.head_line(&whole);
            if let State::Head { line, .. } = &mut self.state {
                whole.clear();
                *line = whole;
            }
        }
        end + 1
    }

    /// One whole line of a head (without its line feed).
    fn head_line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > MAX_LINE {
            self.state = State::Blind;
            return;
        }
        let State::Head {
            first_line,
            chunked,
            length,
            ..
        } = &mut self.state
        else {
            return;
        };
        if line.is_empty() {
            if *first_line {
                // Empty lines before a request line are allowed (RFC 9112 §2.2).
                return;
            }
            let (chunked, length) = (*chunked, *length);
            self.declared = 0;
            self.state = if chunked {
                State::ChunkSize {
                    size: 0,
                    digit: false,
                    ended: false,
                }
            } else {
                match length {
                    Some(n) if n > 0 => State::Fixed(n),
                    _ => self.next_request(),
                }
            };
            return;
        }
        if *first_line {
            *first_line = false;
            if line.starts_with(b"CONNECT ") {
                self.state = State::Blind;
            }
            return;
        }
        let named = |name: &[u8]| {
            line.len() > name.len()
                && line[name.len()] == b':'
                && line[..name.len()].eq_ignore_ascii_case(name)
        };
        if named(b"transfer-encoding") {
            // Chunked when it is the last coding (RFC 9112 §6.3); otherwise hyper refuses.
            let value = &line[b"transfer-encoding:".len()..];
            let last = value.rsplit(|&c| c == b',').next().unwrap_or(&[]);
            *chunked = last.trim_ascii().eq_ignore_ascii_case(b"chunked");
        } else if named(b"content-length") {
            *length = std::str::from_utf8(&line[b"content-length:".len()..])
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok());
        }
    }

    fn next_request(&mut self) -> State {
        self.seq += 1;
        State::head()
    }
}

/// A socket whose inbound bytes are followed by a [`Framing`] on their way to hyper.
pub struct ChunkWatch<S> {
    inner: S,
    framing: Framing,
    alarm: Arc<BodyAlarm>,
}

impl<S> ChunkWatch<S> {
    /// Watch `inner`, raising `alarm` for a request whose chunks cannot fit `limit` bytes.
    pub fn new(inner: S, limit: u64, alarm: Arc<BodyAlarm>) -> Self {
        ChunkWatch {
            inner,
            framing: Framing::new(limit),
            alarm,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ChunkWatch<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let this = &mut *self;
        if let Found::TooLarge { seq } = this.framing.scan(&buf.filled()[before..]) {
            this.alarm.raise(seq);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ChunkWatch<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u64 = 1024;

    fn scan_all(text: &[u8]) -> (Found, u64) {
        let mut f = Framing::new(LIMIT);
        let found = f.scan(text);
        (found, f.seq)
    }

    #[test]
    fn an_impossible_chunk_size_is_found_for_its_request() {
        let (found, _) = scan_all(
            b"POST /verify/schema HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
        );
        assert_eq!(found, Found::TooLarge { seq: 0 });
        // Chunks that together pass the limit.
        let body = b"POST / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n200\r\n";
        let mut f = Framing::new(LIMIT);
        assert_eq!(f.scan(body), Found::Nothing);
        assert_eq!(f.scan(&[b'a'; 0x200]), Found::Nothing);
        assert_eq!(f.scan(b"\r\n300\r\n"), Found::TooLarge { seq: 0 });
    }

    #[test]
    fn pipelined_requests_are_followed_and_counted() {
        let mut stream = Vec::new();
        stream.extend_from_slice(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        stream.extend_from_slice(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde");
        stream.extend_from_slice(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
        );
        stream.extend_from_slice(
            b"\r\nPOST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10000\r\n",
        );
        // Byte by byte too: the state survives any split.
        for step in [stream.len(), 1, 7] {
            let mut f = Framing::new(LIMIT);
            let mut found = Found::Nothing;
            for piece in stream.chunks(step) {
                if let Found::TooLarge { seq } = f.scan(piece) {
                    found = Found::TooLarge { seq };
                }
            }
            assert_eq!(found, Found::TooLarge { seq: 3 }, "step {step}");
        }
    }

    #[test]
    fn what_it_does_not_follow_is_left_alone() {
        let long = [b'a'; MAX_LINE + 1];
        let mut f = Framing::new(LIMIT);
        f.scan(b"POST / HTTP/1.1\r\nX-Long: ");
        f.scan(&long);
        assert_eq!(
            f.scan(b"\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n"),
            Found::Nothing
        );
        let (found, _) = scan_all(b"CONNECT x:443 HTTP/1.1\r\n\r\nffffffff\r\n");
        assert_eq!(found, Found::Nothing);
        // Sizes within the limit, and a last chunk.
        let (found, seq) =
            scan_all(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n");
        assert_eq!((found, seq), (Found::Nothing, 0));
    }
}
