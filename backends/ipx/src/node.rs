//! IPX addresses (network, node, socket), their layout inside a [`NET_Node`], and their text
//! form: encode/decode, print, parse and compare.
//!
//! Layout of the 32 bytes of a [`NET_Node`] (private to this backend, always canonical):
//!
//! | bytes   | meaning                                              |
//! |---------|------------------------------------------------------|
//! | 0..4    | IPX network number, big-endian                       |
//! | 4..10   | IPX node: the interface's Ethernet MAC address       |
//! | 10..12  | IPX socket number, big-endian                        |
//! | 12..32  | zero                                                 |
//!
//! Text form: `NNNNNNNN:AABBCCDDEEFF:SSSS`, fixed-width hexadecimal, printed in upper case
//! (Novell's convention) and parsed in either case.
//!
//! This module must never do I/O of any kind; it only converts between bytes and text.

use std::cmp::Ordering;

use parsec_backend_abi::NET_Node;

/// Size of the part of a node that carries the address; the rest is zero.
pub const ADDRESS_LEN: usize = 12;
/// The IPX node of a broadcast: the Ethernet broadcast address.
pub const BROADCAST_MAC: [u8; 6] = [0xff; 6];
/// IPX socket used when `open` is given port 0 (unless another program holds it: `socket.rs`)
/// and when parsed text names no socket and the caller gives no default: 0x869C, this project's
/// choice for "Parsec" (not a Novell-assigned number; any value 0x0001-0xFFFF can be configured
/// with `net.port`).
pub const DEFAULT_SOCKET: u16 = 0x869C;
/// Longest text [`parse`] accepts, after trimming surrounding whitespace.
pub const MAX_TEXT_LEN: usize = 64;

/// One IPX address: network number, node (MAC) and socket number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpxAddr {
    /// Network number as it appears on the wire (big-endian).
    pub network: [u8; 4],
    /// Node number: an Ethernet MAC address, or [`BROADCAST_MAC`].
    pub node: [u8; 6],
    /// Socket number.
    pub socket: u16,
}

impl IpxAddr {
    /// The node is the broadcast node.
    pub fn is_broadcast(&self) -> bool {
        self.node == BROADCAST_MAC
    }
}

/// Encode an address as a canonical node.
pub fn encode(addr: &IpxAddr) -> NET_Node {
    let mut node = NET_Node::default();
    node.bytes[0..4].copy_from_slice(&addr.network);
    node.bytes[4..10].copy_from_slice(&addr.node);
    node.bytes[10..12].copy_from_slice(&addr.socket.to_be_bytes());
    node
}

/// Decode a node; `None` if a byte past the address is not zero (not a node of this backend).
pub fn decode(node: &NET_Node) -> Option<IpxAddr> {
    let b = &node.bytes;
    if b[ADDRESS_LEN..].iter().any(|&x| x != 0) {
        return None;
    }
    let mut addr = IpxAddr {
        network: [0; 4],
        node: [0; 6],
        socket: u16::from_be_bytes([b[10], b[11]]),
    };
    addr.network.copy_from_slice(&b[0..4]);
    addr.node.copy_from_slice(&b[4..10]);
    Some(addr)
}

/// Total order of nodes: lexicographic over the bytes. On canonical nodes this is "network, then
/// node, then socket"; comparing all 32 bytes keeps it total (and equal exactly when the bytes
/// are equal) even for nodes that are not canonical.
pub fn compare(a: &NET_Node, b: &NET_Node) -> Ordering {
    a.bytes.cmp(&b.bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// Text form of an address: `NNNNNNNN:AABBCCDDEEFF:SSSS`.
pub fn display(addr: &IpxAddr) -> String {
    format!(
        "{}:{}:{}",
        hex(&addr.network),
        hex(&addr.node),
        hex(&addr.socket.to_be_bytes())
    )
}

/// Text form of a valid node, `None` for a node that is not canonical.
pub fn print(node: &NET_Node) -> Option<String> {
    decode(node).map(|addr| display(&addr))
}

/// Exactly `N` bytes written as `2 * N` hexadecimal digits.
fn parse_hex<const N: usize>(text: &str, what: &str) -> Result<[u8; N], String> {
    let bad = || format!("{what} \"{text}\" is not {} hexadecimal digits", 2 * N);
    if text.len() != 2 * N || !text.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        let pair = text.get(2 * i..2 * i + 2).ok_or_else(bad)?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// A number of `N` bytes written as 1 to `2 * N` hexadecimal digits (`0` is network
/// 00000000, as `net.ipx.network` takes it).
fn parse_hex_number<const N: usize>(text: &str, what: &str) -> Result<[u8; N], String> {
    if text.is_empty() || text.len() > 2 * N || !text.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "{what} \"{text}\" is not 1-{} hexadecimal digits",
            2 * N
        ));
    }
    let padded = format!("{text:0>width$}", width = 2 * N);
    parse_hex::<N>(&padded, what)
}

/// Parse `NNNNNNNN:AABBCCDDEEFF:SSSS` or `NNNNNNNN:AABBCCDDEEFF` (then the socket is
/// `default_socket`, or [`DEFAULT_SOCKET`] when that is 0). Hexadecimal in either case; the
/// network and socket may drop leading zeros (`0:AABBCCDDEEFF:4000`), the node is always 12
/// digits; surrounding whitespace is ignored; socket 0000 is refused (it cannot be addressed).
/// Returns a short reason on failure.
pub fn parse(text: &str, default_socket: u16) -> Result<NET_Node, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty address".to_string());
    }
    if text.len() > MAX_TEXT_LEN {
        return Err(format!("address longer than {MAX_TEXT_LEN} bytes"));
    }
    let parts: Vec<&str> = text.split(':').collect();
    let (network, node, socket) = match parts.as_slice() {
        [network, node, socket] => (*network, *node, Some(*socket)),
        [network, node] => (*network, *node, None),
        _ => {
            return Err(format!(
                "\"{text}\" is not an IPX address NNNNNNNN:AABBCCDDEEFF:SSSS"
            ))
        }
    };
    let network = parse_hex_number::<4>(network, "network")?;
    let node = parse_hex::<6>(node, "node")?;
    let socket = match socket {
        Some(s) => u16::from_be_bytes(parse_hex_number::<2>(s, "socket")?),
        None if default_socket == 0 => DEFAULT_SOCKET,
        None => default_socket,
    };
    if socket == 0 {
        return Err("socket 0000 cannot be addressed".to_string());
    }
    Ok(encode(&IpxAddr {
        network,
        node,
        socket,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> IpxAddr {
        IpxAddr {
            network: [0x00, 0x00, 0xab, 0xcd],
            node: [0x02, 0x00, 0x5e, 0x10, 0x20, 0xff],
            socket: 0x869c,
        }
    }

    #[test]
    fn layout() {
        let n = encode(&sample());
        let mut want = [0u8; 32];
        want[0..4].copy_from_slice(&[0, 0, 0xab, 0xcd]);
        want[4..10].copy_from_slice(&[0x02, 0x00, 0x5e, 0x10, 0x20, 0xff]);
        want[10..12].copy_from_slice(&[0x86, 0x9c]);
        assert_eq!(n.bytes, want);
        assert_eq!(decode(&n), Some(sample()));
    }

    #[test]
    fn every_tail_byte_must_be_zero() {
        for at in ADDRESS_LEN..32 {
            let mut n = encode(&sample());
            n.bytes[at] = 1;
            assert_eq!(decode(&n), None, "byte {at}");
            assert_eq!(print(&n), None);
        }
    }

    #[test]
    fn print_and_parse_round_trip() {
        let n = encode(&sample());
        let text = print(&n).unwrap();
        assert_eq!(text, "0000ABCD:02005E1020FF:869C");
        assert_eq!(parse(&text, 0), Ok(n));
        assert_eq!(parse("  0000abcd:02005e1020ff:869c\n", 0), Ok(n));
        assert_eq!(parse("0000ABCD:02005E1020FF", 0x869c), Ok(n));
        assert_eq!(parse("0000ABCD:02005E1020FF", 0), Ok(n)); // DEFAULT_SOCKET
        let other = parse("0000ABCD:02005E1020FF", 0x4000).unwrap();
        assert_eq!(decode(&other).unwrap().socket, 0x4000);
        // Leading zeros of the network and socket may be left out, as net.ipx.network allows.
        assert_eq!(parse("ABCD:02005E1020FF:869C", 0), Ok(n));
        let zero = decode(&parse("0:02005E1020FF:4000", 0).unwrap()).unwrap();
        assert_eq!((zero.network, zero.socket), ([0; 4], 0x4000));
        assert_eq!(
            decode(&parse("0:02005E1020FF:1", 0).unwrap())
                .unwrap()
                .socket,
            1
        );
    }

    #[test]
    fn bad_text_is_refused_with_a_reason() {
        for bad in [
            "",
            "   ",
            "0000ABCD",
            "0000ABCD:02005E1020FF:869C:1",
            "100000000:02005E1020FF:869C",
            "0000ABCD:02:00:5E:10:20:FF:869C",
            "0000ABCD:02005E1020F:869C",
            "0000ABCD:02005E1020FFF:869C",
            "0000ABCG:02005E1020FF:869C",
            "0000ABCD:02005E1020FF:869C0",
            "0000ABCD:02005E1020FF:0000",
            "0000ABCD:02005E1020FF:0",
            "0000ABCD:02005E1020FF:",
            "0000ABCD:02005E1020FF:+69C",
            "+000ABCD:02005E1020FF:869C",
            "0000ABCD::869C",
            "0000ABCD:02005E1020\u{e9}:869C",
            "1.2.3.4:5",
        ] {
            let err = parse(bad, 0).unwrap_err();
            assert!(!err.is_empty() && !err.contains('\n'), "{bad}: {err}");
        }
        assert!(parse(&"0".repeat(MAX_TEXT_LEN + 1), 0).is_err());
    }

    #[test]
    fn compare_is_network_then_node_then_socket() {
        let a = sample();
        let mut b = a;
        b.socket = 0x0001;
        b.network[3] = 0xce;
        assert_eq!(compare(&encode(&a), &encode(&b)), Ordering::Less);
        let mut c = a;
        c.node[5] = 0x00;
        c.socket = 0xffff;
        assert_eq!(compare(&encode(&c), &encode(&a)), Ordering::Less);
        let mut d = a;
        d.socket = 0x869d;
        assert_eq!(compare(&encode(&a), &encode(&d)), Ordering::Less);
        assert_eq!(compare(&encode(&a), &encode(&a)), Ordering::Equal);
    }
}
