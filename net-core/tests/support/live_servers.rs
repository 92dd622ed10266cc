//! Real slotservers and gameservers (the runtime in a thread, on loopback) and real clients
//! (subsystems over the UDP backend, driven through the console as a game would), shared by the
//! end-to-end client-server tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use net_core::relay::service::RelayService;
use net_core::relay::{RelayConfig, RelayCore};
use net_core::rmev::{RemoteEvent, ShipState};
use net_core::server::runtime::{run, BoundAddrs, RunSummary, UdpService};
use net_core::server::{BanList, RuntimeConfig, SlotServerConfig, SlotServerCore};
use net_core::session::GameEvent;
use net_core::Subsystem;

/// A server running in a thread; stopped on drop.
pub struct Server {
    pub addrs: BoundAddrs,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<net_core::NetResult<RunSummary>>>,
}

impl Server {
    pub fn start(kind: &'static str, relay: Option<RelayConfig>) -> Server {
        let config = SlotServerConfig {
            server_name: "TestServer".into(),
            ..SlotServerConfig::default()
        };
        let udp: Option<Box<dyn UdpService>> = relay.map(|r| {
            Box::new(RelayService::new(RelayCore::new(RelayConfig {
                server_token: config.server_token,
                ..r
            }))) as Box<dyn UdpService>
        });
        let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let runtime = RuntimeConfig {
            udp: udp.is_some().then_some(loopback),
            ..RuntimeConfig::new(kind, loopback)
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let core = SlotServerCore::new(config, BanList::empty());
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            run(runtime, core, udp, thread_stop, move |addrs| {
                let _ = tx.send(addrs);
            })
        });
        let addrs = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("server starts");
        Server {
            addrs,
            stop,
            thread: Some(thread),
        }
    }

    pub fn finish(mut self) -> RunSummary {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub fn console(sub: &mut Subsystem, line: &str) -> String {
    let reply = sub.console_exec(line, Instant::now());
    assert!(reply.result.is_ok(), "{line}: {}", reply.output);
    reply.output
}

/// A client on loopback connected to `server` with `protocol` (`name` "": it never sets one).
pub fn client(name: &str, protocol: &str, server: SocketAddr) -> Subsystem {
    let mut sub = Subsystem::new();
    for line in [
        "net.udp.bind 127.0.0.1".to_string(),
        "net.udp.ipv6 0".to_string(),
        "net.port 0".to_string(),
        "net.api udp".to_string(),
        format!("net.subsys {protocol}"),
        format!("name {name}"),
        format!("connect {server}"),
    ] {
        if line != "name " {
            console(&mut sub, &line);
        }
    }
    sub
}

pub struct Player {
    pub sub: Subsystem,
    pub events: Vec<GameEvent>,
}

impl Player {
    pub fn slot(&self) -> Option<u8> {
        self.events.iter().find_map(|e| match e {
            GameEvent::Connected { slot } => Some(*slot),
            _ => None,
        })
    }

    /// The slot of the latest connection.
    pub fn slot_now(&self) -> Option<u8> {
        self.events.iter().rev().find_map(|e| match e {
            GameEvent::Connected { slot } => Some(*slot),
            _ => None,
        })
    }

    pub fn heard(&self, text: &str) -> bool {
        self.events.iter().any(|e| matches!(e, GameEvent::Remote { event: RemoteEvent::SendText(t), .. } if t.to_string() == text))
    }
}

pub fn run_frames(
    players: &mut [Player],
    limit: Duration,
    mut done: impl FnMut(&[Player]) -> bool,
) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        for p in players.iter_mut() {
            p.sub.maintain(Instant::now());
            while let Some(e) = p.sub.poll_event() {
                p.events.push(e);
            }
        }
        if done(players) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    false
}

pub fn ship_at(x: f32, marker: u8) -> ShipState {
    let mut game = [0u8; 32];
    game[0] = marker;
    ShipState {
        pos: [x, 0.0, 0.0],
        game,
        ..ShipState::default()
    }
}

/// A numbered reliable custom event (type 77).
pub fn numbered(n: u32) -> RemoteEvent {
    RemoteEvent::Custom {
        custom_type: 77,
        data: net_core::rmev::CustomData::new(&n.to_le_bytes()).expect("small"),
        reliable: true,
    }
}

/// The numbers of the type-77 events `player` received, in order.
pub fn numbers_heard(player: &Player) -> Vec<u32> {
    numbers_in(&player.events)
}

/// The numbers of the type-77 events among `events`, in order.
pub fn numbers_in(events: &[GameEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            GameEvent::Remote {
                event:
                    RemoteEvent::Custom {
                        custom_type: 77,
                        data,
                        ..
                    },
                ..
            } => Some(u32::from_le_bytes(data.as_bytes().try_into().ok()?)),
            _ => None,
        })
        .collect()
}

/// What the staying player heard of the leaving one: its numbers, and how many of them came
/// after its PLAYER_DISCONNECTED (None: no departure seen).
pub fn heard_before_departure(stayer: &Player, leaver_slot: u8) -> (Vec<u32>, Option<usize>) {
    let numbers = numbers_heard(stayer);
    let departure = stayer.events.iter().position(
        |e| matches!(e, GameEvent::PlayerDisconnected { slot, .. } if *slot == leaver_slot),
    );
    let after = departure.map(|at| numbers_in(&stayer.events[at..]).len());
    (numbers, after)
}

/// A gameserver with default settings and two clients that hold slots and see each other.
pub fn two_seated_players(names: [&str; 2]) -> (Server, Vec<Player>) {
    two_seated_players_on("gameserver", names)
}

/// A `protocol` server (slotserver or gameserver, default settings) and two clients that hold
/// slots and see each other.
pub fn two_seated_players_on(protocol: &'static str, names: [&str; 2]) -> (Server, Vec<Player>) {
    let server = server_for(protocol);
    let mut players: Vec<Player> = names
        .iter()
        .map(|n| Player {
            sub: client(n, protocol, server.addrs.tcp),
            events: Vec::new(),
        })
        .collect();
    until_seated(&mut players, Duration::from_secs(10));
    (server, players)
}

/// Run frames until every player holds a slot and has seen another player connect.
#[track_caller]
pub fn until_seated(players: &mut [Player], limit: Duration) {
    assert!(
        run_frames(players, limit, |ps| ps.iter().all(|p| p.slot().is_some()
            && p.events
                .iter()
                .any(|e| matches!(e, GameEvent::PlayerConnected { .. })))),
        "not every player was seated and saw another"
    );
}

/// A slotserver, or a gameserver with default relay settings.
pub fn server_for(protocol: &'static str) -> Server {
    let relay = (protocol == "gameserver").then(RelayConfig::default);
    Server::start(protocol, relay)
}
