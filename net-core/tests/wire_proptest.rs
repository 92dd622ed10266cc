//! Property tests of the game packet codec: everything the encoder accepts decodes to the same
//! values and re-encodes to the same bytes, and no input of any kind makes the decoder panic.

use net_core::rmev::{
    ChatText, ConnectRequest, CustomData, EarlierTokens, PlayerListEntry, PlayerName, RemoteEvent,
    ResumeStep, ShipState, ShortText, GAME_AREA_LEN, MAX_CUSTOM_DATA, MAX_EARLIER_TOKENS,
    MAX_LIST_ID, MAX_NAME_LEN, MAX_TEXT_LEN,
};
use net_core::wire::{
    decode_packet, encode_packet, encoded_len, Ack, PacketHeader, PacketType, PacketWriter,
    WireEvent, HEADER_LEN,
};
use net_core::Node;
use proptest::prelude::*;

/// Large enough for any packet the strategies below produce.
const BIG: usize = 64 * 1024;

fn finite_f32() -> impl Strategy<Value = f32> {
    use proptest::num::f32::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO
}

fn vec3() -> impl Strategy<Value = [f32; 3]> {
    [finite_f32(), finite_f32(), finite_f32()]
}

fn vec4() -> impl Strategy<Value = [f32; 4]> {
    [finite_f32(), finite_f32(), finite_f32(), finite_f32()]
}

fn object_id() -> impl Strategy<Value = u32> {
    1..=u32::MAX
}

fn short_text<const N: usize>() -> impl Strategy<Value = ShortText<N>> {
    proptest::collection::vec(1u8..=255, 0..=N).prop_map(|b| ShortText::new(&b).unwrap())
}

fn name() -> impl Strategy<Value = PlayerName> {
    short_text::<MAX_NAME_LEN>()
}

fn text() -> impl Strategy<Value = ChatText> {
    proptest::collection::vec(1u8..=255, 0..=MAX_TEXT_LEN).prop_map(|b| ChatText::new(&b).unwrap())
}

fn node() -> impl Strategy<Value = Node> {
    any::<[u8; 32]>().prop_map(|bytes| Node { bytes })
}

fn player_list() -> impl Strategy<Value = Vec<PlayerListEntry>> {
    proptest::sample::subsequence((0u8..16).collect::<Vec<_>>(), 1..=16)
        .prop_shuffle()
        .prop_flat_map(|slots| {
            let n = slots.len();
            (
                Just(slots),
                proptest::collection::vec((any::<bool>(), 1..=u32::MAX, node(), name()), n),
            )
        })
        .prop_map(|(slots, rest)| {
            slots
                .into_iter()
                .zip(rest)
                .map(|(slot, (joined, token, node, name))| PlayerListEntry {
                    slot,
                    joined,
                    token,
                    node,
                    name,
                })
                .collect()
        })
}

fn connect_queue() -> impl Strategy<Value = Vec<ConnectRequest>> {
    proptest::collection::vec(
        (1..=u32::MAX, node(), name()).prop_map(|(token, node, name)| ConnectRequest {
            token,
            node,
            name,
        }),
        1..=16,
    )
}

fn remote_event() -> impl Strategy<Value = RemoteEvent> {
    prop_oneof![
        (object_id(), any::<u16>(), vec3(), vec4(), any::<u32>()).prop_map(
            |(object_id, class, pos, orient, flags)| RemoteEvent::CreateObject {
                object_id,
                class,
                pos,
                orient,
                flags
            }
        ),
        (object_id(), any::<u16>(), vec3(), vec3()).prop_map(|(object_id, class, pos, dir)| {
            RemoteEvent::CreateLaser {
                object_id,
                class,
                pos,
                dir,
            }
        }),
        (object_id(), any::<u16>(), vec3(), vec3(), any::<u32>()).prop_map(
            |(object_id, class, pos, dir, target_id)| RemoteEvent::CreateMissile {
                object_id,
                class,
                pos,
                dir,
                target_id
            }
        ),
        (object_id(), any::<u16>(), vec3()).prop_map(|(object_id, extra_index, pos)| {
            RemoteEvent::CreateExtra {
                object_id,
                extra_index,
                pos,
            }
        }),
        (object_id(), 0..=MAX_LIST_ID)
            .prop_map(|(object_id, list_id)| RemoteEvent::KillObject { object_id, list_id }),
        text().prop_map(RemoteEvent::SendText),
        name().prop_map(RemoteEvent::PlayerName),
        (any::<u16>(), vec3()).prop_map(|(particle_type, origin)| {
            RemoteEvent::ParticleObject {
                particle_type,
                origin,
            }
        }),
        player_list().prop_map(RemoteEvent::PlayerList),
        connect_queue().prop_map(RemoteEvent::ConnectQueue),
        (any::<bool>(), any::<u8>())
            .prop_map(|(joined, flag)| RemoteEvent::PlayerStatus { joined, flag }),
        proptest::collection::vec(1..=u32::MAX, 0..=MAX_EARLIER_TOKENS)
            .prop_map(|t| RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::new(t)))),
        (1..=u32::MAX, 1..=u32::MAX, any::<u32>()).prop_map(|(yours, mine, delivered)| {
            RemoteEvent::Resume(ResumeStep::Answer {
                yours,
                mine,
                delivered,
            })
        }),
        Just(RemoteEvent::Resume(ResumeStep::Done)),
        any::<u32>().prop_map(RemoteEvent::Rate),
        any::<u32>().prop_map(|told| RemoteEvent::Vacated { told }),
        (
            any::<u16>(),
            proptest::collection::vec(any::<u8>(), 0..=MAX_CUSTOM_DATA),
            any::<bool>()
        )
            .prop_map(|(custom_type, data, reliable)| RemoteEvent::Custom {
                custom_type,
                data: CustomData::new(&data).unwrap(),
                reliable,
            }),
    ]
}

fn wire_event() -> impl Strategy<Value = WireEvent> {
    (remote_event(), 1..=u32::MAX).prop_map(|(event, id)| WireEvent {
        reliable_id: event.is_reliable().then_some(id),
        event,
    })
}

fn header() -> impl Strategy<Value = PacketHeader> {
    (
        1u8..=10,
        proptest::option::of(0u8..16),
        any::<bool>(),
        1..=u32::MAX,
        proptest::option::of((1..=u32::MAX, any::<u32>())),
        1..=u32::MAX,
    )
        .prop_map(
            |(kind, sender_slot, joined, sequence, ack, token)| PacketHeader {
                kind: PacketType::from_u8(kind).unwrap(),
                sender_slot,
                joined,
                sequence,
                ack: ack.map(|(latest, bits)| Ack { latest, bits }),
                token,
            },
        )
}

fn ship_state() -> impl Strategy<Value = ShipState> {
    (vec3(), vec4(), vec3(), any::<[u8; GAME_AREA_LEN]>()).prop_map(|(pos, orient, vel, game)| {
        ShipState {
            pos,
            orient,
            vel,
            game,
        }
    })
}

fn plain_header() -> PacketHeader {
    PacketHeader {
        kind: PacketType::GameState,
        sender_slot: Some(1),
        joined: true,
        sequence: 1,
        ack: None,
        token: 42,
    }
}

/// Encode, decode, compare, and re-encode to the same bytes.
fn round_trip(header: &PacketHeader, state: Option<&ShipState>, events: &[WireEvent]) -> Vec<u8> {
    let mut buf = vec![0u8; BIG];
    let len = encode_packet(&mut buf, header, state, events).expect("encodes");
    let bytes = &buf[..len];
    let expected_len =
        HEADER_LEN + state.map_or(0, |_| 72) + events.iter().map(encoded_len).sum::<usize>();
    assert_eq!(
        len, expected_len,
        "packet length is header + state + encoded_len of each event"
    );

    let mut decoded = Vec::new();
    let packet = decode_packet(bytes, &mut decoded).expect("decodes");
    assert_eq!(&packet.header, header);
    assert_eq!(packet.state.as_ref(), state);
    assert_eq!(decoded, events);

    let mut again = vec![0u8; BIG];
    let len2 = encode_packet(&mut again, &packet.header, packet.state.as_ref(), &decoded).unwrap();
    assert_eq!(&again[..len2], bytes, "re-encoding is byte-identical");
    bytes.to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_event_type_round_trips_alone(ev in wire_event()) {
        round_trip(&plain_header(), None, std::slice::from_ref(&ev));
    }

    #[test]
    fn whole_packets_round_trip(
        header in header(),
        state in proptest::option::of(ship_state()),
        events in proptest::collection::vec(wire_event(), 0..24),
    ) {
        round_trip(&header, state.as_ref(), &events);
    }

    #[test]
    fn pushing_until_full_yields_a_packet_within_the_buffer_that_decodes_to_the_pushed_events(
        header in header(),
        state in proptest::option::of(ship_state()),
        events in proptest::collection::vec(wire_event(), 1..64),
        cap in 96usize..2000,
    ) {
        let mut buf = vec![0u8; cap];
        let Ok(mut writer) = PacketWriter::new(&mut buf, &header, state.as_ref()) else {
            prop_assert!(cap < HEADER_LEN + state.map_or(0, |_| 72));
            return Ok(());
        };
        let mut pushed = Vec::new();
        for ev in events.iter().cycle().take(400) {
            if !writer.push(ev).unwrap() {
                prop_assert!(encoded_len(ev) > writer.remaining() || writer.event_count() == 255);
                break;
            }
            pushed.push(ev.clone());
        }
        let len = writer.finish();
        prop_assert!(len <= cap);
        let mut decoded = Vec::new();
        let packet = decode_packet(&buf[..len], &mut decoded).unwrap();
        prop_assert_eq!(packet.header, header);
        prop_assert_eq!(decoded, pushed);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_errors_return_no_events(
        bytes in proptest::collection::vec(any::<u8>(), 0..1600),
    ) {
        let mut events = vec![WireEvent {
            reliable_id: None,
            event: RemoteEvent::Custom { custom_type: 0, data: CustomData::new(&[]).unwrap(), reliable: false },
        }];
        if decode_packet(&bytes, &mut events).is_err() {
            prop_assert!(events.is_empty());
        }
    }

    #[test]
    fn bytes_after_a_valid_signature_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..1600),
        kind in 0u8..12,
        flags in 0u8..8,
    ) {
        let mut bytes = b"PSN\x01".to_vec();
        bytes.push(kind);
        bytes.push(255);
        bytes.push(flags);
        bytes.extend_from_slice(&tail);
        let mut events = Vec::new();
        match decode_packet(&bytes, &mut events) {
            Ok(packet) => {
                // Whatever is accepted is canonical: it re-encodes to the same bytes.
                let mut again = vec![0u8; BIG];
                let len = encode_packet(&mut again, &packet.header, packet.state.as_ref(), &events).unwrap();
                prop_assert_eq!(&again[..len], &bytes[..]);
            }
            Err(_) => prop_assert!(events.is_empty()),
        }
    }

    #[test]
    fn mutated_valid_packets_never_panic_and_accepted_ones_are_canonical(
        header in header(),
        state in proptest::option::of(ship_state()),
        events in proptest::collection::vec(wire_event(), 0..8),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        extra in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        let mut bytes = round_trip(&header, state.as_ref(), &events);
        for (at, xor) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= xor;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        bytes.extend_from_slice(&extra);
        let mut decoded = Vec::new();
        match decode_packet(&bytes, &mut decoded) {
            Ok(packet) => {
                let mut again = vec![0u8; BIG];
                let len = encode_packet(&mut again, &packet.header, packet.state.as_ref(), &decoded).unwrap();
                prop_assert_eq!(&again[..len], &bytes[..]);
            }
            Err(e) => {
                prop_assert!(decoded.is_empty());
                prop_assert!(e.offset <= bytes.len());
            }
        }
    }
}

#[test]
fn one_of_each_event_type_round_trips_in_one_packet() {
    let node = Node { bytes: [7; 32] };
    let name = PlayerName::new(b"Ace").unwrap();
    let events: Vec<RemoteEvent> = vec![
        RemoteEvent::CreateObject {
            object_id: 1,
            class: 2,
            pos: [1.0, 2.0, 3.0],
            orient: [0.0, 0.0, 0.0, 1.0],
            flags: 0xFFFF_FFFF,
        },
        RemoteEvent::CreateLaser {
            object_id: 2,
            class: 3,
            pos: [0.0; 3],
            dir: [0.0, 0.0, 1.0],
        },
        RemoteEvent::CreateMissile {
            object_id: 3,
            class: 4,
            pos: [-0.0; 3],
            dir: [1.0, 0.0, 0.0],
            target_id: 0,
        },
        RemoteEvent::CreateExtra {
            object_id: 4,
            extra_index: 9,
            pos: [f32::MAX, f32::MIN, 1e-40],
        },
        RemoteEvent::KillObject {
            object_id: 5,
            list_id: 15,
        },
        RemoteEvent::SendText(ChatText::new(&[b'x'; 255]).unwrap()),
        RemoteEvent::PlayerName(PlayerName::new(&[b'n'; 31]).unwrap()),
        RemoteEvent::ParticleObject {
            particle_type: 65535,
            origin: [1.5, -2.5, 0.0],
        },
        RemoteEvent::PlayerStatus {
            joined: false,
            flag: 3,
        },
        RemoteEvent::Resume(ResumeStep::Hello(EarlierTokens::new([1, u32::MAX, 7, 8]))),
        RemoteEvent::Resume(ResumeStep::Answer {
            yours: 1,
            mine: u32::MAX,
            delivered: 0,
        }),
        RemoteEvent::Resume(ResumeStep::Done),
        RemoteEvent::PlayerList(
            (0..16)
                .rev()
                .map(|slot| PlayerListEntry {
                    slot,
                    joined: slot % 2 == 0,
                    token: 100 + u32::from(slot),
                    node,
                    name,
                })
                .collect(),
        ),
        RemoteEvent::ConnectQueue(vec![
            ConnectRequest {
                token: 9,
                node,
                name
            };
            16
        ]),
        RemoteEvent::Custom {
            custom_type: 7,
            data: CustomData::new(&[0xAB; 256]).unwrap(),
            reliable: true,
        },
        RemoteEvent::Custom {
            custom_type: 8,
            data: CustomData::new(&[]).unwrap(),
            reliable: false,
        },
    ];
    let mut next_id = 0;
    let events: Vec<WireEvent> = events
        .into_iter()
        .map(|event| WireEvent {
            reliable_id: event.is_reliable().then(|| {
                next_id += 1;
                next_id
            }),
            event,
        })
        .collect();
    round_trip(&plain_header(), Some(&ShipState::default()), &events);
}
