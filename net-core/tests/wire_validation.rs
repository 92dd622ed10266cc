//! Every validation rule of docs/wire-format.md, one table row per case: hand-built bytes that
//! break exactly one rule are rejected with the expected problem at the offending field's
//! offset, and nothing of the packet is returned (the caller's event vector is left empty).

use net_core::rmev::{CustomData, RemoteEvent};
use net_core::wire::{decode_packet, DecodeError, DecodeProblem, WireEvent};

const NO_FLAGS: u8 = 0;
const STATE: u8 = 1;
const JOINED: u8 = 2;
const ACK: u8 = 4;

/// A 24-byte header: GAME_STATE from slot 3, sequence 5, token 77; the ack fields are 4 and 1
/// when `flags` has the ack bit, 0 otherwise.
fn header(flags: u8, count: u8) -> Vec<u8> {
    let (ack, bits) = if flags & ACK != 0 {
        (4u32, 1u32)
    } else {
        (0, 0)
    };
    raw_header(8, 3, flags, count, 5, ack, bits, 77)
}

#[allow(clippy::too_many_arguments)]
fn raw_header(
    kind: u8,
    slot: u8,
    flags: u8,
    count: u8,
    sequence: u32,
    ack: u32,
    bits: u32,
    token: u32,
) -> Vec<u8> {
    let mut b = b"PSN\x01".to_vec();
    b.extend_from_slice(&[kind, slot, flags, count]);
    for v in [sequence, ack, bits, token] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    assert_eq!(b.len(), 24);
    b
}

/// A 72-byte ship state with all-zero floats and game area.
fn state() -> Vec<u8> {
    vec![0; 72]
}

/// An event with explicit header fields (body length as given, reliable id if given).
fn raw_event(ty: u8, flags: u8, body_len: u16, reliable_id: Option<u32>, body: &[u8]) -> Vec<u8> {
    let mut b = vec![ty, flags];
    b.extend_from_slice(&body_len.to_be_bytes());
    if let Some(id) = reliable_id {
        b.extend_from_slice(&id.to_be_bytes());
    }
    b.extend_from_slice(body);
    b
}

/// A reliable event (id 1) whose body length is the body's real length.
fn reliable(ty: u8, body: &[u8]) -> Vec<u8> {
    raw_event(ty, 1, body.len() as u16, Some(1), body)
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| v.to_bits().to_be_bytes())
        .collect()
}

fn laser_body(object_id: u32, pos: [f32; 3], dir: [f32; 3]) -> Vec<u8> {
    let mut b = object_id.to_be_bytes().to_vec();
    b.extend_from_slice(&3u16.to_be_bytes());
    b.extend(f32s(&pos));
    b.extend(f32s(&dir));
    assert_eq!(b.len(), 30);
    b
}

fn laser() -> Vec<u8> {
    reliable(2, &laser_body(9, [1.0, 2.0, 3.0], [0.0, 0.0, 1.0]))
}

fn text_body(text: &[u8]) -> Vec<u8> {
    let mut b = vec![text.len() as u8];
    b.extend_from_slice(text);
    b
}

fn player(slot: u8, flags: u8, token: u32, name: &[u8]) -> Vec<u8> {
    let mut b = vec![slot, flags];
    b.extend_from_slice(&token.to_be_bytes());
    b.extend_from_slice(&[0xAA; 32]);
    b.extend(text_body(name));
    b
}

fn request(token: u32, name: &[u8]) -> Vec<u8> {
    let mut b = token.to_be_bytes().to_vec();
    b.extend_from_slice(&[0xBB; 32]);
    b.extend(text_body(name));
    b
}

fn list_body(count: u8, entries: &[Vec<u8>]) -> Vec<u8> {
    let mut b = vec![count];
    for e in entries {
        b.extend_from_slice(e);
    }
    b
}

fn custom_body(custom_type: u16, data_len: u16, data: &[u8]) -> Vec<u8> {
    let mut b = custom_type.to_be_bytes().to_vec();
    b.extend_from_slice(&data_len.to_be_bytes());
    b.extend_from_slice(data);
    b
}

/// Header (no state) with the given events, event count = number of events.
fn packet(events: &[Vec<u8>]) -> Vec<u8> {
    let mut b = header(JOINED | ACK, events.len() as u8);
    for e in events {
        b.extend_from_slice(e);
    }
    b
}

fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn junk() -> Vec<WireEvent> {
    vec![WireEvent {
        reliable_id: None,
        event: RemoteEvent::Custom {
            custom_type: 1,
            data: CustomData::new(b"junk").unwrap(),
            reliable: false,
        },
    }]
}

/// Run a table: each row must be rejected with exactly (offset, problem) and return no events.
fn check(rows: &[(&str, Vec<u8>, usize, DecodeProblem)]) {
    for (name, bytes, offset, problem) in rows {
        let mut events = junk();
        let got = decode_packet(bytes, &mut events);
        assert_eq!(
            got,
            Err(DecodeError {
                offset: *offset,
                problem: *problem
            }),
            "case {name:?}: expected {problem} at byte {offset}"
        );
        assert!(
            events.is_empty(),
            "case {name:?}: events returned for a rejected packet"
        );
    }
}

fn accepts(bytes: &[u8]) -> usize {
    let mut events = junk();
    match decode_packet(bytes, &mut events) {
        Ok(_) => events.len(),
        Err(e) => panic!("valid packet rejected: {e}"),
    }
}

#[test]
fn the_packets_the_tables_start_from_are_valid() {
    assert_eq!(accepts(&packet(&[])), 0);
    assert_eq!(accepts(&packet(&[laser()])), 1);
    assert_eq!(
        accepts(&concat(&[&header(STATE | JOINED, 1), &state(), &laser()])),
        1
    );
    assert_eq!(accepts(&raw_header(1, 255, NO_FLAGS, 0, 1, 0, 0, 1)), 0);
    assert_eq!(
        accepts(&raw_header(
            10,
            15,
            ACK,
            0,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX
        )),
        0
    );
    // Every packet type and the no-slot value are accepted.
    for kind in 1..=10 {
        assert_eq!(accepts(&raw_header(kind, 255, NO_FLAGS, 0, 1, 0, 0, 1)), 0);
    }
    // An unreliable RE_CUSTOM has no reliable id; a reliable one has.
    let unreliable = raw_event(11, 0, 6, None, &custom_body(1, 2, b"hi"));
    let reliable_custom = reliable(11, &custom_body(1, 256, &[0; 256]));
    assert_eq!(accepts(&packet(&[unreliable, reliable_custom])), 2);
    // Empty text and name, maximal name, 16-player list, missile with target 0.
    let missile = {
        let mut b = laser_body(5, [0.0; 3], [1.0; 3]);
        b.extend_from_slice(&0u32.to_be_bytes());
        reliable(3, &b)
    };
    let full_list: Vec<Vec<u8>> = (0..16)
        .map(|s| player(15 - s, 1, 1 + u32::from(s), b"p"))
        .collect();
    assert_eq!(
        accepts(&packet(&[
            reliable(6, &text_body(b"")),
            reliable(7, &text_body(&[b'n'; 31])),
            reliable(9, &list_body(16, &full_list)),
            missile,
        ])),
        4
    );
}

#[test]
fn header_rules_reject_the_packet_at_the_offending_field() {
    let base = packet(&[laser()]);
    let with = |i: usize, v: u8| {
        let mut b = base.clone();
        b[i] = v;
        b
    };
    let with_u32 = |i: usize, v: u32| {
        let mut b = base.clone();
        b[i..i + 4].copy_from_slice(&v.to_be_bytes());
        b
    };
    use DecodeProblem::*;
    check(&[
        ("bad signature first byte", with(0, b'X'), 0, BadSignature),
        ("bad signature last byte", with(2, b'n'), 0, BadSignature),
        (
            "not a game packet at all",
            b"hello world".to_vec(),
            0,
            BadSignature,
        ),
        ("short wrong prefix", b"PX".to_vec(), 0, BadSignature),
        ("empty datagram", Vec::new(), 0, Truncated),
        ("signature only", b"PSN".to_vec(), 3, Truncated),
        ("version 0", with(3, 0), 3, UnsupportedVersion(0)),
        ("version 2", with(3, 2), 3, UnsupportedVersion(2)),
        ("packet type 0", with(4, 0), 4, UnknownPacketType(0)),
        ("packet type 11", with(4, 11), 4, UnknownPacketType(11)),
        ("packet type 255", with(4, 255), 4, UnknownPacketType(255)),
        ("sender slot 16", with(5, 16), 5, BadSlot(16)),
        ("sender slot 254", with(5, 254), 5, BadSlot(254)),
        (
            "header flag bit 3",
            with(6, JOINED | ACK | 0x08),
            6,
            ReservedBitsSet,
        ),
        ("header flag bit 7", with(6, 0x80), 6, ReservedBitsSet),
        ("zero sequence", with_u32(8, 0), 8, ZeroSequence),
        ("ack flag set, ack 0", with_u32(12, 0), 12, ZeroAck),
        ("zero token", with_u32(20, 0), 20, ZeroToken),
        (
            "header cut in the token",
            base[..23].to_vec(),
            20,
            Truncated,
        ),
        (
            "header cut after the flags",
            base[..7].to_vec(),
            7,
            Truncated,
        ),
    ]);
    let no_ack = header(JOINED, 0);
    let mut ack_without_flag = no_ack.clone();
    ack_without_flag[12..16].copy_from_slice(&5u32.to_be_bytes());
    let mut bits_without_flag = no_ack.clone();
    bits_without_flag[16..20].copy_from_slice(&1u32.to_be_bytes());
    check(&[
        (
            "ack without ack flag",
            ack_without_flag,
            12,
            AckFieldsWithoutFlag,
        ),
        (
            "ack bits without ack flag",
            bits_without_flag,
            16,
            AckFieldsWithoutFlag,
        ),
    ]);
}

/// A header cut at every length is truncated at the start of the field it ends in (a cut
/// signature at its length), and a bad field before the cut is reported instead.
#[test]
fn a_header_cut_anywhere_is_truncated_at_the_field_it_ends_in() {
    let whole = header(JOINED | ACK, 0);
    let field_starts = [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20];
    let rows: Vec<(String, Vec<u8>, usize, DecodeProblem)> = (0..whole.len())
        .map(|len| {
            let at = field_starts
                .iter()
                .copied()
                .filter(|start| *start <= len)
                .max()
                .unwrap_or(0);
            let at = if len < 3 { len } else { at };
            (
                format!("header cut after {len} bytes"),
                whole[..len].to_vec(),
                at,
                DecodeProblem::Truncated,
            )
        })
        .collect();
    let rows: Vec<(&str, Vec<u8>, usize, DecodeProblem)> = rows
        .iter()
        .map(|(what, bytes, at, problem)| (what.as_str(), bytes.clone(), *at, *problem))
        .collect();
    check(&rows);
    // A bad version before the cut is the problem, not the cut.
    let mut bad_version = whole[..10].to_vec();
    bad_version[3] = 9;
    check(&[(
        "bad version in a cut header",
        bad_version,
        3,
        DecodeProblem::UnsupportedVersion(9),
    )]);
}

#[test]
fn ship_state_rules_reject_non_finite_floats_and_short_states() {
    let with_float = |at: usize, v: f32| {
        let mut s = state();
        s[at..at + 4].copy_from_slice(&v.to_bits().to_be_bytes());
        concat(&[&header(STATE, 0), &s])
    };
    use DecodeProblem::*;
    check(&[
        (
            "NaN position y",
            with_float(4, f32::NAN),
            28,
            NonFiniteFloat,
        ),
        (
            "+inf orientation w",
            with_float(24, f32::INFINITY),
            48,
            NonFiniteFloat,
        ),
        (
            "-inf velocity z",
            with_float(36, f32::NEG_INFINITY),
            60,
            NonFiniteFloat,
        ),
        (
            "state flag without a state",
            header(STATE, 0),
            24,
            Truncated,
        ),
        (
            "state cut in the game area",
            concat(&[&header(STATE, 0), &state()[..50]]),
            64,
            Truncated,
        ),
    ]);
}

#[test]
fn event_header_rules_reject_the_packet_at_the_offending_field() {
    use DecodeProblem::*;
    let mut rows = vec![
        (
            "event type 0",
            packet(&[raw_event(0, 1, 0, Some(1), &[])]),
            24,
            UnknownEventType(0),
        ),
        (
            "event type 16",
            packet(&[raw_event(16, 1, 0, Some(1), &[])]),
            24,
            UnknownEventType(16),
        ),
        (
            "event type 99",
            packet(&[raw_event(99, 1, 0, Some(1), &[])]),
            24,
            UnknownEventType(99),
        ),
        (
            "event flag bit 1",
            packet(&[raw_event(
                2,
                3,
                30,
                Some(1),
                &laser_body(1, [0.0; 3], [0.0; 3]),
            )]),
            25,
            ReservedBitsSet,
        ),
        (
            "event flag bit 7 on a custom",
            packet(&[raw_event(11, 0x80, 4, None, &custom_body(1, 0, &[]))]),
            25,
            ReservedBitsSet,
        ),
        (
            "zero reliable id",
            packet(&[raw_event(
                2,
                1,
                30,
                Some(0),
                &laser_body(1, [0.0; 3], [0.0; 3]),
            )]),
            28,
            ZeroReliableId,
        ),
        (
            "fixed body one byte short",
            packet(&[raw_event(
                2,
                1,
                29,
                Some(1),
                &laser_body(1, [0.0; 3], [0.0; 3])[..29],
            )]),
            26,
            BodyLengthMismatch,
        ),
        (
            "fixed body one byte long",
            packet(&[raw_event(5, 1, 6, Some(1), &[0, 0, 0, 1, 0, 0])]),
            26,
            BodyLengthMismatch,
        ),
        (
            "body runs past the packet",
            packet(&[raw_event(6, 1, 10, Some(1), &text_body(b"abc"))]),
            32,
            Truncated,
        ),
        (
            "event header cut",
            concat(&[&header(NO_FLAGS, 1), &[2, 1, 0]]),
            26,
            Truncated,
        ),
        (
            "reliable id cut",
            concat(&[&header(NO_FLAGS, 1), &[2, 1, 0, 30, 0, 0]]),
            28,
            Truncated,
        ),
        (
            "count larger than the packet",
            concat(&[&header(NO_FLAGS, 2), &laser()]),
            62,
            Truncated,
        ),
        (
            "count 255 with no events",
            header(NO_FLAGS, 255),
            24,
            Truncated,
        ),
    ];
    // The reliable flag is mandatory on every type but RE_CUSTOM.
    for ty in 1u8..=10 {
        rows.push((
            "reliable flag missing on a non-custom event",
            packet(&[raw_event(ty, 0, 5, None, &[0, 0, 0, 1, 0])]),
            25,
            BadReliableFlag,
        ));
    }
    check(&rows);
}

#[test]
fn body_rules_reject_the_packet_at_the_offending_field() {
    use DecodeProblem::*;
    // Reliable events: body starts at 24 + 4 + 4 = 32.
    let object_with_id = |ty: u8, len: usize| {
        // All-zero body: the object id (the first field) is 0, the rest is valid.
        packet(&[reliable(ty, &vec![0u8; len])])
    };
    let mut kill16 = 1u32.to_be_bytes().to_vec();
    kill16.push(16);
    let mut kill255 = 1u32.to_be_bytes().to_vec();
    kill255.push(255);
    check(&[
        (
            "zero object id, create object",
            object_with_id(1, 38),
            32,
            ZeroObjectId,
        ),
        (
            "zero object id, laser",
            object_with_id(2, 30),
            32,
            ZeroObjectId,
        ),
        (
            "zero object id, missile",
            object_with_id(3, 34),
            32,
            ZeroObjectId,
        ),
        (
            "zero object id, extra",
            object_with_id(4, 18),
            32,
            ZeroObjectId,
        ),
        (
            "zero object id, kill",
            object_with_id(5, 5),
            32,
            ZeroObjectId,
        ),
        (
            "list id 16",
            packet(&[reliable(5, &kill16)]),
            36,
            BadListId(16),
        ),
        (
            "list id 255",
            packet(&[reliable(5, &kill255)]),
            36,
            BadListId(255),
        ),
        (
            "NaN laser position x",
            packet(&[reliable(2, &laser_body(1, [f32::NAN, 0.0, 0.0], [0.0; 3]))]),
            38,
            NonFiniteFloat,
        ),
        (
            "inf laser direction z",
            packet(&[reliable(
                2,
                &laser_body(1, [0.0; 3], [0.0, 0.0, f32::INFINITY]),
            )]),
            58,
            NonFiniteFloat,
        ),
        (
            "NaN particle origin",
            packet(&[reliable(
                8,
                &concat(&[&[0, 1], &f32s(&[0.0, 0.0, f32::NAN])]),
            )]),
            42,
            NonFiniteFloat,
        ),
        (
            "name of 32 bytes",
            packet(&[reliable(7, &text_body(&[b'n'; 32]))]),
            32,
            TextTooLong,
        ),
        (
            "name of 255 bytes",
            packet(&[reliable(7, &text_body(&[b'n'; 255]))]),
            32,
            TextTooLong,
        ),
        (
            "text with NUL",
            packet(&[reliable(6, &text_body(b"a\0c"))]),
            34,
            TextContainsNul,
        ),
        (
            "name with NUL",
            packet(&[reliable(7, &text_body(b"\0"))]),
            33,
            TextContainsNul,
        ),
        (
            "text body longer than the text",
            packet(&[raw_event(
                6,
                1,
                6,
                Some(1),
                &concat(&[&text_body(b"abc"), b"xy"]),
            )]),
            36,
            BodyLengthMismatch,
        ),
        (
            "text body shorter than the text",
            packet(&[raw_event(6, 1, 3, Some(1), &text_body(b"abc"))]),
            33,
            BodyLengthMismatch,
        ),
        (
            "RE_VACATED body of 3 bytes",
            packet(&[raw_event(15, 1, 3, Some(1), &[0, 0, 9])]),
            26,
            BodyLengthMismatch,
        ),
        (
            "empty text body",
            packet(&[raw_event(6, 1, 0, Some(1), &[])]),
            32,
            BodyLengthMismatch,
        ),
        (
            "custom data of 257 bytes",
            packet(&[raw_event(11, 0, 261, None, &custom_body(1, 257, &[0; 257]))]),
            30,
            CustomDataTooLong,
        ),
        (
            "custom body longer than its data",
            packet(&[raw_event(11, 0, 9, None, &custom_body(1, 4, b"abcde"))]),
            36,
            BodyLengthMismatch,
        ),
        (
            "custom data longer than its body",
            packet(&[raw_event(11, 0, 7, None, &custom_body(1, 4, b"abcd")[..7])]),
            32,
            BodyLengthMismatch,
        ),
    ]);
}

#[test]
fn player_list_and_connect_queue_rules_reject_the_packet() {
    use DecodeProblem::*;
    // Body at 32: count at 32, first entry at 33 (slot 33, flags 34, token 35..39, node, name).
    let entry_len = player(0, 0, 1, b"ab").len();
    assert_eq!(entry_len, 41);
    let list = |count: u8, entries: &[Vec<u8>]| packet(&[reliable(9, &list_body(count, entries))]);
    let queue =
        |count: u8, entries: &[Vec<u8>]| packet(&[reliable(10, &list_body(count, entries))]);
    let seventeen: Vec<Vec<u8>> = (0..17).map(|s| player(s % 16, 0, 1, b"")).collect();
    check(&[
        ("player list count 0", list(0, &[]), 32, BadCount(0)),
        (
            "player list count 17",
            list(17, &seventeen),
            32,
            BadCount(17),
        ),
        (
            "player slot 16",
            list(1, &[player(16, 0, 1, b"ab")]),
            33,
            BadSlot(16),
        ),
        (
            "player slot 255",
            list(1, &[player(255, 0, 1, b"ab")]),
            33,
            BadSlot(255),
        ),
        (
            "duplicate slot",
            list(2, &[player(3, 0, 1, b"ab"), player(3, 1, 2, b"cd")]),
            33 + entry_len,
            DuplicateSlot(3),
        ),
        (
            "player flag bit 1",
            list(1, &[player(1, 2, 1, b"ab")]),
            34,
            ReservedBitsSet,
        ),
        (
            "player token 0",
            list(1, &[player(1, 1, 0, b"ab")]),
            35,
            ZeroToken,
        ),
        (
            "player name of 32 bytes",
            list(1, &[player(1, 1, 1, &[b'x'; 32])]),
            71,
            TextTooLong,
        ),
        (
            "player name with NUL",
            list(1, &[player(1, 1, 1, b"a\0")]),
            73,
            TextContainsNul,
        ),
        (
            "player count above the entries present",
            list(2, &[player(1, 1, 1, b"ab")]),
            33 + entry_len,
            BodyLengthMismatch,
        ),
        ("queue count 0", queue(0, &[]), 32, BadCount(0)),
        (
            "queue count 17",
            queue(17, &vec![request(1, b""); 17]),
            32,
            BadCount(17),
        ),
        (
            "queue token 0",
            queue(2, &[request(1, b"a"), request(0, b"b")]),
            33 + 38,
            ZeroToken,
        ),
    ]);
}

#[test]
fn trailing_bytes_reject_the_packet() {
    use DecodeProblem::*;
    let full = packet(&[laser()]);
    check(&[
        (
            "one byte after the last event",
            concat(&[&full, &[0]]),
            full.len(),
            TrailingBytes,
        ),
        (
            "bytes after a header with no events",
            concat(&[&header(NO_FLAGS, 0), b"xyz"]),
            24,
            TrailingBytes,
        ),
        (
            "bytes after the state",
            concat(&[&header(STATE, 0), &state(), &[1]]),
            96,
            TrailingBytes,
        ),
    ]);
}

#[test]
fn the_first_bad_field_wins() {
    // Unknown packet type and zero token: the type (earlier) is reported.
    let mut b = packet(&[]);
    b[4] = 0;
    b[20..24].copy_from_slice(&[0; 4]);
    check(&[("two problems", b, 4, DecodeProblem::UnknownPacketType(0))]);
    // A good event followed by a bad one: nothing of the good one is returned.
    let bad = raw_event(99, 1, 0, Some(1), &[]);
    check(&[(
        "good then bad",
        packet(&[laser(), bad]),
        62,
        DecodeProblem::UnknownEventType(99),
    )]);
}

#[test]
fn problems_have_stable_labels_and_readable_messages() {
    let e = DecodeError {
        offset: 37,
        problem: DecodeProblem::UnknownEventType(99),
    };
    assert_eq!(e.to_string(), "at byte 37: unknown event type 99");
    assert_eq!(e.problem.label(), "unknown_event_type");
    assert_eq!(DecodeProblem::BadSlot(20).label(), "bad_slot");
    assert_eq!(DecodeProblem::TrailingBytes.label(), "trailing_bytes");
    // Every label is snake_case and listed once in LABELS.
    let all = [
        DecodeProblem::BadSignature,
        DecodeProblem::UnsupportedVersion(2),
        DecodeProblem::UnknownPacketType(0),
        DecodeProblem::BadSlot(16),
        DecodeProblem::ReservedBitsSet,
        DecodeProblem::Truncated,
        DecodeProblem::ZeroSequence,
        DecodeProblem::AckFieldsWithoutFlag,
        DecodeProblem::ZeroAck,
        DecodeProblem::ZeroToken,
        DecodeProblem::UnknownEventType(0),
        DecodeProblem::BadReliableFlag,
        DecodeProblem::ZeroReliableId,
        DecodeProblem::BodyLengthMismatch,
        DecodeProblem::NonFiniteFloat,
        DecodeProblem::TextTooLong,
        DecodeProblem::TextContainsNul,
        DecodeProblem::ZeroObjectId,
        DecodeProblem::BadListId(16),
        DecodeProblem::BadCount(0),
        DecodeProblem::DuplicateSlot(1),
        DecodeProblem::CustomDataTooLong,
        DecodeProblem::TrailingBytes,
    ];
    let labels: Vec<&str> = all.iter().map(|p| p.label()).collect();
    assert_eq!(labels, DecodeProblem::LABELS);
    for label in labels {
        assert!(
            label.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{label}"
        );
    }
}
