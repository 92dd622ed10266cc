//! One remote event on the wire: event header (type, flags, body length), the reliable id when
//! the reliable flag is set, and the body, per the table in docs/wire-format.md.
//!
//! The encoder must never write an event the decoder would reject (wrong reliable flag, zero
//! ids or tokens, bad list ids, counts or slots, non-finite floats), and the decoder must never
//! accept a body whose length differs from what its fields take. Neither may panic on any input.

use super::cursor::{Reader, Writer};
use super::error::{DecodeError, DecodeProblem, EncodeError};
use crate::rmev::{
    ChatText, ConnectRequest, CustomData, EarlierTokens, EventType, PlayerListEntry, RemoteEvent,
    ResumeStep, ShortText, MAX_CUSTOM_DATA, MAX_EARLIER_TOKENS, MAX_LIST_ID, MAX_SLOTS,
    MAX_TEXT_LEN,
};
use crate::Node;

/// Event header: type, flags, body length.
pub const EVENT_HEADER_LEN: usize = 4;
/// The reliable id that follows the event header of a reliable event.
pub const RELIABLE_ID_LEN: usize = 4;
/// Event flag bit 0: the event is reliable and a reliable id follows.
pub const EVENT_FLAG_RELIABLE: u8 = 1 << 0;
/// Player-list entry flag bit 0: the player is joined.
pub const PLAYER_FLAG_JOINED: u8 = 1 << 0;
/// RE_RESUME step byte: a hello (earlier tokens follow).
pub const RESUME_HELLO: u8 = 1;
/// RE_RESUME step byte: an answer (two tokens and a delivered id follow).
pub const RESUME_ANSWER: u8 = 2;
/// RE_RESUME step byte: the answers are complete (nothing follows).
pub const RESUME_DONE: u8 = 3;
/// Size of a node on the wire.
pub const NODE_LEN: usize = 32;

/// A remote event as it travels: the event plus its per-link reliable id (`Some` exactly when
/// the event is reliable; always for every type except RE_CUSTOM).
#[derive(Clone, Debug, PartialEq)]
pub struct WireEvent {
    pub reliable_id: Option<u32>,
    pub event: RemoteEvent,
}

/// The body size of the event types whose body has a fixed size.
pub fn fixed_body_len(ty: EventType) -> Option<usize> {
    match ty {
        EventType::CreateObject => Some(38),
        EventType::CreateLaser => Some(30),
        EventType::CreateMissile => Some(34),
        EventType::CreateExtra => Some(18),
        EventType::KillObject => Some(5),
        EventType::ParticleObject => Some(14),
        EventType::PlayerStatus => Some(2),
        EventType::Rate => Some(4),
        EventType::Vacated => Some(4),
        EventType::SendText
        | EventType::PlayerName
        | EventType::PlayerList
        | EventType::ConnectQueue
        | EventType::Custom
        | EventType::Resume => None,
    }
}

/// Bytes the body of `event` takes on the wire.
pub fn body_len(event: &RemoteEvent) -> usize {
    match event {
        RemoteEvent::SendText(text) => 1 + text.len(),
        RemoteEvent::PlayerName(name) => 1 + name.len(),
        RemoteEvent::PlayerList(entries) => {
            1 + entries
                .iter()
                .map(|e| 1 + 1 + 4 + NODE_LEN + 1 + e.name.len())
                .sum::<usize>()
        }
        RemoteEvent::ConnectQueue(requests) => {
            1 + requests
                .iter()
                .map(|r| 4 + NODE_LEN + 1 + r.name.len())
                .sum::<usize>()
        }
        RemoteEvent::Custom { data, .. } => 2 + 2 + data.as_bytes().len(),
        RemoteEvent::Resume(ResumeStep::Hello(tokens)) => 1 + 1 + 4 * tokens.as_slice().len(),
        RemoteEvent::Resume(ResumeStep::Answer { .. }) => 1 + 4 + 4 + 4,
        RemoteEvent::Resume(ResumeStep::Done) => 1,
        other => fixed_body_len(other.event_type()).unwrap_or(0),
    }
}

/// Bytes the whole event (header, reliable id if any, body) takes on the wire.
pub fn encoded_len(ev: &WireEvent) -> usize {
    encoded_len_of(ev.reliable_id.is_some(), &ev.event)
}

/// [`encoded_len`] of `event` carried with (`reliable`) or without a reliable id.
pub fn encoded_len_of(reliable: bool, event: &RemoteEvent) -> usize {
    let id = if reliable { RELIABLE_ID_LEN } else { 0 };
    EVENT_HEADER_LEN + id + body_len(event)
}

fn finite(values: &[f32]) -> Result<(), EncodeError> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(EncodeError::NonFiniteFloat)
    }
}

fn object_id(id: u32) -> Result<(), EncodeError> {
    if id == 0 {
        Err(EncodeError::ZeroObjectId)
    } else {
        Ok(())
    }
}

fn entry_count(n: usize) -> Result<(), EncodeError> {
    if (1..=MAX_SLOTS).contains(&n) {
        Ok(())
    } else {
        Err(EncodeError::BadCount(n))
    }
}

/// Check every rule the decoder enforces on an event, without writing anything.
pub fn validate_event(ev: &WireEvent) -> Result<(), EncodeError> {
    validate_parts(ev.reliable_id, &ev.event)
}

/// [`validate_event`] of `event` carried with `reliable_id`.
pub fn validate_parts(reliable_id: Option<u32>, event: &RemoteEvent) -> Result<(), EncodeError> {
    if reliable_id.is_some() != event.is_reliable() {
        return Err(EncodeError::BadReliableFlag);
    }
    if reliable_id == Some(0) {
        return Err(EncodeError::ZeroReliableId);
    }
    match event {
        RemoteEvent::CreateObject {
            object_id: id,
            pos,
            orient,
            ..
        } => {
            object_id(*id)?;
            finite(pos)?;
            finite(orient)
        }
        RemoteEvent::CreateLaser {
            object_id: id,
            pos,
            dir,
            ..
        }
        | RemoteEvent::CreateMissile {
            object_id: id,
            pos,
            dir,
            ..
        } => {
            object_id(*id)?;
            finite(pos)?;
            finite(dir)
        }
        RemoteEvent::CreateExtra {
            object_id: id, pos, ..
        } => {
            object_id(*id)?;
            finite(pos)
        }
        RemoteEvent::KillObject {
            object_id: id,
            list_id,
        } => {
            object_id(*id)?;
            if *list_id > MAX_LIST_ID {
                return Err(EncodeError::BadListId(*list_id));
            }
            Ok(())
        }
        // ShortText and CustomData enforce their limits (length, no NUL) on construction.
        RemoteEvent::SendText(_) | RemoteEvent::PlayerName(_) | RemoteEvent::Custom { .. } => {
            Ok(())
        }
        RemoteEvent::ParticleObject { origin, .. } => finite(origin),
        RemoteEvent::Resume(ResumeStep::Answer { yours, mine, .. })
            if *yours == 0 || *mine == 0 =>
        {
            Err(EncodeError::ZeroToken)
        }
        RemoteEvent::PlayerStatus { .. }
        | RemoteEvent::Resume(_)
        | RemoteEvent::Rate(_)
        | RemoteEvent::Vacated { .. } => Ok(()),
        RemoteEvent::PlayerList(entries) => {
            entry_count(entries.len())?;
            let mut seen = 0u32;
            for e in entries {
                if usize::from(e.slot) >= MAX_SLOTS {
                    return Err(EncodeError::BadSlot(e.slot));
                }
                let bit = 1u32 << e.slot;
                if seen & bit != 0 {
                    return Err(EncodeError::DuplicateSlot(e.slot));
                }
                seen |= bit;
                if e.token == 0 {
                    return Err(EncodeError::ZeroToken);
                }
            }
            Ok(())
        }
        RemoteEvent::ConnectQueue(requests) => {
            entry_count(requests.len())?;
            if requests.iter().any(|r| r.token == 0) {
                return Err(EncodeError::ZeroToken);
            }
            Ok(())
        }
    }
}

/// Validate `ev` and write it whole. On error the writer may hold part of the event past the
/// position the caller committed; callers only send up to what they committed.
pub fn write_event(w: &mut Writer<'_>, ev: &WireEvent) -> Result<(), EncodeError> {
    validate_event(ev)?;
    write_validated(w, ev.reliable_id, &ev.event)
}

/// Write an event already checked by [`validate_parts`].
pub(crate) fn write_validated(
    w: &mut Writer<'_>,
    reliable_id: Option<u32>,
    event: &RemoteEvent,
) -> Result<(), EncodeError> {
    let needed = encoded_len_of(reliable_id.is_some(), event);
    if needed > w.remaining() {
        return Err(EncodeError::DoesNotFit {
            needed: w.position().saturating_add(needed),
            available: w.position().saturating_add(w.remaining()),
        });
    }
    // Bodies are at most 1 + 16 * 70 bytes by the count limit, so this cannot fail after
    // validation; it is checked rather than assumed.
    let body = u16::try_from(body_len(event)).map_err(|_| EncodeError::BadCount(usize::MAX))?;
    w.u8(event.event_type() as u8)?;
    w.u8(if reliable_id.is_some() {
        EVENT_FLAG_RELIABLE
    } else {
        0
    })?;
    w.u16(body)?;
    if let Some(id) = reliable_id {
        w.u32(id)?;
    }
    write_body(w, event)
}

fn write_text(w: &mut Writer<'_>, bytes: &[u8]) -> Result<(), EncodeError> {
    // Texts (names, chat) hold at most 255 bytes.
    let len = u8::try_from(bytes.len()).map_err(|_| EncodeError::DoesNotFit {
        needed: bytes.len(),
        available: usize::from(u8::MAX),
    })?;
    w.u8(len)?;
    w.bytes(bytes)
}

fn write_body(w: &mut Writer<'_>, event: &RemoteEvent) -> Result<(), EncodeError> {
    match event {
        RemoteEvent::CreateObject {
            object_id,
            class,
            pos,
            orient,
            flags,
        } => {
            w.u32(*object_id)?;
            w.u16(*class)?;
            w.f32s(pos)?;
            w.f32s(orient)?;
            w.u32(*flags)
        }
        RemoteEvent::CreateLaser {
            object_id,
            class,
            pos,
            dir,
        } => {
            w.u32(*object_id)?;
            w.u16(*class)?;
            w.f32s(pos)?;
            w.f32s(dir)
        }
        RemoteEvent::CreateMissile {
            object_id,
            class,
            pos,
            dir,
            target_id,
        } => {
            w.u32(*object_id)?;
            w.u16(*class)?;
            w.f32s(pos)?;
            w.f32s(dir)?;
            w.u32(*target_id)
        }
        RemoteEvent::CreateExtra {
            object_id,
            extra_index,
            pos,
        } => {
            w.u32(*object_id)?;
            w.u16(*extra_index)?;
            w.f32s(pos)
        }
        RemoteEvent::KillObject { object_id, list_id } => {
            w.u32(*object_id)?;
            w.u8(*list_id)
        }
        RemoteEvent::SendText(text) => write_text(w, text.as_bytes()),
        RemoteEvent::PlayerName(name) => write_text(w, name.as_bytes()),
        RemoteEvent::ParticleObject {
            particle_type,
            origin,
        } => {
            w.u16(*particle_type)?;
            w.f32s(origin)
        }
        RemoteEvent::PlayerStatus { joined, flag } => {
            w.u8(u8::from(*joined))?;
            w.u8(*flag)
        }
        RemoteEvent::Resume(ResumeStep::Hello(tokens)) => {
            w.u8(RESUME_HELLO)?;
            let tokens = tokens.as_slice();
            // EarlierTokens holds at most MAX_EARLIER_TOKENS (4).
            w.u8(tokens.len() as u8)?;
            for token in tokens {
                w.u32(*token)?;
            }
            Ok(())
        }
        RemoteEvent::Resume(ResumeStep::Answer {
            yours,
            mine,
            delivered,
        }) => {
            w.u8(RESUME_ANSWER)?;
            w.u32(*yours)?;
            w.u32(*mine)?;
            w.u32(*delivered)
        }
        RemoteEvent::Resume(ResumeStep::Done) => w.u8(RESUME_DONE),
        RemoteEvent::Rate(rate) => w.u32(*rate),
        RemoteEvent::Vacated { told } => w.u32(*told),
        RemoteEvent::PlayerList(entries) => {
            w.u8(u8::try_from(entries.len()).map_err(|_| EncodeError::BadCount(entries.len()))?)?;
            for e in entries {
                w.u8(e.slot)?;
                w.u8(if e.joined { PLAYER_FLAG_JOINED } else { 0 })?;
                w.u32(e.token)?;
                w.bytes(&e.node.bytes)?;
                write_text(w, e.name.as_bytes())?;
            }
            Ok(())
        }
        RemoteEvent::ConnectQueue(requests) => {
            w.u8(u8::try_from(requests.len()).map_err(|_| EncodeError::BadCount(requests.len()))?)?;
            for r in requests {
                w.u32(r.token)?;
                w.bytes(&r.node.bytes)?;
                write_text(w, r.name.as_bytes())?;
            }
            Ok(())
        }
        RemoteEvent::Custom {
            custom_type, data, ..
        } => {
            let bytes = data.as_bytes();
            // CustomData holds at most 256 bytes.
            let len = u16::try_from(bytes.len()).map_err(|_| EncodeError::DoesNotFit {
                needed: bytes.len(),
                available: MAX_CUSTOM_DATA,
            })?;
            w.u16(*custom_type)?;
            w.u16(len)?;
            w.bytes(bytes)
        }
    }
}

/// Read and validate one event, stopping at the first bad field.
pub fn read_event(r: &mut Reader<'_>) -> Result<WireEvent, DecodeError> {
    let at = r.offset();
    let type_byte = r.u8()?;
    let ty = EventType::from_u8(type_byte).ok_or(DecodeError::new(
        at,
        DecodeProblem::UnknownEventType(type_byte),
    ))?;

    let at = r.offset();
    let flags = r.u8()?;
    if flags & !EVENT_FLAG_RELIABLE != 0 {
        return Err(DecodeError::new(at, DecodeProblem::ReservedBitsSet));
    }
    let reliable = flags & EVENT_FLAG_RELIABLE != 0;
    if !reliable && ty != EventType::Custom {
        return Err(DecodeError::new(at, DecodeProblem::BadReliableFlag));
    }

    let at = r.offset();
    let len = usize::from(r.u16()?);
    if fixed_body_len(ty).is_some_and(|fixed| fixed != len) {
        return Err(DecodeError::new(at, DecodeProblem::BodyLengthMismatch));
    }

    let reliable_id = if reliable {
        let at = r.offset();
        let id = r.u32()?;
        if id == 0 {
            return Err(DecodeError::new(at, DecodeProblem::ZeroReliableId));
        }
        Some(id)
    } else {
        None
    };

    let mut body = r.sub(len)?;
    // Inside the body, running out of bytes means the body length is shorter than the fields.
    let event = read_body(ty, reliable, &mut body).map_err(|e| {
        if e.problem == DecodeProblem::Truncated {
            DecodeError::new(e.offset, DecodeProblem::BodyLengthMismatch)
        } else {
            e
        }
    })?;
    if !body.is_empty() {
        return Err(body.error(DecodeProblem::BodyLengthMismatch));
    }
    Ok(WireEvent { reliable_id, event })
}

fn read_object_id(r: &mut Reader<'_>) -> Result<u32, DecodeError> {
    let at = r.offset();
    let id = r.u32()?;
    if id == 0 {
        return Err(DecodeError::new(at, DecodeProblem::ZeroObjectId));
    }
    Ok(id)
}

fn read_token(r: &mut Reader<'_>) -> Result<u32, DecodeError> {
    let at = r.offset();
    let token = r.u32()?;
    if token == 0 {
        return Err(DecodeError::new(at, DecodeProblem::ZeroToken));
    }
    Ok(token)
}

fn read_node(r: &mut Reader<'_>) -> Result<Node, DecodeError> {
    Ok(Node {
        bytes: r.array::<NODE_LEN>()?,
    })
}

fn read_text<const N: usize>(r: &mut Reader<'_>) -> Result<ShortText<N>, DecodeError> {
    let at = r.offset();
    let bytes = read_text_bytes(r, N)?;
    ShortText::new(bytes).map_err(|_| DecodeError::new(at, DecodeProblem::TextTooLong))
}

fn read_chat(r: &mut Reader<'_>) -> Result<ChatText, DecodeError> {
    let at = r.offset();
    let bytes = read_text_bytes(r, MAX_TEXT_LEN)?;
    ChatText::new(bytes).map_err(|_| DecodeError::new(at, DecodeProblem::TextTooLong))
}

/// A length-prefixed text of at most `max` bytes without NUL bytes.
fn read_text_bytes<'a>(r: &mut Reader<'a>, max: usize) -> Result<&'a [u8], DecodeError> {
    let at = r.offset();
    let len = usize::from(r.u8()?);
    if len > max {
        return Err(DecodeError::new(at, DecodeProblem::TextTooLong));
    }
    let start = r.offset();
    let bytes = r.take(len)?;
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        return Err(DecodeError::new(
            start.saturating_add(nul),
            DecodeProblem::TextContainsNul,
        ));
    }
    Ok(bytes)
}

fn read_count(r: &mut Reader<'_>) -> Result<usize, DecodeError> {
    let at = r.offset();
    let count = r.u8()?;
    if count == 0 || usize::from(count) > MAX_SLOTS {
        return Err(DecodeError::new(at, DecodeProblem::BadCount(count)));
    }
    Ok(usize::from(count))
}

fn read_body(
    ty: EventType,
    reliable: bool,
    r: &mut Reader<'_>,
) -> Result<RemoteEvent, DecodeError> {
    Ok(match ty {
        EventType::CreateObject => RemoteEvent::CreateObject {
            object_id: read_object_id(r)?,
            class: r.u16()?,
            pos: r.f32s()?,
            orient: r.f32s()?,
            flags: r.u32()?,
        },
        EventType::CreateLaser => RemoteEvent::CreateLaser {
            object_id: read_object_id(r)?,
            class: r.u16()?,
            pos: r.f32s()?,
            dir: r.f32s()?,
        },
        EventType::CreateMissile => RemoteEvent::CreateMissile {
            object_id: read_object_id(r)?,
            class: r.u16()?,
            pos: r.f32s()?,
            dir: r.f32s()?,
            target_id: r.u32()?,
        },
        EventType::CreateExtra => RemoteEvent::CreateExtra {
            object_id: read_object_id(r)?,
            extra_index: r.u16()?,
            pos: r.f32s()?,
        },
        EventType::KillObject => {
            let object_id = read_object_id(r)?;
            let at = r.offset();
            let list_id = r.u8()?;
            if list_id > MAX_LIST_ID {
                return Err(DecodeError::new(at, DecodeProblem::BadListId(list_id)));
            }
            RemoteEvent::KillObject { object_id, list_id }
        }
        EventType::SendText => RemoteEvent::SendText(read_chat(r)?),
        EventType::PlayerName => RemoteEvent::PlayerName(read_text(r)?),
        EventType::ParticleObject => RemoteEvent::ParticleObject {
            particle_type: r.u16()?,
            origin: r.f32s()?,
        },
        EventType::PlayerStatus => {
            let at = r.offset();
            let joined = match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::new(at, DecodeProblem::ReservedBitsSet)),
            };
            RemoteEvent::PlayerStatus {
                joined,
                flag: r.u8()?,
            }
        }
        EventType::Resume => {
            let at = r.offset();
            match r.u8()? {
                RESUME_HELLO => {
                    let at = r.offset();
                    let count = r.u8()?;
                    if usize::from(count) > MAX_EARLIER_TOKENS {
                        return Err(DecodeError::new(at, DecodeProblem::BadCount(count)));
                    }
                    let mut tokens = [0u32; MAX_EARLIER_TOKENS];
                    for token in tokens.iter_mut().take(usize::from(count)) {
                        *token = read_token(r)?;
                    }
                    let list = EarlierTokens::new(tokens.into_iter().take(usize::from(count)));
                    RemoteEvent::Resume(ResumeStep::Hello(list))
                }
                RESUME_ANSWER => RemoteEvent::Resume(ResumeStep::Answer {
                    yours: read_token(r)?,
                    mine: read_token(r)?,
                    delivered: r.u32()?,
                }),
                RESUME_DONE => RemoteEvent::Resume(ResumeStep::Done),
                _ => return Err(DecodeError::new(at, DecodeProblem::ReservedBitsSet)),
            }
        }
        EventType::Rate => RemoteEvent::Rate(r.u32()?),
        EventType::Vacated => RemoteEvent::Vacated { told: r.u32()? },
        EventType::PlayerList => {
            let count = read_count(r)?;
            let mut entries = Vec::with_capacity(count);
            let mut seen = 0u32;
            for _ in 0..count {
                let at = r.offset();
                let slot = r.u8()?;
                if usize::from(slot) >= MAX_SLOTS {
                    return Err(DecodeError::new(at, DecodeProblem::BadSlot(slot)));
                }
                let bit = 1u32 << slot;
                if seen & bit != 0 {
                    return Err(DecodeError::new(at, DecodeProblem::DuplicateSlot(slot)));
                }
                seen |= bit;
                let at = r.offset();
                let flags = r.u8()?;
                if flags & !PLAYER_FLAG_JOINED != 0 {
                    return Err(DecodeError::new(at, DecodeProblem::ReservedBitsSet));
                }
                let token = read_token(r)?;
                let node = read_node(r)?;
                let name = read_text(r)?;
                entries.push(PlayerListEntry {
                    slot,
                    joined: flags & PLAYER_FLAG_JOINED != 0,
                    token,
                    node,
                    name,
                });
            }
            RemoteEvent::PlayerList(entries)
        }
        EventType::ConnectQueue => {
            let count = read_count(r)?;
            let mut requests = Vec::with_capacity(count);
            for _ in 0..count {
                let token = read_token(r)?;
                let node = read_node(r)?;
                let name = read_text(r)?;
                requests.push(ConnectRequest { token, node, name });
            }
            RemoteEvent::ConnectQueue(requests)
        }
        EventType::Custom => {
            let custom_type = r.u16()?;
            let at = r.offset();
            let len = usize::from(r.u16()?);
            if len > MAX_CUSTOM_DATA {
                return Err(DecodeError::new(at, DecodeProblem::CustomDataTooLong));
            }
            let data = CustomData::new(r.take(len)?)
                .ok_or(DecodeError::new(at, DecodeProblem::CustomDataTooLong))?;
            RemoteEvent::Custom {
                custom_type,
                data,
                reliable,
            }
        }
    })
}
