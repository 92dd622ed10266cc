//! An outgoing TCP line connection inside the server runtime's mio loop (a slot- or gameserver's
//! connection to a masterserver): connected without blocking, lines out through a bounded
//! [`OutBuffer`], lines in through a bounded [`LineBuffer`].
//!
//! It reports what happened ([`OutgoingEvent`]) and never decides what to send; it never blocks
//! (every socket call is non-blocking) and never buffers more than its limits.

use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr};

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use super::lines::{LineBuffer, LineFault};
use super::outbuf::{OutBuffer, DEFAULT_OUT_LIMIT};

/// Longest line accepted from the other side.
const MAX_LINE: usize = 1024;
/// Bytes read per call at most (the rest waits for the next turn).
const READ_BUDGET: usize = 64 * 1024;

/// What happened on the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutgoingEvent {
    Connected,
    Line(String),
    /// Gone (refused, reset, closed by the other side, or it sent what cannot be a line).
    Closed(String),
}

/// One outgoing connection, registered with the runtime's poll under a fixed token.
#[derive(Debug)]
pub struct OutgoingLine {
    stream: TcpStream,
    peer: SocketAddr,
    connected: bool,
    lines: LineBuffer,
    out: OutBuffer,
}

impl OutgoingLine {
    /// Start connecting to `peer` (completes later; see [`drive`](Self::drive)).
    pub fn connect(registry: &Registry, token: Token, peer: SocketAddr) -> io::Result<Self> {
        let mut stream = TcpStream::connect(peer)?;
        registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
        Ok(OutgoingLine {
            stream,
            peer,
            connected: false,
            lines: LineBuffer::new(MAX_LINE),
            out: OutBuffer::new(DEFAULT_OUT_LIMIT),
        })
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Queue a line; `false` if the other side has not read the last 64 KiB.
    pub fn send_line(&mut self, line: &str) -> bool {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.out.push(&bytes)
    }

    /// Make progress: finish connecting, write what is queued, read lines. Returns `false` once
    /// the connection is over (a `Closed` event says why).
    pub fn drive(&mut self, events: &mut Vec<OutgoingEvent>) -> bool {
        if !self.connected {
            match self.stream.take_error() {
                Ok(Some(e)) | Err(e) => {
                    events.push(OutgoingEvent::Closed(format!(
                        "cannot connect to {}: {e}",
                        self.peer
                    )));
                    return false;
                }
                Ok(None) => {}
            }
            match self.stream.peer_addr() {
                Ok(_) => {
                    self.connected = true;
                    events.push(OutgoingEvent::Connected);
                }
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return true,
                Err(e) => {
                    events.push(OutgoingEvent::Closed(format!(
                        "cannot connect to {}: {e}",
                        self.peer
                    )));
                    return false;
                }
            }
        }
        self.flush(events) && self.read(events)
    }

    /// Write what is queued; `false` (with a `Closed` event) if the connection broke.
    pub fn flush(&mut self, events: &mut Vec<OutgoingEvent>) -> bool {
        if !self.connected {
            return true;
        }
        match self.out.write_to(&mut self.stream) {
            Ok(()) => true,
            Err(e) => {
                events.push(OutgoingEvent::Closed(format!("write failed: {e}")));
                false
            }
        }
    }

    fn read(&mut self, events: &mut Vec<OutgoingEvent>) -> bool {
        let mut buf = [0u8; 4096];
        let mut budget = READ_BUDGET;
        while budget > 0 {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    events.push(OutgoingEvent::Closed(
                        "closed by the other side".to_string(),
                    ));
                    return false;
                }
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    for line in self.lines.push(&buf[..n]) {
                        match line {
                            Ok(text) => events.push(OutgoingEvent::Line(text)),
                            Err(LineFault::Overlong) => {
                                events.push(OutgoingEvent::Closed(format!(
                                    "the other side sent a line longer than {MAX_LINE} bytes"
                                )));
                                return false;
                            }
                            Err(fault) => {
                                log::debug!("{}: {}", self.peer, fault.describe());
                                events.push(OutgoingEvent::Line(String::new()));
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    events.push(OutgoingEvent::Closed(format!("read failed: {e}")));
                    return false;
                }
            }
        }
        true
    }

    /// Write what can be written now, then close and deregister.
    pub fn close(mut self, registry: &Registry) {
        let mut ignored = Vec::new();
        self.flush(&mut ignored);
        let _ = self.stream.shutdown(Shutdown::Both);
        let _ = registry.deregister(&mut self.stream);
    }
}
