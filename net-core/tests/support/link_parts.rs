//! The pieces the link tests build packets from: a game packet's meta data and a reliable
//! 64-byte custom event.
#![allow(dead_code)]

use net_core::rmev::{CustomData, RemoteEvent};
use net_core::session::PacketMeta;
use net_core::wire::PacketType;

/// A game-state packet of slot 0, joined, with token 7.
pub fn meta() -> PacketMeta {
    PacketMeta {
        kind: PacketType::GameState,
        sender_slot: Some(0),
        joined: true,
        token: 7,
        relay: false,
    }
}

/// A reliable custom event of 64 bytes, each `seq`.
pub fn reliable(seq: u8) -> RemoteEvent {
    RemoteEvent::Custom {
        custom_type: 1,
        data: CustomData::new(&[seq; 64]).unwrap(),
        reliable: true,
    }
}
