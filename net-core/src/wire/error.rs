//! Why a game packet could not be decoded (`DecodeError`) or encoded (`EncodeError`).
//!
//! Every rejection reason of docs/wire-format.md has its own variant with a stable snake_case
//! label, so receivers can count dropped packets by reason. These types only describe a problem:
//! they must never carry or expose packet contents beyond the offending field's value.

use std::fmt;

/// One reason a received packet is dropped. The offset of the offending field is in
/// [`DecodeError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodeProblem {
    /// The datagram does not start with `"PSN"`.
    BadSignature,
    /// The protocol version byte is not [`super::PROTOCOL_VERSION`].
    UnsupportedVersion(u8),
    /// The packet type byte is not 1-10.
    UnknownPacketType(u8),
    /// A sender slot (header: 0-15 or 255) or a player-list slot (0-15) is out of range.
    BadSlot(u8),
    /// A reserved flag bit (packet flags, event flags or player flags) is set.
    ReservedBitsSet,
    /// A field, or the body a length announces, runs past the end of the packet.
    Truncated,
    /// The packet sequence number is 0 (never used: a link starts where its token picks and skips 0).
    ZeroSequence,
    /// The ack fields are non-zero although the "ack fields valid" flag is clear.
    AckFieldsWithoutFlag,
    /// The "ack fields valid" flag is set but the acknowledged sequence is 0.
    ZeroAck,
    /// A session token is 0.
    ZeroToken,
    /// The event type byte is not 1-14.
    UnknownEventType(u8),
    /// The reliable flag is clear on an event type that is always reliable.
    BadReliableFlag,
    /// A reliable event's id is 0 (reliable ids start at 1).
    ZeroReliableId,
    /// An event's body length is not exactly what its fields take.
    BodyLengthMismatch,
    /// A float is NaN or infinite.
    NonFiniteFloat,
    /// A name is longer than 31 bytes.
    TextTooLong,
    /// A name or text contains a NUL byte.
    TextContainsNul,
    /// An object id is 0.
    ZeroObjectId,
    /// A RE_KILLOBJECT list id is above 15.
    BadListId(u8),
    /// A player-list or connect-queue count is not 1-16.
    BadCount(u8),
    /// A slot appears twice in a player list.
    DuplicateSlot(u8),
    /// A RE_CUSTOM data length is above 256.
    CustomDataTooLong,
    /// Bytes follow the last event.
    TrailingBytes,
}

impl DecodeProblem {
    /// Every label [`DecodeProblem::label`] can return, in declaration order (to register
    /// counters up front).
    pub const LABELS: [&'static str; 23] = [
        "bad_signature",
        "unsupported_version",
        "unknown_packet_type",
        "bad_slot",
        "reserved_bits_set",
        "truncated",
        "zero_sequence",
        "ack_fields_without_flag",
        "zero_ack",
        "zero_token",
        "unknown_event_type",
        "bad_reliable_flag",
        "zero_reliable_id",
        "body_length_mismatch",
        "non_finite_float",
        "text_too_long",
        "text_contains_nul",
        "zero_object_id",
        "bad_list_id",
        "bad_count",
        "duplicate_slot",
        "custom_data_too_long",
        "trailing_bytes",
    ];

    /// Stable snake_case name of the reason (used as a counter key; values are not included).
    pub fn label(&self) -> &'static str {
        match self {
            DecodeProblem::BadSignature => "bad_signature",
            DecodeProblem::UnsupportedVersion(_) => "unsupported_version",
            DecodeProblem::UnknownPacketType(_) => "unknown_packet_type",
            DecodeProblem::BadSlot(_) => "bad_slot",
            DecodeProblem::ReservedBitsSet => "reserved_bits_set",
            DecodeProblem::Truncated => "truncated",
            DecodeProblem::ZeroSequence => "zero_sequence",
            DecodeProblem::AckFieldsWithoutFlag => "ack_fields_without_flag",
            DecodeProblem::ZeroAck => "zero_ack",
            DecodeProblem::ZeroToken => "zero_token",
            DecodeProblem::UnknownEventType(_) => "unknown_event_type",
            DecodeProblem::BadReliableFlag => "bad_reliable_flag",
            DecodeProblem::ZeroReliableId => "zero_reliable_id",
            DecodeProblem::BodyLengthMismatch => "body_length_mismatch",
            DecodeProblem::NonFiniteFloat => "non_finite_float",
            DecodeProblem::TextTooLong => "text_too_long",
            DecodeProblem::TextContainsNul => "text_contains_nul",
            DecodeProblem::ZeroObjectId => "zero_object_id",
            DecodeProblem::BadListId(_) => "bad_list_id",
            DecodeProblem::BadCount(_) => "bad_count",
            DecodeProblem::DuplicateSlot(_) => "duplicate_slot",
            DecodeProblem::CustomDataTooLong => "custom_data_too_long",
            DecodeProblem::TrailingBytes => "trailing_bytes",
        }
    }
}

impl fmt::Display for DecodeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeProblem::BadSignature => f.write_str("bad signature"),
            DecodeProblem::UnsupportedVersion(v) => write!(f, "unsupported protocol version {v}"),
            DecodeProblem::UnknownPacketType(v) => write!(f, "unknown packet type {v}"),
            DecodeProblem::BadSlot(v) => write!(f, "bad slot {v}"),
            DecodeProblem::ReservedBitsSet => f.write_str("reserved flag bits set"),
            DecodeProblem::Truncated => f.write_str("truncated"),
            DecodeProblem::ZeroSequence => f.write_str("zero sequence"),
            DecodeProblem::AckFieldsWithoutFlag => f.write_str("ack fields set without ack flag"),
            DecodeProblem::ZeroAck => f.write_str("zero ack with ack flag"),
            DecodeProblem::ZeroToken => f.write_str("zero token"),
            DecodeProblem::UnknownEventType(v) => write!(f, "unknown event type {v}"),
            DecodeProblem::BadReliableFlag => f.write_str("reliable flag missing"),
            DecodeProblem::ZeroReliableId => f.write_str("zero reliable id"),
            DecodeProblem::BodyLengthMismatch => f.write_str("body length mismatch"),
            DecodeProblem::NonFiniteFloat => f.write_str("non-finite float"),
            DecodeProblem::TextTooLong => f.write_str("text too long"),
            DecodeProblem::TextContainsNul => f.write_str("text contains NUL"),
            DecodeProblem::ZeroObjectId => f.write_str("zero object id"),
            DecodeProblem::BadListId(v) => write!(f, "bad list id {v}"),
            DecodeProblem::BadCount(v) => write!(f, "bad count {v}"),
            DecodeProblem::DuplicateSlot(v) => write!(f, "duplicate slot {v}"),
            DecodeProblem::CustomDataTooLong => f.write_str("custom data too long"),
            DecodeProblem::TrailingBytes => f.write_str("trailing bytes"),
        }
    }
}

/// A received packet was rejected: `problem` was found in the field starting at `offset`
/// (bytes from the start of the packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeError {
    pub offset: usize,
    pub problem: DecodeProblem,
}

impl DecodeError {
    pub fn new(offset: usize, problem: DecodeProblem) -> Self {
        DecodeError { offset, problem }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.problem)
    }
}

impl std::error::Error for DecodeError {}

/// Why the encoder refused to write something: either the value breaks a rule the decoder
/// would reject it for, or the output buffer is too small for the packet header and state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncodeError {
    /// The buffer has `available` bytes where `needed` are required.
    DoesNotFit { needed: usize, available: usize },
    /// A sender slot (`Some` must be 0-15) or a player-list slot is out of range.
    BadSlot(u8),
    /// The packet sequence is 0.
    ZeroSequence,
    /// An ack is given with `latest` = 0.
    ZeroAck,
    /// A session token is 0.
    ZeroToken,
    /// A float is NaN or infinite.
    NonFiniteFloat,
    /// An object id is 0.
    ZeroObjectId,
    /// A RE_KILLOBJECT list id is above 15.
    BadListId(u8),
    /// `reliable_id` is `None` for an always-reliable event, or does not match a RE_CUSTOM's
    /// `reliable`.
    BadReliableFlag,
    /// A reliable id is 0.
    ZeroReliableId,
    /// A player list or connect queue does not have 1-16 entries.
    BadCount(usize),
    /// A slot appears twice in a player list.
    DuplicateSlot(u8),
}

impl EncodeError {
    /// Stable snake_case name of the reason.
    pub fn label(&self) -> &'static str {
        match self {
            EncodeError::DoesNotFit { .. } => "does_not_fit",
            EncodeError::BadSlot(_) => "bad_slot",
            EncodeError::ZeroSequence => "zero_sequence",
            EncodeError::ZeroAck => "zero_ack",
            EncodeError::ZeroToken => "zero_token",
            EncodeError::NonFiniteFloat => "non_finite_float",
            EncodeError::ZeroObjectId => "zero_object_id",
            EncodeError::BadListId(_) => "bad_list_id",
            EncodeError::BadReliableFlag => "bad_reliable_flag",
            EncodeError::ZeroReliableId => "zero_reliable_id",
            EncodeError::BadCount(_) => "bad_count",
            EncodeError::DuplicateSlot(_) => "duplicate_slot",
        }
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::DoesNotFit { needed, available } => {
                write!(
                    f,
                    "does not fit: {needed} bytes needed, {available} available"
                )
            }
            EncodeError::BadSlot(v) => write!(f, "bad slot {v}"),
            EncodeError::ZeroSequence => f.write_str("zero sequence"),
            EncodeError::ZeroAck => f.write_str("zero ack"),
            EncodeError::ZeroToken => f.write_str("zero token"),
            EncodeError::NonFiniteFloat => f.write_str("non-finite float"),
            EncodeError::ZeroObjectId => f.write_str("zero object id"),
            EncodeError::BadListId(v) => write!(f, "bad list id {v}"),
            EncodeError::BadReliableFlag => f.write_str("reliable id does not match the event"),
            EncodeError::ZeroReliableId => f.write_str("zero reliable id"),
            EncodeError::BadCount(n) => write!(f, "bad count {n} (must be 1-16)"),
            EncodeError::DuplicateSlot(v) => write!(f, "duplicate slot {v}"),
        }
    }
}

impl std::error::Error for EncodeError {}
