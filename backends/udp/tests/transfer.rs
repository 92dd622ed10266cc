//! Sending, receiving and waiting between real loopback sockets, through the vtable.

mod common;

use std::net::UdpSocket as StdUdp;
use std::time::{Duration, Instant};

use common::{node, parse, print, Sock};
use parsec_backend_abi::{
    NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_TOO_LARGE, NET_BACKEND_ERR_UNREACHABLE, NET_BACKEND_OK,
};

const SECOND: Duration = Duration::from_secs(2);

#[test]
fn ipv4_datagrams_flow_both_ways_between_ephemeral_sockets() {
    let a = Sock::v4();
    let b = Sock::v4();
    let a_node = a.local_node();
    let b_node = b.local_node();
    assert_ne!(a_node, b_node);

    a.send_ok(&b_node, b"hello");
    let (from, data) = b.receive_within(SECOND).expect("datagram to b");
    assert_eq!(data, b"hello");
    assert_eq!(
        from,
        a_node,
        "sender identified as {}",
        print(&from).unwrap()
    );

    b.send_ok(&from, b"hi back");
    let (from, data) = a.receive_within(SECOND).expect("datagram to a");
    assert_eq!(data, b"hi back");
    assert_eq!(from, b_node);
    assert_eq!(a.receive(2048), Ok(None));

    let stats = a.stats();
    assert_eq!(
        (stats.traffic.datagrams_sent, stats.traffic.bytes_sent),
        (1, 5)
    );
    assert_eq!(
        (
            stats.traffic.datagrams_received,
            stats.traffic.bytes_received
        ),
        (1, 7)
    );
}

#[test]
fn ipv6_datagrams_flow_both_ways_between_ephemeral_sockets() {
    let (Some(a), Some(b)) = (Sock::dual(), Sock::dual()) else {
        return;
    };
    let loopback6 = node("[::1]:9");
    let a_node = a.local_node_towards(Some(&loopback6)).unwrap();
    let b_node = b.local_node_towards(Some(&loopback6)).unwrap();
    assert!(print(&a_node).unwrap().starts_with("[::1]:"));
    // Both halves of a socket share one port.
    let a_v4 = a.local_node();
    assert_eq!(a_node.bytes[1..3], a_v4.bytes[1..3]);

    a.send_ok(&b_node, b"over ipv6");
    let (from, data) = b.receive_within(SECOND).expect("datagram to b over IPv6");
    assert_eq!(data, b"over ipv6");
    assert_eq!(from, a_node);
    assert_eq!(from.bytes[0], 6);

    b.send_ok(&from, b"reply6");
    let (from, data) = a.receive_within(SECOND).expect("reply over IPv6");
    assert_eq!((from, data.as_slice()), (b_node, &b"reply6"[..]));

    // The same dual socket still speaks IPv4.
    let b_v4 = b.local_node();
    a.send_ok(&b_v4, b"over ipv4");
    let (from, data) = b.receive_within(SECOND).expect("datagram to b over IPv4");
    assert_eq!((from, data.as_slice()), (a_v4, &b"over ipv4"[..]));
}

#[test]
fn ipv4_and_ipv6_take_turns_when_both_are_busy() {
    let (Some(rx), Some(tx)) = (Sock::dual(), Sock::dual()) else {
        return;
    };
    let rx4 = rx.local_node();
    let rx6 = rx.local_node_towards(Some(&node("[::1]:9"))).unwrap();
    for i in 0..40u8 {
        tx.send_ok(&rx4, &[4, i]);
        tx.send_ok(&rx6, &[6, i]);
    }
    assert_eq!(rx.wait(2000), 1);
    std::thread::sleep(Duration::from_millis(50));
    let mut families = Vec::new();
    while families.len() < 80 {
        let (_, data) = rx.receive_within(SECOND).expect("all 80 datagrams");
        families.push(data[0]);
    }
    // Each refill reads at most 32 datagrams from one family, then the other family's turn comes.
    let first_v6 = families.iter().position(|&f| f == 6).unwrap();
    assert!(
        first_v6 <= 32,
        "IPv6 starved: first IPv6 datagram at {first_v6}"
    );
    assert_eq!(families.iter().filter(|&&f| f == 4).count(), 40);
}

fn burst(options: &str) -> Sock {
    let rx = Sock::open(0, options).unwrap();
    let tx = Sock::v4();
    let to = rx.local_node();
    let tx_node = tx.local_node();
    for seq in 0..200u32 {
        let mut payload = seq.to_be_bytes().to_vec();
        payload.resize(64 + (seq as usize % 50), seq as u8);
        tx.send_ok(&to, &payload);
    }
    for expected in 0..200u32 {
        let (from, data) = rx
            .receive_within(SECOND)
            .unwrap_or_else(|| panic!("datagram {expected} missing: {:?}", rx.stats()));
        assert_eq!(from, tx_node);
        assert_eq!(data[..4], expected.to_be_bytes(), "out of order");
        assert_eq!(data.len(), 64 + (expected as usize % 50));
    }
    assert_eq!(rx.receive(2048), Ok(None));
    assert_eq!(rx.stats().traffic.datagrams_received, 200);
    rx
}

#[test]
fn burst_of_200_datagrams_arrives_in_order_through_recvmmsg_batches() {
    let rx = burst("bind=127.0.0.1\nipv6=0\nrcvbuf=1048576");
    if rx.uses_recvmmsg() {
        let calls = rx.stats().receive_syscalls;
        assert!(
            calls < 100,
            "{calls} receive system calls for 200 datagrams: not batched"
        );
    } else {
        println!("recvmmsg unavailable here; burst went through recvfrom");
    }
}

#[test]
fn burst_of_200_datagrams_arrives_in_order_through_recvfrom_fallback() {
    let rx = burst("bind=127.0.0.1\nipv6=0\nrcvbuf=1048576\nrecvmmsg=0");
    assert!(!rx.uses_recvmmsg());
    assert!(rx.stats().receive_syscalls >= 200);
}

#[test]
fn oversize_and_empty_sends_are_rejected() {
    let a = Sock::v4();
    let b = Sock::v4();
    let to = b.local_node();
    assert_eq!(a.send(&to, &[1u8; 1401]), NET_BACKEND_ERR_TOO_LARGE);
    assert!(a.last_error().contains("1401"), "{}", a.last_error());
    assert_eq!(a.send(&to, &[]), NET_BACKEND_ERR_INVALID);
    a.send_ok(&to, &[2u8; 1400]);
    let (_, data) = b.receive_within(SECOND).expect("1400-byte datagram");
    assert_eq!(data.len(), 1400);
    assert_eq!(a.stats().traffic.datagrams_sent, 1);
}

#[test]
fn oversize_and_empty_datagrams_from_outside_are_dropped_and_counted() {
    let rx = Sock::v4();
    let to = print(&rx.local_node()).unwrap();
    let outsider = StdUdp::bind("127.0.0.1:0").unwrap();
    outsider.send_to(&[7u8; 2000], &to).unwrap();
    outsider.send_to(&[7u8; 1401], &to).unwrap();
    outsider.send_to(&[], &to).unwrap();
    outsider.send_to(b"fine", &to).unwrap();
    let (from, data) = rx.receive_within(SECOND).expect("the valid datagram");
    assert_eq!(data, b"fine");
    assert_eq!(
        print(&from).unwrap(),
        outsider.local_addr().unwrap().to_string()
    );
    let stats = rx.stats();
    assert_eq!(stats.dropped_oversize, 2);
    assert_eq!(stats.dropped_zero_length, 1);
    assert_eq!(stats.traffic.datagrams_received, 1);
}

#[test]
fn datagram_longer_than_the_caller_buffer_is_dropped_with_too_large() {
    let a = Sock::v4();
    let b = Sock::v4();
    let to = b.local_node();
    a.send_ok(&to, &[5u8; 100]);
    a.send_ok(&to, &[6u8; 10]);
    assert_eq!(b.wait(2000), 1);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(b.receive(10), Err(NET_BACKEND_ERR_TOO_LARGE));
    assert!(b.last_error().contains("100-byte"), "{}", b.last_error());
    let (_, data) = b
        .receive_within(SECOND)
        .expect("the second datagram survives");
    assert_eq!(data, vec![6u8; 10]);
    assert_eq!(b.stats().dropped_caller_too_small, 1);
}

#[test]
fn wait_returns_0_on_timeout_and_1_when_data_waits() {
    let a = Sock::v4();
    let b = Sock::v4();
    let started = Instant::now();
    assert_eq!(b.wait(60), 0);
    assert!(
        started.elapsed() >= Duration::from_millis(55),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(b.wait(0), 0);

    let to = b.local_node();
    for i in 0..3u8 {
        a.send_ok(&to, &[i + 1]);
    }
    assert_eq!(b.wait(2000), 1);
    std::thread::sleep(Duration::from_millis(20));
    assert!(b.receive(16).unwrap().is_some());
    // The rest may sit in the backend's queue, not the kernel's: wait must still say 1.
    assert_eq!(b.wait(0), 1);
    assert!(b.receive(16).unwrap().is_some());
    assert_eq!(b.wait(1000), 1);
    assert!(b.receive(16).unwrap().is_some());
    assert_eq!(b.wait(10), 0);
}

#[test]
fn local_node_towards_loopback_is_loopback_with_the_bound_port() {
    let s = Sock::v4();
    let towards = node("127.0.0.1:6526");
    let me = s.local_node_towards(Some(&towards)).unwrap();
    let text = print(&me).unwrap();
    assert!(text.starts_with("127.0.0.1:"), "{text}");
    let port: u16 = text.rsplit(':').next().unwrap().parse().unwrap();
    assert_ne!(port, 0);
    assert_eq!(s.local_node(), me);
    // A peer really sees that node.
    let peer = Sock::v4();
    s.send_ok(&peer.local_node(), b"x");
    assert_eq!(peer.receive_within(SECOND).unwrap().0, me);
}

#[test]
fn ipv6_node_without_an_ipv6_socket_is_unreachable() {
    let s = Sock::v4();
    assert_eq!(
        s.send(&node("[::1]:6526"), b"x"),
        NET_BACKEND_ERR_UNREACHABLE
    );
    assert!(s.last_error().contains("IPv6"), "{}", s.last_error());
    assert_eq!(
        s.local_node_towards(Some(&node("[::1]:6526"))),
        Err(NET_BACKEND_ERR_UNREACHABLE)
    );
}

#[test]
fn broadcast_node_uses_the_option_and_the_socket_port() {
    let s = Sock::v4();
    let own_port = print(&s.local_node())
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        print(&s.broadcast_node(6526).unwrap()).unwrap(),
        "255.255.255.255:6526"
    );
    assert_eq!(
        print(&s.broadcast_node(0).unwrap()).unwrap(),
        format!("255.255.255.255:{own_port}")
    );
    let custom = Sock::open(0, "bind=127.0.0.1\nipv6=0\nbroadcast=127.255.255.255").unwrap();
    assert_eq!(
        print(&custom.broadcast_node(7).unwrap()).unwrap(),
        "127.255.255.255:7"
    );
}

#[test]
fn sending_to_a_broadcast_address_is_delivered() {
    // 127.255.255.255 is the broadcast address of the loopback network: sending to it needs
    // SO_BROADCAST, and a socket bound to it receives it, without leaving the host.
    let listener = match Sock::open(0, "bind=127.255.255.255\nipv6=0") {
        Ok(s) => s,
        Err(e) => {
            println!("SKIPPED: cannot bind the loopback broadcast address ({e:?})");
            return;
        }
    };
    let port: u16 = print(&listener.local_node())
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let sender = Sock::open(0, "bind=127.0.0.1\nipv6=0\nbroadcast=127.255.255.255").unwrap();
    let to = sender.broadcast_node(port).unwrap();
    assert_eq!(
        sender.send(&to, b"anyone?"),
        NET_BACKEND_OK,
        "{}",
        sender.last_error()
    );
    let (from, data) = listener.receive_within(SECOND).expect("broadcast datagram");
    assert_eq!(data, b"anyone?");
    assert_eq!(from, sender.local_node());
}

#[test]
fn parse_result_is_sendable_and_printable() {
    let rx = Sock::v4();
    let text = print(&rx.local_node()).unwrap();
    let port: u16 = text.rsplit(':').next().unwrap().parse().unwrap();
    let to = parse("localhost", port).unwrap();
    Sock::v4().send_ok(&to, b"by name");
    assert_eq!(rx.receive_within(SECOND).unwrap().1, b"by name");
}
