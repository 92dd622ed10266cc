//! The demo file format, version 1 (also in docs/demo-format.md). Big-endian everywhere, floats
//! finite, every field written and read one by one.
//!
//! ```text
//! header (20 bytes)
//!   0   8  magic "PNETDEMO"
//!   8   2  version u16 = 1
//!   10  2  reserved u16 = 0
//!   12  8  start time: wall clock, unix microseconds u64 (informational only)
//! records, back to back
//!   0   4  length u32: bytes from `time` to the end of `payload` (9..=65536)
//!   4   8  time u64: microseconds since the recording started, never less than the previous
//!   12  1  kind u8 (below)
//!   13  .  payload (by kind)
//!   ..  4  CRC-32 u32 (IEEE, as crc32fast computes it) of the record's bytes before it,
//!          starting with the length field
//! ```
//!
//! Kinds and payloads (`slot` is u8 0-15; `name` is u8 length 0-31 + bytes, no NUL, as in the
//! wire format; `string` is u16 length 0-1024 + that many bytes of valid UTF-8):
//!
//! | kind | item | payload |
//! |---|---|---|
//! | 1 | Connected | slot |
//! | 2 | Disconnected | reason string |
//! | 3 | PlayerConnected | slot, name |
//! | 4 | PlayerDisconnected | slot, reason string |
//! | 5 | PlayerJoined | slot |
//! | 6 | PlayerUnjoined | slot, flag u8 |
//! | 7 | PlayerName | slot, name |
//! | 8 | Remote | slot, one remote event as the wire format encodes it (see below) |
//! | 9 | Error | text string |
//! | 10 | State | slot, ship state (72 bytes, as in the wire format) |
//! | 11 | End | nothing: the recording was finished; nothing may follow |
//! | 12 | ServerMessage | text string |
//! | 13 | ServerList | count u32, errors string (a server-list fetch completed) |
//! | 14 | OwnPlayer | in game u8 (0 or 1), then when 1: slot, name (the recording game's own) |
//! | 15 | OwnObject | object id u32 (not 0), created u8 (1 created, 0 killed) by the game itself |
//! | 16 | ObjectOwner | object id u32 (not 0), slot: a live object's creator, as recording began |
//!
//! Kinds 14, 15 and 16 never reach the game as events: they keep what its lookups of its own
//! slot and of the objects answer (files from before them still play; see docs/demo-format.md).
//!
//! A remote event is written by the wire codec (`wire::write_event`, `wire::read_event`): event
//! header, reliable id, body, with all of the wire format's validation. The reliable id means
//! nothing in a demo: it is written as 1 when the event is reliable (always, except an unreliable
//! RE_CUSTOM) and ignored when read.
//!
//! The encoder must never panic and never leave a partial record in its output: a value the
//! decoder would reject (a slot over 15, a non-finite float, an over-long string, an invalid
//! remote event) is an error and `out` is left as it was. The decoder must never panic on any
//! bytes and never return an item from a record that failed any check; it keeps every item
//! before the first bad byte and reports where and why it stopped.

use std::fmt;
use std::time::Duration;

use crate::error::{ErrorCode, NetError, NetResult};
use crate::rmev::{PlayerName, ShipState, ShortText, GAME_AREA_LEN, MAX_NAME_LEN, MAX_SLOTS};
use crate::session::events::GameEvent;
use crate::wire::{
    encoded_len, read_event, write_event, DecodeError, DecodeProblem, Reader, WireEvent, Writer,
};

use super::{DemoItem, OwnPlayer};

/// The first 8 bytes of every demo file.
pub const MAGIC: [u8; 8] = *b"PNETDEMO";
/// The format version this build writes and plays.
pub const DEMO_VERSION: u16 = 1;
/// Size of the file header.
pub const HEADER_LEN: usize = 20;
/// Largest value of a record's length field (time + kind + payload).
pub const MAX_RECORD_LEN: u32 = 64 * 1024;
/// Longest reason or error text in bytes.
pub const MAX_STRING_LEN: usize = 1024;

/// The record length field.
const LEN_FIELD: usize = 4;
/// The CRC after each record.
const CRC_LEN: usize = 4;
/// Time and kind: the smallest value of the length field.
const MIN_RECORD_LEN: u32 = 9;
/// Byte offset of the reserved header field (for error messages).
const RESERVED_OFFSET: usize = 10;
/// The reliable id written for reliable remote events; the decoder ignores it.
const DEMO_RELIABLE_ID: u32 = 1;

/// Record kinds (the `kind` byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordKind {
    Connected = 1,
    Disconnected = 2,
    PlayerConnected = 3,
    PlayerDisconnected = 4,
    PlayerJoined = 5,
    PlayerUnjoined = 6,
    PlayerName = 7,
    Remote = 8,
    Error = 9,
    State = 10,
    End = 11,
    ServerMessage = 12,
    ServerList = 13,
    OwnPlayer = 14,
    OwnObject = 15,
    ObjectOwner = 16,
}

impl RecordKind {
    pub fn from_u8(v: u8) -> Option<RecordKind> {
        Some(match v {
            1 => RecordKind::Connected,
            2 => RecordKind::Disconnected,
            3 => RecordKind::PlayerConnected,
            4 => RecordKind::PlayerDisconnected,
            5 => RecordKind::PlayerJoined,
            6 => RecordKind::PlayerUnjoined,
            7 => RecordKind::PlayerName,
            8 => RecordKind::Remote,
            9 => RecordKind::Error,
            10 => RecordKind::State,
            11 => RecordKind::End,
            12 => RecordKind::ServerMessage,
            13 => RecordKind::ServerList,
            14 => RecordKind::OwnPlayer,
            15 => RecordKind::OwnObject,
            16 => RecordKind::ObjectOwner,
            _ => return None,
        })
    }

    /// The kind an item is recorded as.
    pub fn of(item: &DemoItem) -> RecordKind {
        match item {
            DemoItem::Event(GameEvent::Connected { .. }) => RecordKind::Connected,
            DemoItem::Event(GameEvent::Disconnected { .. }) => RecordKind::Disconnected,
            DemoItem::Event(GameEvent::PlayerConnected { .. }) => RecordKind::PlayerConnected,
            DemoItem::Event(GameEvent::PlayerDisconnected { .. }) => RecordKind::PlayerDisconnected,
            DemoItem::Event(GameEvent::PlayerJoined { .. }) => RecordKind::PlayerJoined,
            DemoItem::Event(GameEvent::PlayerUnjoined { .. }) => RecordKind::PlayerUnjoined,
            DemoItem::Event(GameEvent::PlayerName { .. }) => RecordKind::PlayerName,
            DemoItem::Event(GameEvent::Remote { .. }) => RecordKind::Remote,
            DemoItem::Event(GameEvent::Error { .. }) => RecordKind::Error,
            DemoItem::Event(GameEvent::ServerMessage { .. }) => RecordKind::ServerMessage,
            DemoItem::Event(GameEvent::ServerList { .. }) => RecordKind::ServerList,
            DemoItem::State { .. } => RecordKind::State,
            DemoItem::OwnPlayer(_) => RecordKind::OwnPlayer,
            DemoItem::OwnObject { .. } => RecordKind::OwnObject,
            DemoItem::ObjectOwner { .. } => RecordKind::ObjectOwner,
        }
    }
}

/// What the file header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DemoHeader {
    pub version: u16,
    /// Wall-clock start of the recording, unix microseconds (informational; playback ignores it).
    pub start_unix_micros: u64,
}

/// Where and why decoding stopped before the end of a demo file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoBreak {
    /// Byte offset in the file: the start of the record that broke, or the end of the file when
    /// the end record is missing.
    pub offset: u64,
    /// One line saying what is wrong, including the offset.
    pub reason: String,
}

impl fmt::Display for DemoBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// A decoded demo file: every item that decoded cleanly, in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct DemoContents {
    pub header: DemoHeader,
    /// Items with their time since the recording started (non-decreasing).
    pub items: Vec<(Duration, DemoItem)>,
    /// The time of the end record, when the file has one (the recording was finished).
    pub end: Option<Duration>,
    /// Set when the file does not end with a valid end record: the first bad byte and why.
    pub broken: Option<DemoBreak>,
}

impl DemoContents {
    /// How long the recording lasted: the end record's time, else the last item's.
    pub fn duration(&self) -> Duration {
        self.end
            .or_else(|| self.items.last().map(|(t, _)| *t))
            .unwrap_or(Duration::ZERO)
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_f32s(out: &mut Vec<u8>, values: &[f32]) {
    for v in values {
        put_u32(out, v.to_bits());
    }
}

fn put_slot(out: &mut Vec<u8>, slot: u8) -> NetResult<()> {
    if usize::from(slot) >= MAX_SLOTS {
        return Err(NetError::invalid(format!(
            "demo: slot {slot} is out of range (0-{})",
            MAX_SLOTS - 1
        )));
    }
    out.push(slot);
    Ok(())
}

fn put_name(out: &mut Vec<u8>, name: &PlayerName) -> NetResult<()> {
    let bytes = name.as_bytes();
    // PlayerName holds at most 31 bytes and no NUL by construction; checked, not assumed.
    let len = u8::try_from(bytes.len())
        .ok()
        .filter(|&n| usize::from(n) <= MAX_NAME_LEN)
        .ok_or_else(|| NetError::invalid("demo: player name is too long"))?;
    out.push(len);
    out.extend_from_slice(bytes);
    Ok(())
}

fn put_string(out: &mut Vec<u8>, what: &str, text: &str) -> NetResult<()> {
    let len = u16::try_from(text.len())
        .ok()
        .filter(|&n| usize::from(n) <= MAX_STRING_LEN)
        .ok_or_else(|| {
            NetError::new(
                ErrorCode::TooLarge,
                format!(
                    "demo: {what} is {} bytes, longer than {MAX_STRING_LEN}",
                    text.len()
                ),
            )
        })?;
    put_u16(out, len);
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

fn put_state(out: &mut Vec<u8>, state: &ShipState) -> NetResult<()> {
    if !state.is_finite() {
        return Err(NetError::invalid("demo: ship state has a non-finite float"));
    }
    put_f32s(out, &state.pos);
    put_f32s(out, &state.orient);
    put_f32s(out, &state.vel);
    out.extend_from_slice(&state.game);
    Ok(())
}

fn put_remote(out: &mut Vec<u8>, event: &crate::rmev::RemoteEvent) -> NetResult<()> {
    // The codec owns its event; only RE_PLAYERLIST and RE_CONNECTQUEUE (connection setup, rare)
    // allocate in this clone.
    let wire = WireEvent {
        reliable_id: event.is_reliable().then_some(DEMO_RELIABLE_ID),
        event: event.clone(),
    };
    let needed = encoded_len(&wire);
    let at = out.len();
    out.resize(at.saturating_add(needed), 0);
    let dest = out
        .get_mut(at..)
        .ok_or_else(|| NetError::new(ErrorCode::Internal, "demo: event buffer out of range"))?;
    let mut w = Writer::new(dest);
    write_event(&mut w, &wire).map_err(|e| {
        NetError::invalid(format!(
            "demo: remote event {:?} cannot be recorded: {e}",
            event.event_type()
        ))
    })?;
    if w.position() != needed {
        return Err(NetError::new(
            ErrorCode::Internal,
            "demo: remote event length differs from its encoding",
        ));
    }
    Ok(())
}

fn time_micros(time: Duration) -> NetResult<u64> {
    u64::try_from(time.as_micros()).map_err(|_| {
        NetError::new(
            ErrorCode::TooLarge,
            format!("demo: time {time:?} is out of range"),
        )
    })
}

/// Write the 20-byte file header.
pub fn encode_header(start_unix_micros: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    put_u16(out, DEMO_VERSION);
    put_u16(out, 0);
    put_u64(out, start_unix_micros);
}

/// Append one record holding `item` at `time` since the recording started (whole microseconds;
/// finer parts are dropped). On error `out` is left as it was.
///
/// Errors: `InvalidArgument` for a value the decoder would reject (a slot over 15, a non-finite
/// float, a remote event the wire codec refuses), `TooLarge` for a reason or error text over
/// [`MAX_STRING_LEN`] bytes or a time beyond `u64` microseconds.
pub fn encode_item(time: Duration, item: &DemoItem, out: &mut Vec<u8>) -> NetResult<()> {
    let start = out.len();
    let result = write_record(time, RecordKind::of(item), out, |out| {
        write_payload(item, out)
    });
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Append the end record (the recording was finished at `time`). On error `out` is unchanged.
pub fn encode_end(time: Duration, out: &mut Vec<u8>) -> NetResult<()> {
    let start = out.len();
    let result = write_record(time, RecordKind::End, out, |_| Ok(()));
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn write_record(
    time: Duration,
    kind: RecordKind,
    out: &mut Vec<u8>,
    payload: impl FnOnce(&mut Vec<u8>) -> NetResult<()>,
) -> NetResult<()> {
    let micros = time_micros(time)?;
    let start = out.len();
    put_u32(out, 0); // length, filled in below
    put_u64(out, micros);
    out.push(kind as u8);
    payload(out)?;
    let len = out
        .len()
        .checked_sub(start.saturating_add(LEN_FIELD))
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n <= MAX_RECORD_LEN)
        .ok_or_else(|| {
            NetError::new(
                ErrorCode::TooLarge,
                format!("demo: record is longer than {MAX_RECORD_LEN} bytes"),
            )
        })?;
    let len_field = out
        .get_mut(start..start.saturating_add(LEN_FIELD))
        .ok_or_else(|| NetError::new(ErrorCode::Internal, "demo: record start out of range"))?;
    len_field.copy_from_slice(&len.to_be_bytes());
    let crc = crc32fast::hash(out.get(start..).unwrap_or(&[]));
    put_u32(out, crc);
    Ok(())
}

fn write_payload(item: &DemoItem, out: &mut Vec<u8>) -> NetResult<()> {
    match item {
        DemoItem::Event(event) => match event {
            GameEvent::Connected { slot } | GameEvent::PlayerJoined { slot } => {
                put_slot(out, *slot)
            }
            GameEvent::Disconnected { reason } => put_string(out, "disconnect reason", reason),
            GameEvent::PlayerConnected { slot, name } | GameEvent::PlayerName { slot, name } => {
                put_slot(out, *slot)?;
                put_name(out, name)
            }
            GameEvent::PlayerDisconnected { slot, reason } => {
                put_slot(out, *slot)?;
                put_string(out, "player disconnect reason", reason)
            }
            GameEvent::PlayerUnjoined { slot, flag } => {
                put_slot(out, *slot)?;
                out.push(*flag);
                Ok(())
            }
            GameEvent::Remote { slot, event } => {
                put_slot(out, *slot)?;
                put_remote(out, event)
            }
            GameEvent::Error { text } => put_string(out, "error text", text),
            GameEvent::ServerMessage { text } => put_string(out, "server message", text),
            GameEvent::ServerList { count, errors } => {
                put_u32(out, *count);
                put_string(out, "server list errors", errors)
            }
        },
        DemoItem::State { slot, state } => {
            put_slot(out, *slot)?;
            put_state(out, state)
        }
        DemoItem::OwnPlayer(None) => {
            out.push(0);
            Ok(())
        }
        DemoItem::OwnPlayer(Some(own)) => {
            out.push(1);
            put_slot(out, own.slot)?;
            put_name(out, &own.name)
        }
        DemoItem::OwnObject { object_id, created } => {
            if *object_id == 0 {
                return Err(NetError::invalid("demo: object id 0 is not an object"));
            }
            put_u32(out, *object_id);
            out.push(u8::from(*created));
            Ok(())
        }
        DemoItem::ObjectOwner { object_id, slot } => {
            if *object_id == 0 {
                return Err(NetError::invalid("demo: object id 0 is not an object"));
            }
            put_u32(out, *object_id);
            put_slot(out, *slot)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// Check the file header. Errors (nothing to play): an empty file or one shorter than the
/// header, a wrong magic (`Parse`), an unsupported version (`Unsupported`), a non-zero reserved
/// field (`Parse`).
pub fn decode_header(bytes: &[u8]) -> NetResult<DemoHeader> {
    if bytes.is_empty() {
        return Err(NetError::new(
            ErrorCode::Parse,
            "the demo file is empty (no header)",
        ));
    }
    let magic_part = bytes.get(..MAGIC.len().min(bytes.len())).unwrap_or(&[]);
    if !MAGIC.starts_with(magic_part) {
        return Err(NetError::new(
            ErrorCode::Parse,
            "not a demo file: it does not start with \"PNETDEMO\"",
        ));
    }
    if bytes.len() < HEADER_LEN {
        return Err(NetError::new(
            ErrorCode::Parse,
            format!(
                "the demo file is {} bytes, shorter than its {HEADER_LEN}-byte header",
                bytes.len()
            ),
        ));
    }
    let short = |_| NetError::new(ErrorCode::Parse, "the demo file is shorter than its header");
    let mut r = Reader::new(bytes);
    r.take(MAGIC.len()).map_err(short)?;
    let version = r.u16().map_err(short)?;
    if version != DEMO_VERSION {
        return Err(NetError::new(
            ErrorCode::Unsupported,
            format!("unsupported demo version {version} (this build plays version {DEMO_VERSION})"),
        ));
    }
    let reserved = r.u16().map_err(short)?;
    if reserved != 0 {
        return Err(NetError::new(
            ErrorCode::Parse,
            format!(
                "bad demo header: the reserved field at byte {RESERVED_OFFSET} is {reserved}, \
                 must be 0"
            ),
        ));
    }
    let start_unix_micros = u64::from_be_bytes(r.array::<8>().map_err(short)?);
    Ok(DemoHeader {
        version,
        start_unix_micros,
    })
}

/// Decode a whole demo file. A bad header is an error (nothing to play); a bad record is not:
/// the items before it are returned and [`DemoContents::broken`] says where and why decoding
/// stopped. A file without the end record (a recording that was not finished, or a truncated
/// file) is reported as broken at its last byte, after all its complete records.
pub fn decode_demo(bytes: &[u8]) -> NetResult<DemoContents> {
    let header = decode_header(bytes)?;
    let mut contents = DemoContents {
        header,
        items: Vec::new(),
        end: None,
        broken: None,
    };
    let mut pos = HEADER_LEN;
    let mut last = 0u64;
    loop {
        if contents.end.is_some() {
            if pos < bytes.len() {
                contents.broken = Some(brk(
                    pos,
                    format!(
                        "{} bytes of data after the end record, at byte {pos}",
                        bytes.len() - pos
                    ),
                ));
            }
            break;
        }
        if pos >= bytes.len() {
            contents.broken = Some(brk(
                pos,
                format!(
                    "the file ends at byte {pos} without an end record (the recording was not \
                     finished, or the file was cut)"
                ),
            ));
            break;
        }
        match decode_record(bytes, pos, last) {
            Ok(record) => {
                last = record.time;
                pos = record.next;
                let time = Duration::from_micros(record.time);
                match record.item {
                    Some(item) => contents.items.push((time, item)),
                    None => contents.end = Some(time),
                }
            }
            Err(b) => {
                contents.broken = Some(b);
                break;
            }
        }
    }
    Ok(contents)
}

fn brk(offset: usize, reason: String) -> DemoBreak {
    DemoBreak {
        offset: offset as u64,
        reason,
    }
}

/// One record that passed every check (`item` is `None` for the end record).
struct Record {
    next: usize,
    time: u64,
    item: Option<DemoItem>,
}

/// A field inside a record that failed a check.
struct Bad {
    offset: usize,
    what: String,
}

impl Bad {
    fn new(offset: usize, what: impl Into<String>) -> Bad {
        Bad {
            offset,
            what: what.into(),
        }
    }
}

impl From<DecodeError> for Bad {
    fn from(e: DecodeError) -> Bad {
        let what = match e.problem {
            DecodeProblem::Truncated => "the record is shorter than its fields".to_string(),
            other => other.to_string(),
        };
        Bad::new(e.offset, what)
    }
}

fn decode_record(bytes: &[u8], at: usize, last: u64) -> Result<Record, DemoBreak> {
    let rest = bytes.get(at..).unwrap_or(&[]);
    let len_bytes: [u8; LEN_FIELD] = match rest.get(..LEN_FIELD).map(<[u8; LEN_FIELD]>::try_from) {
        Some(Ok(b)) => b,
        _ => {
            return Err(brk(
                at,
                format!("truncated record at byte {at}: the file ends inside its length field"),
            ))
        }
    };
    let len = u32::from_be_bytes(len_bytes);
    if !(MIN_RECORD_LEN..=MAX_RECORD_LEN).contains(&len) {
        return Err(brk(
            at,
            format!(
                "bad record length {len} in record at byte {at} (must be \
                 {MIN_RECORD_LEN}-{MAX_RECORD_LEN})"
            ),
        ));
    }
    // len <= 64 KiB, so these sums cannot overflow.
    let covered_len = LEN_FIELD + len as usize;
    let total = covered_len + CRC_LEN;
    if rest.len() < total {
        return Err(brk(
            at,
            format!(
                "truncated record at byte {at}: it takes {total} bytes, the file has {} left",
                rest.len()
            ),
        ));
    }
    let (covered, crc_field) = match (rest.get(..covered_len), rest.get(covered_len..total)) {
        (Some(c), Some(f)) => (c, f),
        _ => {
            return Err(brk(at, format!("truncated record at byte {at}")));
        }
    };
    let stored = <[u8; CRC_LEN]>::try_from(crc_field)
        .map(u32::from_be_bytes)
        .unwrap_or(0);
    let computed = crc32fast::hash(covered);
    if stored != computed {
        return Err(brk(
            at,
            format!(
                "CRC mismatch in record at byte {at} (stored {stored:08x}, computed \
                 {computed:08x})"
            ),
        ));
    }

    let mut r = Reader::with_base(covered, at);
    let fail = |b: Bad| {
        brk(
            at,
            format!("{} at byte {} in record at byte {at}", b.what, b.offset),
        )
    };
    r.take(LEN_FIELD).map_err(|e| fail(e.into()))?;
    let time = u64::from_be_bytes(r.array::<8>().map_err(|e| fail(e.into()))?);
    if time < last {
        return Err(brk(
            at,
            format!("time goes backwards in record at byte {at} ({time} us after {last} us)"),
        ));
    }
    let kind_byte = r.u8().map_err(|e| fail(e.into()))?;
    let kind = RecordKind::from_u8(kind_byte).ok_or_else(|| {
        brk(
            at,
            format!("unknown record kind {kind_byte} in record at byte {at}"),
        )
    })?;
    let item = read_payload(kind, &mut r).map_err(fail)?;
    if !r.is_empty() {
        return Err(fail(Bad::new(
            r.offset(),
            format!("{} bytes after the record's fields", r.remaining()),
        )));
    }
    Ok(Record {
        next: at + total,
        time,
        item,
    })
}

fn read_slot(r: &mut Reader<'_>) -> Result<u8, Bad> {
    let at = r.offset();
    let slot = r.u8()?;
    if usize::from(slot) >= MAX_SLOTS {
        return Err(Bad::new(at, format!("bad slot {slot}")));
    }
    Ok(slot)
}

fn read_name(r: &mut Reader<'_>) -> Result<PlayerName, Bad> {
    let at = r.offset();
    let len = usize::from(r.u8()?);
    if len > MAX_NAME_LEN {
        return Err(Bad::new(
            at,
            format!("name of {len} bytes is longer than {MAX_NAME_LEN}"),
        ));
    }
    let bytes = r.take(len)?;
    ShortText::new(bytes).map_err(|e| Bad::new(at, format!("bad name: {e}")))
}

fn read_string(r: &mut Reader<'_>) -> Result<String, Bad> {
    let at = r.offset();
    let len = usize::from(r.u16()?);
    if len > MAX_STRING_LEN {
        return Err(Bad::new(
            at,
            format!("string of {len} bytes is longer than {MAX_STRING_LEN}"),
        ));
    }
    let start = r.offset();
    let bytes = r.take(len)?;
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => Err(Bad::new(
            start.saturating_add(e.valid_up_to()),
            "string is not valid UTF-8",
        )),
    }
}

fn read_state(r: &mut Reader<'_>) -> Result<ShipState, Bad> {
    Ok(ShipState {
        pos: r.f32s()?,
        orient: r.f32s()?,
        vel: r.f32s()?,
        game: r.array::<GAME_AREA_LEN>()?,
    })
}

/// A u8 that must be 0 or 1 (`what` names it in the error).
fn read_flag(r: &mut Reader<'_>, what: &str) -> Result<bool, Bad> {
    let at = r.offset();
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(Bad::new(
            at,
            format!("bad {what} flag {other} (must be 0 or 1)"),
        )),
    }
}

fn read_own_player(r: &mut Reader<'_>) -> Result<Option<OwnPlayer>, Bad> {
    if !read_flag(r, "in-game")? {
        return Ok(None);
    }
    Ok(Some(OwnPlayer {
        slot: read_slot(r)?,
        name: read_name(r)?,
    }))
}

/// An object id, which must not be 0.
fn read_object_id(r: &mut Reader<'_>) -> Result<u32, Bad> {
    let at = r.offset();
    let object_id = r.u32()?;
    if object_id == 0 {
        return Err(Bad::new(at, "object id 0"));
    }
    Ok(object_id)
}

fn read_own_object(r: &mut Reader<'_>) -> Result<DemoItem, Bad> {
    Ok(DemoItem::OwnObject {
        object_id: read_object_id(r)?,
        created: read_flag(r, "created")?,
    })
}

fn read_object_owner(r: &mut Reader<'_>) -> Result<DemoItem, Bad> {
    Ok(DemoItem::ObjectOwner {
        object_id: read_object_id(r)?,
        slot: read_slot(r)?,
    })
}

fn read_payload(kind: RecordKind, r: &mut Reader<'_>) -> Result<Option<DemoItem>, Bad> {
    let event = match kind {
        RecordKind::Connected => GameEvent::Connected {
            slot: read_slot(r)?,
        },
        RecordKind::Disconnected => GameEvent::Disconnected {
            reason: read_string(r)?,
        },
        RecordKind::PlayerConnected => GameEvent::PlayerConnected {
            slot: read_slot(r)?,
            name: read_name(r)?,
        },
        RecordKind::PlayerDisconnected => GameEvent::PlayerDisconnected {
            slot: read_slot(r)?,
            reason: read_string(r)?,
        },
        RecordKind::PlayerJoined => GameEvent::PlayerJoined {
            slot: read_slot(r)?,
        },
        RecordKind::PlayerUnjoined => GameEvent::PlayerUnjoined {
            slot: read_slot(r)?,
            flag: r.u8()?,
        },
        RecordKind::PlayerName => GameEvent::PlayerName {
            slot: read_slot(r)?,
            name: read_name(r)?,
        },
        RecordKind::Remote => {
            let slot = read_slot(r)?;
            let wire = read_event(r)?;
            GameEvent::Remote {
                slot,
                event: wire.event,
            }
        }
        RecordKind::Error => GameEvent::Error {
            text: read_string(r)?,
        },
        RecordKind::ServerMessage => GameEvent::ServerMessage {
            text: read_string(r)?,
        },
        RecordKind::ServerList => GameEvent::ServerList {
            count: r.u32()?,
            errors: read_string(r)?,
        },
        RecordKind::State => {
            return Ok(Some(DemoItem::State {
                slot: read_slot(r)?,
                state: read_state(r)?,
            }))
        }
        RecordKind::OwnPlayer => return Ok(Some(DemoItem::OwnPlayer(read_own_player(r)?))),
        RecordKind::OwnObject => return read_own_object(r).map(Some),
        RecordKind::ObjectOwner => return read_object_owner(r).map(Some),
        RecordKind::End => return Ok(None),
    };
    Ok(Some(DemoItem::Event(event)))
}
