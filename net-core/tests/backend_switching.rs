//! The packet layer over the real UDP backend library on loopback: datagrams to and from another
//! instance, switching backend and port without losing what was received, failed switches that
//! keep the working backend, and refused oversize datagrams.

use std::time::{Duration, Instant};

use net_core::{ErrorCode, Node, Subsystem};

fn console(sub: &mut Subsystem, line: &str) -> String {
    let reply = sub.console_exec(line, Instant::now());
    assert!(reply.result.is_ok(), "{line}: {}", reply.output);
    reply.output
}

/// A subsystem on the UDP backend bound to loopback on a free port.
fn loopback_instance() -> Subsystem {
    let mut sub = Subsystem::new();
    console(&mut sub, "net.udp.bind 127.0.0.1");
    console(&mut sub, "net.udp.ipv6 0");
    console(&mut sub, "net.port 0");
    console(&mut sub, "net.api udp");
    sub
}

/// The node others use to reach `sub` on loopback.
fn loopback_node(sub: &mut Subsystem) -> Node {
    let local = sub.local_node().expect("local node");
    let text = sub.print_node(&local).unwrap();
    let port = text.rsplit(':').next().unwrap();
    sub.resolve_node(&format!("127.0.0.1:{port}")).unwrap()
}

fn receive_all(sub: &mut Subsystem, want: usize) -> Vec<u32> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1400];
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < want && Instant::now() < deadline {
        match sub.receive_datagram(&mut buf).unwrap() {
            Some((_, len)) => {
                assert_eq!(len, 4);
                got.push(u32::from_be_bytes(buf[..4].try_into().unwrap()));
            }
            None => {
                sub.wait(Duration::from_millis(20)).unwrap();
            }
        }
    }
    got
}

#[test]
fn datagrams_flow_between_two_instances_and_carry_the_sender() {
    let mut a = loopback_instance();
    let mut b = loopback_instance();
    let to_b = loopback_node(&mut b);
    let a_node = loopback_node(&mut a);
    for seq in 0..50u32 {
        a.send_datagram(&to_b, &seq.to_be_bytes()).unwrap();
    }
    let mut buf = [0u8; 64];
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    while got.len() < 50 && Instant::now() < deadline {
        if let Some((from, len)) = b.receive_datagram(&mut buf).unwrap() {
            assert_eq!(
                b.compare_nodes(&from, &a_node).unwrap(),
                std::cmp::Ordering::Equal
            );
            got.push(u32::from_be_bytes(buf[..len].try_into().unwrap()));
        } else {
            b.wait(Duration::from_millis(20)).unwrap();
        }
    }
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    assert_eq!(a.packets().stats().datagrams_sent, 50);
    assert_eq!(b.packets().stats().datagrams_received, 50);
}

#[test]
fn switching_keeps_datagrams_the_old_socket_had_received() {
    let mut a = loopback_instance();
    let mut b = loopback_instance();
    let to_b = loopback_node(&mut b);
    for seq in 0..100u32 {
        a.send_datagram(&to_b, &seq.to_be_bytes()).unwrap();
    }
    // Give the kernel a moment to deliver into b's socket, then switch b before it reads.
    assert!(b.wait(Duration::from_secs(2)).unwrap());
    std::thread::sleep(Duration::from_millis(50));
    let out = console(&mut b, "net.api udp");
    assert!(out.contains("100 received datagrams kept"), "{out}");
    let got = receive_all(&mut b, 100);
    assert_eq!(got, (0..100).collect::<Vec<_>>());
    assert_eq!(b.packets().stats().drained_on_switch, 100);
    assert_eq!(b.packets().stats().switches, 2);
}

#[test]
fn changing_the_port_of_an_open_socket_reopens_it_and_keeps_received_datagrams() {
    let mut a = loopback_instance();
    let mut b = loopback_instance();
    let to_b = loopback_node(&mut b);
    for seq in 0..10u32 {
        a.send_datagram(&to_b, &seq.to_be_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    let old_node = loopback_node(&mut b);
    let old = b.print_node(&old_node).unwrap();
    console(&mut b, "net.port 0");
    let new_node = loopback_node(&mut b);
    let new = b.print_node(&new_node).unwrap();
    assert_ne!(old, new, "a new ephemeral port is bound");
    assert_eq!(receive_all(&mut b, 10), (0..10).collect::<Vec<_>>());
}

#[test]
fn a_failed_switch_keeps_the_working_backend() {
    let mut a = loopback_instance();
    let to_a = loopback_node(&mut a);
    let before = a.packets().stats().switches;
    for spec in ["/no/such/libparsec_backend_x.so", "no_such_backend_name"] {
        let reply = a.console_exec(&format!("net.api {spec}"), Instant::now());
        assert_eq!(reply.result.unwrap_err().code, ErrorCode::BackendLoad);
        assert!(reply.output.contains("keeping udp"), "{}", reply.output);
        assert!(!reply.output.contains('\n'));
    }
    assert_eq!(a.packets().stats().switches, before);
    assert_eq!(
        a.packets().stats().failed_switches,
        2,
        "refused libraries count as failed switches"
    );
    a.send_datagram(&to_a, &7u32.to_be_bytes()).unwrap();
    assert_eq!(receive_all(&mut a, 1), vec![7]);
}

#[test]
fn a_failed_open_reopens_the_old_backend_with_its_old_options() {
    let mut a = loopback_instance();
    let before = loopback_node(&mut a);
    // The library loads, but with an address this host does not have it cannot open: the switch
    // fails at open time and the previous socket comes back, opened as it was (on loopback, on
    // the same port although the configured port is 0).
    console(&mut a, "net.udp.bind 203.0.113.1");
    let reply = a.console_exec("net.api udp", Instant::now());
    assert_eq!(reply.result.unwrap_err().code, ErrorCode::BackendLoad);
    assert!(reply.output.contains("203.0.113.1"), "{}", reply.output);
    assert!(reply.output.contains("keeping udp"), "{}", reply.output);
    assert!(a.packets().is_open());
    let to_a = loopback_node(&mut a);
    assert_eq!(
        a.print_node(&to_a).unwrap(),
        a.print_node(&before).unwrap(),
        "same port after rollback"
    );
    a.send_datagram(&to_a, &9u32.to_be_bytes()).unwrap();
    assert_eq!(receive_all(&mut a, 1), vec![9]);
    assert_eq!(a.packets().stats().failed_switches, 1);
}

#[test]
fn oversize_and_empty_datagrams_are_refused_and_counted() {
    let mut a = loopback_instance();
    let to_a = loopback_node(&mut a);
    let err = a.send_datagram(&to_a, &[0u8; 1401]).unwrap_err();
    assert_eq!(err.code, ErrorCode::TooLarge);
    assert!(err.message.contains("1401"), "{}", err.message);
    assert_eq!(
        a.send_datagram(&to_a, &[]).unwrap_err().code,
        ErrorCode::InvalidArgument
    );
    assert_eq!(a.packets().stats().oversize_rejected, 1);
    assert_eq!(a.input_errors().datagrams_refused, 2);
    let status = console(&mut a, "status");
    assert!(status.contains("oversize 1"), "{status}");
    let port = a
        .print_node(&to_a)
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    assert!(
        status.contains(&format!("open on port {port},")),
        "bound port, not 0: {status}"
    );
}

#[test]
fn a_datagram_larger_than_the_game_buffer_stays_queued() {
    let mut a = loopback_instance();
    let to_a = loopback_node(&mut a);
    a.send_datagram(&to_a, &[5u8; 100]).unwrap();
    a.wait(Duration::from_secs(2)).unwrap();
    let mut small = [0u8; 10];
    let err = a.receive_datagram(&mut small).unwrap_err();
    assert_eq!(err.code, ErrorCode::BufferTooSmall);
    assert!(err.message.contains("100 bytes"), "{}", err.message);
    let mut big = [0u8; 200];
    let (_, len) = a.receive_datagram(&mut big).unwrap().unwrap();
    assert_eq!(&big[..len], &[5u8; 100][..]);
}

#[test]
fn node_text_round_trips_and_bad_text_is_counted() {
    let mut a = loopback_instance();
    let node = a.resolve_node("127.0.0.1:7001").unwrap();
    assert_eq!(a.print_node(&node).unwrap(), "127.0.0.1:7001");
    for bad in ["", "not an address!!", "1.2.3.4:99999", &"x".repeat(300)] {
        assert!(a.resolve_node(bad).is_err(), "{bad}");
    }
    assert_eq!(a.input_errors().node_texts, 4);
}

#[test]
fn a_refused_node_text_says_what_the_backend_found_wrong() {
    let mut a = loopback_instance();
    let err = a.resolve_node("1.2.3.4:99999").unwrap_err();
    assert_eq!(err.code, ErrorCode::Parse);
    assert_eq!(
        err.message,
        "'1.2.3.4:99999' is not an address for the udp backend: port 99999 is out of range 1-65535"
    );
    let reply = a.console_exec("connect 1.2.3.4:0", Instant::now());
    assert_eq!(reply.result.map_err(|e| e.code), Err(ErrorCode::Parse));
    assert!(
        reply.output.starts_with(
            "connect: '1.2.3.4:0' is not an address for the udp backend: \
             port 0 cannot be addressed; usage: connect"
        ),
        "{}",
        reply.output
    );
    // A good text afterwards parses, and the next failure explains itself afresh.
    assert!(a.resolve_node("127.0.0.1:7001").is_ok());
    let err = a.resolve_node("bad host!").unwrap_err();
    assert!(
        err.message
            .ends_with("\"bad host!\" is neither an IP address nor a host name"),
        "{}",
        err.message
    );
}
