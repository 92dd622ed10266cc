//! Creating and binding the IPv4/IPv6 socket pair of `open`, both on the same port, both
//! non-blocking. This module must never leave a half-open pair behind on failure (every socket it
//! created is closed when it returns an error) and must never set SO_REUSEADDR or SO_REUSEPORT:
//! a taken port is reported to the user, not silently shared.

use std::io;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};

use parsec_backend_abi::{
    NET_BACKEND_ERR_IO, NET_BACKEND_ERR_PERMISSION, NET_BACKEND_ERR_UNSUPPORTED,
};
use socket2::{Domain, Protocol, Socket, Type};

use crate::options::{Ipv6Mode, Options};
use crate::oserr;

/// How often an ephemeral-port pair is retried when the IPv6 half of the port is taken.
const EPHEMERAL_ATTEMPTS: usize = 8;

/// The bound sockets of one backend socket.
pub struct BoundPair {
    /// IPv4 socket with SO_BROADCAST.
    pub v4: Socket,
    /// The port the IPv4 socket is bound to.
    pub v4_port: u16,
    /// IPv6 socket (IPV6_V6ONLY) and its port, if opened.
    pub v6: Option<(Socket, u16)>,
    /// Why IPv6 was not opened although it was wanted (only when that was not fatal).
    pub v6_note: Option<String>,
}

/// Why opening failed: an ABI result code and a one-line message (starting with "udp: ").
pub use parsec_backend_abi::shim::OpenError;

/// A failure of one socket, with enough detail to decide about retries.
struct Failure {
    /// The port was taken (EADDRINUSE).
    in_use: bool,
    /// The system has no IPv6 (or no UDP over it).
    no_family: bool,
    code: i32,
    message: String,
}

impl Failure {
    fn from_io(err: &io::Error, message: String) -> Failure {
        let no_family = oserr::is_family_unsupported(err);
        let code = if no_family {
            NET_BACKEND_ERR_UNSUPPORTED
        } else if oserr::is_permission(err) {
            NET_BACKEND_ERR_PERMISSION
        } else {
            NET_BACKEND_ERR_IO
        };
        Failure {
            in_use: oserr::is_address_in_use(err),
            no_family,
            code,
            message,
        }
    }

    fn into_error(self) -> OpenError {
        OpenError {
            code: self.code,
            message: self.message,
        }
    }
}

fn step(what: impl FnOnce() -> String) -> impl FnOnce(io::Error) -> Failure {
    move |err| {
        let message = format!("udp: {}: {}", what(), oserr::describe(&err));
        Failure::from_io(&err, message)
    }
}

/// Create, configure and bind one UDP socket.
fn open_one(addr: SocketAddr, opts: &Options) -> Result<Socket, Failure> {
    let (family, address_option) = if addr.is_ipv4() {
        ("IPv4", "net.udp.bind")
    } else {
        ("IPv6", "net.udp.bind6")
    };
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(step(|| format!("cannot create an {family} UDP socket")))?;
    if addr.is_ipv4() {
        socket
            .set_broadcast(true)
            .map_err(step(|| "cannot enable SO_BROADCAST".to_string()))?;
    } else {
        socket
            .set_only_v6(true)
            .map_err(step(|| "cannot set IPV6_V6ONLY".to_string()))?;
    }
    socket
        .set_nonblocking(true)
        .map_err(step(|| "cannot make the socket non-blocking".into()))?;
    if let Some(bytes) = opts.rcvbuf {
        socket
            .set_recv_buffer_size(bytes)
            .map_err(step(|| format!("cannot set net.udp.rcvbuf={bytes}")))?;
    }
    if let Some(bytes) = opts.sndbuf {
        socket
            .set_send_buffer_size(bytes)
            .map_err(step(|| format!("cannot set net.udp.sndbuf={bytes}")))?;
    }
    socket.bind(&addr.into()).map_err(|err| {
        let message = format!(
            "udp: cannot bind {}: {}{}",
            crate::node::display(addr),
            oserr::describe(&err),
            oserr::bind_hint(&err, address_option)
        );
        Failure::from_io(&err, message)
    })?;
    Ok(socket)
}

fn bound_port(socket: &Socket) -> Result<u16, Failure> {
    let addr = socket
        .local_addr()
        .map_err(step(|| "cannot read the bound port".to_string()))?;
    addr.as_socket().map(|a| a.port()).ok_or_else(|| Failure {
        in_use: false,
        no_family: false,
        code: NET_BACKEND_ERR_IO,
        message: "udp: the system reported a non-IP local address".to_string(),
    })
}

/// Bind IPv4 on `opts.bind:port` and, unless `ipv6=0`, IPv6 on `[opts.bind6]:<same port>`.
/// With `port == 0` the IPv4 socket picks an ephemeral port and the pair is retried with a new
/// one when the IPv6 side of that port is taken.
pub fn bind_pair(opts: &Options, port: u16) -> Result<BoundPair, OpenError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let v4 = open_one(SocketAddr::V4(SocketAddrV4::new(opts.bind, port)), opts)
            .map_err(Failure::into_error)?;
        let v4_port = bound_port(&v4).map_err(Failure::into_error)?;
        if opts.ipv6 == Ipv6Mode::Off {
            return Ok(BoundPair {
                v4,
                v4_port,
                v6: None,
                v6_note: None,
            });
        }
        let v6_addr = SocketAddr::V6(SocketAddrV6::new(opts.bind6, v4_port, 0, 0));
        let failure = match open_one(v6_addr, opts).and_then(|s| Ok((bound_port(&s)?, s))) {
            Ok((v6_port, v6)) => {
                return Ok(BoundPair {
                    v4,
                    v4_port,
                    v6: Some((v6, v6_port)),
                    v6_note: None,
                })
            }
            Err(failure) => failure,
        };
        if failure.in_use && port == 0 && attempt < EPHEMERAL_ATTEMPTS {
            continue; // drops (closes) `v4`; try another ephemeral port for both
        }
        if opts.ipv6 == Ipv6Mode::On {
            let extra = if failure.no_family {
                " (this system has no IPv6; set net.udp.ipv6=0)"
            } else {
                ""
            };
            let message = format!("{}{extra}", failure.message);
            return Err(OpenError {
                code: failure.code,
                message,
            });
        }
        let note = format!("{} (continuing with IPv4 only)", failure.message);
        return Ok(BoundPair {
            v4,
            v4_port,
            v6: None,
            v6_note: Some(note),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options;

    #[test]
    fn ephemeral_pair_shares_the_port() {
        let opts = options::parse("bind=127.0.0.1\nbind6=::1").unwrap();
        let pair = bind_pair(&opts, 0).unwrap();
        assert_ne!(pair.v4_port, 0);
        match pair.v6 {
            Some((_, p)) => assert_eq!(p, pair.v4_port),
            None => println!("SKIPPED: no IPv6 loopback ({:?})", pair.v6_note),
        }
    }

    #[test]
    fn taken_port_is_explained() {
        let opts = options::parse("bind=127.0.0.1\nipv6=0").unwrap();
        let first = bind_pair(&opts, 0).unwrap();
        let err = bind_pair(&opts, first.v4_port).err().unwrap().message;
        let want = format!("udp: cannot bind 127.0.0.1:{}: ", first.v4_port);
        assert!(err.starts_with(&want), "{err}");
        assert!(err.ends_with("(another program on this port? choose another with net.port)"));
    }
}
