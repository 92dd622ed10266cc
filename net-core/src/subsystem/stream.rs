//! The TCP connection a client-server protocol keeps to its server: connected without blocking
//! the game loop (the connect completes over later frames), lines read and written without
//! blocking, bounded buffers. The protocol says what to do (`StreamCommand`) and hears what
//! happened (`StreamEvent`).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Instant;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::protocol::StreamEvent;

/// Longest line accepted from a server (its lines are at most 255 bytes plus our extensions).
const MAX_LINE: usize = 4096;
/// Most bytes waiting to be written before the connection is given up.
const MAX_PENDING_WRITE: usize = 64 * 1024;

enum State {
    Connecting { socket: Socket, peer: SocketAddr },
    Open { stream: TcpStream },
    Done,
}

/// One non-blocking line connection.
pub struct LineStream {
    state: State,
    read_buf: Vec<u8>,
    write_buf: Vec<u8>,
    closing: bool,
    /// Nothing is written (nor the connection closed) before this moment: the lines wait for
    /// datagrams `net.sim` still holds that were sent before them (see `hold_writes_until`).
    writes_held_until: Option<Instant>,
}

impl LineStream {
    /// Start connecting to `host:port` (name resolution may take a moment; the connect itself
    /// does not block).
    pub fn connect(host: &str, port: u16) -> Result<LineStream, String> {
        let peer = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host} has no address"))?;
        let socket = Socket::new(Domain::for_address(peer), Type::STREAM, Some(Protocol::TCP))
            .map_err(|e| format!("cannot create a TCP socket: {e}"))?;
        socket
            .set_nonblocking(true)
            .map_err(|e| format!("cannot make the socket non-blocking: {e}"))?;
        socket.set_tcp_nodelay(true).ok();
        match socket.connect(&SockAddr::from(peer)) {
            Ok(()) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::EINPROGRESS)
                    || e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(format!("cannot connect to {peer}: {e}")),
        }
        Ok(LineStream {
            state: State::Connecting { socket, peer },
            read_buf: Vec::new(),
            write_buf: Vec::new(),
            closing: false,
            writes_held_until: None,
        })
    }

    /// Queue a line for sending.
    pub fn send_line(&mut self, line: &str) {
        self.write_buf.extend_from_slice(line.as_bytes());
        self.write_buf.push(b'\n');
    }

    /// Close after what is queued has been written.
    pub fn close(&mut self) {
        self.closing = true;
    }

    /// Write nothing queued so far (or queued later) before `until`; a later hold extends it.
    pub fn hold_writes_until(&mut self, until: Instant) {
        self.writes_held_until = self.writes_held_until.max(Some(until));
    }

    /// End the hold if `now` is past it. (A backend switch hands on what `net.sim` held early;
    /// the lines still wait for the time, at most the path's lag and jitter.)
    pub fn end_hold_if_due(&mut self, now: Instant) {
        if self.writes_held_until.is_some_and(|until| until <= now) {
            self.writes_held_until = None;
        }
    }

    /// End the hold now (a shutdown: `net.sim` has handed on what it held).
    pub fn end_hold(&mut self) {
        self.writes_held_until = None;
    }

    /// Make progress: finish connecting, write, read lines. Events go to `out`. Returns false
    /// when the connection is over (closed, failed, or closed as asked).
    pub fn poll(&mut self, out: &mut Vec<StreamEvent>) -> bool {
        if let State::Connecting { socket, peer } = &self.state {
            let peer = *peer;
            let failure = match socket.take_error() {
                Ok(Some(e)) | Err(e) => Some(e),
                Ok(None) => match socket.peer_addr() {
                    Ok(_) => None,
                    Err(e) if e.kind() == ErrorKind::NotConnected => return true,
                    Err(e) => Some(e),
                },
            };
            if let Some(e) = failure {
                self.state = State::Done;
                out.push(StreamEvent::Closed {
                    reason: format!("cannot connect to {peer}: {e}"),
                });
                return false;
            }
            let State::Connecting { socket, .. } = std::mem::replace(&mut self.state, State::Done)
            else {
                unreachable!("checked above")
            };
            self.state = State::Open {
                stream: socket.into(),
            };
            out.push(StreamEvent::Connected { peer });
        }
        let State::Open { stream } = &mut self.state else {
            return false;
        };
        // Write what is queued.
        while !self.write_buf.is_empty() && self.writes_held_until.is_none() {
            match stream.write(&self.write_buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.write_buf.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    out.push(StreamEvent::Closed {
                        reason: format!("write failed: {e}"),
                    });
                    return false;
                }
            }
        }
        if self.write_buf.len() > MAX_PENDING_WRITE {
            out.push(StreamEvent::Closed {
                reason: "the server does not read what we send".to_string(),
            });
            return false;
        }
        if self.closing && self.write_buf.is_empty() && self.writes_held_until.is_none() {
            // Read (and drop) what the server has already sent: a socket closed with unread
            // input makes the kernel answer with a reset instead of a FIN, and a server that
            // meets the reset while writing to us may drop us before it reads our last line
            // ("remove me"), counting a dropped connection instead of a leave.
            discard_readable(stream);
            let _ = stream.shutdown(std::net::Shutdown::Write);
            return false;
        }
        // Read lines.
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => {
                    take_last_lines(&mut self.read_buf, out);
                    out.push(StreamEvent::Closed {
                        reason: "closed by the server".to_string(),
                    });
                    return false;
                }
                Ok(n) => {
                    self.read_buf.extend_from_slice(&chunk[..n]);
                    if !take_lines(&mut self.read_buf, out) {
                        out.push(StreamEvent::Closed {
                            reason: format!("the server sent a line longer than {MAX_LINE} bytes"),
                        });
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    out.push(StreamEvent::Closed {
                        reason: format!("read failed: {e}"),
                    });
                    return false;
                }
            }
        }
    }
}

/// Read and drop what the socket holds now, without blocking (at most [`MAX_PENDING_WRITE`]
/// bytes: a server still streaming at us is not waited for).
fn discard_readable(stream: &mut TcpStream) {
    let mut chunk = [0u8; 4096];
    let mut left = MAX_PENDING_WRITE;
    while left > 0 {
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => left = left.saturating_sub(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Move complete lines out of `read_buf`; false if a line is too long (complete or not: the
/// lines before it are still handed out).
fn take_lines(read_buf: &mut Vec<u8>, out: &mut Vec<StreamEvent>) -> bool {
    while let Some(end) = read_buf.iter().position(|&b| b == b'\n') {
        let line = &read_buf[..end];
        if line.strip_suffix(b"\r").unwrap_or(line).len() > MAX_LINE {
            return false;
        }
        let line: Vec<u8> = read_buf.drain(..=end).collect();
        push_line(&line[..end], out);
    }
    read_buf.len() <= MAX_LINE
}

/// One line (without its `\n`; a trailing `\r` is dropped) as an event.
fn push_line(line: &[u8], out: &mut Vec<StreamEvent>) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    out.push(StreamEvent::Line(
        String::from_utf8_lossy(line).into_owned(),
    ));
}

/// The server closed: its complete lines, then a last line it did not end with `\n` (a server
/// that writes `server full` and closes is heard), unless a line is too long.
fn take_last_lines(read_buf: &mut Vec<u8>, out: &mut Vec<StreamEvent>) {
    if take_lines(read_buf, out) && !read_buf.is_empty() {
        push_line(read_buf, out);
    }
    read_buf.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    /// Poll until `done` says so (the stream is non-blocking), at most 5 s.
    fn poll_until(stream: &mut LineStream, done: impl Fn(&[StreamEvent]) -> bool) -> bool {
        let start = Instant::now();
        let mut events = Vec::new();
        while start.elapsed() < Duration::from_secs(5) {
            if !stream.poll(&mut events) {
                return false;
            }
            if done(&events) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        panic!("no progress in 5 s: {events:?}");
    }

    #[test]
    fn a_line_over_the_limit_is_refused_even_when_its_end_came_in_the_same_read() {
        let mut buf = b"short\n".to_vec();
        buf.extend(std::iter::repeat_n(b'x', MAX_LINE + 1));
        buf.extend_from_slice(b"\nafter\n");
        let mut out = Vec::new();
        assert!(
            !take_lines(&mut buf, &mut out),
            "a {} byte line",
            MAX_LINE + 1
        );
        assert_eq!(lines(&out), ["short"]);
        let mut buf = vec![b'y'; MAX_LINE];
        buf.extend_from_slice(b"\r\n");
        let mut out = Vec::new();
        assert!(
            take_lines(&mut buf, &mut out),
            "a line of exactly the limit, CR LF"
        );
        assert_eq!(lines(&out), ["y".repeat(MAX_LINE)]);
    }

    #[test]
    fn a_last_line_without_its_newline_is_read_when_the_server_closes() {
        let mut buf = b"join from a accepted\nserver full\r".to_vec();
        let mut out = Vec::new();
        take_last_lines(&mut buf, &mut out);
        assert_eq!(lines(&out), ["join from a accepted", "server full"]);
        assert!(buf.is_empty());
    }

    fn lines(events: &[StreamEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                StreamEvent::Line(l) => l.clone(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    /// A client stream connected to a server socket on loopback.
    fn connected_pair() -> (LineStream, std::net::TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut client = LineStream::connect("127.0.0.1", port).unwrap();
        let (server, _) = listener.accept().unwrap();
        assert!(poll_until(&mut client, |events| events
            .iter()
            .any(|e| matches!(e, StreamEvent::Connected { .. }))));
        (client, server)
    }

    #[test]
    fn held_lines_and_the_close_wait_for_the_hold_and_keep_their_order() {
        let (mut client, mut server) = connected_pair();
        let t0 = Instant::now();
        client.send_line("my new name: ace");
        client.hold_writes_until(t0 + Duration::from_secs(60));
        client.send_line("remove me");
        client.close();
        let mut events = Vec::new();
        assert!(client.poll(&mut events), "held: not closed yet");
        // A hold that is not due yet stays.
        client.end_hold_if_due(t0 + Duration::from_secs(59));
        assert!(client.poll(&mut events), "still held");
        server.set_nonblocking(true).unwrap();
        let mut got = [0u8; 64];
        assert!(
            matches!(server.read(&mut got), Err(e) if e.kind() == ErrorKind::WouldBlock),
            "nothing written while held"
        );
        client.end_hold_if_due(t0 + Duration::from_secs(60));
        assert!(!client.poll(&mut events), "written and closed once due");
        server.set_nonblocking(false).unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut all = Vec::new();
        server.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"my new name: ace\nremove me\n");
    }

    #[test]
    fn closing_with_unread_server_lines_sends_a_fin_not_a_reset() {
        let (mut client, mut server) = connected_pair();
        // Lines the client will not read before it leaves (list updates, say).
        server
            .write_all(b"add ip: 10.0.0.2 name: x in 1\n")
            .unwrap();
        server.write_all(b"name ip: 10.0.0.2 name: y\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        client.send_line("remove me");
        client.close();
        let mut events = Vec::new();
        assert!(
            !client.poll(&mut events),
            "the stream ends once the line is written"
        );
        drop(client);
        std::thread::sleep(Duration::from_millis(50));
        // A reset would make this write fail (EPIPE); after a FIN it is accepted.
        let write = server.write_all(b"removing you\n");
        assert!(
            write.is_ok(),
            "the client reset the connection when it closed: {write:?}"
        );
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut got = Vec::new();
        let end = server.read_to_end(&mut got);
        assert_eq!(got, b"remove me\n");
        assert!(
            end.is_ok(),
            "the server saw {end:?} after the last line instead of the end of the stream"
        );
    }
}
