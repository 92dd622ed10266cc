//! The servers' rate limits over real sockets: a TCP connection sending more bytes per second
//! than allowed is dropped and counted while a well-behaved client keeps being served; UDP
//! datagrams from a source over its limit are dropped and counted while another source's
//! datagrams still reach the game service.

mod server_support;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use net_core::server::slots::RosterChange;
use net_core::server::{run, BanList, RateLimits, RuntimeConfig, SlotServerCore, UdpService};
use server_support::{loopback, test_config, wait_for, TestServer};

#[test]
fn a_connection_over_the_byte_rate_is_dropped_and_others_are_served() {
    let runtime = RuntimeConfig {
        limits: RateLimits {
            tcp_bytes_per_sec: 1000,
            ..RateLimits::default()
        },
        ..RuntimeConfig::new("slotserver", loopback())
    };
    let server = TestServer::start_with(test_config(), runtime);
    let mut good = server.joined("good", 0);
    let mut hog = server.client();
    // Valid lines, but far more of them than 1000 bytes a second (a burst of 4 s is allowed).
    let line = format!("name {}\n", "x".repeat(20)).repeat(400);
    hog.send_raw(line.as_bytes());
    hog.expect_closed(Duration::from_secs(5));
    // The well-behaved client is still served.
    good.send("remove me");
    good.expect("removing you");
    let summary = server.stop();
    assert_eq!(summary.counter("tcp_rate_limited"), 1);
}

/// A game service that only counts what reaches it.
struct Counting(Arc<AtomicU64>);

impl UdpService for Counting {
    fn roster(&mut self, _: Instant, _: &RosterChange) {}
    fn handle_datagram(&mut self, _: Instant, from: SocketAddr, _: &[u8]) {
        // The port tells the two senders apart: the count of the well-behaved one goes up by
        // 1_000_000 a datagram, the flood's by 1.
        let step = if from.port().is_multiple_of(2) {
            1_000_000
        } else {
            1
        };
        self.0.fetch_add(step, Ordering::SeqCst);
    }
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

/// A UDP socket on 127.0.0.1 whose port is even (`even`) or odd.
fn socket_with_port_parity(even: bool) -> UdpSocket {
    loop {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        if socket.local_addr().unwrap().port().is_multiple_of(2) == even {
            return socket;
        }
    }
}

#[test]
fn datagrams_over_a_sources_rate_are_dropped_and_other_sources_get_through() {
    let seen = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = RuntimeConfig {
        udp: Some(loopback()),
        limits: RateLimits {
            udp_datagrams_per_sec: 50,
            udp_bytes_per_sec: 0,
            ..RateLimits::default()
        },
        ..RuntimeConfig::new("gameserver", loopback())
    };
    let core = SlotServerCore::new(test_config(), BanList::empty());
    let (tx, rx) = mpsc::channel();
    let service = Box::new(Counting(Arc::clone(&seen)));
    let thread_stop = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        run(runtime, core, Some(service), thread_stop, move |addrs| {
            let _ = tx.send(addrs);
        })
    });
    let addrs = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("server started");
    let to = addrs.udp.expect("a UDP port");
    let flood = socket_with_port_parity(false);
    let good = socket_with_port_parity(true);
    // 1000 datagrams within about 50 ms from one source (in bursts the socket buffer holds):
    // the burst of 2 s * 50 and little more get through. The other source sends 10 among them.
    // Each round waits until the server read the other source's datagram, so the socket buffer
    // never overflows however slowly the server thread runs.
    let start = Instant::now();
    for round in 1..=10 {
        for _ in 0..100 {
            flood.send_to(b"flood", to).unwrap();
        }
        good.send_to(b"game", to).unwrap();
        wait_for("the other source's datagram", || {
            seen.load(Ordering::SeqCst) / 1_000_000 == round
        });
    }
    let flood_time = start.elapsed();

    stop.store(true, Ordering::SeqCst);
    let summary = thread.join().unwrap().expect("server ran");
    let flood_seen = seen.load(Ordering::SeqCst) % 1_000_000;
    let allowed = 100 + (50.0 * flood_time.as_secs_f64()).ceil() as u64;
    assert!(
        (100..=allowed).contains(&flood_seen),
        "{flood_seen} of the flood got through in {flood_time:?} (at most {allowed})"
    );
    assert_eq!(
        seen.load(Ordering::SeqCst) / 1_000_000,
        10,
        "the other source got through"
    );
    let limited = summary.counter("udp_rate_limited");
    let arrived = summary.counter("udp_datagrams_in");
    assert_eq!(
        limited + flood_seen + 10,
        arrived,
        "every datagram was counted once"
    );
    assert!(limited > 0);
}
