//! The TCP connection a client-server protocol keeps to its server: connected without blocking
//! the game loop (the connect completes over later frames), lines read and written without
//! blocking, bounded buffers. The protocol says what to do (`StreamCommand`) and hears what
//! happened (`StreamEvent`).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};

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
        while !self.write_buf.is_empty() {
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
        if self.closing && self.write_buf.is_empty() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return false;
        }
        // Read lines.
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => {
                    take_lines(&mut self.read_buf, out);
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

/// Move complete lines out of `read_buf`; false if a line is too long.
fn take_lines(read_buf: &mut Vec<u8>, out: &mut Vec<StreamEvent>) -> bool {
    while let Some(end) = read_buf.iter().position(|&b| b == b'\n') {
        let mut line: Vec<u8> = read_buf.drain(..=end).collect();
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        out.push(StreamEvent::Line(
            String::from_utf8_lossy(&line).into_owned(),
        ));
    }
    read_buf.len() <= MAX_LINE
}
