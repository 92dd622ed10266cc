//! Whether a well-formed IPX frame is for this socket: our network, our socket, our node (or
//! broadcast), not sent by ourselves, and a payload the ABI can deliver.
//!
//! This module only decides; it must never do I/O, count, or change the frame. The caller
//! counts each verdict in `Stats`.

use crate::frame::{Frame, MAX_PAYLOAD};
use crate::node::{IpxAddr, BROADCAST_MAC};

/// Why a well-formed IPX frame is not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Addressed to another IPX socket (normal traffic of other programs).
    OtherSocket,
    /// Addressed to another IPX network number.
    OtherNetwork,
    /// Addressed (Ethernet or IPX) to another node: seen because the interface is promiscuous.
    OtherNode,
    /// A frame this socket sent itself, reflected back to it.
    Own,
    /// More payload than [`MAX_PAYLOAD`].
    Oversize,
    /// No payload: the ABI cannot deliver an empty datagram.
    Empty,
}

fn for_node(mac: &[u8; 6], local: &IpxAddr) -> bool {
    *mac == local.node || *mac == BROADCAST_MAC
}

/// Check `frame` against the socket's own address `local`.
pub fn check(frame: &Frame<'_>, local: &IpxAddr) -> Result<(), Rejection> {
    if frame.dst.socket != local.socket {
        return Err(Rejection::OtherSocket);
    }
    if frame.dst.network != local.network {
        return Err(Rejection::OtherNetwork);
    }
    if !for_node(&frame.dst.node, local) || !for_node(&frame.eth_dst, local) {
        return Err(Rejection::OtherNode);
    }
    if frame.src == *local {
        return Err(Rejection::Own);
    }
    if frame.payload.len() > MAX_PAYLOAD {
        return Err(Rejection::Oversize);
    }
    if frame.payload.is_empty() {
        return Err(Rejection::Empty);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame;

    const ME: IpxAddr = IpxAddr {
        network: [0, 0, 0, 7],
        node: [0x02, 0, 0, 0, 0, 0x0a],
        socket: 0x869c,
    };
    const PEER: IpxAddr = IpxAddr {
        network: [0, 0, 0, 7],
        node: [0x02, 0, 0, 0, 0, 0x0b],
        socket: 0x869c,
    };

    fn verdict(dst: IpxAddr, src: IpxAddr, payload: &[u8]) -> Result<(), Rejection> {
        let mut out = Vec::new();
        frame::build(&dst, &src, payload, &mut out).unwrap();
        check(&frame::parse(&out).unwrap(), &ME)
    }

    #[test]
    fn unicast_and_broadcast_to_us_pass() {
        assert_eq!(verdict(ME, PEER, b"x"), Ok(()));
        let broadcast = IpxAddr {
            node: BROADCAST_MAC,
            ..ME
        };
        assert_eq!(verdict(broadcast, PEER, b"x"), Ok(()));
        // Another socket of ours on the same node is a different sender, not "own".
        let sibling = IpxAddr {
            socket: 0x4000,
            ..ME
        };
        assert_eq!(verdict(ME, sibling, b"x"), Ok(()));
    }

    #[test]
    fn each_rejection() {
        let other_socket = IpxAddr {
            socket: 0x869d,
            ..ME
        };
        assert_eq!(
            verdict(other_socket, PEER, b"x"),
            Err(Rejection::OtherSocket)
        );
        let other_network = IpxAddr {
            network: [0, 0, 0, 8],
            ..ME
        };
        assert_eq!(
            verdict(other_network, PEER, b"x"),
            Err(Rejection::OtherNetwork)
        );
        assert_eq!(verdict(PEER, ME, b"x"), Err(Rejection::OtherNode));
        let broadcast = IpxAddr {
            node: BROADCAST_MAC,
            ..ME
        };
        assert_eq!(verdict(broadcast, ME, b"x"), Err(Rejection::Own));
        assert_eq!(verdict(ME, PEER, b""), Err(Rejection::Empty));
    }

    #[test]
    fn ethernet_destination_must_agree() {
        let mut out = Vec::new();
        frame::build(&ME, &PEER, b"x", &mut out).unwrap();
        out[5] ^= 1; // Ethernet destination: someone else
        assert_eq!(
            check(&frame::parse(&out).unwrap(), &ME),
            Err(Rejection::OtherNode)
        );
    }

    #[test]
    fn oversize_payload_from_another_stack() {
        // Another IPX stack may send up to 1500 - 30 bytes; we deliver at most 546.
        let mut out = Vec::new();
        frame::build(&ME, &PEER, &[5; MAX_PAYLOAD], &mut out).unwrap();
        out.extend_from_slice(&[6; 10]);
        let length = (30 + MAX_PAYLOAD + 10) as u16;
        out[16..18].copy_from_slice(&length.to_be_bytes());
        assert_eq!(
            check(&frame::parse(&out).unwrap(), &ME),
            Err(Rejection::Oversize)
        );
    }
}
