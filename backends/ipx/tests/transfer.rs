//! Real IPX frames between two network namespaces joined by a veth pair: unicast both ways,
//! broadcast, sender nodes (network + the sender's veth MAC + socket), the default socket and
//! interface, the payload limit, and that a socket never hears its own frames.
//! Needs root (else SKIPPED).

#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::netns::{Lab, MAC_A, MAC_B, VETH_A, VETH_B};
use common::{node, node_text, print, Sock};
use parsec_backend_abi::{NET_BACKEND_ERR_TOO_LARGE, NET_BACKEND_ERR_UNREACHABLE};
use parsec_backend_ipx::DEFAULT_SOCKET;

const NETWORK: u32 = 0x0000_abcd;
const SOCKET: u16 = 0x4001;
const SOON: Duration = Duration::from_secs(3);
const QUIET: Duration = Duration::from_millis(300);

fn options(iface: &str) -> String {
    format!("interface={iface}\nnetwork={NETWORK:08X}")
}

#[test]
fn unicast_and_broadcast_between_namespaces() {
    let Some(lab) = Lab::new() else { return };
    let a = lab
        .a
        .run(|| Sock::open(SOCKET, &options(VETH_A)))
        .expect("open a");
    let b = lab
        .b
        .run(|| Sock::open(SOCKET, &options(VETH_B)))
        .expect("open b");
    let a_text = node_text(NETWORK, MAC_A, SOCKET);
    let b_text = node_text(NETWORK, MAC_B, SOCKET);
    assert_eq!(print(&a.local_node()).unwrap(), a_text);
    assert_eq!(print(&b.local_node()).unwrap(), b_text);
    assert_eq!(a.bound_port(), i32::from(SOCKET));
    assert_eq!(a.interface_name(), VETH_A);

    // Unicast A -> B at the smallest, a middling and the largest size.
    let to_b = node(&b_text);
    for len in [1usize, 17, 45, 546] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 31 + len) as u8).collect();
        a.send_ok(&to_b, &payload);
        let (from, got) = b.receive_within(SOON).expect("datagram A -> B");
        assert_eq!(print(&from).unwrap(), a_text);
        assert_eq!(got, payload, "{len} bytes");
    }
    // And back.
    b.send_ok(&a.local_node(), b"pong");
    let (from, got) = a.receive_within(SOON).expect("datagram B -> A");
    assert_eq!(
        (print(&from).unwrap(), got.as_slice()),
        (b_text.clone(), &b"pong"[..])
    );

    // Broadcast on our network reaches B, not A itself.
    let broadcast = a.broadcast_node(0).unwrap();
    assert_eq!(
        print(&broadcast).unwrap(),
        format!("{NETWORK:08X}:FFFFFFFFFFFF:{SOCKET:04X}")
    );
    a.send_ok(&broadcast, b"anyone there?");
    let (from, got) = b.receive_within(SOON).expect("broadcast at B");
    assert_eq!(print(&from).unwrap(), a_text);
    assert_eq!(got, b"anyone there?");
    assert!(
        a.receive_within(QUIET).is_none(),
        "A must not hear its own broadcast"
    );

    // The payload limit and sending to oneself.
    assert_eq!(a.send(&to_b, &[0u8; 547]), NET_BACKEND_ERR_TOO_LARGE);
    assert!(
        a.last_error().contains("limit is 546"),
        "{}",
        a.last_error()
    );
    assert_eq!(a.send(&a.local_node(), b"me"), NET_BACKEND_ERR_UNREACHABLE);

    let sa = a.stats();
    let sb = b.stats();
    assert_eq!(
        (sa.traffic.datagrams_sent, sa.traffic.datagrams_received),
        (5, 1)
    );
    assert_eq!(
        (sb.traffic.datagrams_sent, sb.traffic.datagrams_received),
        (1, 5)
    );
    assert_eq!(sb.traffic.bytes_received, 1 + 17 + 45 + 546 + 13);
    assert_eq!(sb.dropped_total(), 0, "{}", sb.summary());
    assert_eq!(sa.dropped_total(), 0, "{}", sa.summary());
}

#[test]
fn defaults_interface_socket_and_network_filter() {
    let Some(lab) = Lab::new() else { return };
    // No options: the only up, non-loopback Ethernet interface; port 0: the default socket.
    let a = lab
        .a
        .run(|| Sock::open(0, ""))
        .expect("open a with defaults");
    assert_eq!(a.interface_name(), VETH_A);
    assert_eq!(a.bound_port(), i32::from(DEFAULT_SOCKET));
    assert_eq!(
        print(&a.local_node()).unwrap(),
        node_text(0, MAC_A, DEFAULT_SOCKET)
    );
    let b = lab
        .b
        .run(|| Sock::open(0, ""))
        .expect("open b with defaults");
    // Same socket number, another network: sees nothing of network 0's broadcast.
    let b_other_net = lab
        .b
        .run(|| Sock::open(0, "network=00000002"))
        .expect("open b on network 2");

    a.send_ok(&a.broadcast_node(0).unwrap(), b"hello network 0");
    let (from, got) = b.receive_within(SOON).expect("broadcast on network 0");
    assert_eq!(print(&from).unwrap(), node_text(0, MAC_A, DEFAULT_SOCKET));
    assert_eq!(got, b"hello network 0");
    assert!(b_other_net.receive_within(QUIET).is_none());
    assert_eq!(b_other_net.stats().dropped_other_network, 1);

    // Addressed to network 2 explicitly, it arrives there (and not at network 0).
    let to_net2 = node(&node_text(2, MAC_B, DEFAULT_SOCKET));
    a.send_ok(&to_net2, b"to network 2");
    let (_, got) = b_other_net
        .receive_within(SOON)
        .expect("unicast to network 2");
    assert_eq!(got, b"to network 2");
    assert!(b.receive_within(QUIET).is_none());
    assert_eq!(b.stats().dropped_other_network, 1);

    // Another socket number on the same node: not delivered to b.
    let to_other_socket = node(&node_text(0, MAC_B, 0x4444));
    a.send_ok(&to_other_socket, b"to socket 4444");
    assert!(b.receive_within(QUIET).is_none());
    assert_eq!(b.stats().dropped_other_socket, 1);
}

#[test]
fn open_errors_name_the_problem() {
    let Some(lab) = Lab::new() else { return };
    let missing = lab
        .a
        .run(|| Sock::open(0, "interface=nope0").err().unwrap());
    assert_eq!(missing.0, parsec_backend_abi::NET_BACKEND_ERR_INVALID);
    assert!(
        missing.1.contains("no interface \"nope0\""),
        "{}",
        missing.1
    );
    assert!(missing.1.contains(VETH_A), "{}", missing.1);
    let lo = lab.a.run(|| Sock::open(0, "interface=lo").err().unwrap());
    assert!(lo.1.contains("not an Ethernet interface"), "{}", lo.1);
    lab.b.ip(&["link", "set", VETH_B, "down"]).unwrap();
    let down = lab.b.run(|| Sock::open(0, "").err().unwrap());
    assert_eq!(down.0, NET_BACKEND_ERR_UNREACHABLE);
    assert!(down.1.contains("no Ethernet interface is up"), "{}", down.1);
    let named_down = lab
        .b
        .run(|| Sock::open(0, "interface=veth-b").err().unwrap());
    assert!(named_down.1.contains("is down"), "{}", named_down.1);
}
