//! `status`'s per-second figures ("packets sent N (x/s) accepted M (y/s)") are recent rates of
//! the current game (about the last 5 s, see `session::recent`), not the session's count divided
//! by the process's uptime: after idle time before connecting they are the game's rate, after a
//! burst and then quiet they fall, and after `disconnect` and `connect` they are the new game's.
//! Two peers over the real UDP backend on loopback, driven in virtual time (each frame is 1/60 s
//! later), so the figures do not depend on how fast the machine runs; bounds are loose.

use std::time::{Duration, Instant};

use net_core::rmev::ShipState;
use net_core::session::GameEvent;
use net_core::Subsystem;

#[path = "support/loopback.rs"]
mod loopback;
use loopback::loopback_game;

const FRAME: Duration = Duration::from_nanos(1_000_000_000 / 60);

struct Game {
    subs: [Subsystem; 2],
    addrs: [String; 2],
    now: Instant,
    ship: f32,
}

impl Game {
    fn exec(&mut self, i: usize, line: &str) -> String {
        let reply = self.subs[i].console_exec(line, self.now);
        assert!(reply.result.is_ok(), "{line}: {}", reply.output);
        reply.output
    }

    /// Run `frames` virtual frames; with `moving`, both ships move every frame (so their state
    /// goes out at the send frequency).
    fn run(&mut self, frames: usize, moving: bool) {
        for frame in 0..frames {
            self.now += FRAME;
            if moving {
                self.ship += 1.0;
                let state = ShipState {
                    pos: [self.ship, 0.0, 0.0],
                    ..Default::default()
                };
                for sub in &mut self.subs {
                    sub.set_local_state(state).unwrap();
                }
            }
            for sub in &mut self.subs {
                sub.maintain(self.now);
                while sub.poll_event().is_some() {}
            }
            if frame.is_multiple_of(4) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Connect both to each other and join (within 20 virtual seconds).
    fn connect(&mut self) {
        let [a, b] = self.addrs.clone();
        self.exec(0, &format!("connect {b}"));
        self.exec(1, &format!("connect {a}"));
        let mut connected = [false, false];
        for _ in 0..1200 {
            self.now += FRAME;
            for (i, sub) in self.subs.iter_mut().enumerate() {
                sub.maintain(self.now);
                while let Some(event) = sub.poll_event() {
                    connected[i] |= matches!(event, GameEvent::Connected { .. });
                }
            }
            if connected == [true, true] {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(connected, [true, true], "both connect");
        self.exec(0, "join");
        self.exec(1, "join");
    }

    /// (packets sent per second, accepted per second) from `status`'s game line.
    fn rates(&mut self, i: usize) -> (f64, f64, String) {
        let status = self.exec(i, "status");
        let line = status
            .lines()
            .find(|l| l.starts_with("game: slot"))
            .unwrap_or_else(|| panic!("no game line: {status}"))
            .to_string();
        let rate_after = |word: &str| -> f64 {
            let rest =
                &line[line.find(word).unwrap_or_else(|| panic!("{word}: {line}")) + word.len()..];
            let open = rest.find('(').unwrap();
            let close = rest.find("/s)").unwrap();
            rest[open + 1..close].parse().unwrap()
        };
        eprintln!("peer {i}: {line}");
        (rate_after("packets sent "), rate_after(" accepted "), line)
    }
}

#[test]
fn status_rates_are_recent_and_of_the_current_game() {
    let (a, a_addr) = loopback_game("ada");
    let (b, b_addr) = loopback_game("bo");
    let mut game = Game {
        subs: [a, b],
        addrs: [a_addr, b_addr],
        // The processes were idle for half a minute before the game.
        now: Instant::now() + Duration::from_secs(30),
        ship: 0.0,
    };
    game.connect();

    // Ships moving for 6 s: states go out at the send frequency (20 Hz) to the one other player.
    game.run(360, true);
    for i in 0..2 {
        let (sent, accepted, line) = game.rates(i);
        assert!(
            (12.0..=45.0).contains(&sent),
            "peer {i} while moving: {line}"
        );
        assert!(
            (12.0..=45.0).contains(&accepted),
            "peer {i} while moving: {line}"
        );
    }

    // Quiet for 8 s (ships still; only keep-alives, every 0.5 s): the figures fall.
    game.run(480, false);
    for i in 0..2 {
        let (sent, accepted, line) = game.rates(i);
        assert!(sent < 6.0, "peer {i} after quiet: {line}");
        assert!(accepted < 6.0, "peer {i} after quiet: {line}");
    }

    // Leave and play again: the figures are the new game's, not an average since the start.
    game.exec(0, "disconnect");
    game.exec(1, "disconnect");
    game.run(120, false);
    game.connect();
    game.run(360, true);
    for i in 0..2 {
        let (sent, accepted, line) = game.rates(i);
        assert!(
            (12.0..=45.0).contains(&sent),
            "peer {i} in the new game: {line}"
        );
        assert!(
            (12.0..=45.0).contains(&accepted),
            "peer {i} in the new game: {line}"
        );
        // The totals stay this game's counts.
        assert!(line.contains("packets sent "), "{line}");
    }
}
