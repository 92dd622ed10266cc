//! Throughput of the game packet codec on a realistic mix: every packet carries the ship state
//! and a handful of events (lasers, missiles, chat text, 64-byte custom events, reliable and not)
//! in a 1400-byte UDP payload. Prints figures only; asserts nothing about time.
//!
//! Run with `cargo bench -p parsec-net-core --bench codec`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use net_core::rmev::{ChatText, CustomData, RemoteEvent, ShipState};
use net_core::wire::{
    decode_packet, encoded_len, PacketHeader, PacketType, PacketWriter, WireEvent,
};

const RUN_FOR: Duration = Duration::from_millis(1500);
const MAX_PAYLOAD: usize = 1400;
const EVENTS_PER_PACKET: usize = 8;

/// A small deterministic generator so runs are comparable.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    fn f(&mut self) -> f32 {
        (self.next() % 20000) as f32 / 10.0 - 1000.0
    }

    fn v3(&mut self) -> [f32; 3] {
        [self.f(), self.f(), self.f()]
    }
}

fn type_name(event: &RemoteEvent) -> &'static str {
    match event {
        RemoteEvent::CreateLaser { .. } => "laser",
        RemoteEvent::CreateMissile { .. } => "missile",
        RemoteEvent::SendText(_) => "text",
        RemoteEvent::Custom { reliable: true, .. } => "custom64 reliable",
        RemoteEvent::Custom {
            reliable: false, ..
        } => "custom64 unreliable",
        _ => "other",
    }
}

/// The event stream: 40% lasers, 15% missiles, 10% text, 35% custom 64-byte events.
fn event_mix(n: usize) -> Vec<WireEvent> {
    let mut rng = Lcg(0x5eed);
    let mut next_id = 1u32;
    let mut out = Vec::with_capacity(n);
    for object_id in (1001u32..).take(n) {
        let roll = rng.next() % 100;
        let event = if roll < 40 {
            RemoteEvent::CreateLaser {
                object_id,
                class: 3,
                pos: rng.v3(),
                dir: [0.0, 0.0, 1.0],
            }
        } else if roll < 55 {
            RemoteEvent::CreateMissile {
                object_id,
                class: 7,
                pos: rng.v3(),
                dir: [0.0, 1.0, 0.0],
                target_id: rng.next() | 1,
            }
        } else if roll < 65 {
            let len = 8 + (rng.next() % 40) as usize;
            let line: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            RemoteEvent::SendText(ChatText::new(&line).expect("valid text"))
        } else {
            let mut data = [0u8; 64];
            for b in data.iter_mut() {
                *b = rng.next() as u8;
            }
            RemoteEvent::Custom {
                custom_type: 1,
                data: CustomData::new(&data).expect("64 bytes"),
                reliable: rng.next() & 1 == 0,
            }
        };
        let reliable_id = event.is_reliable().then(|| {
            next_id += 1;
            next_id
        });
        out.push(WireEvent { reliable_id, event });
    }
    out
}

fn header(sequence: u32) -> PacketHeader {
    PacketHeader {
        kind: PacketType::GameState,
        sender_slot: Some(2),
        joined: true,
        sequence,
        ack: Some(net_core::wire::Ack {
            latest: sequence,
            bits: 0xFFFF_FFFF,
        }),
        token: 0x1234_5678,
    }
}

fn main() {
    let events = event_mix(4096);
    let state = ShipState {
        pos: [1.0, 2.0, 3.0],
        orient: [0.0, 0.0, 0.0, 1.0],
        vel: [0.5, 0.0, -0.5],
        game: [9; 32],
    };

    // Encoding.
    let mut buf = [0u8; MAX_PAYLOAD];
    let mut encoded_events = 0u64;
    let mut packets = 0u64;
    let mut bytes = 0u64;
    let mut cursor = 0usize;
    let start = Instant::now();
    while start.elapsed() < RUN_FOR {
        for _ in 0..256 {
            let mut writer = PacketWriter::new(&mut buf, &header(packets as u32 + 1), Some(&state))
                .expect("header fits");
            for _ in 0..EVENTS_PER_PACKET {
                let ev = &events[cursor % events.len()];
                if !writer.push(ev).expect("valid event") {
                    break;
                }
                cursor += 1;
                encoded_events += 1;
            }
            let len = writer.finish();
            bytes += len as u64;
            packets += 1;
            black_box(&buf[..len]);
        }
    }
    let enc_secs = start.elapsed().as_secs_f64();

    // Pre-encode a set of packets for decoding.
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    let mut corpus_events = 0u64;
    for (i, chunk) in events.chunks(EVENTS_PER_PACKET).enumerate() {
        let mut writer =
            PacketWriter::new(&mut buf, &header(i as u32 + 1), Some(&state)).expect("fits");
        for ev in chunk {
            assert!(
                writer.push(ev).expect("valid"),
                "8 events fit in 1400 bytes"
            );
        }
        let len = writer.finish();
        corpus.push(buf[..len].to_vec());
        corpus_events += chunk.len() as u64;
    }
    let mut decoded = Vec::with_capacity(EVENTS_PER_PACKET);
    let mut dec_packets = 0u64;
    let mut dec_events = 0u64;
    let start = Instant::now();
    while start.elapsed() < RUN_FOR {
        for packet in &corpus {
            let header = decode_packet(black_box(packet), &mut decoded).expect("valid packet");
            black_box(&header);
            dec_events += decoded.len() as u64;
            dec_packets += 1;
        }
    }
    let dec_secs = start.elapsed().as_secs_f64();

    println!(
        "codec benchmark: state + {EVENTS_PER_PACKET} events per packet, {MAX_PAYLOAD}-byte buffer"
    );
    println!(
        "encode: {:>12.0} events/s  {:>10.0} packets/s  ({} packets, {:.1} bytes/packet on average)",
        encoded_events as f64 / enc_secs,
        packets as f64 / enc_secs,
        packets,
        bytes as f64 / packets as f64
    );
    println!(
        "decode: {:>12.0} events/s  {:>10.0} packets/s  ({} packets of a {}-packet corpus, {} events)",
        dec_events as f64 / dec_secs,
        dec_packets as f64 / dec_secs,
        dec_packets,
        corpus.len(),
        corpus_events
    );

    let enc_rate = encoded_events as f64 / enc_secs;
    let dec_rate = dec_events as f64 / dec_secs;
    println!(
        "encode+decode: {:>5.0} events/s (each event encoded once and decoded once)",
        1.0 / (1.0 / enc_rate + 1.0 / dec_rate)
    );

    let mut by_type: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for ev in &events {
        let entry = by_type.entry(type_name(&ev.event)).or_default();
        entry.0 += 1;
        entry.1 += encoded_len(ev) as u64;
    }
    println!("average bytes per event on the wire (event header + reliable id + body):");
    for (name, (count, total)) in &by_type {
        println!(
            "  {name:<20} {:>6.1} bytes  ({count} in the mix)",
            *total as f64 / *count as f64
        );
    }
    let total: u64 = by_type.values().map(|(_, b)| b).sum();
    println!(
        "  {:<20} {:>6.1} bytes",
        "all events",
        total as f64 / events.len() as f64
    );
}
