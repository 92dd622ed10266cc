//! The slot/gameserver TCP-side state machine (`SlotServerCore`) driven without sockets, with
//! virtual time: the design's replies and list updates, the extensions, limits, timeouts,
//! bans, and hostile input that must not disturb the other clients.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

use net_core::server::{
    BanList, ConnId, RosterChange, ServerAction, SlotServerConfig, SlotServerCore,
};

const MESSAGES: [&str; 4] = ["welcome", "rule one", "rule two", "have fun"];

fn config() -> SlotServerConfig {
    SlotServerConfig {
        server_name: "TestServer".into(),
        max_players: 16,
        messages: MESSAGES.map(String::from),
        udp_port: 0,
        idle_timeout: Duration::ZERO,
        handshake_timeout: Duration::from_secs(10),
        max_per_address: 64,
        max_connections: 64,
        server_token: 4242,
    }
}

/// A core, its virtual clock and the actions it produced, split per connection.
struct Bench {
    core: SlotServerCore,
    now: Instant,
    actions: Vec<ServerAction>,
}

impl Bench {
    fn new(config: SlotServerConfig) -> Self {
        Self::with_bans(config, BanList::empty())
    }

    fn with_bans(config: SlotServerConfig, bans: BanList) -> Self {
        let now = Instant::now();
        Bench {
            core: SlotServerCore::new(config, bans).with_wall_clock(now, SystemTime::UNIX_EPOCH),
            now,
            actions: Vec::new(),
        }
    }

    fn connect(&mut self, conn: ConnId, ip: &str) {
        let peer = SocketAddr::new(ip.parse().unwrap(), 40_000 + conn as u16);
        self.core.accept(self.now, conn, peer).expect("accepted");
    }

    fn send(&mut self, conn: ConnId, line: &str) {
        self.core
            .receive(self.now, conn, format!("{line}\n").as_bytes());
        self.collect();
    }

    fn collect(&mut self) {
        while let Some(a) = self.core.poll_action() {
            self.actions.push(a);
        }
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.core.handle_timeout(self.now);
        self.collect();
    }

    /// Lines sent to `conn` since the last call (for that connection), in order.
    fn lines(&mut self, conn: ConnId) -> Vec<String> {
        let mut out = Vec::new();
        self.actions.retain(|a| match a {
            ServerAction::SendLine { conn: c, line } if *c == conn => {
                out.push(line.clone());
                false
            }
            _ => true,
        });
        out
    }

    /// Whether the core asked to close `conn` (consumes that action).
    fn was_closed(&mut self, conn: ConnId) -> bool {
        let before = self.actions.len();
        self.actions
            .retain(|a| !matches!(a, ServerAction::Close { conn: c, .. } if *c == conn));
        before != self.actions.len()
    }

    fn join(&mut self, conn: ConnId, ip: &str, name: &str) -> Vec<String> {
        self.connect(conn, ip);
        self.send(conn, &format!("version: 1.0 join me: {name} os: linux"));
        self.lines(conn)
    }

    fn roster(&mut self) -> Vec<RosterChange> {
        std::iter::from_fn(|| self.core.poll_roster_change()).collect()
    }
}

fn accepted(name: &str, slot: u8) -> Vec<String> {
    let mut lines = vec![format!(
        "join from {name} accepted, slot: {slot}, server name: TestServer"
    )];
    lines.extend(MESSAGES.map(String::from));
    lines
}

#[test]
fn design_join_gets_the_exact_accepted_line_and_four_messages() {
    let mut b = Bench::new(config());
    b.connect(1, "192.168.1.1");
    b.send(1, "version: 1.0 join me: sid os: powerpc-apple-macos");
    assert_eq!(b.lines(1), accepted("sid", 0));
    let players: Vec<_> = b.core.players().collect();
    assert_eq!(players.len(), 1);
    assert_eq!(players[0].name, "sid");
    assert_eq!(players[0].os, "powerpc-apple-macos");
    assert_eq!(players[0].game_port, 6526);
    assert!(!players[0].extended);
    assert_eq!(players[0].since, SystemTime::UNIX_EPOCH);
}

#[test]
fn a_new_player_learns_the_list_and_the_others_learn_of_it() {
    let mut b = Bench::new(config());
    b.join(1, "192.168.1.1", "msh");
    let mut expected = accepted("sid", 1);
    expected.push("add ip: 192.168.1.1 name: msh in 0".into());
    assert_eq!(b.join(2, "192.168.1.2", "sid"), expected);
    assert_eq!(b.lines(1), vec!["add ip: 192.168.1.2 name: sid in 1"]);
}

#[test]
fn rename_is_accepted_refused_when_taken_and_told_to_the_others() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "msh");
    b.join(2, "10.0.0.2", "sid");
    b.lines(1);
    b.send(2, "my new name: maverick");
    assert_eq!(b.lines(2), vec!["new name accepted"]);
    assert_eq!(b.lines(1), vec!["name ip: 10.0.0.2 name: maverick"]);
    b.send(2, "my new name: msh");
    assert_eq!(b.lines(2), vec!["name already taken"]);
    b.send(2, "my new name: ");
    assert_eq!(b.lines(2), vec!["you sent an invalid request"]);
    b.send(2, "my new name: maverick");
    assert_eq!(
        b.lines(2),
        vec!["new name accepted"],
        "own name again: accepted"
    );
    assert!(b.lines(1).is_empty(), "nothing changed, nothing told");
    b.connect(3, "10.0.0.3");
    b.send(3, "my new name: x");
    assert_eq!(b.lines(3), vec!["you're not even joined"]);
    let roster = b.roster();
    assert!(roster.contains(&RosterChange::Renamed {
        slot: 1,
        name: "maverick".into()
    }));
}

#[test]
fn remove_me_frees_the_slot_and_tells_the_others() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "a");
    b.join(2, "10.0.0.2", "b");
    b.lines(1);
    b.send(1, "remove me");
    assert_eq!(b.lines(1), vec!["removing you"]);
    assert_eq!(b.lines(2), vec!["remove ip: 10.0.0.1"]);
    b.send(1, "remove me");
    assert_eq!(b.lines(1), vec!["you're not even joined"]);
    assert!(
        !b.was_closed(1),
        "the design client closes; the server does not"
    );
    // The lowest free slot is given next, even to the same connection.
    b.send(1, "version: 1.0 join me: a2 os: x");
    assert_eq!(
        b.lines(1)[0],
        "join from a2 accepted, slot: 0, server name: TestServer"
    );
}

#[test]
fn seventeenth_join_on_sixteen_slots_is_server_full() {
    let mut b = Bench::new(config());
    for i in 0..16u64 {
        let lines = b.join(i, "10.0.0.1", &format!("p{i}"));
        assert_eq!(
            lines[0],
            format!("join from p{i} accepted, slot: {i}, server name: TestServer")
        );
    }
    assert_eq!(b.join(16, "10.0.0.1", "late"), vec!["server full"]);
    assert!(!b.was_closed(16));
    b.core.closed(b.now, 5);
    b.collect();
    b.send(16, "version: 1.0 join me: late os: x");
    assert_eq!(
        b.lines(16)[0],
        "join from late accepted, slot: 5, server name: TestServer"
    );
}

#[test]
fn join_errors_have_their_replies() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "sid");
    assert_eq!(b.join(2, "10.0.0.2", "sid"), vec!["name already taken"]);
    b.send(2, "version: 2.0 join me: other os: x");
    assert_eq!(b.lines(2), vec!["server version incompatible"]);
    b.send(2, "version: 1 join me: other os: x");
    assert_eq!(b.lines(2), vec!["you sent an invalid request"]);
    b.send(2, "hello server");
    assert_eq!(b.lines(2), vec!["you sent an invalid request"]);
    b.send(1, "version: 1.0 join me: again os: x");
    assert_eq!(
        b.lines(1),
        vec!["you sent an invalid request"],
        "second join"
    );
    let counters: std::collections::HashMap<_, _> = b.core.counters().into_iter().collect();
    assert_eq!(counters["joins_refused_name_taken"], 1);
    assert_eq!(counters["joins_refused_version"], 1);
    assert_eq!(counters["invalid_requests"], 3);
    assert_eq!(counters["joins"], 1);
}

#[test]
fn extended_clients_get_ports_and_tokens_design_clients_do_not() {
    extended_lines(0);
    extended_lines(6522);
}

/// The extended lines of a slotserver (`udp_port` 0) or a gameserver. Each `add` line ends with
/// what the receiver knows the player by: on a slotserver its token (peers check each other's
/// packets), on a gameserver a non-zero id that is not its token, the same in every line about
/// the player (only the server checks a client's packets).
fn extended_lines(udp_port: u16) {
    let gameserver = udp_port != 0;
    let mut told = std::collections::HashMap::new();
    let mut check_add = |line: &str, without_token: &str, name: &str, token: u32| {
        let id: u32 = line
            .strip_prefix(&format!("{without_token} token: "))
            .unwrap_or_else(|| panic!("{line:?} is not {without_token:?} and a token"))
            .parse()
            .unwrap_or_else(|e| panic!("{line:?}: {e}"));
        if gameserver {
            assert!(id != 0 && id != token, "{line:?} tells {name}'s token");
            assert_eq!(*told.entry(name.to_string()).or_insert(id), id, "{line:?}");
        } else {
            assert_eq!(id, token, "{line:?}");
        }
    };
    let mut cfg = config();
    cfg.udp_port = udp_port;
    let mut b = Bench::new(cfg);
    b.connect(1, "127.0.0.1");
    b.send(
        1,
        "version: 1.0 join me: ext os: linux port: 7001 token: 99",
    );
    let lines = b.lines(1);
    assert_eq!(
        lines[0],
        format!(
            "join from ext accepted, slot: 0, server name: TestServer udp: {udp_port} token: 4242"
        )
    );
    let design = b.join(2, "127.0.0.1", "plain");
    assert_eq!(
        design[0],
        "join from plain accepted, slot: 1, server name: TestServer"
    );
    assert_eq!(
        design[5], "add ip: 127.0.0.1 name: ext in 0",
        "design receivers: no suffix"
    );
    let lines = b.lines(1);
    assert_eq!(lines.len(), 1, "{lines:?}");
    check_add(
        &lines[0],
        "add ip: 127.0.0.1 name: plain in 1 port: 6526",
        "plain",
        0,
    );
    b.connect(3, "127.0.0.1");
    b.send(
        3,
        "version: 1.0 join me: ext2 os: linux port: 7003 token: 5",
    );
    let lines = b.lines(3);
    check_add(
        &lines[5],
        "add ip: 127.0.0.1 name: ext in 0 port: 7001",
        "ext",
        99,
    );
    check_add(
        &lines[6],
        "add ip: 127.0.0.1 name: plain in 1 port: 6526",
        "plain",
        0,
    );
    let lines = b.lines(1);
    assert_eq!(lines.len(), 1, "{lines:?}");
    check_add(
        &lines[0],
        "add ip: 127.0.0.1 name: ext2 in 2 port: 7003",
        "ext2",
        5,
    );
    assert_eq!(b.lines(2), vec!["add ip: 127.0.0.1 name: ext2 in 2"]);
    b.send(3, "my new name: renamed");
    assert_eq!(
        b.lines(1),
        vec!["name ip: 127.0.0.1 name: renamed port: 7003"]
    );
    assert_eq!(b.lines(2), vec!["name ip: 127.0.0.1 name: renamed"]);
    b.send(3, "remove me");
    assert_eq!(b.lines(1), vec!["remove ip: 127.0.0.1 port: 7003"]);
    assert_eq!(b.lines(2), vec!["remove ip: 127.0.0.1"]);
}

#[test]
fn overlong_line_is_refused_and_closes_binary_line_does_not() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "good");
    b.connect(2, "10.0.0.2");
    b.send(2, "\u{1}\u{2}binary");
    assert_eq!(b.lines(2), vec!["you sent an invalid request"]);
    b.core.receive(b.now, 2, &[0xff, 0xfe, b'\n']);
    b.collect();
    assert_eq!(b.lines(2), vec!["you sent an invalid request"]);
    assert!(!b.was_closed(2));
    b.core.receive(b.now, 2, &[b'x'; 300]);
    b.collect();
    assert_eq!(b.lines(2), vec!["you sent an invalid request"]);
    assert!(b.was_closed(2));
    b.core
        .receive(b.now, 2, b"version: 1.0 join me: late os: x\n");
    b.collect();
    assert!(
        b.lines(2).is_empty(),
        "nothing after the overlong line is parsed"
    );
    // The well-behaved client was not disturbed.
    b.send(1, "my new name: still-good");
    assert_eq!(b.lines(1), vec!["new name accepted"]);
    // Counted as what they were (release builds once lost the overlong count: see
    // server/connections.rs).
    let counters = b.core.counters();
    let count = |name: &str| counters.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    assert_eq!(count("overlong_lines"), Some(1));
}

#[test]
fn a_line_fed_byte_by_byte_is_one_request() {
    let mut b = Bench::new(config());
    b.connect(1, "10.0.0.1");
    for byte in b"version: 1.0 join me: slow os: x\r\n" {
        b.core.receive(b.now, 1, std::slice::from_ref(byte));
    }
    b.collect();
    assert_eq!(b.lines(1), accepted("slow", 0));
}

#[test]
fn a_connection_that_does_not_join_in_time_is_closed() {
    let mut b = Bench::new(config());
    b.connect(1, "10.0.0.1");
    assert_eq!(b.core.poll_timeout(), Some(b.now + Duration::from_secs(10)));
    b.advance(Duration::from_secs(9));
    assert!(!b.was_closed(1));
    b.advance(Duration::from_secs(1));
    assert!(b.was_closed(1));
    assert_eq!(b.core.connection_count(), 0);
}

#[test]
fn an_unfinished_line_of_a_joined_player_times_out_and_frees_the_slot() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "watcher");
    b.join(2, "10.0.0.2", "stall");
    b.lines(1);
    b.advance(Duration::from_secs(60));
    assert!(
        !b.was_closed(2),
        "a joined player may stay silent (idle timeout off)"
    );
    b.core.receive(b.now, 2, b"my new na");
    assert_eq!(b.core.poll_timeout(), Some(b.now + Duration::from_secs(10)));
    b.advance(Duration::from_secs(10));
    assert!(b.was_closed(2));
    assert_eq!(b.lines(1), vec!["remove ip: 10.0.0.2"]);
    assert_eq!(b.core.players().count(), 1);
}

#[test]
fn idle_timeout_removes_silent_players_when_configured() {
    let mut cfg = config();
    cfg.idle_timeout = Duration::from_secs(30);
    let mut b = Bench::new(cfg);
    b.join(1, "10.0.0.1", "chatty");
    b.join(2, "10.0.0.2", "quiet");
    b.lines(1);
    b.advance(Duration::from_secs(20));
    b.send(1, "my new name: chatty2");
    b.advance(Duration::from_secs(10));
    assert!(b.was_closed(2));
    assert!(!b.was_closed(1));
    assert_eq!(b.lines(1), vec!["new name accepted", "remove ip: 10.0.0.2"]);
    let counters: std::collections::HashMap<_, _> = b.core.counters().into_iter().collect();
    assert_eq!(counters["idle_timeouts"], 1);
}

#[test]
fn connection_limits_per_address_and_in_total() {
    let mut cfg = config();
    cfg.max_per_address = 2;
    cfg.max_connections = 3;
    let mut b = Bench::new(cfg);
    let peer = |ip: &str, port| SocketAddr::new(ip.parse::<IpAddr>().unwrap(), port);
    let now = b.now;
    assert!(b.core.accept(now, 1, peer("10.0.0.1", 1)).is_ok());
    assert!(b.core.accept(now, 2, peer("::ffff:10.0.0.1", 2)).is_ok());
    let refused = b.core.accept(now, 3, peer("10.0.0.1", 3)).unwrap_err();
    assert!(refused.contains("10.0.0.1"), "{refused}");
    assert!(b.core.accept(now, 4, peer("10.0.0.2", 4)).is_ok());
    assert!(b
        .core
        .accept(now, 5, peer("10.0.0.3", 5))
        .unwrap_err()
        .contains("too many"));
    b.core.closed(now, 1);
    assert!(b.core.accept(now, 6, peer("10.0.0.3", 6)).is_ok());
    let counters: std::collections::HashMap<_, _> = b.core.counters().into_iter().collect();
    assert_eq!(counters["connections_refused"], 2);
}

#[test]
fn every_slot_fills_from_one_address_with_the_default_limits() {
    // With the default connection limits, 16 players from one address (behind one NAT
    // address) all get a slot, and a 17th hears `server full`, not a silent close.
    let defaults = SlotServerConfig::default();
    let mut b = Bench::new(SlotServerConfig {
        max_per_address: defaults.max_per_address,
        max_connections: defaults.max_connections,
        ..config()
    });
    for slot in 0..16u8 {
        let conn = ConnId::from(slot) + 1;
        let lines = b.join(conn, "127.0.0.1", &format!("p{slot}"));
        assert_eq!(
            lines[..5],
            accepted(&format!("p{slot}"), slot)[..],
            "{lines:?}"
        );
    }
    assert_eq!(b.join(17, "127.0.0.1", "p16"), vec!["server full"]);
}

#[test]
fn banned_address_gets_the_banned_reply_to_its_first_line_and_is_closed() {
    let (bans, _) = BanList::parse("10.9.0.0/16\n");
    let mut b = Bench::with_bans(config(), bans);
    b.join(1, "10.0.0.1", "ok");
    b.connect(2, "10.9.3.4");
    b.send(2, "remove me");
    assert_eq!(b.lines(2), vec!["you're banned from this server"]);
    assert!(b.was_closed(2));
    assert!(b.lines(1).is_empty());
}

#[test]
fn ban_file_reload_bans_and_unbans_without_restart() {
    let dir = std::env::temp_dir().join(format!("parsec-core-bans-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bans.txt");
    std::fs::write(&path, "# nobody yet\n").unwrap();
    let mut b = Bench::with_bans(config(), BanList::load(&path).unwrap());
    b.core.handle_timeout(b.now);
    b.join(1, "10.0.0.1", "first");
    b.join(2, "10.0.0.2", "victim");
    b.lines(1);
    std::fs::write(&path, "10.0.0.2 # misbehaved\n").unwrap();
    // The periodic check (every 2 s) notices the change and closes the banned player.
    b.advance(Duration::from_secs(2));
    assert_eq!(b.lines(2), vec!["you're banned from this server"]);
    assert!(b.was_closed(2));
    assert_eq!(b.lines(1), vec!["remove ip: 10.0.0.2"]);
    b.connect(3, "10.0.0.2");
    b.send(3, "version: 1.0 join me: victim os: x");
    assert_eq!(b.lines(3), vec!["you're banned from this server"]);
    std::fs::write(&path, "").unwrap();
    // A new connection checks the file at once.
    let mut expected = accepted("victim", 1);
    expected.push("add ip: 10.0.0.1 name: first in 0".into());
    assert_eq!(b.join(4, "10.0.0.2", "victim"), expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dropped_connection_frees_its_slot_and_the_others_are_told() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "stays");
    b.join(2, "10.0.0.2", "drops");
    b.lines(1);
    b.roster();
    b.core.closed(b.now, 2);
    b.collect();
    assert_eq!(b.lines(1), vec!["remove ip: 10.0.0.2"]);
    assert!(matches!(
        b.roster().as_slice(),
        [RosterChange::Left { slot: 1, .. }]
    ));
    assert!(b.actions.contains(&ServerAction::ListChanged));
    b.core.closed(b.now, 2);
    b.collect();
    assert!(b.lines(1).is_empty(), "closing twice tells nobody twice");
}

#[test]
fn remove_slot_closes_the_player_and_tells_the_others() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "a");
    b.join(2, "10.0.0.2", "b");
    b.lines(1);
    b.core.remove_slot(b.now, 1, "no alive packets");
    b.collect();
    assert!(b.was_closed(2));
    assert_eq!(b.lines(1), vec!["remove ip: 10.0.0.2"]);
    b.core.remove_slot(b.now, 1, "again");
    b.core.remove_slot(b.now, 200, "no such slot");
    b.collect();
    assert!(b.lines(1).is_empty());
}

#[test]
fn roster_changes_describe_joins_renames_and_leaves() {
    let mut b = Bench::new(config());
    b.connect(1, "10.0.0.1");
    b.send(1, "version: 1.0 join me: a os: x port: 7000 token: 12");
    b.send(1, "my new name: b");
    b.send(1, "remove me");
    let roster = b.roster();
    assert_eq!(roster.len(), 3);
    let RosterChange::Joined(record) = &roster[0] else {
        panic!("{roster:?}");
    };
    assert_eq!((record.slot, record.game_port, record.token), (0, 7000, 12));
    assert!(record.extended);
    assert_eq!(
        roster[1],
        RosterChange::Renamed {
            slot: 0,
            name: "b".into()
        }
    );
    assert!(matches!(roster[2], RosterChange::Left { slot: 0, .. }));
}

#[test]
fn shutdown_closes_everyone_and_empties_the_list() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "a");
    b.connect(2, "10.0.0.2");
    b.roster();
    b.core.shutdown("stopping");
    b.collect();
    assert!(b.was_closed(1));
    assert!(b.was_closed(2));
    assert_eq!(b.core.players().count(), 0);
    assert_eq!(b.core.connection_count(), 0);
    assert!(matches!(
        b.roster().as_slice(),
        [RosterChange::Left { slot: 0, .. }]
    ));
}

#[test]
fn a_flood_of_garbage_does_not_disturb_a_well_behaved_client() {
    let mut b = Bench::new(config());
    b.join(1, "10.0.0.1", "good");
    b.connect(2, "10.0.0.66");
    for i in 0..1000u32 {
        let junk: Vec<u8> = (0..64).map(|j| (i.wrapping_mul(31) + j) as u8).collect();
        b.core.receive(b.now, 2, &junk);
    }
    b.collect();
    b.send(1, "my new name: fine");
    assert_eq!(b.lines(1), vec!["new name accepted"]);
    b.join(3, "10.0.0.3", "newcomer");
    assert_eq!(b.lines(1), vec!["add ip: 10.0.0.3 name: newcomer in 1"]);
}

#[test]
fn invalid_settings_are_reported_by_validate() {
    let mut cfg = config();
    assert!(cfg.validate().is_ok());
    cfg.max_players = 17;
    assert!(cfg.validate().unwrap_err().message.contains("max players"));
    cfg.max_players = 16;
    cfg.server_name = "x".repeat(32);
    assert!(cfg.validate().is_err());
    cfg.server_name = "ok".into();
    cfg.messages[2] = "a\nb".into();
    assert!(cfg.validate().is_err());
}

#[test]
fn a_player_the_relay_follows_to_a_new_port_is_named_there_in_the_extended_lines() {
    let mut b = Bench::new(config());
    b.connect(1, "127.0.0.1");
    b.send(
        1,
        "version: 1.0 join me: ext os: linux port: 7001 token: 99",
    );
    b.lines(1);
    b.join(2, "127.0.0.1", "plain");
    b.connect(3, "127.0.0.1");
    b.send(
        3,
        "version: 1.0 join me: ext2 os: linux port: 7003 token: 5",
    );
    b.lines(1);
    b.lines(2);
    b.lines(3);
    // The relay now hears ext2 (slot 2) on port 7100.
    b.core.player_moved(2, "127.0.0.1:7100".parse().unwrap());
    b.collect();
    assert_eq!(
        b.lines(1),
        vec!["add ip: 127.0.0.1 name: ext2 in 2 port: 7100 token: 5"],
        "an extended client is told where ext2 plays now"
    );
    assert!(
        b.lines(2).is_empty(),
        "a design client keeps the join address"
    );
    assert!(b.lines(3).is_empty(), "the mover itself is not told");
    // The same address again says nothing.
    b.core.player_moved(2, "127.0.0.1:7100".parse().unwrap());
    b.collect();
    assert!(b.lines(1).is_empty());
    // A newcomer learns the new address; the later lines name it there.
    b.connect(4, "127.0.0.1");
    b.send(
        4,
        "version: 1.0 join me: late os: linux port: 7004 token: 6",
    );
    assert!(b
        .lines(4)
        .contains(&"add ip: 127.0.0.1 name: ext2 in 2 port: 7100 token: 5".to_string()));
    b.send(3, "my new name: renamed");
    assert_eq!(
        b.lines(1),
        vec![
            "add ip: 127.0.0.1 name: late in 3 port: 7004 token: 6",
            "name ip: 127.0.0.1 name: renamed port: 7100"
        ]
    );
    assert_eq!(
        b.lines(2),
        vec![
            "add ip: 127.0.0.1 name: late in 3",
            "name ip: 127.0.0.1 name: renamed"
        ]
    );
    b.send(3, "remove me");
    assert_eq!(b.lines(1), vec!["remove ip: 127.0.0.1 port: 7100"]);
    assert_eq!(b.lines(2), vec!["remove ip: 127.0.0.1"]);
}
