//! The two-process numbered-datagram exchange: two `exchange` programs (A and B) send each other
//! numbered datagrams in phases, switching packet backends between phases while datagrams are
//! still unread, and in the end every number must have arrived exactly once, intact, from the
//! peer. The scenarios here are shared by the tests in `tests/exchange_*.rs`.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::endpoint::Endpoint;

/// How long one command may take (a whole phase of sending or receiving).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an endpoint's own receive or flush loop may run, in milliseconds (shorter than
/// [`REPLY_TIMEOUT`], so the endpoint answers "timeout" before the harness gives up on it).
pub const LOOP_TIMEOUT_MS: u64 = 15_000;
/// Datagrams per direction in a UDP phase.
pub const UDP_PHASE: u64 = 200;
/// Datagrams per direction in the phase that must overflow the C backend's socket queue.
pub const QUEUED_PHASE_MIN: u64 = 600;
/// UDP receive buffer for the endpoints, so no phase can overflow it.
const UDP_RCVBUF: u32 = 1 << 20;

/// `net.unix.max_dgram_qlen`: how many datagrams an AF_UNIX datagram socket queues before
/// senders get EAGAIN (Linux's default is 10; the value is per network namespace).
pub fn unix_queue_len() -> u64 {
    std::fs::read_to_string("/proc/sys/net/unix/max_dgram_qlen")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(10)
}

/// The payload `exchange` sends for a sequence number: the number as 4 big-endian bytes, then
/// 12 + seq % 53 filler bytes derived from it (the same rule as `c/exchange.c`).
pub fn payload(seq: u32) -> Vec<u8> {
    let len = 4 + 12 + (seq % 53) as usize;
    let mut data = seq.to_be_bytes().to_vec();
    data.extend((4..len).map(|i| {
        (seq.wrapping_mul(7)
            .wrapping_add(i as u32 * 13)
            .wrapping_add(1)) as u8
    }));
    data
}

/// A name prefix for the C backend's abstract sockets that no other test run uses.
pub fn unique_prefix() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "pn-ffi-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Two endpoints that talk to each other.
pub struct Pair {
    pub a: Endpoint,
    pub b: Endpoint,
}

impl Pair {
    /// Start two endpoints of `program` with extra environment `env`, configured for loopback
    /// only: UDP bound to 127.0.0.1 without IPv6, port 0 (a free one), and one fresh socket-name
    /// prefix for the C backend shared by both.
    pub fn start(program: &Path, env: &[(String, String)]) -> Pair {
        let mut pair = Pair {
            a: Endpoint::spawn("A", program, env),
            b: Endpoint::spawn("B", program, env),
        };
        let prefix = unique_prefix();
        for endpoint in [&mut pair.a, &mut pair.b] {
            for line in [
                "exec net.udp.bind 127.0.0.1".to_string(),
                "exec net.udp.ipv6 0".to_string(),
                format!("exec net.udp.rcvbuf {UDP_RCVBUF}"),
                "exec net.port 0".to_string(),
                format!("exec net.unixdgram.prefix {prefix}"),
            ] {
                endpoint.ok(&line, REPLY_TIMEOUT);
            }
        }
        pair
    }

    /// Send `to_a` to A and `to_b` to B, then wait for both replies (the two run concurrently).
    pub fn both(&mut self, to_a: &str, to_b: &str) -> (String, String) {
        self.a.send(to_a);
        self.b.send(to_b);
        (self.a.reply(REPLY_TIMEOUT), self.b.reply(REPLY_TIMEOUT))
    }

    /// [`Pair::both`] with the same command for both, each reply starting with "ok".
    pub fn both_ok(&mut self, command: &str) -> (String, String) {
        let (ra, rb) = self.both(command, command);
        (
            self.a.expect_ok(&ra, command),
            self.b.expect_ok(&rb, command),
        )
    }

    /// Tell each endpoint the other's current node; returns (A's node, B's node) as text.
    pub fn introduce(&mut self) -> (String, String) {
        let node_a = self.a.ok("local", REPLY_TIMEOUT);
        let node_b = self.b.ok("local", REPLY_TIMEOUT);
        self.a.ok(&format!("peer {node_b}"), REPLY_TIMEOUT);
        self.b.ok(&format!("peer {node_a}"), REPLY_TIMEOUT);
        (node_a, node_b)
    }

    /// Switch both endpoints to the backend `spec` (`net.api SPEC`); returns the console lines.
    pub fn switch(&mut self, spec: &str) -> (String, String) {
        self.both_ok(&format!("exec net.api {spec}"))
    }

    /// Check that both received every number in `0..end` exactly once from the other.
    pub fn check_all(&mut self, end: u64) {
        let command = format!("check 0 {end}");
        self.both_ok(&command);
    }

    /// Quit both; returns their stderr output.
    pub fn quit(self) -> (String, String) {
        (self.a.quit(REPLY_TIMEOUT), self.b.quit(REPLY_TIMEOUT))
    }
}

/// Check the reply to `send FROM TO`: all sent, and nothing left waiting in the core's queue.
fn expect_sent_unqueued(endpoint: &Endpoint, reply: &str, count: u64) {
    let rest = endpoint.expect_ok(reply, "send");
    if rest != format!("sent {count} queued 0") {
        endpoint.fail(&format!(
            "after sending {count} datagrams the reply was {reply:?}; a phase that is read only after \
             the switch must fit in the receiver's socket queue"
        ));
    }
}

/// The exchange across switches: a UDP phase, a phase on the backend `spec`, another UDP phase.
/// In each phase both endpoints send their datagrams, then (before reading any) both switch to
/// the next backend, and only then read: the phase's datagrams must come out of the queue the
/// switch drained from the old socket.
pub fn switching_exchange(program: &Path, spec: &str, env: &[(String, String)]) -> Report {
    // A phase on the C backend must fit in the peer's AF_UNIX queue: it is read only later.
    let phases = [
        ("udp", UDP_PHASE),
        (spec, unix_queue_len().min(50)),
        ("udp", UDP_PHASE),
    ];
    let mut pair = Pair::start(program, env);
    pair.introduce();
    let mut report = Report::default();
    let mut first = 0;
    for (i, &(_, count)) in phases.iter().enumerate() {
        let end = first + count;
        report.phases.push(count);
        report.backends.push(pair.a.backend_line());
        let send = format!("send {first} {end}");
        let (ra, rb) = pair.both(&send, &send);
        expect_sent_unqueued(&pair.a, &ra, count);
        expect_sent_unqueued(&pair.b, &rb, count);

        if let Some(&(next_spec, _)) = phases.get(i + 1) {
            // Nothing of the phase has been read by the game yet. The frame loop may already
            // have moved some of it from the socket into the queue the game reads; the switch
            // drains the rest into the same queue. Either way all of it must be waiting there.
            pair.switch(next_spec);
            for endpoint in [&mut pair.a, &mut pair.b] {
                let waiting = endpoint.status_number("waiting to be read ");
                if waiting != count {
                    endpoint.fail(&format!(
                        "after the switch to {next_spec}, {waiting} received datagrams wait to be \
                         read; expected the phase's {count} (none lost by the switch)"
                    ));
                }
            }
            pair.both_ok(&format!("recv_until {end} {LOOP_TIMEOUT_MS}"));
            pair.introduce();
        } else {
            pair.both_ok(&format!("recv_until {end} {LOOP_TIMEOUT_MS}"));
        }
        first = end;
    }
    // Anything late (a duplicate) would show up now.
    std::thread::sleep(Duration::from_millis(100));
    pair.both(
        &format!("recv_until {} 50", first + 1),
        &format!("recv_until {} 50", first + 1),
    );
    pair.check_all(first);
    pair.quit();
    report
}

/// What a switching exchange did.
#[derive(Debug, Default)]
pub struct Report {
    /// Datagrams per direction in each phase.
    pub phases: Vec<u64>,
    /// The `backend:` line of `status` during each phase.
    pub backends: Vec<String>,
}

/// One phase on the backend `spec` large enough that the peer's socket queue fills and the
/// sender's core queues datagrams, while the receiver reads concurrently; in both directions,
/// one after the other. Every number must still arrive exactly once. Returns (datagrams per
/// direction, datagrams A's core deferred, datagrams B's core deferred).
pub fn queued_exchange(program: &Path, spec: &str, env: &[(String, String)]) -> (u64, u64, u64) {
    let count = QUEUED_PHASE_MIN.max(unix_queue_len() + 100);
    let mut pair = Pair::start(program, env);
    pair.switch(spec);
    pair.introduce();
    // The sender hands over every datagram before the receiver starts reading, so the peer's
    // socket queue fills and the core must defer the rest whatever the timing (a receiver that
    // already reads can keep up with a slow sender, e.g. under AddressSanitizer, and then nothing
    // would wait). The receiver then reads while the sender's core drains its queue.
    let one_way = |sender: &mut Endpoint, receiver: &mut Endpoint| {
        let sent = sender.ok(&format!("send 0 {count}"), REPLY_TIMEOUT);
        if sent.ends_with(" queued 0") {
            sender.fail(&format!(
                "{count} datagrams to a peer that was not reading all fit its socket queue \
                 ({sent}); the phase does not test what it should"
            ));
        }
        receiver.send(&format!("recv_until {count} {LOOP_TIMEOUT_MS}"));
        sender.ok(&format!("flush {LOOP_TIMEOUT_MS}"), REPLY_TIMEOUT);
        let reply = receiver.reply(REPLY_TIMEOUT);
        receiver.expect_ok(&reply, "recv_until");
    };
    one_way(&mut pair.a, &mut pair.b);
    one_way(&mut pair.b, &mut pair.a);
    let deferred_a = pair.a.status_number("deferred ");
    let deferred_b = pair.b.status_number("deferred ");
    for (endpoint, deferred) in [(&pair.a, deferred_a), (&pair.b, deferred_b)] {
        if deferred == 0 {
            endpoint.fail(&format!(
                "sending {count} datagrams never had to wait in the core's queue; the phase does not \
                 test what it should"
            ));
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    pair.both(
        &format!("recv_until {} 50", count + 1),
        &format!("recv_until {} 50", count + 1),
    );
    pair.check_all(count);
    for endpoint in [&mut pair.a, &mut pair.b] {
        let errors = endpoint.status_number("errors: send ");
        let overflow = endpoint.status_number("queue overflow ");
        if errors + overflow != 0 {
            endpoint.fail(&format!(
                "status shows {errors} send errors and {overflow} queue overflows"
            ));
        }
    }
    pair.quit();
    (count, deferred_a, deferred_b)
}
