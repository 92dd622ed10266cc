//! Hostile and broken clients against the running server on 127.0.0.1: overlong lines, binary
//! bytes, lines trickled byte by byte, lines never finished, connection floods, clients that do
//! not read, dropped connections. Each gets its documented reply or is closed, and a
//! well-behaved client keeps being served during and after the abuse.

#[path = "server_support.rs"]
mod support;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use net_core::server::RuntimeConfig;
use support::*;

/// The well-behaved client still gets replies and list updates.
fn still_served(server: &TestServer, good: &mut LineClient, new_name: &str) {
    good.send(&format!("my new name: {new_name}"));
    good.expect("new name accepted");
    let mut probe = server.client();
    probe.send("remove me");
    probe.expect("you're not even joined");
}

#[test]
fn overlong_line_gets_invalid_request_then_close() {
    let server = TestServer::start(test_config());
    let mut good = server.joined("good", 0);
    let mut bad = server.client();
    let mut long = "version: 1.0 join me: ".to_string();
    long.push_str(&"x".repeat(400));
    bad.send(&long);
    bad.expect("you sent an invalid request");
    bad.expect_closed(Duration::from_secs(3));
    // Exactly 255 bytes is still a line.
    let mut edge = server.client();
    edge.send(&"y".repeat(255));
    edge.expect("you sent an invalid request");
    edge.send("remove me");
    edge.expect("you're not even joined");
    still_served(&server, &mut good, "good2");
    assert_eq!(server.stop().counter("overlong_lines"), 1);
}

#[test]
fn endless_line_without_newline_is_cut_off() {
    let server = TestServer::start(test_config());
    let mut good = server.joined("good", 0);
    let mut bad = server.client();
    // 1 MiB with no newline: refused as soon as it passes the limit, not buffered.
    let blob = vec![b'a'; 1 << 20];
    let _ = bad.stream.write_all(&blob);
    bad.expect("you sent an invalid request");
    still_served(&server, &mut good, "good2");
}

#[test]
fn binary_bytes_get_invalid_request_and_the_connection_stays() {
    let server = TestServer::start(test_config());
    let mut good = server.joined("good", 0);
    let mut bad = server.client();
    bad.send_raw(b"\x00\x01\x02\xff\xfe binary\n");
    bad.expect("you sent an invalid request");
    bad.send_raw(b"version: 1.0 join me: bin\x07ary os: x\n");
    bad.expect("you sent an invalid request");
    bad.send_raw(b"\xc3\x28\n");
    bad.expect("you sent an invalid request");
    bad.send("version: 1.0 join me: reformed os: x");
    bad.expect("join from reformed accepted, slot: 1, server name: TestServer");
    good.expect("add ip: 127.0.0.1 name: reformed in 1");
}

#[test]
fn a_line_written_one_byte_at_a_time_is_reassembled() {
    let server = TestServer::start(test_config());
    let mut slow = server.client();
    slow.stream.set_nodelay(true).unwrap();
    for byte in b"version: 1.0 join me: trickle os: x\r\n" {
        slow.send_raw(std::slice::from_ref(byte));
        std::thread::sleep(Duration::from_millis(1));
    }
    slow.expect("join from trickle accepted, slot: 0, server name: TestServer");
}

#[test]
fn a_line_never_finished_is_closed_by_the_handshake_timeout() {
    let mut config = test_config();
    config.handshake_timeout = Duration::from_millis(300);
    let server = TestServer::start(config);
    let mut good = server.client();
    good.send("version: 1.0 join me: good os: x");
    good.expect("join from good accepted, slot: 0, server name: TestServer");
    let mut stalled = server.client();
    stalled.send_raw(b"version: 1.0 join me: half");
    let started = Instant::now();
    stalled.expect_closed(Duration::from_secs(3));
    assert!(started.elapsed() >= Duration::from_millis(200));
    // A joined player who starts a line and never ends it is removed the same way.
    let mut joined_stall = server.client();
    joined_stall.send("version: 1.0 join me: staller os: x");
    joined_stall.expect("join from staller accepted, slot: 1, server name: TestServer");
    for m in MESSAGES {
        good.expect(m);
    }
    good.expect("add ip: 127.0.0.1 name: staller in 1");
    joined_stall.send_raw(b"my new na");
    good.expect("remove ip: 127.0.0.1");
    // The silent but joined player was never timed out (idle timeout is off by default).
    still_served(&server, &mut good, "good2");
    let summary = server.stop();
    assert_eq!(summary.counter("handshake_timeouts"), 1);
    assert_eq!(summary.counter("line_timeouts"), 1);
}

#[test]
fn connection_flood_from_one_address_is_limited() {
    let mut config = test_config();
    config.max_per_address = 4;
    let server = TestServer::start(config);
    let mut good = server.joined("good", 0);
    let mut extra: Vec<LineClient> = (0..3).map(|_| server.client()).collect();
    // The fifth connection from 127.0.0.1 is closed without a reply.
    let mut refused = server.client();
    refused.expect_closed(Duration::from_secs(3));
    drop(extra.pop());
    wait_for("a freed connection to be usable", || {
        let mut again = server.client();
        again.send("remove me");
        let mut line = String::new();
        let _ = again
            .stream
            .set_read_timeout(Some(Duration::from_millis(200)));
        std::io::BufRead::read_line(&mut std::io::BufReader::new(&again.stream), &mut line)
            .is_ok_and(|n| n > 0)
            && line == "you're not even joined\n"
    });
    good.send("my new name: survivor");
    good.expect("new name accepted");
    assert!(server.stop().counter("connections_refused") >= 1);
}

#[test]
fn dropped_connection_frees_its_slot_and_the_others_get_remove() {
    let server = TestServer::start(test_config());
    let mut stays = server.joined("stays", 0);
    let leaves = server.joined("leaves", 1);
    stays.expect("add ip: 127.0.0.1 name: leaves in 1");
    drop(leaves);
    stays.expect("remove ip: 127.0.0.1");
    let _again = server.joined("newcomer", 1);
    stays.expect("add ip: 127.0.0.1 name: newcomer in 1");
    assert_eq!(server.stop().counter("dropped_connections"), 1);
}

#[test]
fn a_client_that_does_not_read_is_dropped_and_others_are_served() {
    let server = TestServer::start(test_config());
    let mut good = server.joined("good", 0);
    let hog = server.joined("hog", 1);
    good.expect("add ip: 127.0.0.1 name: hog in 1");
    // Millions of reply bytes that the hog never reads: the server's bounded queue overflows.
    let mut stream: TcpStream = hog.stream.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = "?\n".repeat(32 * 1024);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if stream.write_all(chunk.as_bytes()).is_err() {
                return true; // the server dropped us
            }
        }
        false
    });
    good.expect("remove ip: 127.0.0.1");
    assert!(writer.join().unwrap(), "the hog was never dropped");
    still_served(&server, &mut good, "good2");
    drop(hog);
    assert_eq!(server.stop().counter("slow_clients_dropped"), 1);
}

#[test]
fn bans_loaded_at_start_refuse_any_first_line() {
    let dir = temp_dir("bans-first-line");
    let ban_file = dir.join("bans");
    std::fs::write(&ban_file, "127.0.0.0/8\n").unwrap();
    let runtime = RuntimeConfig {
        ban_file: Some(ban_file),
        ..RuntimeConfig::new("slotserver", loopback())
    };
    let server = TestServer::start_with(test_config(), runtime);
    let mut c = server.client();
    c.send("remove me");
    c.expect("you're banned from this server");
    c.expect_closed(Duration::from_secs(3));
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}
