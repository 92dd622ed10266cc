//! Bursts of frames the game does not read at once. A game's reliable events leave in bursts
//! of one frame each when they are large (a 256-byte custom event fills most of a 546-byte
//! IPX payload), hundreds at once, and the default receive queue of a packet socket holds only
//! some dozens of such frames: the rest were dropped by the kernel without a trace (the game saw
//! "loss" on a perfect LAN and retransmitted). The socket asks for a bigger queue, and what the
//! kernel still drops is counted and shown on the `binding:` line (`describe_socket`), like the
//! foreign frames it ignores. Needs root (else SKIPPED).

#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::netns::{Lab, MAC_B, VETH_B};
use common::wire::{ipx_frame, Addr};
use common::{injection_lab, Sock};

const NETWORK: u32 = 0x0000_0051;
const SOCKET: u16 = 0x5101;

/// Read everything that waits (a quiet wire ends it): the payloads' first bytes as numbers.
fn drain(b: &Sock) -> Vec<u32> {
    let mut got = Vec::new();
    while let Some((_, data)) = b.receive_within(Duration::from_millis(500)) {
        got.push(u32::from_le_bytes([data[0], data[1], data[2], data[3]]));
    }
    got
}

#[test]
fn a_burst_of_game_sized_frames_waits_unread_without_loss() {
    let Some(lab) = Lab::new() else { return };
    let (b, injector, me, peer) = injection_lab(&lab, NETWORK, SOCKET);

    // 400 frames of a 300-byte payload (one 256-byte custom event and its packet), sent while
    // the socket is not read, as a game's burst arrives between two of the receiver's frames.
    const BURST: u32 = 400;
    for n in 0..BURST {
        let mut payload = vec![0xa5u8; 300];
        payload[..4].copy_from_slice(&n.to_le_bytes());
        injector.send(&ipx_frame(me, peer, &payload));
    }
    let got = drain(&b);
    let s = b.stats();
    let described = b.describe();
    assert_eq!(
        got,
        (0..BURST).collect::<Vec<_>>(),
        "every frame of the burst, in order ({}; {described})",
        s.summary()
    );
    assert_eq!(s.dropped_by_kernel, 0, "{}", s.summary());
    assert_eq!(
        described,
        format!(
            "interface {VETH_B}, MAC {}",
            MAC_B.map(|b| format!("{b:02x}")).join(":")
        ),
        "nothing dropped: the binding line says only what the socket is bound to"
    );
}

#[test]
fn frames_the_kernel_drops_are_counted_and_shown() {
    let Some(lab) = Lab::new() else { return };
    let (b, injector, me, peer) = injection_lab(&lab, NETWORK, SOCKET);

    // Far more than any receive queue holds, unread; then a frame for another socket.
    const FLOOD: u32 = 20_000;
    let payload = [0x3cu8; 546];
    for n in 0..FLOOD {
        let mut frame = ipx_frame(me, peer, &payload);
        frame[44..48].copy_from_slice(&n.to_le_bytes());
        injector.send(&frame);
    }
    let got = drain(&b);
    let other = Addr {
        socket: SOCKET + 1,
        ..me
    };
    injector.send(&ipx_frame(other, peer, b"for another socket"));
    assert!(b.receive_within(Duration::from_millis(500)).is_none());

    let s = b.stats();
    let summary = s.summary();
    assert!(!got.is_empty(), "{summary}");
    assert!(got.windows(2).all(|w| w[0] < w[1]), "in order: {summary}");
    assert!(s.dropped_by_kernel > 0, "the flood overflowed: {summary}");
    // The veth itself may drop some (its backlog), but the socket never counts more than
    // were sent.
    assert!(
        got.len() as u64 + s.dropped_by_kernel <= u64::from(FLOOD),
        "{summary}"
    );
    assert_eq!(s.dropped_other_socket, 1, "{summary}");
    let described = b.describe();
    let lost = s.dropped_by_kernel;
    assert!(
        described.ends_with(&format!(
            "; ignored 1 frame (other socket 1); {lost} frames lost: the receive queue was full"
        )),
        "{described}"
    );
    assert!(
        described.starts_with(&format!("interface {VETH_B}, MAC ")),
        "{described}"
    );
    assert!(
        summary.ends_with(&format!(", lost {lost} (receive queue full)")),
        "{summary}"
    );
}
