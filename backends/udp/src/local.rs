//! Finding this host's own addresses for `local_node`: the source address the routing table picks
//! towards a destination, and the primary broadcast-capable IPv4 interface address.
//! This module must never send a datagram or change any system or socket state: the throwaway
//! socket it connects is never written to.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use socket2::{Domain, Protocol, Socket, Type};

/// The local address the system would use as the source of datagrams sent to `dest`. A UDP
/// `connect` only selects a route and a source address; nothing goes on the wire.
pub fn source_towards(dest: SocketAddr) -> io::Result<SocketAddr> {
    let socket = Socket::new(Domain::for_address(dest), Type::DGRAM, Some(Protocol::UDP))?;
    if dest.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    // Port 0 cannot be connected to; any port selects the same route.
    let mut dest = dest;
    if dest.port() == 0 {
        dest.set_port(9);
    }
    // A broadcast destination can only be "connected" with SO_BROADCAST set.
    if dest.is_ipv4() {
        socket.set_broadcast(true)?;
    }
    socket.connect(&dest.into())?;
    socket
        .local_addr()?
        .as_socket()
        .ok_or_else(|| io::Error::other("the system reported a non-IP local address"))
}

/// The address of the first interface that is up, not loopback, can broadcast and has IPv4.
pub fn primary_ipv4() -> Option<Ipv4Addr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `list` is a valid out-pointer; on success getifaddrs stores the head of a linked
    // list that stays valid until freeifaddrs below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let wanted = (libc::IFF_UP | libc::IFF_BROADCAST) as u32;
    let mut found = None;
    let mut cursor = list;
    while !cursor.is_null() {
        // SAFETY: `cursor` is a non-NULL element of the list returned by getifaddrs, not yet freed.
        let entry = unsafe { &*cursor };
        cursor = entry.ifa_next;
        let flags = entry.ifa_flags as u32;
        if flags & wanted != wanted || flags & libc::IFF_LOOPBACK as u32 != 0 {
            continue;
        }
        if entry.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-NULL and points to a sockaddr at least as large as the common
        // `sockaddr` header, whose family field tells the real type.
        let family = unsafe { std::ptr::addr_of!((*entry.ifa_addr).sa_family).read_unaligned() };
        if i32::from(family) != libc::AF_INET {
            continue;
        }
        // SAFETY: the family is AF_INET, so the address is a `sockaddr_in`.
        let sin = unsafe { entry.ifa_addr.cast::<libc::sockaddr_in>().read_unaligned() };
        found = Some(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
        break;
    }
    // SAFETY: `list` came from a successful getifaddrs and is freed exactly once; no reference
    // into it survives (the address was copied out).
    unsafe { libc::freeifaddrs(list) };
    found
}

/// `primary_ipv4`, or 127.0.0.1 when the host has no such interface.
pub fn primary_ipv4_or_loopback() -> IpAddr {
    IpAddr::V4(primary_ipv4().unwrap_or(Ipv4Addr::LOCALHOST))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_towards_loopback_is_loopback() {
        let got = source_towards("127.0.0.1:6526".parse().unwrap()).unwrap();
        assert_eq!(got.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        let got = source_towards("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_eq!(got.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        match source_towards("[::1]:6526".parse().unwrap()) {
            Ok(got) => assert_eq!(got.ip(), "::1".parse::<IpAddr>().unwrap()),
            Err(e) => println!("SKIPPED: no IPv6 loopback ({e})"),
        }
    }

    #[test]
    fn source_towards_broadcast_is_an_interface_address() {
        let dest: SocketAddr = "255.255.255.255:6526".parse().unwrap();
        match source_towards(dest) {
            Ok(src) => assert!(!src.ip().is_unspecified(), "{src}"),
            // A sandbox without any route may refuse; what must not happen is EACCES.
            Err(e) => assert_ne!(e.kind(), io::ErrorKind::PermissionDenied, "{e}"),
        }
    }

    #[test]
    fn primary_ipv4_is_never_loopback() {
        if let Some(ip) = primary_ipv4() {
            assert!(!ip.is_loopback());
        }
        let _ = primary_ipv4_or_loopback();
    }
}
