//! A client repeating a refused line cannot flood a server's log: the cores (`SlotServerCore`,
//! `MasterCore`), driven without sockets at one virtual `now`, log a few refusal lines per
//! address and period and then one line with how many were not logged, and few lines over all
//! addresses; every refusal is still counted and answered. The runtime's own warnings (a
//! connection over `--tcp-rate`, a UDP source over `--udp-rate`) go through the same limit,
//! shown by running the real runtime on the test thread. The log is captured per test thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Once};
use std::time::{Duration, Instant, SystemTime};

use log::{Level, LevelFilter, Log, Metadata, Record};
use net_core::master::{MasterConfig, MasterCore};
use net_core::server::slots::RosterChange;
use net_core::server::{
    run, BanList, ConnId, RateLimits, RefusalLog, RefusalLogLimits, RuntimeConfig, ServerAction,
    SlotServerConfig, SlotServerCore, UdpService,
};
use socket2::{Domain, Socket, Type};

thread_local! {
    static CAPTURED: RefCell<Vec<(Level, String)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps every log line of the thread that logged it (each test runs on its own thread).
struct Capture;

impl Log for Capture {
    fn enabled(&self, _: &Metadata) -> bool {
        true
    }
    fn log(&self, record: &Record) {
        let line = (record.level(), record.args().to_string());
        CAPTURED.with(|c| c.borrow_mut().push(line));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture;

/// Start capturing this thread's log lines at `level` and more severe, forgetting earlier ones.
fn capture_log() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        log::set_logger(&CAPTURE).expect("no other logger in this test binary");
        log::set_max_level(LevelFilter::Info);
    });
    CAPTURED.with(|c| c.borrow_mut().clear());
}

/// The lines captured on this thread since the last call.
fn take_log() -> Vec<(Level, String)> {
    CAPTURED.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

fn containing<'a>(log: &'a [(Level, String)], text: &str) -> Vec<&'a str> {
    log.iter()
        .filter(|(_, l)| l.contains(text))
        .map(|(_, l)| l.as_str())
        .collect()
}

fn slot_core(now: Instant) -> SlotServerCore {
    let config = SlotServerConfig {
        server_name: "TestServer".into(),
        max_players: 16,
        messages: ["a", "b", "c", "d"].map(String::from),
        udp_port: 0,
        idle_timeout: Duration::ZERO,
        handshake_timeout: Duration::from_secs(60),
        max_per_address: 1000,
        max_connections: 1000,
        server_token: 4242,
    };
    SlotServerCore::new(config, BanList::empty()).with_wall_clock(now, SystemTime::UNIX_EPOCH)
}

fn peer(ip: &str, conn: ConnId) -> SocketAddr {
    SocketAddr::new(ip.parse().unwrap(), 40_000 + conn as u16)
}

/// Send `line` on `conn` and return the lines sent to `conn`.
fn slot_send(core: &mut SlotServerCore, now: Instant, conn: ConnId, line: &str) -> Vec<String> {
    core.receive(now, conn, format!("{line}\n").as_bytes());
    let mut out = Vec::new();
    while let Some(a) = core.poll_action() {
        if let ServerAction::SendLine { conn: c, line } = a {
            if c == conn {
                out.push(line);
            }
        }
    }
    out
}

fn counters(list: Vec<(&'static str, u64)>) -> HashMap<&'static str, u64> {
    list.into_iter().collect()
}

#[test]
fn one_address_repeating_a_refused_join_logs_a_few_lines_then_a_summary() {
    capture_log();
    let now = Instant::now();
    let mut core = slot_core(now);
    core.accept(now, 1, peer("10.0.0.1", 1)).unwrap();
    slot_send(&mut core, now, 1, "version: 1.0 join me: sid os: x");
    core.accept(now, 2, peer("192.0.2.7", 2)).unwrap();
    for _ in 0..200 {
        let reply = slot_send(&mut core, now, 2, "version: 1.0 join me: sid os: x");
        assert_eq!(reply, ["name already taken"], "every refusal is answered");
    }
    let log = take_log();
    assert_eq!(
        containing(&log, "refused: name already taken").len(),
        5,
        "{log:#?}"
    );
    assert!(containing(&log, "not logged").is_empty(), "{log:#?}");
    let c = counters(core.counters());
    assert_eq!(
        c["joins_refused_name_taken"], 200,
        "every refusal is counted"
    );

    // The summary comes when the period ends: the core asks to be woken for it.
    let due = core.poll_timeout().expect("a summary is due");
    assert!(due <= now + Duration::from_secs(10));
    core.handle_timeout(due);
    let log = take_log();
    assert_eq!(
        containing(&log, "not logged"),
        ["... 195 more refusals from 192.0.2.7 in the last 10 s not logged"],
        "{log:#?}"
    );
    assert_eq!(
        core.poll_timeout(),
        Some(now + Duration::from_secs(60)),
        "nothing more is due before the handshake deadline"
    );

    // A new period logs again.
    let later = due + Duration::from_secs(1);
    slot_send(&mut core, later, 2, "version: 2.0 join me: sid os: x");
    let log = take_log();
    assert_eq!(
        containing(&log, "server version incompatible").len(),
        1,
        "{log:#?}"
    );
}

#[test]
fn many_addresses_together_log_a_bounded_number_of_lines() {
    capture_log();
    let now = Instant::now();
    let mut core = slot_core(now);
    for conn in 1..=100u64 {
        let ip = format!("10.1.{}.{}", conn / 256, conn % 256);
        core.accept(now, conn, peer(&ip, conn)).unwrap();
        for _ in 0..10 {
            let reply = slot_send(&mut core, now, conn, "version: 2.0 join me: x os: y");
            assert_eq!(reply, ["server version incompatible"]);
        }
    }
    let log = take_log();
    assert_eq!(
        containing(&log, "refused: server version incompatible").len(),
        50,
        "at most 50 refusal lines from all addresses a period"
    );
    assert_eq!(counters(core.counters())["joins_refused_version"], 1000);
    core.handle_timeout(now + Duration::from_secs(10));
    let log = take_log();
    let summaries = containing(&log, "not logged");
    // Ten addresses logged their five lines each and had five more; the other 900 refusals
    // were over the limit of all addresses.
    assert_eq!(summaries.len(), 11, "{summaries:#?}");
    assert!(summaries.contains(&"... 5 more refusals from 10.1.0.1 in the last 10 s not logged"));
    assert_eq!(
        containing(&log, "... 900 more refusals in the last 10 s not logged").len(),
        1,
        "{summaries:#?}"
    );
}

#[test]
fn connections_over_a_limit_are_logged_within_the_limit() {
    capture_log();
    let now = Instant::now();
    let config = SlotServerConfig {
        max_per_address: 1,
        ..SlotServerConfig::default()
    };
    let mut core = SlotServerCore::new(config, BanList::empty());
    core.accept(now, 1, peer("192.0.2.9", 1)).unwrap();
    for conn in 2..100 {
        assert!(core.accept(now, conn, peer("192.0.2.9", conn)).is_err());
    }
    let log = take_log();
    assert_eq!(
        containing(&log, "refused connection from").len(),
        5,
        "{log:#?}"
    );
    core.handle_timeout(now + Duration::from_secs(10));
    assert_eq!(
        containing(&take_log(), "not logged"),
        ["... 93 more refusals from 192.0.2.9 in the last 10 s not logged"]
    );
}

#[test]
fn the_masterserver_limits_its_refusal_lines_too() {
    capture_log();
    let now = Instant::now();
    let mut core =
        MasterCore::new(MasterConfig::default()).with_wall_clock(now, SystemTime::UNIX_EPOCH);
    core.accept(now, 1, "198.51.100.4:5000".parse().unwrap())
        .unwrap();
    for _ in 0..100 {
        core.receive(
            now,
            1,
            b"version: 3.1 join me: x os: y maxplayers: 1 url: u\n",
        );
        let mut replies = Vec::new();
        while let Some(a) = core.poll_action() {
            if let ServerAction::SendLine { line, .. } = a {
                replies.push(line);
            }
        }
        assert_eq!(replies, ["masterserver version incompatible"]);
    }
    let log = take_log();
    assert_eq!(containing(&log, "refused").len(), 5, "{log:#?}");
    assert_eq!(counters(core.counters())["joins_refused_version"], 100);
    let due = core.poll_timeout().expect("a summary is due");
    core.handle_timeout(due);
    assert_eq!(
        containing(&take_log(), "not logged"),
        ["... 95 more refusals from 198.51.100.4 in the last 10 s not logged"]
    );
}

/// A game service that takes every datagram and sends nothing.
struct Quiet;

impl UdpService for Quiet {
    fn roster(&mut self, _: Instant, _: &RosterChange) {}
    fn handle_datagram(&mut self, _: Instant, _: SocketAddr, _: &[u8]) {}
    fn poll_transmit(&mut self, _: Instant, _: &mut [u8]) -> Option<(SocketAddr, usize)> {
        None
    }
    fn handle_timeout(&mut self, _: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn poll_silent(&mut self) -> Option<u8> {
        None
    }
    fn status_lines(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Connect to `server` from `source` (an address of 127.0.0.0/8), send more than the burst of
/// `--tcp-rate` and wait until the server has dropped the connection.
fn flood_tcp_from(source: Ipv4Addr, server: SocketAddr) {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket
        .bind(&SocketAddr::new(IpAddr::V4(source), 0).into())
        .unwrap();
    socket.connect(&server.into()).unwrap();
    let mut stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(&[b'x'; 200]).unwrap();
    let mut buf = [0u8; 256];
    // Closed (0) or reset: either way the server dropped it.
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

/// Limits every client exceeds at once: bursts of 40 bytes per connection and 2 datagrams
/// per UDP source.
fn tight_limits() -> RateLimits {
    RateLimits {
        tcp_bytes_per_sec: 10,
        udp_datagrams_per_sec: 1,
        udp_bytes_per_sec: 1 << 20,
    }
}

/// Run a slotserver runtime with `runtime` and a refusal log of `limits` on this thread (whose
/// log lines are captured) while another thread runs `clients` against its bound addresses; the
/// server stops when `clients` returns.
fn run_against(
    runtime: RuntimeConfig,
    limits: RefusalLogLimits,
    udp: Option<Box<dyn UdpService>>,
    clients: impl FnOnce(net_core::server::BoundAddrs) + Send + 'static,
) -> net_core::server::RunSummary {
    let stop = Arc::new(AtomicBool::new(false));
    let (bound_tx, bound_rx) = mpsc::channel();
    let clients = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            clients(bound_rx.recv().unwrap());
            stop.store(true, Ordering::SeqCst);
        })
    };
    let mut core = SlotServerCore::new(SlotServerConfig::default(), BanList::empty());
    *core.refusal_log() = RefusalLog::new(limits);
    let summary = run(runtime, core, udp, stop, move |bound| {
        bound_tx.send(bound).unwrap()
    })
    .unwrap();
    clients.join().unwrap();
    summary
}

#[test]
fn the_runtime_logs_rate_limit_drops_within_the_same_limit() {
    capture_log();
    let runtime = RuntimeConfig {
        udp: Some("127.0.0.1:0".parse().unwrap()),
        limits: tight_limits(),
        ..RuntimeConfig::new("gameserver", "127.0.0.1:0".parse().unwrap())
    };
    // Periods of 3 s, not the default 10 s (what a period's end does does not depend on its
    // length; the sans-IO tests above use the default): the flood below takes some 20 ms.
    let limits = RefusalLogLimits {
        period: Duration::from_secs(3),
        ..RefusalLogLimits::default()
    };
    let summary = run_against(runtime, limits, Some(Box::new(Quiet)), |bound| {
        let start = Instant::now();
        // One address, ten connections over the rate: five lines, then its summary.
        for _ in 0..10 {
            flood_tcp_from(Ipv4Addr::new(127, 0, 3, 1), bound.tcp);
        }
        // Sixty addresses, one connection each: the limit over all addresses.
        for i in 0..60 {
            flood_tcp_from(Ipv4Addr::new(127, 0, 1, 1 + i), bound.tcp);
        }
        // Sixty UDP sources, each one datagram over its burst.
        let udp = bound.udp.unwrap();
        for i in 0..60 {
            let socket = UdpSocket::bind((Ipv4Addr::new(127, 0, 2, 1 + i), 0)).unwrap();
            for _ in 0..3 {
                socket.send_to(b"flood", udp).unwrap();
            }
        }
        // The periods began after `start`: once they are over, the summaries are logged.
        let over = start + Duration::from_millis(4_000);
        std::thread::sleep(over.saturating_duration_since(Instant::now()));
    });
    assert_eq!(summary.counter("tcp_rate_limited"), 70);
    assert_eq!(summary.counter("udp_rate_limited"), 60);
    let log = take_log();
    let tcp_lines = containing(&log, "bytes/s; connection dropped");
    let udp_lines = containing(&log, "over the UDP rate limit");
    assert_eq!(
        tcp_lines
            .iter()
            .filter(|l| l.starts_with("127.0.3.1:"))
            .count(),
        5,
        "{tcp_lines:#?}"
    );
    assert_eq!(
        tcp_lines.len() + udp_lines.len(),
        50,
        "at most 50 lines from all addresses a period: {log:#?}"
    );
    let summaries = containing(&log, "not logged");
    assert!(
        summaries.contains(&"... 5 more refusals from 127.0.3.1 in the last 3 s not logged"),
        "{summaries:#?}"
    );
    // 70 + 60 over a limit, 50 logged, 5 in the summary of 127.0.3.1.
    assert!(
        summaries.contains(
            &"... 75 more refusals in the last 3 s not logged (more than 50 refusal lines \
              from all addresses)"
        ),
        "{summaries:#?}"
    );
    assert_eq!(summaries.len(), 2, "{summaries:#?}");
}

#[test]
fn a_server_stopping_logs_the_summaries_of_periods_not_yet_over() {
    capture_log();
    let runtime = RuntimeConfig {
        limits: tight_limits(),
        ..RuntimeConfig::new("slotserver", "127.0.0.1:0".parse().unwrap())
    };
    let summary = run_against(runtime, RefusalLogLimits::default(), None, |bound| {
        // Eight connections over the rate from one address: five lines, three not logged,
        // then the server stops long before the 10 s period ends.
        for _ in 0..8 {
            flood_tcp_from(Ipv4Addr::new(127, 0, 4, 1), bound.tcp);
        }
    });
    assert_eq!(summary.counter("tcp_rate_limited"), 8);
    let log = take_log();
    let summaries = containing(&log, "not logged");
    assert_eq!(summaries.len(), 1, "{log:#?}");
    assert!(
        summaries[0].starts_with("... 3 more refusals from 127.0.4.1 in the last ")
            && summaries[0].ends_with(" s not logged (server stopping)"),
        "{summaries:#?}"
    );
}
