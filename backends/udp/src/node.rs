//! The UDP node layout and the text forms of nodes: encode/decode, parse, print and compare.
//!
//! Layout of the 32 bytes of a [`NET_Node`] (private to this backend, always canonical):
//!
//! | bytes   | meaning                                                        |
//! |---------|----------------------------------------------------------------|
//! | 0       | family: 4 (IPv4) or 6 (IPv6)                                   |
//! | 1..3    | port, big-endian                                               |
//! | 3..19   | address: IPv4 in 3..7 (7..19 zero), IPv6 in all 16 bytes       |
//! | 19..23  | IPv6 scope id, big-endian (zero for IPv4)                      |
//! | 23..32  | zero                                                           |
//!
//! Canonical means: one address has one byte form. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`)
//! are stored as IPv4 and IPv6 flow labels are not kept. A node whose family byte is not 4 or 6,
//! whose unused bytes are not zero, or which holds an IPv4-mapped address as IPv6 is invalid.
//!
//! This module must never do socket I/O; its only outside call is host-name resolution in
//! [`parse`].

use std::cmp::Ordering;
use std::ffi::CString;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, ToSocketAddrs};

use parsec_backend_abi::{NET_Node, NET_NODE_SIZE};

/// Family byte of an IPv4 node.
pub const FAMILY_V4: u8 = 4;
/// Family byte of an IPv6 node.
pub const FAMILY_V6: u8 = 6;

const PORT_AT: usize = 1;
const ADDR_AT: usize = 3;
const V4_END: usize = ADDR_AT + 4;
const V6_END: usize = ADDR_AT + 16;
const SCOPE_AT: usize = V6_END;
const SCOPE_END: usize = SCOPE_AT + 4;

/// Longest text `parse` accepts, after trimming surrounding whitespace.
pub const MAX_TEXT_LEN: usize = 255;

/// Encode an address as a canonical node (IPv4-mapped IPv6 becomes IPv4; flow info is dropped).
pub fn encode(addr: SocketAddr) -> NET_Node {
    let mut node = NET_Node::default();
    let b = &mut node.bytes;
    b[PORT_AT..ADDR_AT].copy_from_slice(&addr.port().to_be_bytes());
    match addr {
        SocketAddr::V4(a) => {
            b[0] = FAMILY_V4;
            b[ADDR_AT..V4_END].copy_from_slice(&a.ip().octets());
        }
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => {
                b[0] = FAMILY_V4;
                b[ADDR_AT..V4_END].copy_from_slice(&v4.octets());
            }
            None => {
                b[0] = FAMILY_V6;
                b[ADDR_AT..V6_END].copy_from_slice(&a.ip().octets());
                b[SCOPE_AT..SCOPE_END].copy_from_slice(&a.scope_id().to_be_bytes());
            }
        },
    }
    node
}

/// Decode a node; `None` if it is not a valid, canonical UDP node.
pub fn decode(node: &NET_Node) -> Option<SocketAddr> {
    let b = &node.bytes;
    let port = u16::from_be_bytes([b[PORT_AT], b[PORT_AT + 1]]);
    match b[0] {
        FAMILY_V4 => {
            if b[V4_END..].iter().any(|&x| x != 0) {
                return None;
            }
            let ip = Ipv4Addr::new(b[ADDR_AT], b[ADDR_AT + 1], b[ADDR_AT + 2], b[ADDR_AT + 3]);
            Some(SocketAddr::V4(SocketAddrV4::new(ip, port)))
        }
        FAMILY_V6 => {
            if b[SCOPE_END..].iter().any(|&x| x != 0) {
                return None;
            }
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&b[ADDR_AT..V6_END]);
            let ip = Ipv6Addr::from(octets);
            if ip.to_ipv4_mapped().is_some() {
                return None; // not canonical: must have been stored as IPv4
            }
            let mut scope = [0u8; 4];
            scope.copy_from_slice(&b[SCOPE_AT..SCOPE_END]);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                port,
                0,
                u32::from_be_bytes(scope),
            )))
        }
        _ => None,
    }
}

/// The bytes in comparison order: family, address, port, scope, rest. The permutation is a
/// bijection, so comparing it lexicographically is a total order on *all* 32-byte values, and on
/// valid nodes it is exactly "family, then address, then port, then scope".
fn sort_key(node: &NET_Node) -> [u8; NET_NODE_SIZE] {
    let b = &node.bytes;
    let mut key = [0u8; NET_NODE_SIZE];
    key[0] = b[0];
    key[1..17].copy_from_slice(&b[ADDR_AT..V6_END]);
    key[17..19].copy_from_slice(&b[PORT_AT..ADDR_AT]);
    key[19..].copy_from_slice(&b[SCOPE_AT..]);
    key
}

/// Total order of nodes (see [`sort_key`]); equal exactly when the bytes are equal.
pub fn compare(a: &NET_Node, b: &NET_Node) -> Ordering {
    sort_key(a).cmp(&sort_key(b))
}

/// Text form of a valid node: `1.2.3.4:6526`, `[::1]:6526`, `[fe80::1%2]:6526`.
pub fn print(node: &NET_Node) -> Option<String> {
    Some(match decode(node)? {
        SocketAddr::V4(a) => format!("{}:{}", a.ip(), a.port()),
        SocketAddr::V6(a) if a.scope_id() != 0 => {
            format!("[{}%{}]:{}", a.ip(), a.scope_id(), a.port())
        }
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    })
}

/// Parse an explicit port: 1 to 5 ASCII digits, value 1..=65535.
fn parse_port(text: &str) -> Result<u16, String> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("\"{text}\" is not a port number"));
    }
    match text.parse::<u16>() {
        Ok(0) => Err("port 0 cannot be addressed".to_string()),
        Ok(p) => Ok(p),
        Err(_) => Err(format!("port {text} is out of range 1-65535")),
    }
}

/// Parse `addr` or `addr%scope` (scope: a number or an interface name).
fn parse_v6_scoped(text: &str) -> Result<(Ipv6Addr, u32), String> {
    let (addr, scope) = match text.split_once('%') {
        Some((a, s)) => (a, Some(s)),
        None => (text, None),
    };
    let ip: Ipv6Addr = addr
        .parse()
        .map_err(|_| format!("\"{addr}\" is not an IPv6 address"))?;
    let scope_id = match scope {
        None => 0,
        Some(s) if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) => s
            .parse::<u32>()
            .map_err(|_| format!("scope id \"{s}\" is out of range"))?,
        Some(s) => interface_index(s)?,
    };
    Ok((ip, scope_id))
}

fn interface_index(name: &str) -> Result<u32, String> {
    let unknown = || format!("\"{name}\" is not a network interface");
    if name.is_empty() || name.len() >= libc::IF_NAMESIZE {
        return Err(unknown());
    }
    let c_name = CString::new(name).map_err(|_| unknown())?;
    // SAFETY: `c_name` is a valid NUL-terminated string that outlives the call; if_nametoindex
    // only reads it.
    let index = unsafe { libc::if_nametoindex(c_name.as_ptr()) };
    if index == 0 {
        Err(unknown())
    } else {
        Ok(index)
    }
}

/// A syntactically valid DNS host name: labels of letters, digits, '-' and '_', 1-63 characters,
/// not starting or ending with '-', at most 253 characters, last label not all digits (so that
/// "1.2.3" or "300.1.1.1" are not passed to the resolver's lenient IPv4 forms).
fn is_host_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.len() > 253 {
        return false;
    }
    let labels_ok = host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    });
    let last_numeric = host
        .rsplit('.')
        .next()
        .is_some_and(|last| last.bytes().all(|c| c.is_ascii_digit()));
    labels_ok && !last_numeric
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve \"{host}\": {}", crate::oserr::describe(&e)))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| found.first())
        .copied()
        .ok_or_else(|| format!("\"{host}\" has no address"))
}

/// Parse text into a node. Accepted: `1.2.3.4`, `1.2.3.4:5`, `::1`, `fe80::1%2`, `[::1]`,
/// `[::1]:5`, `[fe80::1%eth0]:5`, `host`, `host:5` (host names resolved, IPv4 preferred).
/// `default_port` applies when no port is written; the resulting port must be 1..=65535.
/// Returns a short reason on failure.
pub fn parse(text: &str, default_port: u16) -> Result<NET_Node, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty address".to_string());
    }
    if text.len() > MAX_TEXT_LEN {
        return Err(format!("address longer than {MAX_TEXT_LEN} bytes"));
    }
    let with_port = |explicit: Option<&str>| -> Result<u16, String> {
        match explicit {
            Some(p) => parse_port(p),
            None if default_port == 0 => Err("no port given and no default port".to_string()),
            None => Ok(default_port),
        }
    };
    let addr = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or("missing ']'")?;
        let port = match after {
            "" => with_port(None)?,
            _ => with_port(Some(
                after.strip_prefix(':').ok_or("expected ':' after ']'")?,
            ))?,
        };
        let (ip, scope) = parse_v6_scoped(inside)?;
        SocketAddr::V6(SocketAddrV6::new(ip, port, 0, scope))
    } else if text.contains(']') {
        return Err("unbalanced ']'".to_string());
    } else if text.matches(':').count() > 1 {
        let (ip, scope) = parse_v6_scoped(text)?;
        SocketAddr::V6(SocketAddrV6::new(ip, with_port(None)?, 0, scope))
    } else {
        let (host, port) = match text.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        };
        // The host is judged before the port, so the first thing wrong is the one reported.
        let ip = host.parse::<Ipv4Addr>().ok();
        if ip.is_none() && !is_host_name(host) {
            return Err(format!(
                "\"{host}\" is neither an IP address nor a host name"
            ));
        }
        let port = with_port(port)?;
        match ip {
            Some(ip) => SocketAddr::V4(SocketAddrV4::new(ip, port)),
            None => resolve(host, port)?,
        }
    };
    // Canonical form: a v4-mapped address is IPv4 and loses any scope id.
    let addr = match addr {
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, a.port())),
            None => SocketAddr::V6(a),
        },
        v4 => v4,
    };
    Ok(encode(addr))
}

/// Convenience for messages: the printed form of an address.
pub fn display(addr: SocketAddr) -> String {
    print(&encode(addr)).unwrap_or_else(|| addr.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_v4() {
        let n = encode("1.2.3.4:6526".parse().unwrap());
        let mut want = [0u8; 32];
        want[0] = 4;
        want[1..3].copy_from_slice(&6526u16.to_be_bytes());
        want[3..7].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(n.bytes, want);
    }

    #[test]
    fn layout_v6_with_scope() {
        let n = encode(SocketAddr::V6(SocketAddrV6::new(
            "fe80::1".parse().unwrap(),
            5,
            7,
            2,
        )));
        assert_eq!(n.bytes[0], 6);
        assert_eq!(&n.bytes[1..3], &[0, 5]);
        assert_eq!(n.bytes[3], 0xfe);
        assert_eq!(n.bytes[18], 1);
        assert_eq!(&n.bytes[19..23], &[0, 0, 0, 2]);
        assert!(n.bytes[23..].iter().all(|&b| b == 0));
        assert_eq!(print(&n).unwrap(), "[fe80::1%2]:5");
    }

    #[test]
    fn non_canonical_nodes_are_invalid() {
        let mut n = encode("1.2.3.4:5".parse().unwrap());
        n.bytes[20] = 1;
        assert!(decode(&n).is_none());
        let mut n = encode("[::1]:5".parse().unwrap());
        n.bytes[31] = 1;
        assert!(decode(&n).is_none());
        let mut mapped = NET_Node::default();
        mapped.bytes[0] = 6;
        mapped.bytes[13..15].copy_from_slice(&[0xff, 0xff]);
        mapped.bytes[15..19].copy_from_slice(&[1, 2, 3, 4]);
        assert!(decode(&mapped).is_none());
        let mut bad = NET_Node::default();
        bad.bytes[0] = 5;
        assert!(decode(&bad).is_none());
    }

    #[test]
    fn host_name_syntax() {
        for good in ["localhost", "example.com", "a-b.c_d.org.", "x1"] {
            assert!(is_host_name(good), "{good}");
        }
        for bad in [
            "", "1.2.3", "300", "-a.com", "a..b", "a b", "a/b", "é.com", "a.123",
        ] {
            assert!(!is_host_name(bad), "{bad}");
        }
    }
}
