//! A client of the gameserver relay (`net_core::relay::RelayCore`), sans-IO: its side of the
//! link with the server, at a loopback address made from its slot, with a token made from its
//! slot, as the relay tests seat their clients.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Instant;

use net_core::rmev::{RemoteEvent, ShipState};
use net_core::session::{Delivery, Link, LinkConfig, PacketMeta};
use net_core::wire::{decode_packet, PacketType};

/// The relay's own token in the tests.
pub const SERVER_TOKEN: u32 = 0xBEEF;

/// The address of the client in `slot`.
pub fn addr(slot: u8) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7000 + u16::from(slot)))
}

/// The token of the client in `slot`.
pub fn token(slot: u8) -> u32 {
    100 + u32::from(slot)
}

/// A client: its side of the link with the server.
pub struct RelayClient {
    pub slot: u8,
    pub link: Link,
}

impl RelayClient {
    pub fn new(slot: u8) -> RelayClient {
        RelayClient {
            slot,
            link: Link::new(LinkConfig::default()),
        }
    }

    /// Its next packet of `kind` (joined, with its token), with `state` and `events` queued.
    pub fn packet(
        &mut self,
        now: Instant,
        kind: PacketType,
        state: Option<ShipState>,
        events: Vec<RemoteEvent>,
    ) -> Vec<u8> {
        for event in events {
            assert!(self.link.queue_event(event));
        }
        let meta = PacketMeta {
            kind,
            sender_slot: Some(self.slot),
            joined: true,
            token: token(self.slot),
            relay: false,
        };
        let mut buf = [0u8; 1400];
        let len = self
            .link
            .write_packet(now, &mut buf, meta, state.as_ref())
            .unwrap();
        buf[..len].to_vec()
    }

    /// Take a packet from the server: the token in its header and what the link delivered.
    pub fn receive(&mut self, now: Instant, data: &[u8]) -> (u32, Vec<Delivery>) {
        let mut events = Vec::new();
        let packet = decode_packet(data, &mut events).unwrap();
        let mut out = Vec::new();
        self.link.handle_packet(
            now,
            &packet.header,
            packet.state.as_ref(),
            &events,
            &mut |d| out.push(d),
        );
        (packet.header.token, out)
    }
}
