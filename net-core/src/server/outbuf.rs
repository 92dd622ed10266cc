//! A bounded queue of bytes waiting to be written to a non-blocking stream, with partial-write
//! handling. Used for every TCP connection of the servers.
//!
//! Two kinds of bytes are queued, in order: owned bytes (lines for this connection, counted
//! against the limit) and shared blocks (`Arc<[u8]>`, e.g. the masterserver's whole server list,
//! rendered once and queued for many connections without a copy; at most
//! [`MAX_SHARED_BLOCKS`] of them may wait at once).
//!
//! It never blocks and never grows past its limits: a push that would exceed them is refused,
//! and the caller decides what to do with a peer that does not read (the servers drop it).

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::Arc;

/// Default limit for a connection's unsent owned output.
pub const DEFAULT_OUT_LIMIT: usize = 64 * 1024;

/// Most shared blocks waiting for one connection at once.
pub const MAX_SHARED_BLOCKS: usize = 4;

#[derive(Debug)]
enum Block {
    Owned(Vec<u8>),
    Shared(Arc<[u8]>),
}

impl Block {
    fn bytes(&self) -> &[u8] {
        match self {
            Block::Owned(v) => v,
            Block::Shared(a) => a,
        }
    }
}

/// Bytes queued for one stream.
#[derive(Debug)]
pub struct OutBuffer {
    blocks: VecDeque<Block>,
    /// Bytes of the front block already written.
    start: usize,
    /// Unsent bytes of owned blocks.
    owned: usize,
    /// Unsent bytes in all.
    total: usize,
    shared_blocks: usize,
    limit: usize,
}

impl OutBuffer {
    /// An empty queue holding at most `limit` unsent owned bytes.
    pub fn new(limit: usize) -> Self {
        OutBuffer {
            blocks: VecDeque::new(),
            start: 0,
            owned: 0,
            total: 0,
            shared_blocks: 0,
            limit,
        }
    }

    /// Unsent bytes.
    pub fn len(&self) -> usize {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Queue `bytes`; `false` (and nothing queued) if the limit would be exceeded.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        if self.owned + bytes.len() > self.limit {
            return false;
        }
        // Append to the last owned block unless it is partly written (its start would move).
        let appendable = self.blocks.len() > 1 || self.start == 0;
        match self.blocks.back_mut() {
            Some(Block::Owned(v)) if appendable => v.extend_from_slice(bytes),
            _ => self.blocks.push_back(Block::Owned(bytes.to_vec())),
        }
        self.owned += bytes.len();
        self.total += bytes.len();
        true
    }

    /// Queue a shared block; `false` (and nothing queued) if [`MAX_SHARED_BLOCKS`] already wait.
    pub fn push_shared(&mut self, block: Arc<[u8]>) -> bool {
        if self.shared_blocks >= MAX_SHARED_BLOCKS {
            return false;
        }
        if block.is_empty() {
            return true;
        }
        self.total += block.len();
        self.shared_blocks += 1;
        self.blocks.push_back(Block::Shared(block));
        true
    }

    /// Write as much as the stream takes now. `Ok` also when the stream would block (the rest
    /// stays queued); `Err` for a real failure (the connection is broken).
    pub fn write_to(&mut self, stream: &mut impl Write) -> io::Result<()> {
        while let Some(front) = self.blocks.front() {
            let rest = front.bytes().get(self.start..).unwrap_or(&[]);
            if rest.is_empty() {
                self.pop_front();
                continue;
            }
            match stream.write(rest) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "peer took no bytes",
                    ))
                }
                Ok(n) => {
                    let n = n.min(rest.len());
                    self.start += n;
                    self.total -= n;
                    if matches!(front, Block::Owned(_)) {
                        self.owned -= n;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn pop_front(&mut self) {
        if let Some(Block::Shared(_)) = self.blocks.pop_front() {
            self.shared_blocks -= 1;
        }
        self.start = 0;
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
    fn shared_blocks_keep_their_order_and_are_bounded() {
        let mut out = OutBuffer::new(10);
        let list: Arc<[u8]> = Arc::from(&b"server: a\nend of list\n"[..]);
        assert!(out.push(b"one\n"));
        assert!(out.push_shared(Arc::clone(&list)));
        assert!(out.push(b"two\n"));
        for _ in 1..MAX_SHARED_BLOCKS {
            assert!(out.push_shared(Arc::clone(&list)));
        }
        assert!(
            !out.push_shared(Arc::clone(&list)),
            "too many shared blocks"
        );
        assert!(
            out.push(b"3\n"),
            "shared bytes do not count against the owned limit"
        );
        let mut s = Slow {
            taken: vec![],
            chunk: 5,
            budget: 10,
        };
        out.write_to(&mut s).unwrap();
        assert_eq!(s.taken, b"one\nserver");
        s.budget = usize::MAX;
        out.write_to(&mut s).unwrap();
        assert!(out.is_empty());
        let text = String::from_utf8(s.taken).unwrap();
        assert!(text.starts_with("one\nserver: a\nend of list\ntwo\nserver: a\n"));
        assert!(text.ends_with("end of list\n3\n"));
        assert!(out.push_shared(list), "written blocks no longer count");
    }

    #[test]
    fn refuses_past_the_limit() {
        let mut out = OutBuffer::new(8);
        assert!(out.push(b"12345678"));
        assert!(!out.push(b"9"));
        assert_eq!(out.len(), 8);
    }
}
