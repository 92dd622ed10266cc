//! The registration machine (`Registration`) wired to a real `MasterCore` without sockets, with
//! virtual time: join, players updates on changes, the keep-alive that outlives the
//! masterserver's idle timeout, `remove me`, reconnecting with exponential backoff when the
//! masterserver goes away, refuses or stops answering.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use net_core::master::protocol::{JoinRequest, ServerKind};
use net_core::master::{
    MasterConfig, MasterCore, Registration, RegistrationCommand, RegistrationConfig,
    RegistrationEvent, RegistrationState,
};
use net_core::server::ServerAction;

const CONN: u64 = 7;

fn join_request() -> JoinRequest {
    JoinRequest {
        version_major: 1,
        version_minor: 0,
        name: "Gamma".into(),
        os: "linux".into(),
        max_players: 16,
        url: "http://g.example/".into(),
        kind: ServerKind::GameServer,
        port: 6581,
        udp_port: 6522,
    }
}

/// A registration and a masterserver core joined by a perfect, instant "connection".
struct Sim {
    now: Instant,
    reg: Registration,
    master: MasterCore,
    /// The masterserver accepts connections.
    master_up: bool,
    /// The masterserver reads (false: it is hung).
    master_reads: bool,
    connected: bool,
    connects: u32,
    events: Vec<RegistrationEvent>,
    sent: Vec<String>,
}

impl Sim {
    fn new(master: MasterConfig) -> Sim {
        let now = Instant::now();
        let mut config = RegistrationConfig::new("master:6502", join_request());
        config.keepalive = Duration::from_secs(60);
        Sim {
            now,
            reg: Registration::new(config, now),
            master: MasterCore::new(master).with_wall_clock(now, SystemTime::UNIX_EPOCH),
            master_up: true,
            master_reads: true,
            connected: false,
            connects: 0,
            events: Vec::new(),
            sent: Vec::new(),
        }
    }

    /// Exchange everything until both sides are quiet.
    fn settle(&mut self) {
        for _ in 0..100 {
            let mut moved = false;
            while let Some(cmd) = self.reg.poll_command() {
                moved = true;
                match cmd {
                    RegistrationCommand::Connect => {
                        self.connects += 1;
                        let peer: SocketAddr = "192.0.2.1:40000".parse().unwrap();
                        if self.master_up
                            && self
                                .master
                                .accept(self.now, CONN + u64::from(self.connects), peer)
                                .is_ok()
                        {
                            self.connected = true;
                            self.reg.handle_connected(self.now);
                        } else {
                            self.reg.handle_closed(self.now, "connection refused");
                        }
                    }
                    RegistrationCommand::SendLine(line) => {
                        self.sent.push(line.clone());
                        if self.connected && self.master_reads {
                            let conn = CONN + u64::from(self.connects);
                            self.master
                                .receive(self.now, conn, format!("{line}\n").as_bytes());
                        }
                    }
                    RegistrationCommand::Close => {
                        if self.connected {
                            self.master
                                .closed(self.now, CONN + u64::from(self.connects));
                        }
                        self.connected = false;
                    }
                }
            }
            while let Some(action) = self.master.poll_action() {
                let ours = CONN + u64::from(self.connects);
                if let ServerAction::SendLine { line, conn } = action {
                    moved = true;
                    if self.connected && conn == ours {
                        self.reg.handle_line(self.now, &line);
                    }
                }
            }
            while let Some(e) = self.reg.poll_event() {
                self.events.push(e);
            }
            if !moved {
                return;
            }
        }
        panic!("no quiet state");
    }

    fn advance(&mut self, by: Duration) {
        let end = self.now + by;
        loop {
            let next = [self.reg.poll_timeout(), self.master.poll_timeout()]
                .into_iter()
                .flatten()
                .filter(|t| *t <= end)
                .min();
            let Some(t) = next else { break };
            self.now = t.max(self.now);
            if self.reg.poll_timeout().is_some_and(|t| t <= self.now) {
                self.reg.handle_timeout(self.now);
            }
            if self.master.poll_timeout().is_some_and(|t| t <= self.now) {
                self.master.handle_timeout(self.now);
            }
            self.settle();
        }
        self.now = end;
        self.settle();
    }

    fn listed(&self) -> Vec<(u16, u16)> {
        self.master
            .servers()
            .map(|e| (e.server.players, e.server.max_players))
            .collect()
    }

    /// Kill the masterserver's side of the connection (it crashed or restarted).
    fn master_drops_connection(&mut self) {
        self.master
            .closed(self.now, CONN + u64::from(self.connects));
        self.connected = false;
        self.reg.handle_closed(self.now, "closed by the other side");
        self.settle();
    }
}

#[test]
fn joins_updates_players_and_leaves() {
    let mut sim = Sim::new(MasterConfig::default());
    sim.settle();
    assert_eq!(sim.reg.state(), RegistrationState::Registered);
    assert_eq!(sim.events, [RegistrationEvent::Registered]);
    assert_eq!(
        sim.sent,
        ["version: 1.0 join me: Gamma os: linux maxplayers: 16 url: http://g.example/ kind: gameserver port: 6581 udp: 6522"]
    );
    assert_eq!(sim.listed(), [(0, 16)]);
    sim.reg.set_players(sim.now, 3, 16);
    sim.settle();
    sim.reg.set_players(sim.now, 3, 16); // unchanged: nothing sent
    sim.settle();
    assert_eq!(sim.sent.last().unwrap(), "players: 3 max: 16");
    assert_eq!(sim.sent.len(), 2);
    assert_eq!(sim.listed(), [(3, 16)]);
    sim.reg.leave(sim.now);
    sim.settle();
    assert_eq!(sim.sent.last().unwrap(), "remove me");
    assert!(sim.reg.is_finished());
    assert_eq!(
        sim.events.last(),
        Some(&RegistrationEvent::Left { confirmed: true })
    );
    assert!(sim.listed().is_empty());
    assert!(!sim.connected);
}

#[test]
fn the_keepalive_outlives_the_masterservers_idle_timeout() {
    let mut sim = Sim::new(MasterConfig::default()); // idle timeout 120 s
    sim.settle();
    sim.advance(Duration::from_secs(600));
    assert_eq!(
        sim.listed(),
        [(0, 16)],
        "still listed after 10 quiet minutes"
    );
    let keepalives = sim
        .sent
        .iter()
        .filter(|l| l.starts_with("players:"))
        .count();
    assert_eq!(keepalives, 10, "one players line a minute");
    assert_eq!(sim.connects, 1);
}

#[test]
fn reconnects_with_exponential_backoff_and_is_listed_again() {
    let mut sim = Sim::new(MasterConfig::default());
    sim.settle();
    sim.reg.set_players(sim.now, 5, 16);
    sim.settle();
    sim.master_up = false;
    sim.master_drops_connection();
    assert!(sim.listed().is_empty());
    let down_at = sim.now;
    // Tries at 1, 1+2, 1+2+4, 1+2+4+8 s fail.
    sim.advance(Duration::from_millis(15_500));
    assert_eq!(sim.connects, 1 + 4);
    let waits: Vec<Duration> = sim
        .events
        .iter()
        .filter_map(|e| match e {
            RegistrationEvent::Lost { retry_in, .. } => Some(*retry_in),
            _ => None,
        })
        .collect();
    assert_eq!(
        waits,
        [1, 2, 4, 8, 16].map(Duration::from_secs),
        "doubling waits"
    );
    sim.master_up = true;
    sim.advance(Duration::from_secs(16));
    assert_eq!(sim.reg.state(), RegistrationState::Registered);
    assert_eq!(
        sim.listed(),
        [(5, 16)],
        "the player count is told again after the join"
    );
    assert!(sim.now - down_at <= Duration::from_secs(32));
    // A later loss starts again at the shortest wait.
    sim.master_drops_connection();
    assert_eq!(
        sim.events.last(),
        Some(&RegistrationEvent::Lost {
            reason: "closed by the other side".into(),
            retry_in: Duration::from_secs(1)
        })
    );
}

#[test]
fn a_refusal_is_retried_later() {
    let mut sim = Sim::new(MasterConfig {
        max_servers: 1,
        ..MasterConfig::default()
    });
    // Someone else holds the only place.
    sim.master
        .accept(sim.now, 1, "192.0.2.9:1".parse().unwrap())
        .unwrap();
    sim.master.receive(
        sim.now,
        1,
        b"version: 1.0 join me: other os: x maxplayers: 2 url: u\n",
    );
    sim.settle();
    assert!(sim.events.contains(&RegistrationEvent::Refused {
        request: "join",
        reply: "masterserver full".into()
    }));
    assert!(matches!(sim.reg.state(), RegistrationState::Waiting { .. }));
    sim.master.closed(sim.now, 1);
    sim.advance(Duration::from_secs(2));
    assert_eq!(sim.reg.state(), RegistrationState::Registered);
}

#[test]
fn a_masterserver_that_stops_answering_is_given_up_and_retried() {
    let mut sim = Sim::new(MasterConfig::default());
    sim.settle();
    sim.master_reads = false; // hung: takes lines, answers nothing
    sim.reg.set_players(sim.now, 1, 16);
    sim.settle();
    sim.advance(Duration::from_secs(29));
    assert_eq!(sim.reg.state(), RegistrationState::Registered);
    sim.master_reads = true;
    sim.advance(Duration::from_secs(2));
    assert!(
        sim.events
            .iter()
            .any(|e| matches!(e, RegistrationEvent::Lost { reason, .. } if reason.starts_with("no reply"))),
        "{:?}",
        sim.events
    );
    sim.advance(Duration::from_secs(2));
    assert_eq!(sim.reg.state(), RegistrationState::Registered);
    assert_eq!(sim.listed(), [(1, 16)]);
}

#[test]
fn leaving_before_connecting_or_without_a_reply_finishes() {
    let mut sim = Sim::new(MasterConfig::default());
    sim.master_up = false;
    sim.settle();
    sim.reg.leave(sim.now);
    sim.settle();
    assert!(sim.reg.is_finished());
    assert_eq!(sim.reg.poll_timeout(), None);

    let mut sim = Sim::new(MasterConfig::default());
    sim.settle();
    sim.master_reads = false;
    sim.reg.leave(sim.now);
    sim.settle();
    assert!(!sim.reg.is_finished());
    sim.advance(Duration::from_secs(2));
    assert!(sim.reg.is_finished());
    assert_eq!(
        sim.events.last(),
        Some(&RegistrationEvent::Left { confirmed: false })
    );
}
