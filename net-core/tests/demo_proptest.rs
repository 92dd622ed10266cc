//! Property tests of the demo format: any sequence of valid items at non-decreasing times
//! round-trips (bytes and timed playback), no input bytes make the decoder panic, and damage to a
//! valid demo never yields an item that was not recorded.
//!
//! These tests must never touch the file system or sleep: everything is in memory with virtual
//! time.

use std::time::{Duration, Instant};

use net_core::demo::{
    decode_demo, encode_end, encode_header, encode_item, DemoItem, DemoPlayer, OwnPlayer,
    HEADER_LEN, MAX_STRING_LEN,
};
use net_core::rmev::{
    ChatText, ConnectRequest, CustomData, PlayerListEntry, PlayerName, RemoteEvent, ShipState,
    ShortText, GAME_AREA_LEN, MAX_CUSTOM_DATA, MAX_LIST_ID, MAX_NAME_LEN, MAX_TEXT_LEN,
};
use net_core::session::events::GameEvent;
use net_core::Node;
use proptest::prelude::*;

fn float() -> impl Strategy<Value = f32> {
    use proptest::num::f32::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO
}

fn floats<const N: usize>() -> impl Strategy<Value = [f32; N]> {
    proptest::collection::vec(float(), N).prop_map(|v| {
        let mut out = [0.0f32; N];
        out.copy_from_slice(&v);
        out
    })
}

fn slot() -> impl Strategy<Value = u8> {
    0u8..16
}

fn nonzero() -> impl Strategy<Value = u32> {
    1..=u32::MAX
}

fn short_text<const N: usize>() -> impl Strategy<Value = ShortText<N>> {
    proptest::collection::vec(1u8..=255, 0..=N)
        .prop_map(|bytes| ShortText::new(&bytes).expect("no NUL, within the limit"))
}

fn player_name() -> impl Strategy<Value = PlayerName> {
    short_text::<MAX_NAME_LEN>()
}

fn chat_text() -> impl Strategy<Value = ChatText> {
    proptest::collection::vec(1u8..=255, 0..=MAX_TEXT_LEN)
        .prop_map(|bytes| ChatText::new(&bytes).expect("no NUL, within the limit"))
}

fn node() -> impl Strategy<Value = Node> {
    any::<[u8; 32]>().prop_map(|bytes| Node { bytes })
}

/// Text of at most `MAX_STRING_LEN` bytes of UTF-8 (any characters, NUL included).
fn reason() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..=64).prop_map(|chars| {
        let mut s = String::new();
        for c in chars {
            if s.len() + c.len_utf8() > MAX_STRING_LEN {
                break;
            }
            s.push(c);
        }
        s
    })
}

fn ship_state() -> impl Strategy<Value = ShipState> {
    (
        floats::<3>(),
        floats::<4>(),
        floats::<3>(),
        proptest::collection::vec(any::<u8>(), GAME_AREA_LEN),
    )
        .prop_map(|(pos, orient, vel, game_vec)| {
            let mut game = [0u8; GAME_AREA_LEN];
            game.copy_from_slice(&game_vec);
            ShipState {
                pos,
                orient,
                vel,
                game,
            }
        })
}

fn player_list() -> impl Strategy<Value = Vec<PlayerListEntry>> {
    proptest::sample::subsequence((0u8..16).collect::<Vec<_>>(), 1..=16).prop_flat_map(|slots| {
        let n = slots.len();
        proptest::collection::vec((any::<bool>(), nonzero(), node(), player_name()), n).prop_map(
            move |rest| {
                slots
                    .iter()
                    .zip(rest)
                    .map(|(&slot, (joined, token, node, name))| PlayerListEntry {
                        slot,
                        joined,
                        token,
                        node,
                        name,
                    })
                    .collect()
            },
        )
    })
}

fn connect_queue() -> impl Strategy<Value = Vec<ConnectRequest>> {
    proptest::collection::vec(
        (nonzero(), node(), player_name()).prop_map(|(token, node, name)| ConnectRequest {
            token,
            node,
            name,
        }),
        1..=16,
    )
}

fn remote_event() -> impl Strategy<Value = RemoteEvent> {
    prop_oneof![
        (
            nonzero(),
            any::<u16>(),
            floats::<3>(),
            floats::<4>(),
            any::<u32>()
        )
            .prop_map(
                |(object_id, class, pos, orient, flags)| RemoteEvent::CreateObject {
                    object_id,
                    class,
                    pos,
                    orient,
                    flags,
                }
            ),
        (nonzero(), any::<u16>(), floats::<3>(), floats::<3>()).prop_map(
            |(object_id, class, pos, dir)| RemoteEvent::CreateLaser {
                object_id,
                class,
                pos,
                dir,
            }
        ),
        (
            nonzero(),
            any::<u16>(),
            floats::<3>(),
            floats::<3>(),
            any::<u32>()
        )
            .prop_map(|(object_id, class, pos, dir, target_id)| {
                RemoteEvent::CreateMissile {
                    object_id,
                    class,
                    pos,
                    dir,
                    target_id,
                }
            }),
        (nonzero(), any::<u16>(), floats::<3>()).prop_map(|(object_id, extra_index, pos)| {
            RemoteEvent::CreateExtra {
                object_id,
                extra_index,
                pos,
            }
        }),
        (nonzero(), 0..=MAX_LIST_ID)
            .prop_map(|(object_id, list_id)| RemoteEvent::KillObject { object_id, list_id }),
        chat_text().prop_map(RemoteEvent::SendText),
        player_name().prop_map(RemoteEvent::PlayerName),
        (any::<u16>(), floats::<3>()).prop_map(|(particle_type, origin)| {
            RemoteEvent::ParticleObject {
                particle_type,
                origin,
            }
        }),
        player_list().prop_map(RemoteEvent::PlayerList),
        connect_queue().prop_map(RemoteEvent::ConnectQueue),
        (
            any::<u16>(),
            proptest::collection::vec(any::<u8>(), 0..=MAX_CUSTOM_DATA),
            any::<bool>()
        )
            .prop_map(|(custom_type, data, reliable)| RemoteEvent::Custom {
                custom_type,
                data: CustomData::new(&data).expect("within the limit"),
                reliable,
            }),
        (any::<bool>(), any::<u8>())
            .prop_map(|(joined, flag)| RemoteEvent::PlayerStatus { joined, flag }),
    ]
}

fn item() -> impl Strategy<Value = DemoItem> {
    let event = prop_oneof![
        slot().prop_map(|slot| GameEvent::Connected { slot }),
        reason().prop_map(|reason| GameEvent::Disconnected { reason }),
        (slot(), player_name()).prop_map(|(slot, name)| GameEvent::PlayerConnected { slot, name }),
        (slot(), reason())
            .prop_map(|(slot, reason)| GameEvent::PlayerDisconnected { slot, reason }),
        slot().prop_map(|slot| GameEvent::PlayerJoined { slot }),
        (slot(), any::<u8>()).prop_map(|(slot, flag)| GameEvent::PlayerUnjoined { slot, flag }),
        (slot(), player_name()).prop_map(|(slot, name)| GameEvent::PlayerName { slot, name }),
        (slot(), remote_event()).prop_map(|(slot, event)| GameEvent::Remote { slot, event }),
        reason().prop_map(|text| GameEvent::Error { text }),
    ];
    let own_player = proptest::option::of(
        (slot(), player_name()).prop_map(|(slot, name)| OwnPlayer { slot, name }),
    );
    prop_oneof![
        6 => event.prop_map(DemoItem::Event),
        2 => (slot(), ship_state()).prop_map(|(slot, state)| DemoItem::State { slot, state }),
        1 => own_player.prop_map(DemoItem::OwnPlayer),
        1 => (nonzero(), any::<bool>())
            .prop_map(|(object_id, created)| DemoItem::OwnObject { object_id, created }),
        1 => (nonzero(), slot())
            .prop_map(|(object_id, slot)| DemoItem::ObjectOwner { object_id, slot }),
    ]
}

/// Items with non-decreasing whole-microsecond times.
fn timed_items() -> impl Strategy<Value = Vec<(Duration, DemoItem)>> {
    proptest::collection::vec((0u64..5_000_000, item()), 0..24).prop_map(|steps| {
        let mut t = 0u64;
        steps
            .into_iter()
            .map(|(step, item)| {
                // Many items share a time, as in one frame.
                if step % 3 != 0 {
                    t += step;
                }
                (Duration::from_micros(t), item)
            })
            .collect()
    })
}

fn encode(items: &[(Duration, DemoItem)], end: Duration) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_header(42, &mut bytes);
    for (t, item) in items {
        encode_item(*t, item, &mut bytes).expect("valid item encodes");
    }
    encode_end(end, &mut bytes).expect("end encodes");
    bytes
}

fn is_prefix(got: &[(Duration, DemoItem)], of: &[(Duration, DemoItem)]) -> bool {
    got.len() <= of.len() && got.iter().zip(of).all(|(a, b)| a == b)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn item_sequences_round_trip(items in timed_items(), extra in 0u64..1000) {
        let end = items.last().map(|(t, _)| *t).unwrap_or_default()
            + Duration::from_micros(extra);
        let bytes = encode(&items, end);
        let contents = decode_demo(&bytes).expect("valid header");
        prop_assert_eq!(&contents.broken, &None);
        prop_assert_eq!(contents.end, Some(end));
        prop_assert_eq!(contents.header.start_unix_micros, 42);
        prop_assert_eq!(&contents.items, &items);

        // Re-encoding what was decoded gives the same bytes.
        prop_assert_eq!(encode(&contents.items, end), bytes);

        // Timed playback: each item exactly at its time, one per poll, in order.
        let start = Instant::now();
        let mut player = DemoPlayer::from_contents(contents, start);
        let mut played = Vec::new();
        while let Some(due) = player.poll_timeout() {
            if due > start {
                prop_assert_eq!(player.poll(due - Duration::from_nanos(1)), None);
            }
            let item = player.poll(due).expect("due");
            played.push((due - start, item));
        }
        prop_assert!(player.is_finished());
        prop_assert_eq!(player.items_played(), items.len());
        prop_assert_eq!(played, items);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_demo(&bytes);
    }

    #[test]
    fn arbitrary_records_after_a_valid_header_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..1024),
    ) {
        let mut bytes = Vec::new();
        encode_header(0, &mut bytes);
        bytes.extend_from_slice(&tail);
        let contents = decode_demo(&bytes).expect("valid header");
        if let Some(b) = &contents.broken {
            prop_assert!(b.offset as usize >= HEADER_LEN && b.offset as usize <= bytes.len());
        }
    }

    #[test]
    fn records_with_a_valid_crc_and_any_payload_never_panic(
        kind in 0u8..=12,
        time in any::<u64>(),
        payload in prop_oneof![
            // Short payloads (slot-only kinds) and a ship state's size decode now and then.
            proptest::collection::vec(0u8..20, 0..4),
            proptest::collection::vec(any::<u8>(), 73..=73),
            proptest::collection::vec(any::<u8>(), 0..400),
        ],
    ) {
        // A well-framed record (right length, right CRC) whose fields may be anything: every
        // payload check runs.
        let mut record = Vec::new();
        record.extend_from_slice(&(9 + payload.len() as u32).to_be_bytes());
        record.extend_from_slice(&time.to_be_bytes());
        record.push(kind);
        record.extend_from_slice(&payload);
        let crc = crc32fast::hash(&record);
        record.extend_from_slice(&crc.to_be_bytes());
        let mut bytes = Vec::new();
        encode_header(0, &mut bytes);
        bytes.extend_from_slice(&record);
        let contents = decode_demo(&bytes).expect("valid header");
        // Whatever decoded must encode again and decode to itself.
        if let Some((t, item)) = contents.items.first() {
            let again = encode(&contents.items, *t);
            let decoded = decode_demo(&again).expect("valid header");
            prop_assert_eq!(&decoded.items, &vec![(*t, item.clone())]);
            prop_assert_eq!(decoded.broken, None);
        }
    }

    #[test]
    fn damage_never_invents_items(
        items in timed_items(),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let end = items.last().map(|(t, _)| *t).unwrap_or_default();
        let original = encode(&items, end);
        let mut bytes = original.clone();
        for (at, mask) in &damage {
            // Keep the header intact: it is checked separately and would just be an error.
            let span = bytes.len() - HEADER_LEN;
            let i = HEADER_LEN + at.index(span);
            bytes[i] ^= mask;
        }
        if do_cut {
            let keep = HEADER_LEN + cut.index(bytes.len() - HEADER_LEN + 1);
            bytes.truncate(keep);
        }
        let contents = decode_demo(&bytes).expect("header intact");
        // Two flips of one byte with one mask undo each other: the file is whole again.
        if bytes != original {
            prop_assert!(contents.broken.is_some());
        }
        prop_assert!(is_prefix(&contents.items, &items));
        if let Some(b) = contents.broken.as_ref() {
            prop_assert!(b.offset as usize <= bytes.len());
        }
    }
}
