//! The masterserver's state machine (`MasterCore`) driven without sockets, with virtual time:
//! the design's replies, the list limit, the idle, handshake and line timeouts, the connection
//! limits, the cached list reply, and random bytes that must never disturb a listed server.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use net_core::master::{MasterConfig, MasterCore};
use net_core::server::{ConnId, ServerAction};
use proptest::prelude::*;

fn config() -> MasterConfig {
    MasterConfig {
        title: "T".into(),
        max_servers: 3,
        idle_timeout: Duration::from_secs(120),
        handshake_timeout: Duration::from_secs(30),
        max_per_address: 4,
        max_connections: 8,
    }
}

struct Bench {
    core: MasterCore,
    now: Instant,
    actions: Vec<ServerAction>,
}

impl Bench {
    fn new(config: MasterConfig) -> Bench {
        let now = Instant::now();
        Bench {
            core: MasterCore::new(config).with_wall_clock(now, SystemTime::UNIX_EPOCH),
            now,
            actions: Vec::new(),
        }
    }

    fn connect(&mut self, conn: ConnId, ip: &str) -> Result<(), String> {
        let peer = SocketAddr::new(ip.parse().unwrap(), 40_000 + conn as u16);
        self.core.accept(self.now, conn, peer)
    }

    fn send_raw(&mut self, conn: ConnId, bytes: &[u8]) {
        self.core.receive(self.now, conn, bytes);
        self.collect();
    }

    fn send(&mut self, conn: ConnId, line: &str) {
        self.send_raw(conn, format!("{line}\n").as_bytes());
    }

    fn collect(&mut self) {
        while let Some(a) = self.core.poll_action() {
            self.actions.push(a);
        }
    }

    /// Lines sent to `conn` since the last call (shared list blocks split into lines).
    fn lines(&mut self, conn: ConnId) -> Vec<String> {
        let mut out = Vec::new();
        self.actions.retain(|a| match a {
            ServerAction::SendLine { conn: c, line } if *c == conn => {
                out.push(line.clone());
                false
            }
            ServerAction::SendShared { conn: c, bytes } if *c == conn => {
                let text = String::from_utf8(bytes.to_vec()).unwrap();
                out.extend(text.lines().map(String::from));
                false
            }
            _ => true,
        });
        out
    }

    fn closed(&mut self, conn: ConnId) -> bool {
        self.actions
            .iter()
            .any(|a| matches!(a, ServerAction::Close { conn: c, .. } if *c == conn))
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        if self.core.poll_timeout().is_some_and(|t| t <= self.now) {
            self.core.handle_timeout(self.now);
        }
        self.collect();
    }

    fn names(&self) -> Vec<String> {
        self.core.servers().map(|e| e.server.name.clone()).collect()
    }

    fn join(&mut self, conn: ConnId, name: &str) {
        self.connect(conn, "10.0.0.1").unwrap();
        self.send(conn, &join(name));
        assert_eq!(self.lines(conn), ["join accepted"]);
    }
}

fn join(name: &str) -> String {
    format!("version: 1.0 join me: {name} os: linux maxplayers: 16 url: http://{name}.example/")
}

#[test]
fn replies_are_the_designs() {
    let mut b = Bench::new(config());
    b.connect(1, "10.0.0.1").unwrap();
    for (line, reply) in [
        ("remove me", "you're not even joined"),
        ("players: 1 max: 16", "illegal request not processed"),
        (
            "version: 3.1 join me: x os: y maxplayers: 1 url: u",
            "masterserver version incompatible",
        ),
        ("nonsense", "illegal request not processed"),
        (join("a").as_str(), "join accepted"),
        ("players: 3 max: 16", "players acknowledged."),
        ("players: 17 max: 16", "illegal request not processed"),
        ("remove me", "removing you"),
        ("remove me", "you're not even joined"),
    ] {
        b.send(1, line);
        assert_eq!(b.lines(1), [reply], "{line}");
    }
}

#[test]
fn the_list_limit_and_the_list_reply() {
    let mut b = Bench::new(config());
    for (conn, name) in [(1, "a"), (2, "b"), (3, "c")] {
        b.join(conn, name);
    }
    b.connect(4, "10.0.0.2").unwrap();
    b.send(4, &join("d"));
    assert_eq!(b.lines(4), ["masterserver full"]);
    b.send(2, "players: 5 max: 8");
    b.lines(2);
    b.send(4, "list servers");
    let list = b.lines(4);
    assert_eq!(list.len(), 4);
    assert!(list[1].contains("players: 5 max: 8") && list[1].ends_with("name: b"));
    assert_eq!(list[3], "end of list");
    // The cached reply is renewed after a change.
    b.core.closed(b.now, 1);
    b.collect();
    b.send(4, "list servers");
    assert_eq!(b.lines(4).len(), 3);
    assert_eq!(b.names(), ["b", "c"]);
    b.send(4, &join("d"));
    assert_eq!(b.lines(4), ["join accepted"]);
}

/// The list is in the order the servers joined, not the order their connections came in: a
/// server that connected first but joined last (after a refused join, or `remove me` and a new
/// join) comes last. Found by tests/servers_chaos.rs, seed 1.
#[test]
fn the_list_is_in_join_order_not_connection_order() {
    let mut b = Bench::new(config());
    b.connect(1, "10.0.0.1").unwrap();
    b.send(1, "list servers");
    assert_eq!(b.lines(1), ["end of list"]);
    b.join(2, "b");
    b.send(1, &join("a"));
    assert_eq!(b.lines(1), ["join accepted"]);
    b.join(3, "c");
    assert_eq!(b.names(), ["b", "a", "c"]);
    b.send(3, "list servers");
    let list = b.lines(3);
    assert!(
        list[0].ends_with("name: b") && list[1].ends_with("name: a"),
        "{list:?}"
    );
    // Leaving and joining again on the same connection: last again.
    b.send(2, "remove me");
    assert_eq!(b.lines(2), ["removing you"]);
    b.send(2, &join("b"));
    assert_eq!(b.lines(2), ["join accepted"]);
    assert_eq!(b.names(), ["a", "c", "b"]);
    b.send(2, "players: 1 max: 2");
    assert_eq!(b.lines(2), ["players acknowledged."]);
    b.core.closed(b.now, 1);
    b.collect();
    assert_eq!(b.names(), ["c", "b"]);
}

#[test]
fn silent_servers_are_unlisted_after_the_idle_timeout() {
    let mut b = Bench::new(config());
    b.join(1, "talker");
    b.join(2, "quiet");
    for _ in 0..5 {
        b.advance(Duration::from_secs(30));
        b.send(1, "players: 1 max: 16");
        b.lines(1);
    }
    assert!(b.closed(2), "the quiet one is closed after 120 s");
    assert!(!b.closed(1));
    assert_eq!(b.names(), ["talker"]);
    assert!(b.actions.contains(&ServerAction::ListChanged));
}

#[test]
fn unlisted_connections_and_unfinished_lines_time_out() {
    let mut b = Bench::new(config());
    b.connect(1, "10.0.0.1").unwrap();
    b.connect(2, "10.0.0.1").unwrap();
    b.send(2, "list servers");
    b.send_raw(2, b"version: 1.0 jo");
    b.advance(Duration::from_secs(29));
    assert!(!b.closed(1) && !b.closed(2));
    b.advance(Duration::from_secs(1));
    assert!(b.closed(1), "no line within the handshake timeout");
    assert!(
        b.closed(2),
        "a line not finished within the handshake timeout"
    );
    assert_eq!(b.core.connection_count(), 0);
    assert_eq!(b.core.poll_timeout(), None);
}

#[test]
fn connection_limits_refuse_with_masterserver_full() {
    use net_core::server::TextServerCore;
    let mut b = Bench::new(config());
    for conn in 0..4 {
        b.connect(conn, "10.0.0.1").unwrap();
    }
    assert!(b.connect(4, "10.0.0.1").is_err(), "per address");
    for conn in 4..8 {
        b.connect(conn, &format!("10.0.1.{conn}")).unwrap();
    }
    assert!(b.connect(8, "10.0.2.1").is_err(), "in all");
    b.core.closed(b.now, 0);
    b.connect(9, "10.0.0.1").unwrap();
    assert!(b.actions.is_empty());
    // The runtime sends a refused connection this line before it closes it: the design's
    // refusal for "no room here", which registering servers already handle by trying later.
    assert_eq!(b.core.refusal_line(), Some("masterserver full"));
}

#[test]
fn the_default_list_limit_is_reached_from_one_address() {
    // SPEC section 6: `masterserver full` (default limit 256). All from one address (a test
    // host, a hosting provider's NAT): the list limit refuses first, not the address limit.
    let mut b = Bench::new(MasterConfig::default());
    assert_eq!(b.core.config().max_servers, 256);
    for conn in 0..257u64 {
        b.connect(conn, "127.0.0.1")
            .unwrap_or_else(|e| panic!("connection {conn} refused: {e}"));
        b.send(conn, &join(&format!("s{conn}")));
        let want = if conn < 256 {
            "join accepted"
        } else {
            "masterserver full"
        };
        assert_eq!(b.lines(conn), [want], "connection {conn}");
    }
    // Room is left for list readers from that address too.
    for conn in 257..300u64 {
        b.connect(conn, "127.0.0.1")
            .unwrap_or_else(|e| panic!("list reader {conn} refused: {e}"));
    }
    b.send(299, "list servers");
    assert_eq!(b.lines(299).len(), 257, "256 servers and the end line");
    // The per-address limit still guards: one address never holds every connection.
    let config = b.core.config().clone();
    assert!(config.max_per_address < config.max_connections);
    assert!(config.max_connections - config.max_per_address >= 64);
}

#[test]
fn the_timer_wakes_only_when_a_deadline_may_have_passed() {
    let mut b = Bench::new(config());
    let t0 = b.now;
    b.join(1, "a");
    // A lower bound: the handshake deadline the connection had before it joined.
    assert_eq!(b.core.poll_timeout(), Some(t0 + Duration::from_secs(30)));
    b.advance(Duration::from_secs(30));
    assert_eq!(b.core.poll_timeout(), Some(t0 + Duration::from_secs(120)));
    b.advance(Duration::from_secs(60));
    b.send(1, "players: 2 max: 16");
    // The old bound comes due; the sweep finds the later deadline and closes nothing.
    b.advance(Duration::from_secs(30));
    assert!(!b.closed(1));
    assert_eq!(b.core.poll_timeout(), Some(t0 + Duration::from_secs(210)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random bytes in random chunks on one connection never panic, never get a reply that is
    /// not one of the design's, and never disturb a listed server on another connection.
    #[test]
    fn random_input_never_disturbs_others(chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..20)) {
        let mut b = Bench::new(config());
        b.join(1, "steady");
        b.connect(2, "10.0.0.9").unwrap();
        for chunk in &chunks {
            b.send_raw(2, chunk);
        }
        for line in b.lines(2) {
            prop_assert!(
                ["join accepted", "masterserver full", "illegal request not processed",
                 "masterserver version incompatible", "removing you", "you're not even joined",
                 "players acknowledged.", "end of list"].contains(&line.as_str())
                    || line.starts_with("server: "),
                "unexpected reply {:?}", line
            );
        }
        prop_assert!(b.names().contains(&"steady".to_string()));
        b.send(1, "players: 4 max: 16");
        prop_assert_eq!(b.lines(1), vec!["players acknowledged.".to_string()]);
    }
}

#[test]
fn an_overlong_line_is_refused_closed_and_counted() {
    let mut b = Bench::new(config());
    b.join(1, "good");
    b.connect(2, "10.0.0.2").unwrap();
    b.send(2, &format!("{} url: {}", join("bad"), "x".repeat(600)));
    assert_eq!(b.lines(2), ["illegal request not processed"]);
    assert!(b.closed(2));
    let counters = b.core.counters();
    let count = |name: &str| counters.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    // Release builds once lost this count while still closing (see server/connections.rs).
    assert_eq!(count("overlong_lines"), Some(1));
    assert_eq!(count("illegal_requests"), Some(1));
    assert_eq!(b.names(), ["good"]);
}
