//! The 24-byte game packet header: packet types, header fields and their encoding.
//!
//! The "ship state follows" flag and the event count are derived by the packet writer from what
//! is actually written; callers never set them. This module must never accept or produce a
//! header that breaks a rule of docs/wire-format.md (signature, version, type, slot, reserved
//! bits, zero sequence/ack/token, ack fields without their flag).

use super::cursor::{Reader, Writer};
use super::error::{DecodeProblem, EncodeError};
use super::{DecodeError, PROTOCOL_VERSION, SIGNATURE};
use crate::rmev::MAX_SLOTS;

/// Sender slot byte meaning "no slot yet".
pub const NO_SLOT: u8 = 255;

/// Header flag bit 0: a 72-byte ship state follows the header.
pub const FLAG_STATE: u8 = 1 << 0;
/// Header flag bit 1: the sender is joined.
pub const FLAG_JOINED: u8 = 1 << 1;
/// Header flag bit 2: the ack fields are valid.
pub const FLAG_ACK: u8 = 1 << 2;
const HEADER_FLAGS_KNOWN: u8 = FLAG_STATE | FLAG_JOINED | FLAG_ACK;

/// Offset of the event count byte in the header (patched as events are written).
pub const EVENT_COUNT_OFFSET: usize = 7;

/// What a game packet is for (header byte 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketType {
    Connect = 1,
    ConnectReply = 2,
    Disconnect = 3,
    SlotRequest = 4,
    SubdueSlave = 5,
    Join = 6,
    Unjoin = 7,
    GameState = 8,
    NodeAlive = 9,
    ConnectRefused = 10,
}

impl PacketType {
    pub fn from_u8(v: u8) -> Option<PacketType> {
        Some(match v {
            1 => PacketType::Connect,
            2 => PacketType::ConnectReply,
            3 => PacketType::Disconnect,
            4 => PacketType::SlotRequest,
            5 => PacketType::SubdueSlave,
            6 => PacketType::Join,
            7 => PacketType::Unjoin,
            8 => PacketType::GameState,
            9 => PacketType::NodeAlive,
            10 => PacketType::ConnectRefused,
            _ => return None,
        })
    }

    /// The wire value.
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

/// Acknowledgement fields: `latest` is the highest sequence received on the link (non-zero); bit
/// `i` of `bits` set means sequence `latest - 1 - i` was received too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ack {
    pub latest: u32,
    pub bits: u32,
}

/// The header fields a caller chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PacketHeader {
    pub kind: PacketType,
    /// `None` is "no slot yet" (255 on the wire); `Some` must be 0-15.
    pub sender_slot: Option<u8>,
    pub joined: bool,
    /// Per-link sequence, non-zero.
    pub sequence: u32,
    /// `None` when the sender has received nothing on this link yet.
    pub ack: Option<Ack>,
    /// The sender's session token, non-zero.
    pub token: u32,
}

impl PacketHeader {
    /// Check every rule the decoder enforces on a header.
    pub fn validate(&self) -> Result<(), EncodeError> {
        if let Some(slot) = self.sender_slot {
            if usize::from(slot) >= MAX_SLOTS {
                return Err(EncodeError::BadSlot(slot));
            }
        }
        if self.sequence == 0 {
            return Err(EncodeError::ZeroSequence);
        }
        if let Some(ack) = self.ack {
            if ack.latest == 0 {
                return Err(EncodeError::ZeroAck);
            }
        }
        if self.token == 0 {
            return Err(EncodeError::ZeroToken);
        }
        Ok(())
    }
}

/// Write the 24 header bytes (validated first; nothing is written on error).
pub(crate) fn write_header(
    w: &mut Writer<'_>,
    header: &PacketHeader,
    has_state: bool,
    event_count: u8,
) -> Result<(), EncodeError> {
    header.validate()?;
    if w.remaining() < super::HEADER_LEN {
        return Err(EncodeError::DoesNotFit {
            needed: w.position().saturating_add(super::HEADER_LEN),
            available: w.position().saturating_add(w.remaining()),
        });
    }
    let mut flags = 0u8;
    if has_state {
        flags |= FLAG_STATE;
    }
    if header.joined {
        flags |= FLAG_JOINED;
    }
    let (ack, bits) = match header.ack {
        Some(a) => {
            flags |= FLAG_ACK;
            (a.latest, a.bits)
        }
        None => (0, 0),
    };
    // Laid out at the fixed offsets of docs/wire-format.md, then written in one piece.
    let mut h = [0u8; super::HEADER_LEN];
    h[..3].copy_from_slice(&SIGNATURE);
    h[3] = PROTOCOL_VERSION;
    h[4] = header.kind.as_u8();
    h[5] = header.sender_slot.unwrap_or(NO_SLOT);
    h[6] = flags;
    h[EVENT_COUNT_OFFSET] = event_count;
    h[8..12].copy_from_slice(&header.sequence.to_be_bytes());
    h[12..16].copy_from_slice(&ack.to_be_bytes());
    h[16..20].copy_from_slice(&bits.to_be_bytes());
    h[20..24].copy_from_slice(&header.token.to_be_bytes());
    w.bytes(&h)
}

/// A decoded header plus the two fields the writer derives.
pub(crate) struct RawHeader {
    pub header: PacketHeader,
    pub has_state: bool,
    pub event_count: u8,
}

/// Read and validate the 24 header bytes, field by field, stopping at the first bad one.
///
/// The header is taken from the reader in one piece (as much of it as the packet holds) and its
/// fields are read from that copy at their fixed offsets: a field the packet ends inside is
/// `Truncated` at the field's offset, after every field before it was checked.
pub(crate) fn read_header(r: &mut Reader<'_>) -> Result<RawHeader, DecodeError> {
    let start = r.offset();
    let have = r.remaining().min(super::HEADER_LEN);
    let mut h = [0u8; super::HEADER_LEN];
    if let Some(part) = h.get_mut(..have) {
        part.copy_from_slice(r.take(have)?);
    }
    // Signature: a mismatch in the bytes present is a bad signature; a matching prefix that is
    // too short is a truncated packet.
    let sig = have.min(SIGNATURE.len());
    if h.get(..sig) != SIGNATURE.get(..sig) {
        return Err(DecodeError::new(start, DecodeProblem::BadSignature));
    }
    if have < SIGNATURE.len() {
        return Err(DecodeError::new(start + have, DecodeProblem::Truncated));
    }
    let at = |offset: usize| start + offset;
    // The field at `offset` of `len` bytes is in the packet.
    let present = |offset: usize, len: usize| {
        if have < offset + len {
            Err(DecodeError::new(at(offset), DecodeProblem::Truncated))
        } else {
            Ok(())
        }
    };
    let word = |offset: usize| {
        u32::from_be_bytes([h[offset], h[offset + 1], h[offset + 2], h[offset + 3]])
    };

    present(3, 1)?;
    let version = h[3];
    if version != PROTOCOL_VERSION {
        return Err(DecodeError::new(
            at(3),
            DecodeProblem::UnsupportedVersion(version),
        ));
    }

    present(4, 1)?;
    let kind_byte = h[4];
    let kind = PacketType::from_u8(kind_byte).ok_or(DecodeError::new(
        at(4),
        DecodeProblem::UnknownPacketType(kind_byte),
    ))?;

    present(5, 1)?;
    let sender_slot = match h[5] {
        NO_SLOT => None,
        s if usize::from(s) < MAX_SLOTS => Some(s),
        s => return Err(DecodeError::new(at(5), DecodeProblem::BadSlot(s))),
    };

    present(6, 1)?;
    let flags = h[6];
    if flags & !HEADER_FLAGS_KNOWN != 0 {
        return Err(DecodeError::new(at(6), DecodeProblem::ReservedBitsSet));
    }
    let has_state = flags & FLAG_STATE != 0;
    let joined = flags & FLAG_JOINED != 0;
    let has_ack = flags & FLAG_ACK != 0;

    present(EVENT_COUNT_OFFSET, 1)?;
    let event_count = h[EVENT_COUNT_OFFSET];

    present(8, 4)?;
    let sequence = word(8);
    if sequence == 0 {
        return Err(DecodeError::new(at(8), DecodeProblem::ZeroSequence));
    }

    present(12, 4)?;
    let latest = word(12);
    if has_ack && latest == 0 {
        return Err(DecodeError::new(at(12), DecodeProblem::ZeroAck));
    }
    if !has_ack && latest != 0 {
        return Err(DecodeError::new(
            at(12),
            DecodeProblem::AckFieldsWithoutFlag,
        ));
    }

    present(16, 4)?;
    let bits = word(16);
    if !has_ack && bits != 0 {
        return Err(DecodeError::new(
            at(16),
            DecodeProblem::AckFieldsWithoutFlag,
        ));
    }

    present(20, 4)?;
    let token = word(20);
    if token == 0 {
        return Err(DecodeError::new(at(20), DecodeProblem::ZeroToken));
    }

    let ack = has_ack.then_some(Ack { latest, bits });
    Ok(RawHeader {
        header: PacketHeader {
            kind,
            sender_slot,
            joined,
            sequence,
            ack,
            token,
        },
        has_state,
        event_count,
    })
}
