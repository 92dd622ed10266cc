//! Host name resolution that never blocks the caller: an IP literal is answered at once; a name
//! is looked up on a short-lived helper thread and the answer is picked up by polling. Used by
//! the server runtime (masterservers to register with) and by the game's server browser, whose
//! loops must never wait for DNS.
//!
//! It never connects anything and never keeps a thread past its one lookup.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, TryRecvError};

/// Why a `HOST[:PORT]` text was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPortError {
    /// The port part is not a number in 1-65535 (the text of the port).
    BadPort(String),
    /// The text is not `HOST[:PORT]` at all (the whole text).
    NotHostPort(String),
}

impl std::fmt::Display for HostPortError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostPortError::BadPort(port) => {
                write!(
                    f,
                    "'{}' is not a port number (1-65535)",
                    port.escape_debug()
                )
            }
            HostPortError::NotHostPort(text) => {
                write!(f, "'{}' is not HOST[:PORT]", text.escape_debug())
            }
        }
    }
}

impl From<HostPortError> for crate::error::NetError {
    fn from(e: HostPortError) -> Self {
        let code = match e {
            HostPortError::BadPort(_) => crate::error::ErrorCode::Parse,
            HostPortError::NotHostPort(_) => crate::error::ErrorCode::InvalidArgument,
        };
        crate::error::NetError::new(code, e.to_string())
    }
}

/// Split `HOST:PORT` (IPv6 as `[ADDR]:PORT`; `HOST` alone gets `default_port`). The host must
/// be non-empty, without spaces or control characters.
pub fn split_host_port(text: &str, default_port: u16) -> Result<(String, u16), HostPortError> {
    let bad = || HostPortError::NotHostPort(text.to_string());
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| HostPortError::BadPort(p.to_string()))
    };
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(bad)?;
        match after.strip_prefix(':') {
            Some(p) => (host.to_string(), port(p)?),
            None if after.is_empty() => (host.to_string(), default_port),
            None => return Err(bad()),
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h.to_string(), port(p)?),
            Some(_) if text.parse::<IpAddr>().is_ok() => (text.to_string(), default_port),
            Some(_) => return Err(bad()),
            None => (text.to_string(), default_port),
        }
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad());
    }
    Ok((host, port))
}

/// `HOST:PORT` as a player types it back: an IPv6 address in brackets (`[::1]:6581`), so the
/// text names one address and port and can be given to `net.server` or `connect` again.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// One lookup in progress (or already answered).
#[derive(Debug)]
pub struct PendingResolve {
    state: State,
}

#[derive(Debug)]
enum State {
    Ready(Result<SocketAddr, String>),
    Waiting(Receiver<Result<SocketAddr, String>>),
    Taken,
}

impl PendingResolve {
    /// Start resolving `host` (a name or an IP literal) with `port`.
    pub fn start(host: &str, port: u16) -> PendingResolve {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return PendingResolve {
                state: State::Ready(Ok(SocketAddr::new(ip, port))),
            };
        }
        let (tx, rx) = mpsc::channel();
        let name = host.to_string();
        let spawned = std::thread::Builder::new()
            .name("parsec-resolve".into())
            .spawn(move || {
                let result = (name.as_str(), port)
                    .to_socket_addrs()
                    .map_err(|e| format!("cannot resolve {name}: {e}"))
                    .and_then(|mut addrs| {
                        addrs.next().ok_or_else(|| format!("{name} has no address"))
                    });
                let _ = tx.send(result);
            });
        let state = match spawned {
            Ok(_) => State::Waiting(rx),
            Err(e) => State::Ready(Err(format!("cannot start resolving {host}: {e}"))),
        };
        PendingResolve { state }
    }

    /// The answer once it is there (given once; `None` before and after).
    pub fn poll(&mut self) -> Option<Result<SocketAddr, String>> {
        match std::mem::replace(&mut self.state, State::Taken) {
            State::Ready(result) => Some(result),
            State::Waiting(rx) => match rx.try_recv() {
                Ok(result) => Some(result),
                Err(TryRecvError::Empty) => {
                    self.state = State::Waiting(rx);
                    None
                }
                Err(TryRecvError::Disconnected) => Some(Err("name lookup failed".to_string())),
            },
            State::Taken => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_host_and_port() {
        assert_eq!(
            split_host_port("a.example", 6502),
            Ok(("a.example".into(), 6502))
        );
        assert_eq!(
            split_host_port("a.example:7", 6502),
            Ok(("a.example".into(), 7))
        );
        assert_eq!(split_host_port("[::1]:9", 6502), Ok(("::1".into(), 9)));
        assert_eq!(split_host_port("[::1]", 6502), Ok(("::1".into(), 6502)));
        assert_eq!(split_host_port("::1", 6502), Ok(("::1".into(), 6502)));
        for bad in ["", "a:0", "a:x", "[::1", "a b:1", "a:b:c", ":80", "[]:80"] {
            assert!(split_host_port(bad, 6502).is_err(), "{bad}");
        }
        assert_eq!(
            split_host_port("a:99999", 6502).unwrap_err().to_string(),
            "'99999' is not a port number (1-65535)"
        );
        assert_eq!(
            split_host_port(":80", 6502).unwrap_err().to_string(),
            "':80' is not HOST[:PORT]"
        );
    }

    #[test]
    fn joins_host_and_port_with_ipv6_in_brackets() {
        for text in [
            "a.example:7",
            "127.0.0.1:6581",
            "[::1]:6581",
            "[2001:db8::1]:9",
        ] {
            let (host, port) = split_host_port(text, 1).unwrap();
            assert_eq!(join_host_port(&host, port), text);
        }
    }

    #[test]
    fn literals_are_answered_at_once() {
        let mut r = PendingResolve::start("127.0.0.1", 6502);
        assert_eq!(r.poll(), Some(Ok("127.0.0.1:6502".parse().unwrap())));
        assert_eq!(r.poll(), None);
    }

    #[test]
    fn names_are_answered_later_without_blocking() {
        let mut r = PendingResolve::start("localhost", 6502);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let answer = loop {
            if let Some(answer) = r.poll() {
                break answer;
            }
            assert!(std::time::Instant::now() < deadline, "no answer");
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert_eq!(answer.map(|a| a.port()), Ok(6502));
    }
}
