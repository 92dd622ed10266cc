//! A bounded queue of bytes waiting to be written to a non-blocking stream, with partial-write
//! handling. Used for every TCP connection of the servers.
//!
//! It never blocks and never grows past its limit: a push that would exceed it is refused, and
//! the caller decides what to do with a peer that does not read (the servers drop it).

use std::io::{self, Write};

/// Default limit for a connection's unsent output.
pub const DEFAULT_OUT_LIMIT: usize = 64 * 1024;

/// Bytes queued for one stream.
#[derive(Debug)]
pub struct OutBuffer {
    data: Vec<u8>,
    start: usize,
    limit: usize,
}

impl OutBuffer {
    /// An empty queue holding at most `limit` unsent bytes.
    pub fn new(limit: usize) -> Self {
        OutBuffer {
            data: Vec::new(),
            start: 0,
            limit,
        }
    }

    /// Unsent bytes.
    pub fn len(&self) -> usize {
        self.data.len() - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queue `bytes`; `false` (and nothing queued) if the limit would be exceeded.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        if self.len() + bytes.len() > self.limit {
            return false;
        }
        if self.start > 0 && self.start >= self.data.len() / 2 {
            self.data.drain(..self.start);
            self.start = 0;
        }
        self.data.extend_from_slice(bytes);
        true
    }

    /// Write as much as the stream takes now. `Ok` also when the stream would block (the rest
    /// stays queued); `Err` for a real failure (the connection is broken).
    pub fn write_to(&mut self, stream: &mut impl Write) -> io::Result<()> {
        while !self.is_empty() {
            match stream.write(&self.data[self.start..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "peer took no bytes",
                    ))
                }
                Ok(n) => self.start += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.data.clear();
        self.start = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most `chunk` bytes per write, then blocks after `budget` bytes.
    struct Slow {
        taken: Vec<u8>,
        chunk: usize,
        budget: usize,
    }

    impl Write for Slow {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.budget == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.chunk).min(self.budget);
            self.budget -= n;
            self.taken.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn partial_writes_keep_the_rest_in_order() {
        let mut out = OutBuffer::new(100);
        assert!(out.push(b"hello "));
        assert!(out.push(b"world\n"));
        let mut s = Slow {
            taken: vec![],
            chunk: 4,
            budget: 7,
        };
        out.write_to(&mut s).unwrap();
        assert_eq!(out.len(), 5);
        assert!(out.push(b"more\n"));
        s.budget = 100;
        out.write_to(&mut s).unwrap();
        assert!(out.is_empty());
        assert_eq!(s.taken, b"hello world\nmore\n");
    }

    #[test]
    fn refuses_past_the_limit() {
        let mut out = OutBuffer::new(8);
        assert!(out.push(b"12345678"));
        assert!(!out.push(b"9"));
        assert_eq!(out.len(), 8);
    }
}
