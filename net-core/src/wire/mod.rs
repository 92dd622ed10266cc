//! The game packet codec: docs/wire-format.md, field by field, big-endian.
//!
//! - [`cursor`]: bounds-checked readers and writers of single fields;
//! - [`header`]: the 24-byte packet header and packet types;
//! - [`event_codec`]: one remote event (header, reliable id, body);
//! - [`packet`]: whole packets ([`PacketWriter`], [`decode_packet`]);
//! - [`error`]: every reason a packet is rejected or refused.
//!
//! This module must never copy a struct onto the wire, never panic on any input, and never
//! produce a packet its own decoder would reject.

pub mod cursor;
pub mod error;
pub mod event_codec;
pub mod header;
pub mod packet;

pub use cursor::{Reader, Writer};
pub use error::{DecodeError, DecodeProblem, EncodeError};
pub use event_codec::{
    body_len, encoded_len, encoded_len_of, read_event, validate_event, validate_parts, write_event,
    WireEvent,
};
pub use header::{Ack, PacketHeader, PacketType};
pub use packet::{
    decode_packet, encode_packet, DecodedPacket, PacketWriter, MAX_EVENTS_PER_PACKET,
};

/// The first three bytes of every game packet.
pub const SIGNATURE: [u8; 3] = *b"PSN";
/// The protocol version this codec speaks.
pub const PROTOCOL_VERSION: u8 = 1;
/// Size of the packet header.
pub const HEADER_LEN: usize = 24;
/// Size of the ship state that follows the header when flag bit 0 is set.
pub const SHIP_STATE_LEN: usize = 72;

/// Whether a datagram carries the game protocol's signature (it goes to the protocol, not to
/// `NETs_ReceiveDatagram`).
pub fn is_game_packet(datagram: &[u8]) -> bool {
    datagram.len() >= 4 && datagram.get(..3) == Some(&SIGNATURE[..])
}
