//! The byte layout of one Ethernet II frame carrying IPX: building a frame to send and taking
//! a received one apart.
//!
//! ```text
//! offset size  field
//!  0      6    destination MAC
//!  6      6    source MAC
//! 12      2    EtherType 0x8137 (big-endian)
//! 14      2    IPX checksum, 0xFFFF (not used)
//! 16      2    IPX length: header + data, big-endian
//! 18      1    transport control (hop count), 0
//! 19      1    packet type, 4 (PEP, what IPX games used)
//! 20     12    destination network(4) node(6) socket(2)
//! 32     12    source network(4) node(6) socket(2)
//! 44    ...    payload; frames shorter than 60 bytes are padded with zeros
//! ```
//!
//! This module only checks structure (EtherType, header present, length field consistent with
//! the frame); deciding whether a frame is *for us* is `filter.rs`'s job. It must never do I/O,
//! never panic on any input, and never read past the length the IPX header declares.

use crate::node::IpxAddr;

/// EtherType of IPX in Ethernet II frames.
pub const ETHERTYPE_IPX: u16 = 0x8137;
/// Ethernet II header: destination MAC, source MAC, EtherType.
pub const ETH_HEADER_LEN: usize = 14;
/// The IPX header.
pub const IPX_HEADER_LEN: usize = 30;
/// Largest IPX payload this backend sends or delivers (576-byte IPX packets, the classic limit).
pub const MAX_PAYLOAD: usize = 546;
/// Shortest Ethernet frame without the frame check sequence; shorter frames are zero-padded.
pub const MIN_FRAME_LEN: usize = 60;
/// Longest frame this backend builds.
pub const MAX_FRAME_LEN: usize = ETH_HEADER_LEN + IPX_HEADER_LEN + MAX_PAYLOAD;
/// IPX checksum field value meaning "no checksum".
pub const NO_CHECKSUM: u16 = 0xFFFF;
/// Packet type written into frames we send: 4, the Packet Exchange Protocol.
pub const PACKET_TYPE_PEP: u8 = 4;

/// The fields of a received IPX frame, borrowed from the receive buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Ethernet destination MAC.
    pub eth_dst: [u8; 6],
    /// Ethernet source MAC.
    pub eth_src: [u8; 6],
    /// IPX checksum field (0xFFFF when unused; not verified).
    pub checksum: u16,
    /// IPX length field: header + data.
    pub ipx_length: u16,
    /// Transport control (hop count).
    pub transport_control: u8,
    /// Packet type.
    pub packet_type: u8,
    /// Destination address.
    pub dst: IpxAddr,
    /// Source address.
    pub src: IpxAddr,
    /// The data: exactly `ipx_length - 30` bytes (padding excluded).
    pub payload: &'a [u8],
}

/// Why a received frame is not a well-formed IPX frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// Shorter than an Ethernet header.
    ShortFrame { len: usize },
    /// Not EtherType 0x8137.
    WrongEtherType { ethertype: u16 },
    /// Fewer than 30 bytes after the Ethernet header.
    TruncatedHeader { available: usize },
    /// The IPX length field is below 30 or above what the frame holds.
    BadLength { length: u16, available: usize },
}

impl Malformed {
    /// One line for `last_error`.
    pub fn describe(&self) -> String {
        match *self {
            Malformed::ShortFrame { len } => {
                format!("a {len}-byte frame is shorter than an Ethernet header")
            }
            Malformed::WrongEtherType { ethertype } => {
                format!("EtherType 0x{ethertype:04X} is not IPX (0x8137)")
            }
            Malformed::TruncatedHeader { available } => {
                format!("only {available} bytes follow the Ethernet header; IPX needs 30")
            }
            Malformed::BadLength { length, available } => format!(
                "IPX length {length} is inconsistent with the {available} bytes of the frame \
                 (must be 30..={available})"
            ),
        }
    }
}

/// Why a frame cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The payload is larger than [`MAX_PAYLOAD`].
    TooLarge { len: usize },
}

fn write_addr(out: &mut [u8], addr: &IpxAddr) {
    out[0..4].copy_from_slice(&addr.network);
    out[4..10].copy_from_slice(&addr.node);
    out[10..12].copy_from_slice(&addr.socket.to_be_bytes());
}

fn read_addr(bytes: &[u8; 12]) -> IpxAddr {
    let mut addr = IpxAddr {
        network: [0; 4],
        node: [0; 6],
        socket: u16::from_be_bytes([bytes[10], bytes[11]]),
    };
    addr.network.copy_from_slice(&bytes[0..4]);
    addr.node.copy_from_slice(&bytes[4..10]);
    addr
}

/// Build the frame that carries `payload` from `src` to `dst` into `out` (replacing its
/// contents). The Ethernet addresses are the IPX nodes; frames are padded to [`MIN_FRAME_LEN`].
pub fn build(
    dst: &IpxAddr,
    src: &IpxAddr,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), BuildError> {
    if payload.len() > MAX_PAYLOAD {
        return Err(BuildError::TooLarge { len: payload.len() });
    }
    let ipx_length = IPX_HEADER_LEN + payload.len(); // <= 576, fits u16
    let frame_len = (ETH_HEADER_LEN + ipx_length).max(MIN_FRAME_LEN);
    out.clear();
    out.resize(frame_len, 0);
    out[0..6].copy_from_slice(&dst.node);
    out[6..12].copy_from_slice(&src.node);
    out[12..14].copy_from_slice(&ETHERTYPE_IPX.to_be_bytes());
    let ipx = &mut out[ETH_HEADER_LEN..];
    ipx[0..2].copy_from_slice(&NO_CHECKSUM.to_be_bytes());
    ipx[2..4].copy_from_slice(&(ipx_length as u16).to_be_bytes());
    ipx[4] = 0; // transport control
    ipx[5] = PACKET_TYPE_PEP;
    write_addr(&mut ipx[6..18], dst);
    write_addr(&mut ipx[18..30], src);
    ipx[IPX_HEADER_LEN..ipx_length].copy_from_slice(payload);
    Ok(())
}

/// Take a received frame apart. The payload is what the IPX length declares; bytes after it
/// (Ethernet padding) are ignored.
pub fn parse(frame: &[u8]) -> Result<Frame<'_>, Malformed> {
    let Some((eth, ipx)) = frame.split_first_chunk::<ETH_HEADER_LEN>() else {
        return Err(Malformed::ShortFrame { len: frame.len() });
    };
    let ethertype = u16::from_be_bytes([eth[12], eth[13]]);
    if ethertype != ETHERTYPE_IPX {
        return Err(Malformed::WrongEtherType { ethertype });
    }
    let available = ipx.len();
    let Some((header, _)) = ipx.split_first_chunk::<IPX_HEADER_LEN>() else {
        return Err(Malformed::TruncatedHeader { available });
    };
    let length = u16::from_be_bytes([header[2], header[3]]);
    if usize::from(length) < IPX_HEADER_LEN || usize::from(length) > available {
        return Err(Malformed::BadLength { length, available });
    }
    let payload = ipx
        .get(IPX_HEADER_LEN..usize::from(length))
        .ok_or(Malformed::BadLength { length, available })?;
    let mut eth_dst = [0u8; 6];
    let mut eth_src = [0u8; 6];
    eth_dst.copy_from_slice(&eth[0..6]);
    eth_src.copy_from_slice(&eth[6..12]);
    let mut dst = [0u8; 12];
    let mut src = [0u8; 12];
    dst.copy_from_slice(&header[6..18]);
    src.copy_from_slice(&header[18..30]);
    Ok(Frame {
        eth_dst,
        eth_src,
        checksum: u16::from_be_bytes([header[0], header[1]]),
        ipx_length: length,
        transport_control: header[4],
        packet_type: header[5],
        dst: read_addr(&dst),
        src: read_addr(&src),
        payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpxAddr = IpxAddr {
        network: [0, 0, 0, 7],
        node: [0x02, 0, 0, 0, 0, 0x0a],
        socket: 0x4001,
    };
    const B: IpxAddr = IpxAddr {
        network: [0, 0, 0, 7],
        node: [0x02, 0, 0, 0, 0, 0x0b],
        socket: 0x4002,
    };

    #[test]
    fn exact_bytes_of_a_short_frame() {
        let mut out = Vec::new();
        build(&B, &A, b"hi", &mut out).unwrap();
        let mut want = vec![
            0x02, 0, 0, 0, 0, 0x0b, // dst MAC
            0x02, 0, 0, 0, 0, 0x0a, // src MAC
            0x81, 0x37, // EtherType
            0xff, 0xff, // checksum
            0x00, 32, // length 30 + 2
            0, 4, // transport control, packet type
            0, 0, 0, 7, 0x02, 0, 0, 0, 0, 0x0b, 0x40, 0x02, // dst
            0, 0, 0, 7, 0x02, 0, 0, 0, 0, 0x0a, 0x40, 0x01, // src
            b'h', b'i',
        ];
        want.resize(MIN_FRAME_LEN, 0);
        assert_eq!(out, want);
    }

    #[test]
    fn round_trip_every_size() {
        let mut out = Vec::new();
        for len in 0..=MAX_PAYLOAD {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            build(&B, &A, &payload, &mut out).unwrap();
            assert_eq!(out.len(), (ETH_HEADER_LEN + IPX_HEADER_LEN + len).max(60));
            let f = parse(&out).unwrap();
            assert_eq!(f.payload, &payload[..]);
            assert_eq!((f.dst, f.src), (B, A));
            assert_eq!((f.eth_dst, f.eth_src), (B.node, A.node));
            assert_eq!(f.checksum, 0xffff);
            assert_eq!(usize::from(f.ipx_length), 30 + len);
            assert_eq!((f.transport_control, f.packet_type), (0, 4));
        }
    }

    #[test]
    fn too_large_payload_is_refused() {
        let mut out = vec![1, 2, 3];
        let big = vec![0u8; MAX_PAYLOAD + 1];
        assert_eq!(
            build(&B, &A, &big, &mut out),
            Err(BuildError::TooLarge { len: 547 })
        );
    }

    #[test]
    fn padding_is_not_payload_and_trailing_bytes_are_ignored() {
        let mut out = Vec::new();
        build(&B, &A, b"x", &mut out).unwrap();
        out.extend_from_slice(&[9; 40]); // e.g. a NIC that appends garbage
        assert_eq!(parse(&out).unwrap().payload, b"x");
    }

    #[test]
    fn malformed_frames_are_rejected() {
        let mut good = Vec::new();
        build(&B, &A, b"payload", &mut good).unwrap();

        for len in 0..ETH_HEADER_LEN {
            assert_eq!(parse(&good[..len]), Err(Malformed::ShortFrame { len }));
        }
        for available in 0..IPX_HEADER_LEN {
            let cut = &good[..ETH_HEADER_LEN + available];
            assert_eq!(parse(cut), Err(Malformed::TruncatedHeader { available }));
        }
        for ethertype in [0x0800u16, 0x88b5, 0x8138, 0x3781, 0] {
            let mut f = good.clone();
            f[12..14].copy_from_slice(&ethertype.to_be_bytes());
            assert_eq!(parse(&f), Err(Malformed::WrongEtherType { ethertype }));
        }
        let available = good.len() - ETH_HEADER_LEN; // 46: padded frame
        for length in [0u16, 1, 29, 47, 200, 0xffff] {
            let mut f = good.clone();
            f[16..18].copy_from_slice(&length.to_be_bytes());
            assert_eq!(
                parse(&f),
                Err(Malformed::BadLength { length, available }),
                "{length}"
            );
        }
        // The length may point into the padding: that padding is then payload.
        let mut f = good.clone();
        f[16..18].copy_from_slice(&46u16.to_be_bytes());
        assert_eq!(parse(&f).unwrap().payload.len(), 16);
        // Exactly a header is a valid (empty) IPX packet.
        f[16..18].copy_from_slice(&30u16.to_be_bytes());
        assert_eq!(parse(&f).unwrap().payload, b"");
        for m in [
            Malformed::ShortFrame { len: 3 },
            Malformed::WrongEtherType { ethertype: 0x800 },
            Malformed::TruncatedHeader { available: 2 },
            Malformed::BadLength {
                length: 9,
                available: 46,
            },
        ] {
            assert!(!m.describe().contains('\n'));
        }
    }

    #[test]
    fn parse_never_panics_on_arbitrary_bytes() {
        let mut seed = 0x1234_5678u32;
        let mut buf = Vec::new();
        for _ in 0..5000 {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let len = (seed >> 8) as usize % 120;
            buf.clear();
            for i in 0..len {
                buf.push((seed.rotate_left(i as u32) ^ i as u32) as u8);
            }
            if len >= 14 && seed & 1 == 0 {
                buf[12..14].copy_from_slice(&ETHERTYPE_IPX.to_be_bytes());
            }
            if let Ok(f) = parse(&buf) {
                assert!(f.payload.len() + IPX_HEADER_LEN + ETH_HEADER_LEN <= buf.len());
            }
        }
    }
}
