//! Demo files end to end: every item kind recorded to a real file and played back with virtual
//! time (no sleeping), damaged files (cut at every byte, a flipped byte in every position of a
//! record, data after the end), bad headers, unwritable paths and I/O errors while recording;
//! and what a played demo answers the game's lookups (`player_name`, `player_state`,
//! `owner_of`) at each event, against a live game of two instances on UDP loopback in this
//! process, and for a file recorded before the own-player records.
//!
//! These tests must never sleep (the live game waits on its sockets), never leave files behind,
//! and never write outside the system's temp directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use net_core::demo::{
    decode_demo, encode_end, encode_header, encode_item, DemoItem, DemoPlayer, DemoRecorder,
    OwnPlayer, HEADER_LEN, MAX_STRING_LEN,
};
use net_core::rmev::{
    ChatText, ConnectRequest, CustomData, PlayerListEntry, PlayerName, RemoteEvent, ShipState,
    GAME_AREA_LEN,
};
use net_core::session::events::GameEvent;
use net_core::{ErrorCode, Node, Subsystem};

#[path = "support/loopback.rs"]
mod loopback;
use loopback::{console, loopback_game};

/// A temp file path unique to this process and call, removed when dropped.
struct TempPath(PathBuf);

impl TempPath {
    fn new(tag: &str) -> TempPath {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        TempPath(std::env::temp_dir().join(format!(
            "pnet-demo-test-{}-{tag}-{n}.demo",
            std::process::id()
        )))
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn name(s: &str) -> PlayerName {
    PlayerName::new(s.as_bytes()).expect("test name is valid")
}

fn node(seed: u8) -> Node {
    let mut bytes = [0u8; 32];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = seed.wrapping_add(i as u8);
    }
    Node { bytes }
}

fn state(seed: f32) -> ShipState {
    let mut game = [0u8; GAME_AREA_LEN];
    for (i, b) in game.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(7).wrapping_add(seed as u8);
    }
    ShipState {
        pos: [seed, -seed * 2.0, f32::MAX],
        orient: [0.0, -0.0, f32::MIN_POSITIVE / 2.0, 1.0],
        vel: [1.5e-7, -3.25, seed],
        game,
    }
}

/// Every remote event variant.
fn remote_events() -> Vec<RemoteEvent> {
    vec![
        RemoteEvent::CreateObject {
            object_id: 1,
            class: 7,
            pos: [1.0, 2.0, 3.0],
            orient: [0.0, 0.0, 0.0, 1.0],
            flags: 0xdead_beef,
        },
        RemoteEvent::CreateLaser {
            object_id: 2,
            class: 3,
            pos: [-1.0, 0.5, 9.0],
            dir: [0.0, 1.0, 0.0],
        },
        RemoteEvent::CreateMissile {
            object_id: u32::MAX,
            class: 4,
            pos: [4.0, 5.0, 6.0],
            dir: [0.0, 0.0, -1.0],
            target_id: 0,
        },
        RemoteEvent::CreateExtra {
            object_id: 99,
            extra_index: 12,
            pos: [0.25, 0.5, 0.75],
        },
        RemoteEvent::KillObject {
            object_id: 42,
            list_id: 15,
        },
        RemoteEvent::SendText(ChatText::new("hello, ünïcode ✓".as_bytes()).expect("valid text")),
        RemoteEvent::SendText(ChatText::new(&[b'x'; 255]).expect("valid text")),
        RemoteEvent::PlayerName(name("Pilot")),
        RemoteEvent::ParticleObject {
            particle_type: 3,
            origin: [7.0, 8.0, 9.0],
        },
        RemoteEvent::PlayerList(vec![
            PlayerListEntry {
                slot: 0,
                joined: true,
                token: 1,
                node: node(1),
                name: name("a"),
            },
            PlayerListEntry {
                slot: 15,
                joined: false,
                token: 77,
                node: node(2),
                name: name(""),
            },
        ]),
        RemoteEvent::ConnectQueue(vec![ConnectRequest {
            token: 5,
            node: node(3),
            name: name("queued"),
        }]),
        RemoteEvent::Custom {
            custom_type: 9,
            data: CustomData::new(&[1, 2, 3]).expect("valid data"),
            reliable: true,
        },
        RemoteEvent::Custom {
            custom_type: 10,
            data: CustomData::new(&[0xab; 256]).expect("valid data"),
            reliable: false,
        },
        RemoteEvent::Custom {
            custom_type: 0,
            data: CustomData::new(&[]).expect("valid data"),
            reliable: false,
        },
        RemoteEvent::PlayerStatus {
            joined: true,
            flag: 0,
        },
        RemoteEvent::PlayerStatus {
            joined: false,
            flag: 3,
        },
    ]
}

/// Every game event variant (every remote event inside `Remote`) and some states.
fn all_items() -> Vec<DemoItem> {
    let mut items = vec![
        DemoItem::OwnPlayer(None),
        DemoItem::Event(GameEvent::Connected { slot: 3 }),
        DemoItem::OwnPlayer(Some(OwnPlayer {
            slot: 3,
            name: name("Own"),
        })),
        DemoItem::OwnObject {
            object_id: 1,
            created: true,
        },
        DemoItem::OwnObject {
            object_id: u32::MAX,
            created: false,
        },
        DemoItem::ObjectOwner {
            object_id: 1,
            slot: 0,
        },
        DemoItem::ObjectOwner {
            object_id: u32::MAX,
            slot: 15,
        },
        DemoItem::Event(GameEvent::PlayerConnected {
            slot: 0,
            name: name("Alpha"),
        }),
        DemoItem::Event(GameEvent::PlayerName {
            slot: 0,
            name: name("Alpha Two"),
        }),
        DemoItem::Event(GameEvent::PlayerJoined { slot: 0 }),
        DemoItem::State {
            slot: 0,
            state: state(1.0),
        },
        DemoItem::State {
            slot: 15,
            state: ShipState::default(),
        },
    ];
    for (i, event) in remote_events().into_iter().enumerate() {
        items.push(DemoItem::Event(GameEvent::Remote {
            slot: (i % 16) as u8,
            event,
        }));
    }
    items.extend([
        DemoItem::Event(GameEvent::PlayerUnjoined { slot: 0, flag: 2 }),
        DemoItem::Event(GameEvent::PlayerDisconnected {
            slot: 0,
            reason: "timed out".into(),
        }),
        DemoItem::Event(GameEvent::PlayerDisconnected {
            slot: 15,
            reason: String::new(),
        }),
        DemoItem::Event(GameEvent::Error {
            text: "server refused: naïve ☃ name".into(),
        }),
        DemoItem::Event(GameEvent::Error {
            text: "e".repeat(MAX_STRING_LEN),
        }),
        DemoItem::Event(GameEvent::ServerMessage {
            text: "welcome to the Gamma Quadrant".into(),
        }),
        DemoItem::Event(GameEvent::Disconnected {
            reason: "left the game".into(),
        }),
    ]);
    items
}

/// Times for `n` items: some equal, some far apart, all whole microseconds.
fn times(n: usize) -> Vec<Duration> {
    let mut t = Duration::ZERO;
    (0..n)
        .map(|i| {
            t += match i % 4 {
                0 => Duration::ZERO,
                1 => Duration::from_micros(1),
                2 => Duration::from_millis(16),
                _ => Duration::from_secs(2),
            };
            t
        })
        .collect()
}

/// Play everything with virtual time, checking nothing comes early; returns each item with the
/// time since `start` it came out at.
fn play_all(player: &mut DemoPlayer, start: Instant) -> Vec<(Duration, DemoItem)> {
    let mut out = Vec::new();
    while let Some(due) = player.poll_timeout() {
        if let Some(early) = due.checked_sub(Duration::from_nanos(1)) {
            if early >= start {
                assert_eq!(
                    player.poll(early),
                    None,
                    "an item came out before it was due"
                );
            }
        }
        let item = player.poll(due).expect("the item is due at poll_timeout");
        out.push((due - start, item));
    }
    assert!(player.is_finished());
    assert_eq!(player.poll(start + Duration::from_secs(1_000_000)), None);
    out
}

/// Encode `items` at `times` into a complete demo in memory; also returns each record's
/// start offset, and the end record's.
fn encode_demo(items: &[DemoItem], times: &[Duration]) -> (Vec<u8>, Vec<usize>) {
    let mut bytes = Vec::new();
    encode_header(1_700_000_000_000_000, &mut bytes);
    let mut starts = Vec::new();
    for (item, t) in items.iter().zip(times) {
        starts.push(bytes.len());
        encode_item(*t, item, &mut bytes).expect("test item encodes");
    }
    starts.push(bytes.len());
    let end = times.last().copied().unwrap_or_default();
    encode_end(end, &mut bytes).expect("end encodes");
    (bytes, starts)
}

#[test]
fn every_item_kind_round_trips_through_a_file() {
    let items = all_items();
    let ts = times(items.len());
    let path = TempPath::new("roundtrip");

    let rec_start = Instant::now();
    let mut rec = DemoRecorder::create(&path.0, rec_start).expect("create demo");
    for (item, t) in items.iter().zip(&ts) {
        rec.record(rec_start + *t, item).expect("record item");
    }
    assert_eq!(rec.items(), items.len() as u64);
    let stop = rec_start + *ts.last().expect("items") + Duration::from_millis(250);
    let summary = rec.finish_at(stop).expect("finish");
    assert_eq!(summary.items, items.len() as u64);
    assert_eq!(summary.path, path.0);
    assert_eq!(
        summary.bytes,
        std::fs::metadata(&path.0).expect("demo file exists").len()
    );
    assert_eq!(
        summary.duration,
        *ts.last().expect("items") + Duration::from_millis(250)
    );

    // Playback starts at an unrelated instant: only relative times matter.
    let play_start = rec_start + Duration::from_secs(3600);
    let mut player = DemoPlayer::open(&path.0, play_start).expect("open demo");
    assert_eq!(player.broken(), None, "{:?}", player.broken());
    assert_eq!(player.items_total(), items.len());
    assert_eq!(player.items_played(), 0);
    assert_eq!(player.duration(), summary.duration);
    assert_eq!(player.path(), Some(path.0.as_path()));
    assert_eq!(player.header().version, 1);
    assert!(player.header().start_unix_micros > 0);

    let played = play_all(&mut player, play_start);
    assert_eq!(player.items_played(), items.len());
    let expected: Vec<(Duration, DemoItem)> = ts.into_iter().zip(items).collect();
    assert_eq!(played, expected);
}

#[test]
fn items_due_together_come_out_one_per_poll_in_order() {
    let items = all_items();
    let ts = times(items.len());
    let (bytes, _) = encode_demo(&items, &ts);
    let contents = decode_demo(&bytes).expect("valid demo");
    let start = Instant::now();
    let mut player = DemoPlayer::from_contents(contents, start);
    assert_eq!(player.poll_timeout(), Some(start));
    let late = start + Duration::from_secs(10_000);
    let mut got = Vec::new();
    while let Some(item) = player.poll(late) {
        got.push(item);
        assert_eq!(player.items_played(), got.len());
    }
    assert_eq!(got, items);
    assert_eq!(player.poll_timeout(), None);
}

#[test]
fn record_times_are_whole_microseconds_and_never_go_backwards() {
    let path = TempPath::new("times");
    let start = Instant::now();
    let item = DemoItem::Event(GameEvent::PlayerJoined { slot: 1 });
    let mut rec = DemoRecorder::create(&path.0, start).expect("create");
    rec.record(start + Duration::from_nanos(1_999), &item)
        .expect("record");
    rec.record(start + Duration::from_millis(5), &item)
        .expect("record");
    // Earlier than the previous record: recorded at the previous time.
    rec.record(start + Duration::from_millis(2), &item)
        .expect("record");
    // Before the start: clamped too.
    rec.record(start, &item).expect("record");
    assert_eq!(rec.elapsed(), Duration::from_millis(5));
    let summary = rec.finish().expect("finish");
    assert_eq!(summary.duration, Duration::from_millis(5));

    let contents = decode_demo(&std::fs::read(&path.0).expect("read")).expect("decode");
    let got: Vec<Duration> = contents.items.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        got,
        vec![
            Duration::from_micros(1),
            Duration::from_millis(5),
            Duration::from_millis(5),
            Duration::from_millis(5),
        ]
    );
    assert_eq!(contents.end, Some(Duration::from_millis(5)));
    assert_eq!(contents.broken, None);
}

#[test]
fn invalid_items_are_refused_and_recording_goes_on() {
    let path = TempPath::new("invalid");
    let start = Instant::now();
    let mut rec = DemoRecorder::create(&path.0, start).expect("create");
    let good = DemoItem::Event(GameEvent::Connected { slot: 2 });
    rec.record(start, &good).expect("record");

    let bad_slot = DemoItem::Event(GameEvent::PlayerJoined { slot: 16 });
    let err = rec.record(start, &bad_slot).expect_err("slot 16");
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("slot 16"), "{}", err.message);

    let mut nan = state(2.0);
    nan.vel[1] = f32::NAN;
    let err = rec
        .record(
            start,
            &DemoItem::State {
                slot: 1,
                state: nan,
            },
        )
        .expect_err("NaN");
    assert_eq!(err.code, ErrorCode::InvalidArgument);

    let long = DemoItem::Event(GameEvent::Disconnected {
        reason: "x".repeat(MAX_STRING_LEN + 1),
    });
    let err = rec.record(start, &long).expect_err("too long");
    assert_eq!(err.code, ErrorCode::TooLarge);
    assert!(err.message.contains("1025 bytes"), "{}", err.message);

    let zero_id = DemoItem::Event(GameEvent::Remote {
        slot: 1,
        event: RemoteEvent::KillObject {
            object_id: 0,
            list_id: 1,
        },
    });
    let err = rec.record(start, &zero_id).expect_err("zero object id");
    assert_eq!(err.code, ErrorCode::InvalidArgument);

    assert!(rec.is_recording());
    rec.record(start + Duration::from_millis(1), &good)
        .expect("record after refusals");
    let summary = rec.finish().expect("finish");
    assert_eq!(summary.items, 2);

    let contents = decode_demo(&std::fs::read(&path.0).expect("read")).expect("decode");
    assert_eq!(contents.broken, None);
    assert_eq!(
        contents.items,
        vec![
            (Duration::ZERO, good.clone()),
            (Duration::from_millis(1), good)
        ]
    );
}

#[test]
fn encode_item_leaves_the_buffer_unchanged_on_error() {
    let mut out = vec![1, 2, 3];
    let bad = DemoItem::Event(GameEvent::Remote {
        slot: 15,
        event: RemoteEvent::CreateLaser {
            object_id: 1,
            class: 0,
            pos: [0.0, f32::INFINITY, 0.0],
            dir: [0.0; 3],
        },
    });
    assert!(encode_item(Duration::ZERO, &bad, &mut out).is_err());
    assert_eq!(out, vec![1, 2, 3]);
    let err = encode_item(
        Duration::MAX,
        &DemoItem::Event(GameEvent::Connected { slot: 0 }),
        &mut out,
    )
    .expect_err("time beyond u64 microseconds");
    assert_eq!(err.code, ErrorCode::TooLarge);
    assert_eq!(out, vec![1, 2, 3]);
    for bad in [
        DemoItem::OwnObject {
            object_id: 0,
            created: true,
        },
        DemoItem::OwnPlayer(Some(OwnPlayer {
            slot: 16,
            name: name("x"),
        })),
        DemoItem::ObjectOwner {
            object_id: 0,
            slot: 1,
        },
        DemoItem::ObjectOwner {
            object_id: 1,
            slot: 16,
        },
    ] {
        let err = encode_item(Duration::ZERO, &bad, &mut out).expect_err("invalid");
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad:?}");
        assert_eq!(out, vec![1, 2, 3]);
    }
}

#[test]
fn a_file_cut_at_every_byte_plays_its_good_prefix() {
    let items = all_items();
    let ts = times(items.len());
    let (bytes, starts) = encode_demo(&items, &ts);

    for cut in 0..=bytes.len() {
        let part = &bytes[..cut];
        if cut < HEADER_LEN {
            let err = decode_demo(part).expect_err("no complete header");
            assert_eq!(err.code, ErrorCode::Parse, "cut {cut}");
            continue;
        }
        let contents = decode_demo(part).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        // Records that end by the cut play; the first one that does not is the break.
        let complete = starts
            .iter()
            .skip(1)
            .chain(std::iter::once(&bytes.len()))
            .take_while(|&&end| end <= cut)
            .count();
        let kept = complete.min(items.len());
        assert_eq!(contents.items.len(), kept, "cut {cut}");
        for (i, (t, item)) in contents.items.iter().enumerate() {
            assert_eq!((*t, item), (ts[i], &items[i]), "cut {cut} item {i}");
        }
        if cut == bytes.len() {
            assert_eq!(contents.broken, None);
            assert_eq!(contents.end, ts.last().copied());
            continue;
        }
        let broken = contents
            .broken
            .unwrap_or_else(|| panic!("cut {cut}: not reported"));
        assert!(broken.offset <= cut as u64, "cut {cut}: {broken:?}");
        let first_missing = starts.get(complete).copied().unwrap_or(bytes.len());
        if cut == first_missing {
            assert!(
                broken.reason.contains("without an end record"),
                "cut {cut}: {}",
                broken.reason
            );
            assert_eq!(broken.offset, cut as u64);
        } else {
            assert_eq!(broken.offset, first_missing as u64, "cut {cut}");
            assert!(
                broken
                    .reason
                    .contains(&format!("truncated record at byte {first_missing}")),
                "cut {cut}: {}",
                broken.reason
            );
        }
    }
}

#[test]
fn a_cut_file_opens_and_plays_its_good_prefix() {
    let items = all_items();
    let ts = times(items.len());
    let (bytes, starts) = encode_demo(&items, &ts);
    let path = TempPath::new("cut");
    let start = Instant::now();
    // Cut in the middle of record 7 and right after record 7.
    for (cut, kept) in [(starts[7] + 5, 7), (starts[8], 8)] {
        std::fs::write(&path.0, &bytes[..cut]).expect("write");
        let mut player = DemoPlayer::open(&path.0, start).expect("open cut demo");
        let broken = player.broken().expect("reported").clone();
        assert!(broken.offset <= cut as u64);
        assert_eq!(player.items_total(), kept);
        let played = play_all(&mut player, start);
        let expected: Vec<(Duration, DemoItem)> = ts[..kept]
            .iter()
            .copied()
            .zip(items[..kept].iter().cloned())
            .collect();
        assert_eq!(played, expected);
    }
}

#[test]
fn a_flipped_byte_anywhere_in_a_record_breaks_at_that_record() {
    let items = all_items();
    let ts = times(items.len());
    let (bytes, starts) = encode_demo(&items, &ts);
    let k = items.len() / 2;
    let (rec_start, rec_end) = (starts[k], starts[k + 1]);
    for pos in rec_start..rec_end {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[pos] ^= mask;
            let contents = decode_demo(&damaged).expect("header intact");
            assert_eq!(contents.items.len(), k, "byte {pos} ^ {mask:#x}");
            for (i, (t, item)) in contents.items.iter().enumerate() {
                assert_eq!((*t, item), (ts[i], &items[i]));
            }
            let broken = contents.broken.expect("damage reported");
            assert_eq!(broken.offset, rec_start as u64, "byte {pos}: {broken:?}");
            if pos >= rec_start + 4 {
                let stored =
                    u32::from_be_bytes(damaged[rec_end - 4..rec_end].try_into().expect("4 bytes"));
                let expect = format!(
                    "CRC mismatch in record at byte {rec_start} (stored {stored:08x}, computed "
                );
                assert!(
                    broken.reason.starts_with(&expect),
                    "byte {pos}: {}",
                    broken.reason
                );
            } else {
                // A damaged length field: too large, too small, or CRC over the wrong bytes.
                assert!(
                    broken.reason.contains(&format!("at byte {rec_start}")),
                    "byte {pos}: {}",
                    broken.reason
                );
            }
        }
    }
}

#[test]
fn data_after_the_end_record_is_reported_and_everything_before_plays() {
    let items = all_items();
    let ts = times(items.len());
    let (mut bytes, _) = encode_demo(&items, &ts);
    let end_of_demo = bytes.len();
    bytes.extend_from_slice(b"junk");
    let contents = decode_demo(&bytes).expect("decode");
    assert_eq!(contents.items.len(), items.len());
    let broken = contents.broken.expect("reported");
    assert_eq!(broken.offset, end_of_demo as u64);
    assert!(
        broken.reason.contains("after the end record"),
        "{}",
        broken.reason
    );
}

#[test]
fn semantic_errors_inside_a_valid_crc_are_caught() {
    // Records built by hand with a correct CRC but a bad field.
    fn record(time: u64, kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&(9 + payload.len() as u32).to_be_bytes());
        r.extend_from_slice(&time.to_be_bytes());
        r.push(kind);
        r.extend_from_slice(payload);
        let crc = crc32fast::hash(&r);
        r.extend_from_slice(&crc.to_be_bytes());
        r
    }
    let good = record(10, 1, &[4]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            record(10, 200, &[]),
            "unknown record kind 200 in record at byte 38",
        ),
        (record(10, 0, &[]), "unknown record kind 0"),
        (
            record(10, 1, &[16]),
            "bad slot 16 at byte 51 in record at byte 38",
        ),
        (
            record(9, 1, &[1]),
            "time goes backwards in record at byte 38",
        ),
        (record(10, 1, &[1, 0]), "1 bytes after the record's fields"),
        (
            record(10, 14, &[2]),
            "bad in-game flag 2 (must be 0 or 1) at byte 51",
        ),
        (record(10, 14, &[0, 1]), "1 bytes after the record's fields"),
        (record(10, 14, &[1, 16, 0]), "bad slot 16 at byte 52"),
        (record(10, 14, &[1, 3]), "shorter than its fields"),
        (record(10, 15, &[0, 0, 0, 0, 1]), "object id 0 at byte 51"),
        (
            record(10, 15, &[0, 0, 0, 5, 2]),
            "bad created flag 2 (must be 0 or 1) at byte 55",
        ),
        (record(10, 16, &[0, 0, 0, 0, 1]), "object id 0 at byte 51"),
        (record(10, 16, &[0, 0, 0, 5, 16]), "bad slot 16 at byte 55"),
        (record(10, 16, &[0, 0, 0, 5]), "shorter than its fields"),
        (
            record(10, 16, &[0, 0, 0, 5, 1, 0]),
            "1 bytes after the record's fields",
        ),
        (record(10, 17, &[]), "unknown record kind 17"),
        (record(10, 1, &[]), "shorter than its fields"),
        (
            record(10, 9, &[0, 2, 0xff, 0xfe]),
            "not valid UTF-8 at byte 53",
        ),
        (
            record(10, 9, &[0x04, 0x01]),
            "string of 1025 bytes is longer than 1024",
        ),
        (
            record(10, 3, &[1, 32]),
            "name of 32 bytes is longer than 31",
        ),
        (
            record(10, 3, &[1, 2, b'a', 0]),
            "bad name: contains a NUL byte",
        ),
        (
            record(
                10,
                10,
                &[[1u8].as_slice(), &[0x7f, 0xc0, 0, 0], &[0; 68]].concat(),
            ),
            "non-finite float at byte 52",
        ),
        // A remote RE_KILLOBJECT without the reliable flag.
        (
            record(10, 8, &[1, 5, 0, 0, 5, 0, 0, 0, 1, 0]),
            "reliable flag missing",
        ),
        // A record shorter than time + kind.
        (
            {
                let mut r = Vec::new();
                r.extend_from_slice(&8u32.to_be_bytes());
                r.extend_from_slice(&[0; 12]);
                r
            },
            "bad record length 8 in record at byte 38",
        ),
        (
            {
                let mut r = Vec::new();
                r.extend_from_slice(&(64 * 1024 + 1u32).to_be_bytes());
                r
            },
            "bad record length 65537",
        ),
    ];
    for (bad, expect) in cases {
        let mut bytes = Vec::new();
        encode_header(0, &mut bytes);
        bytes.extend_from_slice(&good);
        assert_eq!(bytes.len(), 38);
        bytes.extend_from_slice(&bad);
        bytes.extend_from_slice(&good);
        let contents = decode_demo(&bytes).expect("header is fine");
        assert_eq!(
            contents.items,
            vec![(
                Duration::from_micros(10),
                DemoItem::Event(GameEvent::Connected { slot: 4 })
            )],
            "{expect}"
        );
        let broken = contents.broken.expect("reported");
        assert_eq!(broken.offset, 38, "{expect}");
        assert!(
            broken.reason.contains(expect),
            "expected {expect:?} in {:?}",
            broken.reason
        );
    }
}

#[test]
fn bad_headers_are_errors_with_clear_messages() {
    let mut good = Vec::new();
    encode_header(0, &mut good);
    encode_end(Duration::ZERO, &mut good).expect("end");
    assert!(decode_demo(&good).expect("valid").items.is_empty());

    let err = decode_demo(&[]).expect_err("empty");
    assert_eq!(err.code, ErrorCode::Parse);
    assert!(err.message.contains("empty"), "{}", err.message);

    let mut wrong_magic = good.clone();
    wrong_magic[0] = b'X';
    let err = decode_demo(&wrong_magic).expect_err("magic");
    assert_eq!(err.code, ErrorCode::Parse);
    assert!(err.message.contains("not a demo file"), "{}", err.message);
    let err = decode_demo(b"GIF89a").expect_err("magic");
    assert!(err.message.contains("not a demo file"), "{}", err.message);

    let mut v2 = good.clone();
    v2[8..10].copy_from_slice(&2u16.to_be_bytes());
    let err = decode_demo(&v2).expect_err("version 2");
    assert_eq!(err.code, ErrorCode::Unsupported);
    assert!(
        err.message.contains("unsupported demo version 2"),
        "{}",
        err.message
    );

    let mut reserved = good.clone();
    reserved[11] = 1;
    let err = decode_demo(&reserved).expect_err("reserved");
    assert!(err.message.contains("reserved"), "{}", err.message);

    let err = decode_demo(&good[..12]).expect_err("short header");
    assert!(
        err.message
            .contains("12 bytes, shorter than its 20-byte header"),
        "{}",
        err.message
    );

    // Through the player, the message names the file.
    let path = TempPath::new("badheader");
    for (bytes, expect) in [
        (Vec::new(), "empty"),
        (wrong_magic, "not a demo file"),
        (v2, "unsupported demo version 2"),
    ] {
        std::fs::write(&path.0, &bytes).expect("write");
        let err = DemoPlayer::open(&path.0, Instant::now()).expect_err("bad header");
        assert!(
            err.message.contains(expect) && err.message.contains(&*path.0.to_string_lossy()),
            "{}",
            err.message
        );
    }
}

#[test]
fn unwritable_and_unreadable_paths_are_clear_errors() {
    let bad = Path::new("/nonexistent-dir/x.demo");
    let err = DemoRecorder::create(bad, Instant::now()).expect_err("cannot create");
    assert_eq!(err.code, ErrorCode::Io);
    assert!(
        err.message
            .contains("cannot create demo file /nonexistent-dir/x.demo: "),
        "{}",
        err.message
    );
    // The operating system's reason follows the path.
    assert!(err.message.len() > "cannot create demo file /nonexistent-dir/x.demo: ".len());

    let err = DemoPlayer::open(bad, Instant::now()).expect_err("cannot read");
    assert_eq!(err.code, ErrorCode::Io);
    assert!(
        err.message
            .contains("cannot read demo file /nonexistent-dir/x.demo: "),
        "{}",
        err.message
    );

    // A directory is not a file either.
    let dir = std::env::temp_dir();
    let err = DemoRecorder::create(&dir, Instant::now()).expect_err("a directory");
    assert_eq!(err.code, ErrorCode::Io);
}

#[test]
fn an_io_error_while_recording_stops_recording() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        return; // Not Linux: nothing to fill.
    }
    let start = Instant::now();
    let mut rec = DemoRecorder::create(full, start).expect("open /dev/full");
    let item = DemoItem::State {
        slot: 1,
        state: state(3.0),
    };
    // The buffer takes a few kilobytes before the first write reaches the device.
    let mut failed = None;
    for i in 0..10_000u64 {
        if let Err(e) = rec.record(start + Duration::from_millis(i), &item) {
            failed = Some(e);
            break;
        }
    }
    let err = failed.expect("writing to a full device fails");
    assert_eq!(err.code, ErrorCode::Io);
    assert!(
        err.message.contains("/dev/full") && err.message.contains("recording stopped"),
        "{}",
        err.message
    );
    assert!(!rec.is_recording());
    assert!(rec.failure().is_some());
    let again = rec
        .record(start + Duration::from_secs(100), &item)
        .expect_err("stopped");
    assert_eq!(again.code, ErrorCode::State);
    assert!(again.message.contains("earlier error"), "{}", again.message);
    let fin = rec.finish().expect_err("finish after a failure");
    assert_eq!(fin.code, ErrorCode::State);
}

#[test]
fn a_recorder_dropped_without_finish_still_ends_its_file() {
    let path = TempPath::new("drop");
    let start = Instant::now();
    {
        let mut rec = DemoRecorder::create(&path.0, start).expect("create");
        rec.record(
            start + Duration::from_millis(3),
            &DemoItem::Event(GameEvent::PlayerJoined { slot: 4 }),
        )
        .expect("record");
    }
    let contents = decode_demo(&std::fs::read(&path.0).expect("read")).expect("decode");
    assert_eq!(contents.broken, None);
    assert_eq!(contents.items.len(), 1);
    assert_eq!(contents.end, Some(Duration::from_millis(3)));
}

#[test]
fn an_empty_recording_plays_nothing() {
    let path = TempPath::new("empty");
    let start = Instant::now();
    let rec = DemoRecorder::create(&path.0, start).expect("create");
    let summary = rec.finish().expect("finish");
    assert_eq!(summary.items, 0);
    assert_eq!(summary.duration, Duration::ZERO);
    let mut player = DemoPlayer::open(&path.0, start).expect("open");
    assert!(player.is_finished());
    assert_eq!(player.broken(), None);
    assert_eq!(player.poll_timeout(), None);
    assert_eq!(player.poll(start + Duration::from_secs(1)), None);
    assert_eq!(player.items_total(), 0);
}

// ----- what the game looks up while a demo plays --------------------------------------------

/// What a game sees when it handles one event and looks things up: the event, every slot's
/// name and ship state (`NET_FetchPlayerName`, `NET_GetPlayerState`), and the owner of every
/// object of the test (`NET_FetchOwner`).
#[derive(Debug, PartialEq)]
struct Seen {
    event: GameEvent,
    names: Vec<Option<String>>,
    states: Vec<Result<ShipState, ErrorCode>>,
    owners: Vec<(u32, Option<u8>)>,
}

/// The objects the two players of the live game create and kill.
const OBJECTS: [u32; 3] = [500, 501, 700];

/// What `sub`'s lookups answer now, as the game sees them while it handles `event`.
fn look_up(sub: &Subsystem, event: GameEvent) -> Seen {
    Seen {
        event,
        names: (0..16)
            .map(|s| sub.player_name(s).map(|n| n.to_string()))
            .collect(),
        states: (0..16)
            .map(|s| sub.player_state(s).map_err(|e| e.code))
            .collect(),
        owners: OBJECTS.iter().map(|&id| (id, sub.owner_of(id))).collect(),
    }
}

/// Poll every waiting event of `sub`, looking everything up at each.
fn poll_and_look_up(sub: &mut Subsystem, into: &mut Vec<Seen>) {
    while let Some(event) = sub.poll_event() {
        into.push(look_up(sub, event));
    }
}

/// Play the demo at `path` in a fresh instance with virtual time (every due item at its time),
/// looking everything up at each event; the demo must end by itself.
fn play_and_look_up(path: &Path) -> Vec<Seen> {
    let mut player = Subsystem::new();
    let start = Instant::now();
    let reply = player.console_exec(&format!("play {}", path.display()), start);
    assert!(reply.result.is_ok(), "{}", reply.output);
    let mut seen = Vec::new();
    while let Some(due) = player.next_wakeup() {
        player.maintain(due);
        poll_and_look_up(&mut player, &mut seen);
    }
    assert!(!player.game().is_playing());
    seen
}

/// Play the demo at `path` (as [`play_and_look_up`]) and assert that every lookup answers as
/// `seen_live` did, event by event; the played demo may start with a snapshot's events, so its
/// last `seen_live.len()` events are compared.
fn assert_plays_back_as_live(path: &Path, seen_live: &[Seen]) {
    let seen_played = play_and_look_up(path);
    let skip = seen_played.len() - seen_live.len();
    for (i, (live, played)) in seen_live.iter().zip(&seen_played[skip..]).enumerate() {
        assert_eq!(
            live, played,
            "event {i}: live (left) and played back (right) differ"
        );
    }
}

/// The ship of a player at frame `frame` (`base` tells the players apart).
fn flying(base: f32, frame: u32) -> ShipState {
    ShipState {
        pos: [base + frame as f32, base, -(frame as f32)],
        orient: [0.0, 0.0, 0.0, 1.0],
        ..ShipState::default()
    }
}

/// `connect` is refused as a state error whose message starts with `starts`.
fn assert_connect_refused(sub: &mut Subsystem, starts: &str) {
    let refused = sub.console_exec("connect 127.0.0.1:9", Instant::now());
    assert_eq!(
        refused.result.err().map(|e| e.code),
        Some(ErrorCode::State),
        "{}",
        refused.output
    );
    assert!(refused.output.starts_with(starts), "{}", refused.output);
}

/// The live game of the demo tests (`a_played_demo_answers_every_lookup_as_the_live_game_did`
/// and the others): alice records,
/// bob plays with her. Each frame both set their ship state (alice's first only once she is
/// connected, so her own slot shows her state before it moved), run their frame and alice
/// handles her events. `step` runs between frames until it returns true.
struct LiveGame {
    alice: Subsystem,
    bob: Subsystem,
    /// Bob's node address, as alice connects to it.
    bob_addr: String,
    frame: u32,
    seen: Vec<Seen>,
    bob_events: Vec<GameEvent>,
}

impl LiveGame {
    /// Alice and bob over loopback, each connecting to the other (alice recording to `record`
    /// from before that, when given), run until alice sees bob and bob has his slot.
    fn connected(record: Option<&Path>) -> LiveGame {
        let (mut alice, alice_addr) = loopback_game("alice");
        let (mut bob, bob_addr) = loopback_game("bob");
        if let Some(path) = record {
            console(&mut alice, &format!("record {}", path.display()));
        }
        console(&mut alice, &format!("connect {bob_addr}"));
        console(&mut bob, &format!("connect {alice_addr}"));
        let mut live = LiveGame {
            alice,
            bob,
            bob_addr,
            frame: 0,
            seen: Vec::new(),
            bob_events: Vec::new(),
        };
        live.run_until("both connect", |g| {
            g.alice_has(|e| matches!(e, GameEvent::PlayerConnected { .. }))
                && slot_in(g.bob_events.iter().cloned()).is_some()
        });
        live
    }

    /// Both join; runs until bob's ship state reaches alice and returns bob's slot.
    fn join_until_bobs_ship_arrives(&mut self) -> u8 {
        let bob_slot = slot_in(self.bob_events.iter().cloned()).expect("bob's slot");
        console(&mut self.alice, "join");
        console(&mut self.bob, "join");
        self.run_until("bob's ship arrives", |g| {
            g.alice
                .player_state(bob_slot)
                .is_ok_and(|s| s.pos[1] == 2000.0)
        });
        bob_slot
    }

    fn run_until(&mut self, what: &str, mut done: impl FnMut(&mut LiveGame) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "live game: {what}: {:#?}",
                self.seen
            );
            self.frame += 1;
            let alice_in_game = self
                .seen
                .iter()
                .any(|s| matches!(s.event, GameEvent::Connected { .. }));
            if alice_in_game {
                self.alice
                    .set_local_state(flying(1000.0, self.frame))
                    .expect("state");
            }
            self.bob
                .set_local_state(flying(2000.0, self.frame))
                .expect("state");
            self.alice.maintain(Instant::now());
            poll_and_look_up(&mut self.alice, &mut self.seen);
            self.bob.maintain(Instant::now());
            while let Some(event) = self.bob.poll_event() {
                self.bob_events.push(event);
            }
            // Waiting on the sockets, not sleeping: a datagram ends the wait at once.
            let _ = self.alice.wait(Duration::from_millis(1));
            let _ = self.bob.wait(Duration::from_millis(1));
        }
    }

    fn alice_has(&self, event: impl Fn(&GameEvent) -> bool) -> bool {
        self.seen.iter().any(|s| event(&s.event))
    }
}

fn slot_in(events: impl IntoIterator<Item = GameEvent>) -> Option<u8> {
    events.into_iter().find_map(|e| match e {
        GameEvent::Connected { slot } => Some(slot),
        _ => None,
    })
}

#[test]
fn a_played_demo_answers_every_lookup_as_the_live_game_did() {
    let path = TempPath::new("lookups");
    let mut live = LiveGame::connected(Some(&path.0));
    let bob_slot = live.join_until_bobs_ship_arrives();

    // Both create objects; each kills one of the other's; both rename themselves.
    live.bob
        .queue_remote_event(RemoteEvent::CreateObject {
            object_id: 500,
            class: 1,
            pos: [1.0, 2.0, 3.0],
            orient: [0.0, 0.0, 0.0, 1.0],
            flags: 0,
        })
        .expect("bob's object");
    live.bob
        .queue_remote_event(RemoteEvent::CreateLaser {
            object_id: 501,
            class: 2,
            pos: [1.0, 2.0, 3.0],
            dir: [0.0, 0.0, 1.0],
        })
        .expect("bob's laser");
    live.alice
        .queue_remote_event(RemoteEvent::CreateObject {
            object_id: 700,
            class: 3,
            pos: [4.0, 5.0, 6.0],
            orient: [0.0, 0.0, 0.0, 1.0],
            flags: 0,
        })
        .expect("alice's object");
    live.run_until("bob's laser arrives", |g| g.alice.owner_of(501).is_some());
    live.alice
        .queue_remote_event(RemoteEvent::KillObject {
            object_id: 501,
            list_id: 1,
        })
        .expect("alice kills the laser");
    console(&mut live.alice, "name alicia");
    live.bob
        .queue_remote_event(RemoteEvent::KillObject {
            object_id: 700,
            list_id: 1,
        })
        .expect("bob kills alice's object");
    console(&mut live.bob, "name bobby");
    console(&mut live.bob, "say bye");
    live.run_until("bob's goodbye arrives", |g| {
        g.alice_has(|e| {
            matches!(
                e,
                GameEvent::Remote {
                    event: RemoteEvent::SendText(_),
                    ..
                }
            )
        }) && g.alice_has(|e| matches!(e, GameEvent::PlayerName { .. }))
    });
    console(&mut live.bob, "disconnect");
    live.run_until("bob leaves", |g| {
        g.alice_has(|e| matches!(e, GameEvent::PlayerDisconnected { .. }))
    });
    console(&mut live.alice, "disconnect");
    poll_and_look_up(&mut live.alice, &mut live.seen);
    console(&mut live.alice, "stop");
    let seen_live = live.seen;

    // The live lookups cover what a demo must keep: alice's own slot with her name, her new name
    // and her moving ship, bob's default state before his first, the owners of both players'
    // objects and their kills, and nobody after alice left.
    let alice_slot = slot_in(seen_live.iter().map(|s| s.event.clone())).expect("alice's slot");
    let (a, b) = (usize::from(alice_slot), usize::from(bob_slot));
    let first = &seen_live[0];
    assert_eq!(first.event, GameEvent::Connected { slot: alice_slot });
    assert_eq!(first.names[a].as_deref(), Some("alice"));
    assert_eq!(first.states[a], Ok(ShipState::default()));
    let bob_seated = seen_live
        .iter()
        .find(|s| matches!(s.event, GameEvent::PlayerConnected { .. }))
        .expect("bob seated");
    assert_eq!(bob_seated.states[b], Ok(ShipState::default()));
    let seen_any = |f: &dyn Fn(&Seen) -> bool| seen_live.iter().any(f);
    assert!(seen_any(&|s| s.names[a].as_deref() == Some("alicia")));
    assert!(seen_any(
        &|s| s.states[a].is_ok_and(|st| st.pos[1] == 1000.0)
    ));
    assert!(seen_any(&|s| s.owners.contains(&(700, Some(alice_slot)))));
    assert!(seen_any(&|s| s.owners.contains(&(501, Some(bob_slot)))));
    let last = seen_live.last().expect("events");
    assert!(
        matches!(last.event, GameEvent::Disconnected { .. }),
        "{last:?}"
    );
    assert_eq!(last.states[a], Err(ErrorCode::NotConnected));
    assert!(last.names.iter().all(Option::is_none));

    // Begun outside a game, the recording starts as it always did: the own player out of a
    // game, nothing of anyone else (no snapshot), the Connected record when it came.
    let contents = decode_demo(&std::fs::read(&path.0).expect("read")).expect("decode");
    assert_eq!(contents.broken, None);
    assert_eq!(
        contents.items[0],
        (Duration::ZERO, DemoItem::OwnPlayer(None))
    );
    let connected = |item: &DemoItem| matches!(item, DemoItem::Event(GameEvent::Connected { .. }));
    assert_eq!(
        contents.items.iter().filter(|(_, i)| connected(i)).count(),
        1
    );
    assert!(!contents
        .items
        .iter()
        .any(|(_, i)| matches!(i, DemoItem::ObjectOwner { .. })));

    // Played back in a fresh instance with virtual time: every due item at its time.
    let seen_played = play_and_look_up(&path.0);
    for (i, (live, played)) in seen_live.iter().zip(&seen_played).enumerate() {
        assert_eq!(
            live, played,
            "event {i}: live (left) and played back (right) differ"
        );
    }
    assert_eq!(seen_live.len(), seen_played.len());
}

#[test]
fn a_demo_without_own_player_records_still_plays_and_answers_lookups() {
    // What a recorder wrote before kinds 14 and 15: the events and the remote states only.
    let laser = RemoteEvent::CreateLaser {
        object_id: 9,
        class: 1,
        pos: [0.0; 3],
        dir: [0.0, 0.0, 1.0],
    };
    let items = [
        DemoItem::Event(GameEvent::Connected { slot: 2 }),
        DemoItem::Event(GameEvent::PlayerConnected {
            slot: 5,
            name: name("bob"),
        }),
        DemoItem::State {
            slot: 5,
            state: state(4.0),
        },
        DemoItem::Event(GameEvent::Remote {
            slot: 5,
            event: laser,
        }),
        DemoItem::Event(GameEvent::PlayerDisconnected {
            slot: 5,
            reason: "left".into(),
        }),
        DemoItem::Event(GameEvent::Disconnected {
            reason: "bye".into(),
        }),
    ];
    let ts: Vec<Duration> = (0..items.len() as u64).map(Duration::from_millis).collect();
    let (bytes, _) = encode_demo(&items, &ts);
    let path = TempPath::new("old");
    std::fs::write(&path.0, bytes).expect("write");

    let mut sub = Subsystem::new();
    sub.set_player_name("carol").expect("name");
    let start = Instant::now();
    let reply = sub.console_exec(&format!("play {}", path.0.display()), start);
    assert!(reply.result.is_ok(), "{}", reply.output);
    let at = |sub: &mut Subsystem, ms: u64| {
        sub.maintain(start + Duration::from_millis(ms));
        while sub.poll_event().is_some() {}
    };
    let name_of = |sub: &Subsystem, slot: u8| sub.player_name(slot).map(|n| n.to_string());
    let code = |sub: &Subsystem, slot: u8| sub.player_state(slot).err().map(|e| e.code);

    at(&mut sub, 1);
    // The file does not say the own name: the playing game's stands in; the ship has the
    // state of one that has sent none, as bob's has until his first arrives.
    assert_eq!(name_of(&sub, 2).as_deref(), Some("carol"));
    assert_eq!(sub.player_state(2).expect("own slot"), ShipState::default());
    assert_eq!(name_of(&sub, 5).as_deref(), Some("bob"));
    assert_eq!(
        sub.player_state(5).expect("bob seated"),
        ShipState::default()
    );
    assert_eq!(code(&sub, 6), Some(ErrorCode::InvalidArgument));
    at(&mut sub, 3);
    assert_eq!(sub.player_state(5).expect("bob's state"), state(4.0));
    assert_eq!(sub.owner_of(9), Some(5));
    at(&mut sub, 4);
    assert_eq!(name_of(&sub, 5), None);
    assert_eq!(code(&sub, 5), Some(ErrorCode::InvalidArgument));
    assert_eq!(sub.owner_of(9), None);
    at(&mut sub, 5);
    assert_eq!(name_of(&sub, 2), None);
    assert_eq!(code(&sub, 2), Some(ErrorCode::NotConnected));
    assert!(!sub.game().is_playing());
}

#[test]
fn a_demo_recorded_mid_game_plays_back_the_game_as_it_was() {
    let path = TempPath::new("mid-game");
    let mut live = LiveGame::connected(None);
    let bob_slot = slot_in(live.bob_events.iter().cloned()).expect("bob's slot");
    let alice_slot = slot_in(live.seen.iter().map(|s| s.event.clone())).expect("alice's slot");
    console(&mut live.alice, "join");
    console(&mut live.bob, "join");
    // Bob renames himself and creates an object, alice creates one, then kills one of bob's.
    console(&mut live.bob, "name bobby");
    for (sub, object_id) in [(&mut live.bob, 500), (&mut live.alice, 700)] {
        sub.queue_remote_event(RemoteEvent::CreateObject {
            object_id,
            class: 1,
            pos: [1.0, 2.0, 3.0],
            orient: [0.0, 0.0, 0.0, 1.0],
            flags: 0,
        })
        .expect("object");
    }
    live.bob
        .queue_remote_event(RemoteEvent::CreateLaser {
            object_id: 501,
            class: 2,
            pos: [1.0, 2.0, 3.0],
            dir: [0.0, 0.0, 1.0],
        })
        .expect("laser");
    live.run_until("bob's name, objects, join and ship arrive", |g| {
        g.alice_has(|e| matches!(e, GameEvent::PlayerJoined { .. }))
            && g.alice
                .player_name(bob_slot)
                .map(|n| n.to_string())
                .as_deref()
                == Some("bobby")
            && g.alice.owner_of(501) == Some(bob_slot)
            && g.alice.owner_of(500) == Some(bob_slot)
            && g.alice
                .player_state(bob_slot)
                .is_ok_and(|s| s.pos[1] == 2000.0)
    });
    live.alice
        .queue_remote_event(RemoteEvent::KillObject {
            object_id: 501,
            list_id: 1,
        })
        .expect("alice kills the laser");

    // Bob's ship moves on while alice does not run a frame: its new state waits in her socket.
    // A state is sent at most once per send tick (20 Hz): bob runs for three of them.
    let moved = flying(3000.0, 0);
    live.bob.set_local_state(moved).expect("state");
    let until = Instant::now() + Duration::from_millis(150);
    while Instant::now() < until {
        live.bob.maintain(Instant::now());
        let _ = live.bob.wait(Duration::from_millis(5));
    }

    // Alice starts recording in the middle of the game: what her lookups answer now is what
    // the played demo must answer from its start.
    console(&mut live.alice, &format!("record {}", path.0.display()));
    let at_start = look_up(&live.alice, GameEvent::Connected { slot: alice_slot });
    assert_eq!(
        at_start.names[usize::from(bob_slot)].as_deref(),
        Some("bobby")
    );
    assert_eq!(
        at_start.owners,
        vec![(500, Some(bob_slot)), (501, None), (700, Some(alice_slot))]
    );
    let before = live.seen.len();

    // Her first frame takes bob's waiting state in: the recording has it too.
    let frame = live.frame;
    live.run_until("bob's moved ship arrives", |g| {
        g.alice.player_state(bob_slot) == Ok(moved)
    });
    assert_eq!(
        live.frame,
        frame + 1,
        "bob's state came in alice's first frame"
    );

    // Then bob says something and creates another laser.
    console(&mut live.bob, "say after the start");
    live.bob
        .queue_remote_event(RemoteEvent::CreateLaser {
            object_id: 501,
            class: 2,
            pos: [1.0, 2.0, 3.0],
            dir: [0.0, 0.0, 1.0],
        })
        .expect("second laser");
    live.run_until("bob's line and laser arrive", |g| {
        g.seen[before..].iter().any(|s| {
            matches!(
                s.event,
                GameEvent::Remote {
                    event: RemoteEvent::SendText(_),
                    ..
                }
            )
        }) && g.alice.owner_of(501) == Some(bob_slot)
    });
    console(&mut live.alice, "stop");
    let seen_after: Vec<Seen> = live.seen.drain(before..).collect();
    assert!(!seen_after.is_empty());
    let contents = decode_demo(&std::fs::read(&path.0).expect("read")).expect("decode");
    assert_eq!(contents.broken, None);
    let moved_state = DemoItem::State {
        slot: bob_slot,
        state: moved,
    };
    assert!(
        contents.items.iter().any(|(_, item)| *item == moved_state),
        "the state taken in the first frame of the recording is not in the file"
    );

    // Played back in a fresh instance: first the game as it was when the recording began, as
    // the events that made it known, each answered by the lookups as they were then.
    let played = play_and_look_up(&path.0);
    let snapshot: Vec<GameEvent> = [
        GameEvent::Connected { slot: alice_slot },
        GameEvent::PlayerConnected {
            slot: bob_slot,
            name: name("bobby"),
        },
        GameEvent::PlayerJoined { slot: bob_slot },
    ]
    .into();
    assert!(played.len() >= snapshot.len(), "{played:#?}");
    for (seen, event) in played.iter().zip(&snapshot) {
        let expected = Seen {
            event: event.clone(),
            names: at_start.names.clone(),
            states: at_start.states.clone(),
            owners: at_start.owners.clone(),
        };
        assert_eq!(seen, &expected, "the game at the start of the recording");
    }
    // Then exactly what the live game saw after the start, with the same answers.
    let rest = &played[snapshot.len()..];
    for (i, (live, played)) in seen_after.iter().zip(rest).enumerate() {
        assert_eq!(
            live, played,
            "event {i} after the start: live (left) and played back (right) differ"
        );
    }
    assert_eq!(seen_after.len(), rest.len());
}

#[test]
fn a_recording_begun_outside_a_game_holds_no_snapshot() {
    // No protocol yet, and a game that could connect but has not: the file starts with the
    // own player out of a game, and holds nothing else.
    let (loopback, _) = loopback_game("carol");
    for mut sub in [Subsystem::new(), loopback] {
        let path = TempPath::new("outside");
        console(&mut sub, &format!("record {}", path.0.display()));
        sub.maintain(Instant::now());
        console(&mut sub, "stop");
        let contents = decode_demo(&std::fs::read(&path.0).expect("read")).expect("decode");
        assert_eq!(contents.broken, None);
        let items: Vec<DemoItem> = contents.items.into_iter().map(|(_, i)| i).collect();
        assert_eq!(items, vec![DemoItem::OwnPlayer(None)]);
    }
}

#[test]
fn play_in_a_game_leaves_it_first_and_the_game_hears_so_before_the_demo() {
    // While a demo plays the game sees only the demo. `play` in a game leaves the game first
    // (the others see the player go, it is not left in their game unseen) and says so; the game
    // then polls what it had not polled of the live game and its DISCONNECTED, as after
    // `disconnect`, and then the demo's events exactly as recorded.
    let path = TempPath::new("play-in-game");
    let mut live = LiveGame::connected(None);
    let alice_slot = slot_in(live.seen.iter().map(|s| s.event.clone())).expect("alice's slot");
    let bob_slot = slot_in(live.bob_events.iter().cloned()).expect("bob's slot");

    // Alice records bob's chat line, then stops, still in the game.
    console(&mut live.alice, &format!("record {}", path.0.display()));
    let status = console(&mut live.alice, "status");
    assert!(
        status.contains(&format!("demo recording to {} (", path.0.display())),
        "{status}"
    );
    let before = live.seen.len();
    console(&mut live.bob, "say recorded line");
    live.run_until("bob's line arrives", |g| {
        g.seen[before..].iter().any(|s| {
            matches!(
                s.event,
                GameEvent::Remote {
                    event: RemoteEvent::SendText(_),
                    ..
                }
            )
        })
    });
    console(&mut live.alice, "stop");
    let recorded: Vec<GameEvent> = live.seen[before..]
        .iter()
        .map(|s| s.event.clone())
        .collect();

    // Bob joins; alice's frame takes it in, and she types `play` before she polls it (a game
    // that runs its console before its events). Found by ffi-tests/tests/api_chaos.rs: the
    // live PLAYER_JOINED came after `play` with the demo's lookups, which did not know bob,
    // and the game heard it left the live game only when the demo ended.
    console(&mut live.bob, "join");
    let deadline = Instant::now() + Duration::from_secs(20);
    while live.alice.game().pending_events() == 0 {
        assert!(Instant::now() < deadline, "bob's join never reached alice");
        live.alice.maintain(Instant::now());
        live.bob.maintain(Instant::now());
        let _ = live.alice.wait(Duration::from_millis(1));
    }
    let reply = console(&mut live.alice, &format!("play {}", path.0.display()));
    assert!(
        reply.starts_with("disconnected from the peer game first; playing "),
        "{reply}"
    );
    let status = console(&mut live.alice, "status");
    assert!(
        status.contains(&format!("demo playing {} (", path.0.display())),
        "{status}"
    );
    // Connecting is refused while the demo is shown (its Connected would go unseen).
    assert_connect_refused(&mut live.alice, "connect: a demo is playing (stop first");

    // Alice's game sees the rest of the live game, that she left it, then the demo; bob sees
    // alice leave.
    let mut played = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while live.alice.game().is_playing()
        || !live
            .bob_events
            .iter()
            .any(|e| matches!(e, GameEvent::PlayerDisconnected { slot, .. } if *slot == alice_slot))
    {
        assert!(
            Instant::now() < deadline,
            "{played:#?} {:#?}",
            live.bob_events
        );
        live.alice.maintain(Instant::now());
        while let Some(event) = live.alice.poll_event() {
            played.push(event);
        }
        live.bob.maintain(Instant::now());
        while let Some(event) = live.bob.poll_event() {
            live.bob_events.push(event);
        }
        let _ = live.alice.wait(Duration::from_millis(1));
        let _ = live.bob.wait(Duration::from_millis(1));
    }
    let left = played
        .iter()
        .position(|e| matches!(e, GameEvent::Disconnected { .. }))
        .unwrap_or_else(|| panic!("no DISCONNECTED: {played:#?}"));
    assert_eq!(
        &played[..left],
        &[GameEvent::PlayerJoined { slot: bob_slot }],
        "what alice had not polled of the live game comes first: {played:#?}"
    );
    assert!(
        matches!(&played[left], GameEvent::Disconnected { reason } if reason.contains("demo")),
        "{played:#?}"
    );
    // Then the demo, exactly as recorded: the snapshot of the game it was recorded in, then
    // bob's line.
    let demo = &played[left + 1..];
    assert!(
        matches!(demo.first(), Some(GameEvent::Connected { .. })),
        "{demo:#?}"
    );
    assert_eq!(&demo[demo.len() - recorded.len()..], &recorded[..]);

    // The demo ended in its game (the recording stopped in one): it is shown until `stop`, which
    // tells the game it is back in the live game, out of a game.
    let status = console(&mut live.alice, "status");
    assert!(status.contains("demo finished playing ("), "{status}");
    assert_connect_refused(&mut live.alice, "connect: a finished demo is still shown");
    let stop = console(&mut live.alice, "stop");
    assert!(stop.contains("playback had finished"), "{stop}");
    let after: Vec<GameEvent> = std::iter::from_fn(|| live.alice.poll_event()).collect();
    assert!(
        matches!(&after[..], [GameEvent::Disconnected { reason }] if reason.contains("demo stopped")),
        "{after:#?}"
    );
    let status = console(&mut live.alice, "status");
    assert!(status.contains("demo off"), "{status}");
    let bob_addr = live.bob_addr.clone();
    console(&mut live.alice, &format!("connect {bob_addr}"));
}

#[test]
fn a_demo_played_in_a_game_is_looked_up_only_after_the_live_events_before_it() {
    // The lookups follow the events the game polls: the live game's last events and its
    // DISCONNECTED (queued by `play`, which leaves the game) are handled as after `disconnect`,
    // with nobody shown; the demo's players show from its first event until `stop`, and after
    // `stop`'s DISCONNECTED nobody again.
    let path = TempPath::new("ends-after-live");
    let mut live = LiveGame::connected(Some(&path.0));
    let bob_slot = live.join_until_bobs_ship_arrives();
    console(&mut live.alice, "stop");

    let reply = console(&mut live.alice, &format!("play {}", path.0.display()));
    assert!(
        reply.starts_with("disconnected from the peer game first; "),
        "{reply}"
    );
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while live.alice.game().is_playing() {
        assert!(Instant::now() < deadline, "{seen:#?}");
        live.alice.maintain(Instant::now());
        poll_and_look_up(&mut live.alice, &mut seen);
        let _ = live.alice.wait(Duration::from_millis(1));
    }
    poll_and_look_up(&mut live.alice, &mut seen);
    let first = seen.first().expect("the live DISCONNECTED");
    assert!(
        matches!(&first.event, GameEvent::Disconnected { reason } if reason.contains("demo")),
        "{:?}",
        first.event
    );
    assert_eq!(
        first.names,
        vec![None; 16],
        "names at the live DISCONNECTED"
    );
    assert!(
        first.owners.iter().all(|(_, o)| o.is_none()),
        "{:?}",
        first.owners
    );
    // The demo's own game: bob is shown while the game handles its events, and after it ended.
    assert!(
        seen[1..]
            .iter()
            .all(|s| !matches!(s.event, GameEvent::Disconnected { .. })),
        "{seen:#?}"
    );
    let last = seen.last().expect("the demo's last event");
    assert_eq!(last.names[usize::from(bob_slot)].as_deref(), Some("bob"));
    assert_eq!(
        live.alice.player_name(bob_slot).map(|n| n.to_string()),
        Some("bob".to_string())
    );

    console(&mut live.alice, "stop");
    let mut after = Vec::new();
    poll_and_look_up(&mut live.alice, &mut after);
    assert!(
        matches!(&after[..], [Seen { event: GameEvent::Disconnected { reason }, .. }] if reason.contains("demo stopped")),
        "{after:#?}"
    );
    assert_eq!(
        after[0].names,
        vec![None; 16],
        "names at stop's DISCONNECTED"
    );
    assert_eq!(
        live.alice.player_state(bob_slot).map_err(|e| e.code),
        Err(ErrorCode::NotConnected)
    );
    let status = console(&mut live.alice, "status");
    assert!(status.contains("demo off"), "{status}");
}

#[test]
fn a_demo_played_while_an_ended_one_is_shown_tells_the_game_it_left_the_first() {
    // The first demo ended in its game (its Connected came, no Disconnected): the game believes
    // it is in that game. A second `play` ends the first demo's view as `stop` would, with a
    // DISCONNECTED, before the second demo's Connected; before, the second demo's players
    // replaced the first's in the lookups without a word.
    let path = TempPath::new("replaced");
    let mut live = LiveGame::connected(Some(&path.0));
    console(&mut live.alice, "stop");

    let mut player = Subsystem::new();
    let mut events = Vec::new();
    for _ in 0..2 {
        let reply = player.console_exec(&format!("play {}", path.0.display()), Instant::now());
        assert!(reply.result.is_ok(), "{}", reply.output);
        while let Some(due) = player.next_wakeup() {
            player.maintain(due);
            events.extend(std::iter::from_fn(|| player.poll_event()));
        }
        assert!(!player.game().is_playing());
    }
    let own: Vec<&GameEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                GameEvent::Connected { .. } | GameEvent::Disconnected { .. }
            )
        })
        .collect();
    assert!(
        matches!(
            &own[..],
            [
                GameEvent::Connected { .. },
                GameEvent::Disconnected { reason },
                GameEvent::Connected { .. }
            ] if reason.starts_with("demo ended: another one is played")
        ),
        "{events:#?}"
    );
    let stop = console(&mut player, "stop");
    assert!(stop.contains("playback had finished"), "{stop}");
    assert!(
        matches!(player.poll_event(), Some(GameEvent::Disconnected { reason }) if reason.starts_with("demo stopped")),
    );
}

#[test]
fn record_while_a_finished_demo_is_shown_is_refused_naming_stop() {
    // Found by ffi-tests/tests/api_chaos.rs: `record` was refused while a demo played but taken
    // once it had ended and was still shown; the next `stop` then ended the recording and left
    // the demo shown, so a second `stop` was needed. Now `record` is refused until `stop`, as
    // `connect` is, and one `stop` ends the shown demo.
    let path = TempPath::new("record-while-shown");
    let other = TempPath::new("record-while-shown-2");
    let mut live = LiveGame::connected(Some(&path.0));
    console(&mut live.alice, "stop");

    let mut player = Subsystem::new();
    let mut now = Instant::now();
    let reply = player.console_exec(&format!("play {}", path.0.display()), now);
    assert!(reply.result.is_ok(), "{}", reply.output);
    while let Some(due) = player.next_wakeup() {
        now = due;
        player.maintain(due);
        while player.poll_event().is_some() {}
    }
    assert!(!player.game().is_playing());
    let status = console(&mut player, "status");
    assert!(status.contains("demo finished playing ("), "{status}");

    let refused = player.console_exec(&format!("record {}", other.0.display()), now);
    assert_eq!(
        refused.result.as_ref().err().map(|e| e.code),
        Some(ErrorCode::State),
        "{}",
        refused.output
    );
    assert!(
        refused
            .output
            .starts_with("record: a finished demo is still shown (stop first"),
        "{}",
        refused.output
    );
    assert!(!other.0.exists());
    let stop = console(&mut player, "stop");
    assert!(stop.starts_with("playback had finished"), "{stop}");
    let status = console(&mut player, "status");
    assert!(status.contains("demo off"), "{status}");
    let reply = console(&mut player, &format!("record {}", other.0.display()));
    assert!(reply.starts_with("recording to "), "{reply}");
    let stop = console(&mut player, "stop");
    assert!(stop.starts_with("recorded "), "{stop}");
}

#[test]
fn record_over_an_existing_file_says_it_replaces_it() {
    let path = TempPath::new("replaced");
    let _ = std::fs::remove_file(&path.0);
    let mut sub = Subsystem::new();
    let first = console(&mut sub, &format!("record {}", path.0.display()));
    assert_eq!(first, format!("recording to {}", path.0.display()));
    console(&mut sub, "stop");
    let second = console(&mut sub, &format!("record {}", path.0.display()));
    assert_eq!(
        second,
        format!(
            "recording to {} (replacing the file that was there)",
            path.0.display()
        )
    );
    console(&mut sub, "stop");
}

/// A ship state that arrives in the same frame as its player's departure: live, the game's
/// lookups already show the slot empty when it handles PLAYER_DISCONNECTED (and after); the
/// recording wrote the state after the event, and playback seated the player again with it
/// (`NET_GetPlayerState` gave NET_OK for an empty slot, for the rest of the demo).
#[test]
fn a_state_that_came_with_its_players_departure_does_not_seat_it_again_in_playback() {
    let path = TempPath::new("state-with-leave");
    let mut live = LiveGame::connected(None);
    let bob_slot = live.join_until_bobs_ship_arrives();
    // Recording begun in the game: the snapshot, then what follows.
    console(&mut live.alice, &format!("record {}", path.0.display()));
    live.seen.clear();
    // Bob flies on for a while alice does not run her frame (his states wait in her socket),
    // then leaves: her next frame takes in his states and his departure together.
    let until = Instant::now() + Duration::from_millis(300);
    while Instant::now() < until {
        live.frame += 1;
        live.bob
            .set_local_state(flying(2000.0, live.frame))
            .expect("state");
        live.bob.maintain(Instant::now());
        let _ = live.bob.wait(Duration::from_millis(5));
    }
    console(&mut live.bob, "disconnect");
    live.bob.maintain(Instant::now());
    std::thread::sleep(Duration::from_millis(50));
    live.alice.maintain(Instant::now());
    poll_and_look_up(&mut live.alice, &mut live.seen);
    let b = usize::from(bob_slot);
    let left = live
        .seen
        .iter()
        .position(|s| matches!(s.event, GameEvent::PlayerDisconnected { .. }))
        .unwrap_or_else(|| panic!("bob's departure in one frame: {:#?}", live.seen));
    assert_eq!(
        live.seen[left].states[b],
        Err(ErrorCode::InvalidArgument),
        "live, bob's slot is empty when alice handles his departure"
    );
    // Alice's frames go on a little (more events would show the slot too), then she stops.
    console(&mut live.alice, "say still here");
    for _ in 0..3 {
        live.alice.maintain(Instant::now());
        poll_and_look_up(&mut live.alice, &mut live.seen);
    }
    console(&mut live.alice, "stop");
    let seen_live = live.seen;

    // The played demo starts with the snapshot (Connected, bob seated and joined): compare
    // from the first event after it.
    assert_plays_back_as_live(&path.0, &seen_live);
}

/// Live, a game polls a frame's events before what it does next (a console command such as
/// `net.api`, its next frame) changes the world, so a chat line polled and then a departure (or
/// a switch's DISCONNECTED) recorded a moment later show the sender by name at the chat line.
/// Playback runs its own frames: when one of them fed both (their times less than a frame
/// apart), the game polled the chat line with the departure already applied (no name, no
/// state). The lookups now answer as of the polled event's time.
#[test]
fn events_fed_in_one_playback_frame_are_looked_up_as_of_their_own_time() {
    let path = TempPath::new("one-frame");
    let start = Instant::now();
    let at = |us: u64| start + Duration::from_micros(us);
    let mut rec = DemoRecorder::create(&path.0, start).expect("create");
    let bob = name("bob");
    let text = RemoteEvent::SendText(ChatText::new(b"bye").expect("text"));
    for (time, item) in [
        (at(0), DemoItem::Event(GameEvent::Connected { slot: 0 })),
        (
            at(0),
            DemoItem::OwnPlayer(Some(OwnPlayer {
                slot: 0,
                name: name("alice"),
            })),
        ),
        (
            at(0),
            DemoItem::Event(GameEvent::PlayerConnected { slot: 1, name: bob }),
        ),
        (
            at(10_000),
            DemoItem::Event(GameEvent::Remote {
                slot: 1,
                event: text.clone(),
            }),
        ),
        (
            at(10_400),
            DemoItem::Event(GameEvent::PlayerDisconnected {
                slot: 1,
                reason: "left".into(),
            }),
        ),
        (
            at(10_400),
            DemoItem::Event(GameEvent::Disconnected {
                reason: "bye".into(),
            }),
        ),
        (at(10_400), DemoItem::OwnPlayer(None)),
    ] {
        rec.record(time, &item).expect("record");
    }
    rec.finish_at(at(11_000)).expect("finish");

    let mut player = Subsystem::new();
    let t0 = Instant::now();
    let reply = player.console_exec(&format!("play {}", path.0.display()), t0);
    assert!(reply.result.is_ok(), "{}", reply.output);
    // One playback frame after everything is due.
    player.maintain(t0 + Duration::from_millis(50));
    let mut seen = Vec::new();
    poll_and_look_up(&mut player, &mut seen);
    let kinds: Vec<&GameEvent> = seen.iter().map(|s| &s.event).collect();
    assert_eq!(kinds.len(), 5, "{kinds:#?}");
    let chat = &seen[2];
    assert!(matches!(chat.event, GameEvent::Remote { .. }));
    assert_eq!(
        chat.names[1].as_deref(),
        Some("bob"),
        "bob's name while the game handles his chat line (as live)"
    );
    assert_eq!(chat.states[1], Ok(ShipState::default()));
    assert_eq!(chat.names[0].as_deref(), Some("alice"));
    let left = &seen[3];
    assert!(matches!(left.event, GameEvent::PlayerDisconnected { .. }));
    assert_eq!(left.names[1], None);
    assert_eq!(left.states[1], Err(ErrorCode::NotConnected));
    // After the frame's events, the lookups show the end of the frame.
    assert_eq!(player.player_name(0), None);
    assert_eq!(
        player.player_state(0).map_err(|e| e.code),
        Err(ErrorCode::NotConnected)
    );
}

/// Regression: the recorder compared the game's own ship state with `!=` on its floats, so a
/// change only in the sign of a zero (-0.0 after 0.0) was not recorded, and playback showed
/// +0.0 where the live game's own slot had -0.0 (as sending does, any bit counts).
#[test]
fn an_own_state_differing_only_in_the_sign_of_a_zero_is_recorded() {
    let path = TempPath::new("signed-zero");
    let (mut alice, alice_addr) = loopback_game("alice");
    let (mut bob, bob_addr) = loopback_game("bob");
    console(&mut alice, &format!("connect {bob_addr}"));
    console(&mut bob, &format!("connect {alice_addr}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut alice_slot = None;
    while alice_slot.is_none() {
        assert!(Instant::now() < deadline, "alice never connected");
        alice.maintain(Instant::now());
        bob.maintain(Instant::now());
        while let Some(event) = alice.poll_event() {
            if let GameEvent::Connected { slot } = event {
                alice_slot = Some(slot);
            }
        }
        while bob.poll_event().is_some() {}
        let _ = alice.wait(Duration::from_millis(1));
    }
    let alice_slot = alice_slot.expect("connected");
    let positive = ShipState::default();
    let mut negative = positive;
    negative.pos[0] = -0.0;
    alice.set_local_state(positive).expect("state");
    console(&mut alice, &format!("record {}", path.0.display()));
    alice.maintain(Instant::now());
    alice.set_local_state(negative).expect("state");
    alice.maintain(Instant::now());
    console(&mut alice, "stop");
    let contents = decode_demo(&std::fs::read(&path.0).expect("read")).expect("decode");
    let own_states: Vec<u32> = contents
        .items
        .into_iter()
        .filter_map(|(_, item)| match item {
            DemoItem::State { slot, state } if slot == alice_slot => Some(state.pos[0].to_bits()),
            _ => None,
        })
        .collect();
    assert_eq!(
        own_states,
        vec![0.0f32.to_bits(), (-0.0f32).to_bits()],
        "alice's own states as recorded"
    );
}

/// The console's counts read as English for one and for several: a demo of one item said
/// "recorded 1 items" (and `play`, `status` "1 items").
#[test]
fn the_console_counts_one_item_and_several_items() {
    let file = TempPath::new("counts");
    let path = file.0.display().to_string();
    let mut sub = Subsystem::new();
    // Recorded at once, the demo holds only the game's own player (no name, no state yet).
    console(&mut sub, &format!("record {path}"));
    let status = console(&mut sub, "status");
    assert!(status.contains(" (1 item, "), "{status}");
    let reply = console(&mut sub, "stop");
    assert!(reply.starts_with("recorded 1 item ("), "{reply}");
    assert!(reply.contains(" bytes, "), "{reply}");
    let reply = console(&mut sub, &format!("play {path}"));
    assert!(
        reply.starts_with(&format!("playing {path} (1 item, ")),
        "{reply}"
    );
    console(&mut sub, "stop");

    // A demo of several items, counted in the plural.
    let items = all_items();
    let (bytes, _) = encode_demo(&items, &times(items.len()));
    std::fs::write(&file.0, bytes).expect("demo written");
    let reply = console(&mut sub, &format!("play {path}"));
    let wanted = format!("playing {path} ({} items, ", items.len());
    assert!(reply.starts_with(&wanted), "{reply}");
    let reply = console(&mut sub, "stop");
    assert!(
        reply.ends_with(&format!(" of {} items", items.len())),
        "{reply}"
    );
}

/// A player's last chat line and its departure both reach the game before it polls (they came
/// in one frame, as when a player says something and leaves): live, the lookups answered as of
/// the last frame, so the game handled the chat line with the sender already gone
/// (`NET_FetchPlayerName` NULL, `NET_GetPlayerState` an error). The departing player is now
/// shown (its name, its last state) until the game polls its PLAYER_DISCONNECTED, and the
/// played demo answers the same.
#[test]
fn a_departing_player_is_looked_up_until_the_game_polls_its_departure() {
    let path = TempPath::new("say-and-leave");
    let mut live = LiveGame::connected(Some(&path.0));
    let bob_slot = live.join_until_bobs_ship_arrives();
    let b = usize::from(bob_slot);
    live.seen.clear();
    console(&mut live.bob, "say last words");
    console(&mut live.bob, "disconnect");
    // Alice runs her frames without polling until her session has let bob go: the chat line
    // and the departure wait for her together.
    let deadline = Instant::now() + Duration::from_secs(20);
    let bob_seated = |alice: &Subsystem| {
        alice
            .protocol_module()
            .and_then(|p| p.session())
            .is_some_and(|s| s.players().get(bob_slot).is_some())
    };
    while bob_seated(&live.alice) {
        assert!(Instant::now() < deadline, "bob never left alice's session");
        live.bob.maintain(Instant::now());
        live.alice.maintain(Instant::now());
        let _ = live.alice.wait(Duration::from_millis(1));
    }
    poll_and_look_up(&mut live.alice, &mut live.seen);
    let chat = live
        .seen
        .iter()
        .position(|s| {
            matches!(
                s.event,
                GameEvent::Remote {
                    event: RemoteEvent::SendText(_),
                    ..
                }
            )
        })
        .unwrap_or_else(|| panic!("bob's chat line: {:#?}", live.seen));
    let left = live
        .seen
        .iter()
        .position(|s| matches!(s.event, GameEvent::PlayerDisconnected { .. }))
        .unwrap_or_else(|| panic!("bob's departure: {:#?}", live.seen));
    assert!(chat < left);
    let at_chat = &live.seen[chat];
    assert_eq!(
        at_chat.names[b].as_deref(),
        Some("bob"),
        "bob's name while alice handles his last chat line"
    );
    assert!(
        at_chat.states[b].is_ok_and(|s| s.pos[1] == 2000.0),
        "bob's last state while alice handles his last chat line: {:?}",
        at_chat.states[b]
    );
    assert_eq!(live.seen[left].names[b], None, "gone once polled");
    assert_eq!(live.seen[left].states[b], Err(ErrorCode::InvalidArgument));
    assert_eq!(live.alice.player_name(bob_slot), None);
    console(&mut live.alice, "disconnect");
    poll_and_look_up(&mut live.alice, &mut live.seen);
    console(&mut live.alice, "stop");
    let seen_live = live.seen;

    // Played back, the same answers at the same events.
    assert_plays_back_as_live(&path.0, &seen_live);
}

#[test]
fn stop_after_a_demo_played_outside_a_game_tells_the_game_it_left_the_demos_game() {
    // Found by ffi-tests/tests/api_chaos.rs (seed 9004): a game that played a demo while not in
    // a live game saw the demo's CONNECTED and its players arrive, and after `stop` the lookups
    // knew nobody, but no event told the game: it kept the demo's players seated in its own
    // view for good. Now `stop` ends the demo's game with a DISCONNECTED of its own, whether the
    // demo had ended or was still playing (a game in a live game gets the live one before the
    // demo, and this one too: play_in_a_game_leaves_it_first_and_the_game_hears_so_before_the_demo).
    let path = TempPath::new("played-outside");
    let mut live = LiveGame::connected(Some(&path.0));
    console(&mut live.alice, "stop");

    for play_to_the_end in [true, false] {
        let mut player = Subsystem::new();
        let mut now = Instant::now();
        let reply = player.console_exec(&format!("play {}", path.0.display()), now);
        assert!(reply.result.is_ok(), "{}", reply.output);
        let mut events = Vec::new();
        while let Some(due) = player.next_wakeup() {
            now = due;
            player.maintain(due);
            while let Some(event) = player.poll_event() {
                events.push(event);
            }
            let seated = events
                .iter()
                .any(|e| matches!(e, GameEvent::PlayerConnected { .. }));
            if seated && !play_to_the_end {
                break;
            }
        }
        if play_to_the_end {
            assert!(!player.game().is_playing());
        }
        let bob_slot = events
            .iter()
            .find_map(|e| match e {
                GameEvent::PlayerConnected { slot, .. } => Some(*slot),
                _ => None,
            })
            .expect("the demo seats bob");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, GameEvent::Disconnected { .. })),
            "{events:#?}"
        );
        assert!(player.player_name(bob_slot).is_some());

        let reply = player.console_exec("stop", now);
        assert!(reply.result.is_ok(), "{}", reply.output);
        let mut after = Vec::new();
        while let Some(event) = player.poll_event() {
            after.push(event);
        }
        assert!(
            matches!(after.last(), Some(GameEvent::Disconnected { reason })
                if reason.starts_with("demo stopped")),
            "after `stop` (demo {}): {after:#?}",
            if play_to_the_end { "ended" } else { "playing" }
        );
        assert_eq!(player.player_name(bob_slot), None);
        // Nothing more: one DISCONNECTED, and a second `stop` has nothing to stop.
        player.maintain(now);
        assert_eq!(player.poll_event(), None);
        let reply = player.console_exec("stop", now);
        assert!(reply.result.is_err(), "{}", reply.output);
    }
}
