//! Frames that are not IPX datagrams for our socket are dropped and counted, never delivered:
//! another socket of ours opened in namespace B listens while a separate raw socket in
//! namespace A injects hand-made frames on the veth: other EtherTypes, other IPX sockets and
//! networks and nodes, truncated headers, inconsistent IPX lengths, empty and oversized payloads,
//! a spoofed copy of our own address. A valid frame sent last must be the only one delivered.
//! Needs root (else SKIPPED).

#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::netns::{Lab, MAC_A, MAC_B};
use common::wire::{ipx_frame, set_ipx_length, Addr};
use common::{injection_lab, node_text, print};

const NETWORK: u32 = 0x0000_0042;
const SOCKET: u16 = 0x5001;

#[test]
fn foreign_frames_are_dropped_and_counted() {
    let Some(lab) = Lab::new() else { return };
    let (b, injector, me, peer) = injection_lab(&lab, NETWORK, SOCKET);
    let broadcast = Addr {
        node: [0xff; 6],
        ..me
    };

    // Not IPX at all: the kernel never hands these to a socket bound to EtherType 0x8137.
    let mut ipv4 = vec![0u8; 60];
    ipv4[..6].copy_from_slice(&MAC_B);
    ipv4[6..12].copy_from_slice(&MAC_A);
    ipv4[12..14].copy_from_slice(&[0x08, 0x00]);
    ipv4[14..].fill(0xa5);
    let mut local_experimental = ipx_frame(me, peer, b"looks like IPX inside");
    local_experimental[12..14].copy_from_slice(&[0x88, 0xb5]);

    // IPX, but for someone else.
    let other_socket = ipx_frame(
        Addr {
            socket: 0x5002,
            ..me
        },
        peer,
        b"other socket",
    );
    let other_network = ipx_frame(Addr { network: 7, ..me }, peer, b"other net");
    let other_node = ipx_frame(
        Addr {
            node: [0x02, 0, 0, 0, 0, 0x99],
            ..me
        },
        peer,
        b"other node",
    );
    let spoofed_own = ipx_frame(broadcast, me, b"claims to be from us");

    // Malformed IPX.
    let full = ipx_frame(me, peer, b"0123456789");
    let no_ipx_header = full[..14].to_vec();
    let half_header = full[..14 + 20].to_vec();
    let mut length_too_large = full.clone(); // 60-byte frame: 46 bytes after Ethernet
    set_ipx_length(&mut length_too_large, 200);
    let mut length_just_too_large = full.clone();
    set_ipx_length(&mut length_just_too_large, 47);
    let mut length_too_small = full.clone();
    set_ipx_length(&mut length_too_small, 29);
    let mut length_zero = full.clone();
    set_ipx_length(&mut length_zero, 0);

    // Well-formed, for us, but not deliverable.
    let empty = ipx_frame(me, peer, b"");
    let oversize = ipx_frame(me, peer, &[0x5a; 600]);

    let foreign: Vec<(&str, &[u8])> = vec![
        ("IPv4 EtherType", &ipv4),
        ("EtherType 0x88B5", &local_experimental),
        ("other socket", &other_socket),
        ("other network", &other_network),
        ("other node", &other_node),
        ("spoofed own address", &spoofed_own),
        ("no IPX header", &no_ipx_header),
        ("truncated IPX header", &half_header),
        ("IPX length 200 in a 60-byte frame", &length_too_large),
        ("IPX length one past the frame", &length_just_too_large),
        ("IPX length 29", &length_too_small),
        ("IPX length 0", &length_zero),
        ("empty payload", &empty),
        ("600-byte payload", &oversize),
    ];
    for (_, frame) in &foreign {
        injector.send(frame);
    }
    // The marker: valid, sent last on the same wire, so it is read after every frame above.
    injector.send(&ipx_frame(me, peer, b"the only real one"));

    let (from, got) = b
        .receive_within(Duration::from_secs(3))
        .expect("the valid frame");
    assert_eq!(got, b"the only real one");
    assert_eq!(
        print(&from).unwrap(),
        node_text(NETWORK, MAC_A, peer.socket)
    );
    assert!(b.receive_within(Duration::from_millis(300)).is_none());

    let s = b.stats();
    let summary = s.summary();
    assert_eq!(s.traffic.datagrams_received, 1, "{summary}");
    assert_eq!(
        s.dropped_wrong_ethertype, 0,
        "filtered by the kernel: {summary}"
    );
    assert_eq!(s.dropped_other_socket, 1, "{summary}");
    assert_eq!(s.dropped_other_network, 1, "{summary}");
    assert_eq!(s.dropped_other_node, 1, "{summary}");
    assert_eq!(s.dropped_own, 1, "{summary}");
    assert_eq!(s.dropped_truncated_header, 2, "{summary}");
    assert_eq!(s.dropped_bad_length, 4, "{summary}");
    assert_eq!(s.dropped_empty, 1, "{summary}");
    assert_eq!(s.dropped_oversize, 1, "{summary}");
    assert_eq!(s.dropped_total(), 12, "{summary}");
    assert_eq!(s.frames_read, 13, "{summary}");
    // The last malformed frame is described in last_error.
    let last = b.last_error();
    assert!(last.starts_with("ipx: dropped a"), "{last}");
    println!("{summary}");
    println!("last_error: {last}");
}
