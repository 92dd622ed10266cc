//! Whole game packets: [`PacketWriter`] builds one into a caller's buffer (header, optional ship
//! state, as many events as fit), [`decode_packet`] validates and decodes one completely.
//!
//! The writer must never leave the buffer holding a packet the decoder would reject (the event
//! count is kept in step with the events written, an event is written whole or not at all). The
//! decoder must never return any part of a packet that fails validation, never panic, and never
//! allocate in steady state beyond the caller's reused event vector.

use super::cursor::{Reader, Writer};
use super::error::{DecodeError, DecodeProblem, EncodeError};
use super::event_codec::{
    encoded_len, encoded_len_of, read_event, validate_parts, write_validated, WireEvent,
};
use super::header::{read_header, write_header, PacketHeader, EVENT_COUNT_OFFSET};
use super::{HEADER_LEN, SHIP_STATE_LEN};
use crate::rmev::{RemoteEvent, ShipState, GAME_AREA_LEN};

/// Most events one packet can carry (the event count is one byte).
pub const MAX_EVENTS_PER_PACKET: usize = u8::MAX as usize;

/// A packet that passed validation.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedPacket {
    pub header: PacketHeader,
    pub state: Option<ShipState>,
}

fn write_state(w: &mut Writer<'_>, state: &ShipState) -> Result<(), EncodeError> {
    if !state.is_finite() {
        return Err(EncodeError::NonFiniteFloat);
    }
    w.f32s(&state.pos)?;
    w.f32s(&state.orient)?;
    w.f32s(&state.vel)?;
    w.bytes(&state.game)
}

fn read_state(r: &mut Reader<'_>) -> Result<ShipState, DecodeError> {
    Ok(ShipState {
        pos: r.f32s()?,
        orient: r.f32s()?,
        vel: r.f32s()?,
        game: r.array::<GAME_AREA_LEN>()?,
    })
}

/// Builds one game packet in a buffer whose length is the largest packet allowed (the backend's
/// maximum payload). The buffer holds a valid packet of [`PacketWriter::len`] bytes at every
/// moment after `new` succeeds.
#[derive(Debug)]
pub struct PacketWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
    count: u8,
}

impl<'a> PacketWriter<'a> {
    /// Write the header and, if given, the ship state. Fails if the header or state break a
    /// rule, or if `buf` is too small for them.
    pub fn new(
        buf: &'a mut [u8],
        header: &PacketHeader,
        state: Option<&ShipState>,
    ) -> Result<Self, EncodeError> {
        header.validate()?;
        if state.is_some_and(|s| !s.is_finite()) {
            return Err(EncodeError::NonFiniteFloat);
        }
        let needed = HEADER_LEN + if state.is_some() { SHIP_STATE_LEN } else { 0 };
        if buf.len() < needed {
            return Err(EncodeError::DoesNotFit {
                needed,
                available: buf.len(),
            });
        }
        let mut w = Writer::new(&mut *buf);
        write_header(&mut w, header, state.is_some(), 0)?;
        if let Some(state) = state {
            write_state(&mut w, state)?;
        }
        let len = w.position();
        Ok(PacketWriter { buf, len, count: 0 })
    }

    /// Append one event if it fits: `Ok(true)` when written, `Ok(false)` when the remaining
    /// room (or the 255-event limit) leaves no place for it; the packet is unchanged then and the
    /// event can go into the next packet. `Err` for an event that breaks a rule (it can never be
    /// encoded); nothing is written then either.
    pub fn push(&mut self, ev: &WireEvent) -> Result<bool, EncodeError> {
        self.push_parts(ev.reliable_id, &ev.event)
    }

    /// [`PacketWriter::push`] of `event` carried with `reliable_id`, without making a
    /// [`WireEvent`] of it.
    pub fn push_parts(
        &mut self,
        reliable_id: Option<u32>,
        event: &RemoteEvent,
    ) -> Result<bool, EncodeError> {
        validate_parts(reliable_id, event)?;
        if usize::from(self.count) >= MAX_EVENTS_PER_PACKET
            || encoded_len_of(reliable_id.is_some(), event) > self.remaining()
        {
            return Ok(false);
        }
        let available = self.buf.len();
        let rest = self
            .buf
            .get_mut(self.len..)
            .ok_or(EncodeError::DoesNotFit {
                needed: self.len,
                available,
            })?;
        let mut w = Writer::new(rest);
        write_validated(&mut w, reliable_id, event)?;
        self.len = self.len.saturating_add(w.position());
        self.count = self.count.saturating_add(1);
        if let Some(count) = self.buf.get_mut(EVENT_COUNT_OFFSET) {
            *count = self.count;
        }
        Ok(true)
    }

    /// Room left for events, in bytes.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.len)
    }

    /// Length of the packet written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a packet has at least its header.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Events written so far.
    pub fn event_count(&self) -> usize {
        usize::from(self.count)
    }

    /// Complete the packet (the event count is patched) and return its length: send
    /// `buf[..len]`.
    pub fn finish(self) -> usize {
        if let Some(count) = self.buf.get_mut(EVENT_COUNT_OFFSET) {
            *count = self.count;
        }
        self.len
    }
}

/// Encode a whole packet with all of `events`; `DoesNotFit` if they do not all fit in `buf`.
pub fn encode_packet(
    buf: &mut [u8],
    header: &PacketHeader,
    state: Option<&ShipState>,
    events: &[WireEvent],
) -> Result<usize, EncodeError> {
    let available = buf.len();
    let mut writer = PacketWriter::new(buf, header, state)?;
    for ev in events {
        if !writer.push(ev)? {
            let needed = writer.len().saturating_add(encoded_len(ev));
            return Err(EncodeError::DoesNotFit { needed, available });
        }
    }
    Ok(writer.finish())
}

/// Validate and decode a whole game packet. `events` is cleared, then filled with the packet's
/// events in order. On error `events` is left empty and nothing of the packet is returned: the
/// first bad field stops decoding.
pub fn decode_packet(
    bytes: &[u8],
    events: &mut Vec<WireEvent>,
) -> Result<DecodedPacket, DecodeError> {
    events.clear();
    let result = decode_into(bytes, events);
    if result.is_err() {
        events.clear();
    }
    result
}

fn decode_into(bytes: &[u8], events: &mut Vec<WireEvent>) -> Result<DecodedPacket, DecodeError> {
    let mut r = Reader::new(bytes);
    let raw = read_header(&mut r)?;
    let state = if raw.has_state {
        Some(read_state(&mut r)?)
    } else {
        None
    };
    for _ in 0..raw.event_count {
        events.push(read_event(&mut r)?);
    }
    if !r.is_empty() {
        return Err(r.error(DecodeProblem::TrailingBytes));
    }
    Ok(DecodedPacket {
        header: raw.header,
        state,
    })
}
