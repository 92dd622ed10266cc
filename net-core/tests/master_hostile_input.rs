//! Hostile and broken clients against the running masterserver on 127.0.0.1: overlong lines,
//! binary bytes, lines trickled or never finished, silent connections, connection floods, list
//! requests from a client that never reads. Each gets its documented reply or is closed, and the
//! servers already listed stay listed and keep being answered.

#[path = "master_support.rs"]
mod master_support;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use master_support::support::*;
use master_support::*;
use net_core::master::MasterConfig;

const ILLEGAL: &str = "illegal request not processed";

/// The listed servers are still listed and a listed server still gets replies.
fn still_served(master: &Running, good: &mut LineClient, listed_names: &[&str]) {
    good.send("players: 1 max: 16");
    good.expect("players acknowledged.");
    let names: Vec<String> = list_over_tcp(master.addrs.tcp)
        .iter()
        .map(|l| l.rsplit_once("name: ").unwrap().1.to_string())
        .collect();
    assert_eq!(names, listed_names);
}

#[test]
fn overlong_line_gets_illegal_request_then_close() {
    let master = start_master(master_config());
    let mut good = joined(&master, "good");
    let mut bad = master.client();
    bad.send(&format!(
        "{} url: {}",
        join_line("bad", 16),
        "x".repeat(600)
    ));
    bad.expect(ILLEGAL);
    bad.expect_closed(Duration::from_secs(3));
    // A whole megabyte without a newline is refused as soon as it passes the limit.
    let mut blob = master.client();
    let _ = blob.stream.write_all(&vec![b'a'; 1 << 20]);
    blob.expect(ILLEGAL);
    still_served(&master, &mut good, &["good"]);
    assert_eq!(master.stop().counter("overlong_lines"), 2);
}

#[test]
fn binary_bytes_get_illegal_request_and_the_connection_stays() {
    let master = start_master(master_config());
    let mut good = joined(&master, "good");
    let mut bad = master.client();
    bad.send_raw(b"\x00\x01\x02\xff\xfe binary\n");
    bad.expect(ILLEGAL);
    bad.send_raw(b"version: 1.0 join me: bin\x07ary os: x maxplayers: 4 url: u\n");
    bad.expect(ILLEGAL);
    bad.send_raw(b"\xc3\x28\n");
    bad.expect(ILLEGAL);
    bad.send(&join_line("reformed", 4));
    bad.expect("join accepted");
    still_served(&master, &mut good, &["good", "reformed"]);
}

#[test]
fn a_line_trickled_byte_by_byte_is_reassembled() {
    let master = start_master(master_config());
    let mut slow = master.client();
    slow.stream.set_nodelay(true).unwrap();
    for byte in format!("{}\r\n", join_line("trickle", 4)).as_bytes() {
        slow.send_raw(std::slice::from_ref(byte));
    }
    slow.expect("join accepted");
}

#[test]
fn unfinished_lines_and_silent_connections_are_closed_by_timeout() {
    let master = start_master(MasterConfig {
        handshake_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(600),
        ..master_config()
    });
    let mut good = joined(&master, "good");
    // A listed server that starts a line and never finishes it: a line timeout.
    let mut half = joined(&master, "half");
    half.send_raw(b"players: 2 ma");
    // A connection whose request never ends, and one that sends nothing: neither sent a
    // request within the handshake time of connecting (whether or not the line had begun, and
    // however the master's timer runs fall).
    let mut unfinished = master.client();
    unfinished.send_raw(b"version: 1.0 join me: never fin");
    let mut silent = master.client();
    let mut quiet_server = joined(&master, "quiet");
    let started = Instant::now();
    half.expect_closed(Duration::from_secs(3));
    unfinished.expect_closed(Duration::from_secs(3));
    silent.expect_closed(Duration::from_secs(3));
    // The listed server that keeps talking stays; the quiet one is unlisted after 600 ms.
    while started.elapsed() < Duration::from_millis(1200) {
        good.send("players: 2 max: 16");
        good.expect("players acknowledged.");
        std::thread::sleep(Duration::from_millis(100));
    }
    quiet_server.expect_closed(Duration::from_secs(3));
    still_served(&master, &mut good, &["good"]);
    let summary = master.stop();
    assert_eq!(summary.counter("line_timeouts"), 1);
    assert_eq!(summary.counter("handshake_timeouts"), 2);
    assert_eq!(summary.counter("idle_timeouts"), 1);
}

/// A line client whose connection comes from `source` (another loopback address).
fn client_from(source: &str, to: std::net::SocketAddr) -> LineClient {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let local: std::net::SocketAddr = format!("{source}:0").parse().unwrap();
    socket.bind(&local.into()).unwrap();
    socket.connect_timeout(&to.into(), IO_TIMEOUT).unwrap();
    LineClient::from_stream(socket.into())
}

#[test]
fn a_connection_flood_is_refused_without_disturbing_listed_servers() {
    let master = start_master(MasterConfig {
        max_per_address: 40,
        max_connections: 1000,
        ..master_config()
    });
    let mut good = joined(&master, "good");
    let mut flood = Vec::new();
    for _ in 0..200 {
        if let Ok(s) = TcpStream::connect_timeout(&master.addrs.tcp, IO_TIMEOUT) {
            flood.push(s);
        }
    }
    // Those over the per-address limit are told `masterserver full` and closed at once.
    let mut last = LineClient::from_stream(flood.pop().unwrap());
    last.expect("masterserver full");
    last.expect_closed(Duration::from_secs(3));
    // The listed server is still answered, and a client from elsewhere still sees it.
    good.send("players: 1 max: 16");
    good.expect("players acknowledged.");
    let mut other = client_from("127.0.0.2", master.addrs.tcp);
    let lines = list_on(&mut other);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].ends_with("name: good"));
    drop(flood);
    wait_for("127.0.0.1 to be served again", || {
        std::panic::catch_unwind(|| list_over_tcp(master.addrs.tcp).len() == 1).unwrap_or(false)
    });
    let summary = master.stop();
    assert!(
        summary.counter("refused_at_accept") >= 150,
        "refused {}",
        summary.counter("refused_at_accept")
    );
}

#[test]
fn a_list_client_that_never_reads_is_dropped_and_others_are_served() {
    let master = start_master(master_config());
    let mut good = joined(&master, "good");
    // Enough servers that a list reply is several kilobytes.
    let others: Vec<LineClient> = (0..100)
        .map(|i| joined(&master, &format!("server{i:03}")))
        .collect();
    let mut greedy = master.client();
    for _ in 0..2000 {
        if greedy.stream.write_all(b"list servers\n").is_err() {
            break;
        }
    }
    // It is disconnected once its replies pile up; meanwhile everyone else is served.
    let lines = list_over_tcp(master.addrs.tcp);
    assert_eq!(lines.len(), 101);
    good.send("players: 3 max: 16");
    good.expect("players acknowledged.");
    drop(others);
    let summary = master.stop();
    assert!(summary.counter("slow_clients_dropped") >= 1);
}
