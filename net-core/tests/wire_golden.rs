//! Golden bytes written by hand from the tables of docs/wire-format.md: a GAME_STATE with a ship
//! state, one RE_CREATELASER and one RE_SENDTEXT. Decoding them must give the expected values and
//! re-encoding must give the same bytes, which pins byte order, offsets and sizes.

use net_core::rmev::{ChatText, RemoteEvent, ShipState};
use net_core::wire::{
    decode_packet, encode_packet, Ack, PacketHeader, PacketType, PacketWriter, WireEvent,
    HEADER_LEN, SHIP_STATE_LEN,
};

#[rustfmt::skip]
const GOLDEN: [u8; 148] = [
    // ---- header (24 bytes) ----
    0x50, 0x53, 0x4E,       //  0: signature "PSN"
    0x01,                   //  3: protocol version 1
    0x08,                   //  4: packet type GAME_STATE
    0x03,                   //  5: sender slot 3
    0x07,                   //  6: flags: state follows | joined | ack valid
    0x02,                   //  7: event count 2
    0x00, 0x00, 0x01, 0x02, //  8: sequence 258
    0x00, 0x00, 0x01, 0x01, // 12: ack 257
    0x00, 0x00, 0x00, 0x05, // 16: ack bits: 256 and 254 received too
    0xDE, 0xAD, 0xBE, 0xEF, // 20: session token 0xDEADBEEF
    // ---- ship state (72 bytes) ----
    0x3F, 0x80, 0x00, 0x00, // 24: position x  1.0
    0x40, 0x00, 0x00, 0x00, // 28: position y  2.0
    0xBF, 0x80, 0x00, 0x00, // 32: position z -1.0
    0x00, 0x00, 0x00, 0x00, // 36: orientation x 0.0
    0x00, 0x00, 0x00, 0x00, // 40: orientation y 0.0
    0x00, 0x00, 0x00, 0x00, // 44: orientation z 0.0
    0x3F, 0x80, 0x00, 0x00, // 48: orientation w 1.0
    0x3F, 0x00, 0x00, 0x00, // 52: velocity x  0.5
    0x00, 0x00, 0x00, 0x00, // 56: velocity y  0.0
    0xC0, 0x00, 0x00, 0x00, // 60: velocity z -2.0
    // 64: game area, 32 opaque bytes 0x00..0x1F
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F,
    // ---- event 1: RE_CREATELASER (8 + 30 bytes) ----
    0x02,                   //  96: event type RE_CREATELASER
    0x01,                   //  97: flags: reliable
    0x00, 0x1E,             //  98: body length 30
    0x00, 0x00, 0x00, 0x07, // 100: reliable id 7
    0x00, 0x01, 0x02, 0x03, // 104: object id 0x00010203
    0x00, 0x04,             // 108: class 4
    0x41, 0x20, 0x00, 0x00, // 110: position x 10.0
    0x3E, 0x80, 0x00, 0x00, // 114: position y 0.25
    0xC0, 0x60, 0x00, 0x00, // 118: position z -3.5
    0x00, 0x00, 0x00, 0x00, // 122: direction x 0.0
    0x00, 0x00, 0x00, 0x00, // 126: direction y 0.0
    0x3F, 0x80, 0x00, 0x00, // 130: direction z 1.0
    // ---- event 2: RE_SENDTEXT (8 + 6 bytes) ----
    0x06,                   // 134: event type RE_SENDTEXT
    0x01,                   // 135: flags: reliable
    0x00, 0x06,             // 136: body length 6
    0x00, 0x00, 0x00, 0x08, // 138: reliable id 8
    0x05,                   // 142: text length 5
    b'h', b'e', b'l', b'l', b'o', // 143: "hello"
];

fn expected_header() -> PacketHeader {
    PacketHeader {
        kind: PacketType::GameState,
        sender_slot: Some(3),
        joined: true,
        sequence: 258,
        ack: Some(Ack {
            latest: 257,
            bits: 5,
        }),
        token: 0xDEAD_BEEF,
    }
}

fn expected_state() -> ShipState {
    let mut game = [0u8; 32];
    for (i, b) in game.iter_mut().enumerate() {
        *b = i as u8;
    }
    ShipState {
        pos: [1.0, 2.0, -1.0],
        orient: [0.0, 0.0, 0.0, 1.0],
        vel: [0.5, 0.0, -2.0],
        game,
    }
}

fn expected_events() -> Vec<WireEvent> {
    vec![
        WireEvent {
            reliable_id: Some(7),
            event: RemoteEvent::CreateLaser {
                object_id: 0x0001_0203,
                class: 4,
                pos: [10.0, 0.25, -3.5],
                dir: [0.0, 0.0, 1.0],
            },
        },
        WireEvent {
            reliable_id: Some(8),
            event: RemoteEvent::SendText(ChatText::new(b"hello").unwrap()),
        },
    ]
}

#[test]
fn golden_game_state_packet_decodes_to_the_expected_values() {
    let mut events = Vec::new();
    let packet = decode_packet(&GOLDEN, &mut events).expect("golden packet is valid");
    assert_eq!(packet.header, expected_header());
    assert_eq!(packet.state, Some(expected_state()));
    assert_eq!(events, expected_events());
}

#[test]
fn golden_game_state_packet_re_encodes_byte_identically() {
    let mut buf = [0u8; 1400];
    let len = encode_packet(
        &mut buf,
        &expected_header(),
        Some(&expected_state()),
        &expected_events(),
    )
    .expect("encodes");
    assert_eq!(len, GOLDEN.len());
    assert_eq!(buf[..len], GOLDEN[..]);
    assert_eq!(
        HEADER_LEN + SHIP_STATE_LEN,
        96,
        "the first event starts at byte 96"
    );
}

#[test]
fn golden_packet_built_with_the_writer_matches_too() {
    // A buffer exactly the packet's size: both events fit, nothing more would.
    let mut buf = [0u8; 148];
    let mut writer =
        PacketWriter::new(&mut buf, &expected_header(), Some(&expected_state())).unwrap();
    for ev in expected_events() {
        assert!(writer.push(&ev).unwrap());
    }
    assert_eq!(writer.remaining(), 0);
    assert_eq!(writer.finish(), 148);
    assert_eq!(buf, GOLDEN);
}
