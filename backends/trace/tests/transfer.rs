//! Datagrams between two trace sockets over the UDP backend on 127.0.0.1, through the vtable: they
//! arrive unchanged, the counters match, and the trace file has one correct line per datagram.

mod common;

use common::{print, read_trace, shown_hex, temp_dir, traced, udp, Sock, SECOND};
use parsec_backend_abi::{NET_BACKEND_ERR_TOO_LARGE, NET_BACKEND_OK};
use parsec_backend_trace::Counters;

/// Payloads of several sizes: shorter than, exactly, and longer than the 32 bytes shown.
fn payloads(tag: u8) -> Vec<Vec<u8>> {
    [1usize, 31, 32, 33, 100, 1400]
        .iter()
        .map(|&len| (0..len).map(|i| (i as u8).wrapping_mul(7) ^ tag).collect())
        .collect()
}

#[test]
fn datagrams_flow_both_ways_and_each_is_one_line_in_the_trace_file() {
    let dir = temp_dir("flow");
    let (file_a, file_b) = (dir.join("a.log"), dir.join("b.log"));
    let a = Sock::open(&format!("file={}", file_a.display())).expect("socket a");
    let b = Sock::open(&format!("file={}", file_b.display())).expect("socket b");
    assert_eq!(a.last_error(), "");
    let (a_node, b_node) = (a.local_node(), b.local_node());
    let (a_text, b_text) = (
        print(traced(), &a_node).unwrap(),
        print(traced(), &b_node).unwrap(),
    );
    assert!(a_text.starts_with("127.0.0.1:"), "{a_text}");

    let (to_b, to_a) = (payloads(0x10), payloads(0x20));
    for data in &to_b {
        a.send_ok(&b_node, data);
        let (from, got) = b.receive_within(SECOND).expect("datagram to b");
        assert_eq!((&got, from), (data, a_node));
    }
    for data in &to_a {
        b.send_ok(&a_node, data);
        let (from, got) = a.receive_within(SECOND).expect("datagram to a");
        assert_eq!((&got, from), (data, b_node));
    }
    assert_eq!(a.receive(2048), Ok(None));

    let total = |list: &[Vec<u8>]| list.iter().map(|d| d.len() as u64).sum::<u64>();
    let expected_a = Counters {
        datagrams_sent: to_b.len() as u64,
        bytes_sent: total(&to_b),
        datagrams_received: to_a.len() as u64,
        bytes_received: total(&to_a),
    };
    assert_eq!(a.counters(), expected_a);
    let expected_b = Counters {
        datagrams_sent: expected_a.datagrams_received,
        bytes_sent: expected_a.bytes_received,
        datagrams_received: expected_a.datagrams_sent,
        bytes_received: expected_a.bytes_sent,
    };
    assert_eq!(b.counters(), expected_b);
    // SAFETY: live handle of this process's trace backend.
    let state = unsafe { parsec_backend_trace::socket_from_handle(a.handle) }.unwrap();
    assert_eq!(state.trace_file(), Some(file_a.as_path()));
    assert_eq!(state.inner_name(), "udp");
    drop((a, b)); // close: the remaining lines are written

    let lines_a = read_trace(&file_a);
    let lines_b = read_trace(&file_b);
    assert_eq!(lines_a.len(), to_b.len() + to_a.len());
    assert_eq!(lines_b.len(), lines_a.len());
    for (i, data) in to_b.iter().enumerate() {
        let (sent, got) = (&lines_a[i], &lines_b[i]);
        assert_eq!(
            (sent.direction.as_str(), got.direction.as_str()),
            ("send", "recv")
        );
        assert_eq!((&sent.node, &got.node), (&b_text, &a_text));
        assert_eq!((sent.len, got.len), (data.len(), data.len()));
        assert_eq!((&sent.hex, &got.hex), (&shown_hex(data), &shown_hex(data)));
    }
    for (i, data) in to_a.iter().enumerate() {
        let (got, sent) = (&lines_a[to_b.len() + i], &lines_b[to_b.len() + i]);
        assert_eq!(
            (sent.direction.as_str(), got.direction.as_str()),
            ("send", "recv")
        );
        assert_eq!((&sent.node, &got.node), (&a_text, &b_text));
        assert_eq!((sent.len, got.len), (data.len(), data.len()));
        assert_eq!(got.hex, shown_hex(data));
    }
    assert!(lines_a.windows(2).all(|w| w[0].ms <= w[1].ms));
    assert!(lines_a.iter().all(|l| l.ms < 60_000));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_file_only_counters_are_kept() {
    let a = Sock::v4();
    let b = Sock::v4();
    a.send_ok(&b.local_node(), b"counted");
    assert!(b.receive_within(SECOND).is_some());
    assert_eq!(
        (a.counters().datagrams_sent, a.counters().bytes_sent),
        (1, 7)
    );
    assert_eq!(
        (b.counters().datagrams_received, b.counters().bytes_received),
        (1, 7)
    );
    // SAFETY: live handle of this process's trace backend.
    let state = unsafe { parsec_backend_trace::socket_from_handle(a.handle) }.unwrap();
    assert_eq!(state.trace_file(), None);
}

#[test]
fn lines_reach_the_file_every_hundred_datagrams_and_at_close() {
    let dir = temp_dir("batches");
    let file = dir.join("t.log");
    let a = Sock::open(&format!("file={}", file.display())).unwrap();
    let sink = Sock::v4();
    let to = sink.local_node();
    for i in 0..150u32 {
        a.send_ok(&to, &i.to_le_bytes());
    }
    let before_close = read_trace(&file).len();
    assert!((100..=150).contains(&before_close), "{before_close} lines");
    drop(a);
    let lines = read_trace(&file);
    assert_eq!(lines.len(), 150);
    assert!(lines.iter().all(|l| l.direction == "send" && l.len == 4));
    assert_eq!(lines[149].hex, shown_hex(&149u32.to_le_bytes()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_trace_file_that_cannot_be_written_stops_recording_but_not_traffic() {
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        println!("SKIPPED: no /dev/full");
        return;
    }
    let a = Sock::open("file=/dev/full").expect("/dev/full opens for appending");
    let b = Sock::v4();
    let to = b.local_node();
    for _ in 0..parsec_backend_trace::FLUSH_LINES {
        a.send_ok(&to, b"x");
    }
    let message = a.last_error();
    assert!(
        message.starts_with("trace: cannot write trace file /dev/full: ")
            && message.ends_with("; recording stopped"),
        "{message}"
    );
    // SAFETY: live handle of this process's trace backend.
    let state = unsafe { parsec_backend_trace::socket_from_handle(a.handle) }.unwrap();
    assert_eq!(state.trace_file(), None);
    a.send_ok(&to, b"still sent");
    assert_eq!(
        a.counters().datagrams_sent,
        parsec_backend_trace::FLUSH_LINES as u64 + 1
    );
    // A newer error from the inner backend replaces the trace backend's own.
    assert_eq!(a.send(&to, &[0u8; 5000]), NET_BACKEND_ERR_TOO_LARGE);
    assert!(a.last_error().starts_with("udp: cannot send 5000 bytes"));
}

#[test]
fn socket_calls_pass_through_to_the_inner_backend() {
    let a = Sock::v4();
    // bound_port and local_node agree, as the UDP backend's do.
    let port = a.bound_port();
    assert!(port > 0);
    let local = print(traced(), &a.local_node()).unwrap();
    assert_eq!(local, format!("127.0.0.1:{port}"));
    // Port 0 passes through as "any free port"; an explicit port is bound as asked.
    let free = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let wanted = free.local_addr().unwrap().port();
    drop(free);
    if let Ok(fixed) = Sock::open_with(traced(), wanted, common::V4) {
        assert_eq!(fixed.bound_port(), i32::from(wanted));
    }
    // wait with nothing queued times out; broadcast_node is the inner backend's.
    assert_eq!(a.wait(0), 0);
    let broadcast = a.broadcast_node(7000);
    let inner = Sock::open_with(udp(), 0, common::V4).unwrap();
    assert_eq!(broadcast, inner.broadcast_node(7000));
    // last_error is the inner backend's, word for word; a too-large datagram is not counted.
    assert_eq!(
        a.send(&a.local_node(), &[1u8; 1401]),
        NET_BACKEND_ERR_TOO_LARGE
    );
    assert_eq!(
        a.last_error(),
        "udp: cannot send 1401 bytes: the limit is 1400"
    );
    assert_eq!(a.counters(), Counters::default());
    assert_eq!(a.send(&a.local_node(), b"self"), NET_BACKEND_OK);
    assert_eq!(a.receive_within(SECOND).unwrap().1, b"self");
}
