//! The packet writer: it fills a packet up to the buffer's size, keeps the buffer a valid packet
//! when an event does not fit, and refuses (with nothing written) every header, state or event
//! the decoder would reject.

use net_core::rmev::{
    ChatText, ConnectRequest, CustomData, PlayerListEntry, PlayerName, RemoteEvent, ShipState,
};
use net_core::wire::{
    decode_packet, encoded_len, Ack, EncodeError, PacketHeader, PacketType, PacketWriter,
    WireEvent, HEADER_LEN, MAX_EVENTS_PER_PACKET, SHIP_STATE_LEN,
};
use net_core::Node;

fn header() -> PacketHeader {
    PacketHeader {
        kind: PacketType::GameState,
        sender_slot: Some(0),
        joined: true,
        sequence: 1,
        ack: Some(Ack { latest: 1, bits: 0 }),
        token: 1,
    }
}

fn laser(id: u32) -> WireEvent {
    WireEvent {
        reliable_id: Some(id),
        event: RemoteEvent::CreateLaser {
            object_id: id,
            class: 1,
            pos: [1.0; 3],
            dir: [0.0; 3],
        },
    }
}

fn custom(len: usize, reliable_id: Option<u32>) -> WireEvent {
    WireEvent {
        reliable_id,
        event: RemoteEvent::Custom {
            custom_type: 5,
            data: CustomData::new(&vec![0x5A; len]).unwrap(),
            reliable: reliable_id.is_some(),
        },
    }
}

fn text(id: u32, s: &str) -> WireEvent {
    WireEvent {
        reliable_id: Some(id),
        event: RemoteEvent::SendText(ChatText::new(s.as_bytes()).unwrap()),
    }
}

fn mix(n: u32) -> Vec<WireEvent> {
    (1..=n)
        .map(|i| match i % 4 {
            0 => laser(i),
            1 => custom(64, Some(i)),
            2 => text(i, "a line of chat"),
            _ => custom(64, None),
        })
        .collect()
}

/// Push until `push` says no; the packet must fit the buffer and decode to exactly what was
/// pushed.
fn fill(cap: usize, state: Option<&ShipState>) -> usize {
    let mut buf = vec![0u8; cap];
    let events = mix(1000);
    let mut writer = PacketWriter::new(&mut buf, &header(), state).unwrap();
    let mut pushed = 0;
    for ev in &events {
        if !writer.push(ev).unwrap() {
            assert!(encoded_len(ev) > writer.remaining());
            break;
        }
        pushed += 1;
    }
    let len = writer.finish();
    assert!(len <= cap);
    let mut decoded = Vec::new();
    let packet = decode_packet(&buf[..len], &mut decoded).unwrap();
    assert_eq!(packet.header, header());
    assert_eq!(packet.state.as_ref(), state);
    assert_eq!(decoded, events[..pushed]);
    pushed
}

#[test]
fn pushing_until_full_yields_a_packet_within_the_buffer_that_decodes_to_the_pushed_events() {
    let udp = fill(1400, Some(&ShipState::default()));
    let ipx = fill(546, Some(&ShipState::default()));
    let no_state = fill(546, None);
    assert!(
        udp > ipx && ipx > 0 && no_state > ipx,
        "{udp} {ipx} {no_state}"
    );
}

#[test]
fn an_event_that_does_not_fit_leaves_a_valid_packet_and_fits_the_next_one() {
    let mut buf = vec![0u8; HEADER_LEN + 20];
    let big = custom(64, None);
    let small = custom(4, None);
    let mut writer = PacketWriter::new(&mut buf, &header(), None).unwrap();
    assert_eq!(writer.remaining(), 20);
    assert!(!writer.push(&big).unwrap());
    assert_eq!(writer.remaining(), 20);
    assert_eq!(writer.event_count(), 0);
    assert!(writer.push(&small).unwrap());
    assert_eq!(writer.remaining(), 20 - encoded_len(&small));
    assert!(!writer.push(&big).unwrap());
    // The buffer holds a valid packet at every point, even without finish().
    // The writer is not finished: its borrow of `buf` simply ends here.
    let len = writer.len();
    let mut decoded = Vec::new();
    decode_packet(&buf[..len], &mut decoded).unwrap();
    assert_eq!(decoded, vec![small]);

    let mut next = vec![0u8; 1400];
    let mut writer = PacketWriter::new(&mut next, &header(), None).unwrap();
    assert!(writer.push(&big).unwrap());
    let len = writer.finish();
    decode_packet(&next[..len], &mut decoded).unwrap();
    assert_eq!(decoded, vec![big]);
}

#[test]
fn the_event_count_stops_at_255_and_the_rest_waits_for_the_next_packet() {
    let mut buf = vec![0u8; 8 * 1024];
    let ev = custom(0, None);
    let mut writer = PacketWriter::new(&mut buf, &header(), None).unwrap();
    for _ in 0..MAX_EVENTS_PER_PACKET {
        assert!(writer.push(&ev).unwrap());
    }
    assert!(writer.remaining() > encoded_len(&ev));
    assert_eq!(writer.push(&ev), Ok(false));
    let len = writer.finish();
    assert_eq!(len, HEADER_LEN + 255 * 8);
    let mut decoded = Vec::new();
    decode_packet(&buf[..len], &mut decoded).unwrap();
    assert_eq!(decoded.len(), 255);
}

#[test]
fn a_buffer_too_small_for_the_header_or_state_is_refused() {
    let mut buf = vec![0u8; HEADER_LEN - 1];
    assert_eq!(
        PacketWriter::new(&mut buf, &header(), None).err(),
        Some(EncodeError::DoesNotFit {
            needed: 24,
            available: 23
        })
    );
    let mut buf = vec![0u8; HEADER_LEN + SHIP_STATE_LEN - 1];
    assert_eq!(
        PacketWriter::new(&mut buf, &header(), Some(&ShipState::default())).err(),
        Some(EncodeError::DoesNotFit {
            needed: 96,
            available: 95
        })
    );
    let mut buf = vec![0u8; HEADER_LEN];
    let mut writer = PacketWriter::new(&mut buf, &header(), None).unwrap();
    assert_eq!(writer.remaining(), 0);
    assert_eq!(writer.push(&custom(0, None)), Ok(false));
    assert_eq!(writer.finish(), HEADER_LEN);
}

#[test]
fn headers_and_states_the_decoder_would_reject_are_refused() {
    let cases = [
        (
            PacketHeader {
                sender_slot: Some(16),
                ..header()
            },
            EncodeError::BadSlot(16),
        ),
        (
            PacketHeader {
                sender_slot: Some(255),
                ..header()
            },
            EncodeError::BadSlot(255),
        ),
        (
            PacketHeader {
                sequence: 0,
                ..header()
            },
            EncodeError::ZeroSequence,
        ),
        (
            PacketHeader {
                ack: Some(Ack { latest: 0, bits: 1 }),
                ..header()
            },
            EncodeError::ZeroAck,
        ),
        (
            PacketHeader {
                token: 0,
                ..header()
            },
            EncodeError::ZeroToken,
        ),
    ];
    for (h, expected) in cases {
        let mut buf = [0u8; 64];
        assert_eq!(PacketWriter::new(&mut buf, &h, None).err(), Some(expected));
        assert_eq!(buf, [0u8; 64], "nothing written for {expected}");
    }
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let state = ShipState {
            vel: [0.0, bad, 0.0],
            ..ShipState::default()
        };
        let mut buf = [0u8; 128];
        assert_eq!(
            PacketWriter::new(&mut buf, &header(), Some(&state)).err(),
            Some(EncodeError::NonFiniteFloat)
        );
        assert_eq!(buf, [0u8; 128]);
    }
}

#[test]
fn events_the_decoder_would_reject_are_refused_and_nothing_is_written() {
    let node = Node { bytes: [1; 32] };
    let name = PlayerName::new(b"p").unwrap();
    let entry = |slot: u8, token: u32| PlayerListEntry {
        slot,
        joined: false,
        token,
        node,
        name,
    };
    let request = |token: u32| ConnectRequest { token, node, name };
    let reliable = |event: RemoteEvent| WireEvent {
        reliable_id: Some(1),
        event,
    };
    let cases = vec![
        (
            "non-custom without reliable id",
            WireEvent {
                reliable_id: None,
                ..laser(1)
            },
            EncodeError::BadReliableFlag,
        ),
        (
            "reliable custom without reliable id",
            WireEvent {
                reliable_id: None,
                ..custom(1, Some(1))
            },
            EncodeError::BadReliableFlag,
        ),
        (
            "unreliable custom with a reliable id",
            WireEvent {
                reliable_id: Some(1),
                ..custom(1, None)
            },
            EncodeError::BadReliableFlag,
        ),
        ("reliable id 0", laser(0), EncodeError::ZeroReliableId),
        (
            "zero object id",
            reliable(RemoteEvent::KillObject {
                object_id: 0,
                list_id: 0,
            }),
            EncodeError::ZeroObjectId,
        ),
        (
            "zero object id on create object",
            reliable(RemoteEvent::CreateObject {
                object_id: 0,
                class: 0,
                pos: [0.0; 3],
                orient: [0.0; 4],
                flags: 0,
            }),
            EncodeError::ZeroObjectId,
        ),
        (
            "list id 16",
            reliable(RemoteEvent::KillObject {
                object_id: 1,
                list_id: 16,
            }),
            EncodeError::BadListId(16),
        ),
        (
            "NaN laser position",
            reliable(RemoteEvent::CreateLaser {
                object_id: 1,
                class: 0,
                pos: [f32::NAN; 3],
                dir: [0.0; 3],
            }),
            EncodeError::NonFiniteFloat,
        ),
        (
            "inf missile direction",
            reliable(RemoteEvent::CreateMissile {
                object_id: 1,
                class: 0,
                pos: [0.0; 3],
                dir: [0.0, f32::INFINITY, 0.0],
                target_id: 2,
            }),
            EncodeError::NonFiniteFloat,
        ),
        (
            "NaN extra position",
            reliable(RemoteEvent::CreateExtra {
                object_id: 1,
                extra_index: 0,
                pos: [0.0, 0.0, f32::NAN],
            }),
            EncodeError::NonFiniteFloat,
        ),
        (
            "-inf particle origin",
            reliable(RemoteEvent::ParticleObject {
                particle_type: 0,
                origin: [f32::NEG_INFINITY; 3],
            }),
            EncodeError::NonFiniteFloat,
        ),
        (
            "NaN create object orientation",
            reliable(RemoteEvent::CreateObject {
                object_id: 1,
                class: 0,
                pos: [0.0; 3],
                orient: [0.0, 0.0, 0.0, f32::NAN],
                flags: 0,
            }),
            EncodeError::NonFiniteFloat,
        ),
        (
            "empty player list",
            reliable(RemoteEvent::PlayerList(vec![])),
            EncodeError::BadCount(0),
        ),
        (
            "17 players",
            reliable(RemoteEvent::PlayerList(
                (0..17).map(|s| entry(s % 16, 1)).collect(),
            )),
            EncodeError::BadCount(17),
        ),
        (
            "player slot 16",
            reliable(RemoteEvent::PlayerList(vec![entry(16, 1)])),
            EncodeError::BadSlot(16),
        ),
        (
            "duplicate player slot",
            reliable(RemoteEvent::PlayerList(vec![entry(2, 1), entry(2, 2)])),
            EncodeError::DuplicateSlot(2),
        ),
        (
            "zero player token",
            reliable(RemoteEvent::PlayerList(vec![entry(2, 0)])),
            EncodeError::ZeroToken,
        ),
        (
            "empty connect queue",
            reliable(RemoteEvent::ConnectQueue(vec![])),
            EncodeError::BadCount(0),
        ),
        (
            "17 connect requests",
            reliable(RemoteEvent::ConnectQueue(vec![request(1); 17])),
            EncodeError::BadCount(17),
        ),
        (
            "zero connect token",
            reliable(RemoteEvent::ConnectQueue(vec![request(1), request(0)])),
            EncodeError::ZeroToken,
        ),
    ];
    for (name, ev, expected) in cases {
        let mut buf = vec![0u8; 2048];
        let mut writer = PacketWriter::new(&mut buf, &header(), None).unwrap();
        assert!(writer.push(&laser(7)).unwrap());
        let before = writer.len();
        assert_eq!(writer.push(&ev), Err(expected), "case {name:?}");
        assert_eq!(writer.len(), before, "case {name:?}: length unchanged");
        assert_eq!(writer.event_count(), 1, "case {name:?}");
        let len = writer.finish();
        assert!(
            buf[len..].iter().all(|&b| b == 0),
            "case {name:?}: nothing written past the packet"
        );
        let mut decoded = Vec::new();
        decode_packet(&buf[..len], &mut decoded).unwrap();
        assert_eq!(decoded, vec![laser(7)], "case {name:?}");
    }
    // An event that breaks a rule is refused even when there is no room for it.
    let mut buf = vec![0u8; HEADER_LEN];
    let mut writer = PacketWriter::new(&mut buf, &header(), None).unwrap();
    assert_eq!(writer.push(&laser(0)), Err(EncodeError::ZeroReliableId));
}

#[test]
fn encode_errors_have_labels_and_messages() {
    assert_eq!(EncodeError::BadListId(16).label(), "bad_list_id");
    assert_eq!(EncodeError::BadListId(16).to_string(), "bad list id 16");
    assert_eq!(
        EncodeError::DoesNotFit {
            needed: 30,
            available: 24
        }
        .to_string(),
        "does not fit: 30 bytes needed, 24 available"
    );
}
