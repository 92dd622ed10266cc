//! One client of the soak test: a `peer_game --control` kept running for the whole soak and
//! driven through its cycle by console lines on stdin: connect (it joins by itself), send the
//! numbered series, sometimes unjoin and join again, stop the series, leave (`disconnect`, or
//! `net.subsys peer`, which disconnects first), rest, and connect again (back with
//! `net.subsys gameserver` after a switch). It records when the harness saw each of its stdout
//! lines and when it was told to leave, for the delivery rule of [`super::delivery`].

use std::time::{Duration, Instant};

use crate::live::LiveGame;

use super::rng::Rng;

/// How long a client stays seated before it starts to leave.
const SEATED_FOR: (Duration, Duration) = (Duration::from_secs(4), Duration::from_secs(10));
/// How long it rests, disconnected, before it may connect again.
const REST_FOR: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(3));
/// How long it stays unjoined (still connected) before it joins again.
const UNJOINED_FOR: Duration = Duration::from_secs(1);
/// Between stopping its series and leaving: its last numbers reach everyone before it goes.
pub const QUIET_BEFORE_LEAVING: Duration = Duration::from_millis(2500);
/// The longest a connection attempt or a leave may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
const LEAVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Percentages: of seatings with an unjoin and join in the middle, of leaves by protocol switch.
const UNJOIN_PERCENT: u64 = 30;
const SWITCH_PERCENT: u64 = 35;

/// Where a client is in its cycle.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Told to connect; waiting for CONNECTED (or the refusal, an ERROR event).
    Connecting { since: Instant },
    /// Connected and joined, sending its series.
    Seated {
        leave_at: Instant,
        unjoin_at: Option<Instant>,
    },
    /// Connected but unjoined (series still on).
    Unjoined {
        rejoin_at: Instant,
        leave_at: Instant,
    },
    /// Series off, waiting to leave.
    Quieting { leave_at: Instant, switch: bool },
    /// Told to disconnect (or switch protocol); waiting for DISCONNECTED.
    Leaving { since: Instant, switch: bool },
    /// Disconnected.
    Offline { ready_at: Instant },
}

/// What a client did, counted.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub connect_attempts: usize,
    /// CONNECTED events (each followed by the game's own join).
    pub joins: usize,
    /// Attempts the server refused (an ERROR event instead of CONNECTED).
    pub refused: usize,
    pub connect_timeouts: usize,
    pub unjoins: usize,
    pub rejoins: usize,
    /// Leaves by `disconnect`.
    pub disconnects: usize,
    /// Leaves by `net.subsys peer` (and back to `net.subsys gameserver` for the next connect).
    pub switches: usize,
}

/// One client of the soak.
pub struct SoakClient {
    pub game: LiveGame,
    phase: Phase,
    /// Stdout lines handled so far.
    cursor: usize,
    /// The last leave was a switch to the peer protocol.
    in_peer_mode: bool,
    /// (stdout line count, when the harness saw it): line `i` was printed at the latest at the
    /// time of the first entry whose count exceeds `i`.
    timeline: Vec<(usize, Instant)>,
    /// When the harness told it to leave (disconnect or switch), in order.
    pub leaves: Vec<Instant>,
    /// When the harness saw each of its CONNECTED events, in order.
    pub connected_at: Vec<Instant>,
    pub counts: Counts,
    /// What went wrong (an unexpected disconnection, a leave that did not finish).
    pub problems: Vec<String>,
    /// No new series after connecting (the run is winding down).
    pub winding_down: bool,
}

impl SoakClient {
    /// A client whose game was started with `--peer SERVER`, so it is connecting already.
    pub fn new(game: LiveGame, now: Instant) -> SoakClient {
        SoakClient {
            game,
            phase: Phase::Connecting { since: now },
            cursor: 0,
            in_peer_mode: false,
            timeline: Vec::new(),
            leaves: Vec::new(),
            connected_at: Vec::new(),
            counts: Counts {
                connect_attempts: 1,
                ..Counts::default()
            },
            problems: Vec::new(),
            winding_down: false,
        }
    }

    pub fn name(&self) -> &str {
        self.game.name()
    }

    /// Holds (or is about to hold) a slot on the server.
    pub fn occupies_slot(&self) -> bool {
        !matches!(self.phase, Phase::Offline { .. })
    }

    pub fn is_connecting(&self) -> bool {
        matches!(self.phase, Phase::Connecting { .. })
    }

    pub fn is_leaving(&self) -> bool {
        matches!(self.phase, Phase::Leaving { .. })
    }

    /// Offline and rested.
    pub fn ready_to_connect(&self, now: Instant) -> bool {
        matches!(self.phase, Phase::Offline { ready_at } if now >= ready_at)
    }

    /// The time by which stdout line `index` had been printed (None: not seen yet).
    pub fn seen_at(&self, index: usize) -> Option<Instant> {
        let at = self.timeline.partition_point(|(count, _)| *count <= index);
        self.timeline.get(at).map(|(_, when)| *when)
    }

    /// Tell it to connect to the gameserver at `server`.
    pub fn connect(&mut self, server: &str, now: Instant) {
        if self.in_peer_mode {
            self.game.send("net.subsys gameserver");
            self.in_peer_mode = false;
        }
        self.game.send(&format!("connect {server}"));
        self.counts.connect_attempts += 1;
        self.phase = Phase::Connecting { since: now };
    }

    /// Read what it printed since the last step and move it along its cycle.
    pub fn step(&mut self, now: Instant, rng: &mut Rng) {
        let lines = self.game.process.lines_from(self.cursor);
        if !lines.is_empty() {
            self.cursor += lines.len();
            self.timeline.push((self.cursor, now));
        }
        for line in &lines {
            if line.starts_with("EVENT type=CONNECTED ") {
                self.on_connected(now, rng);
            } else if line.starts_with("EVENT type=DISCONNECTED ") {
                self.on_disconnected(now, rng, line);
            } else if line.starts_with("EVENT type=ERROR ") {
                self.on_error(now, rng);
            }
        }
        self.on_time(now, rng);
    }

    fn on_connected(&mut self, now: Instant, rng: &mut Rng) {
        if let Phase::Connecting { .. } | Phase::Offline { .. } = self.phase {
            self.counts.joins += 1;
            self.connected_at.push(now);
            if self.winding_down {
                self.phase = Phase::Seated {
                    leave_at: now + Duration::from_secs(3600),
                    unjoin_at: None,
                };
                return;
            }
            self.game.send("@series on");
            let seated_for = rng.between(SEATED_FOR.0, SEATED_FOR.1);
            let unjoin_at = rng
                .chance(UNJOIN_PERCENT)
                .then(|| now + rng.between(Duration::from_secs(1), seated_for / 2));
            self.phase = Phase::Seated {
                leave_at: now + seated_for,
                unjoin_at,
            };
        }
    }

    fn on_disconnected(&mut self, now: Instant, rng: &mut Rng, line: &str) {
        match self.phase {
            Phase::Leaving { switch, .. } => {
                if switch {
                    self.counts.switches += 1;
                } else {
                    self.counts.disconnects += 1;
                }
            }
            // A late answer to a timed-out attempt; nothing to do.
            Phase::Offline { .. } | Phase::Connecting { .. } => return,
            _ => {
                self.problems
                    .push(format!("disconnected without being told to: {line}"));
                self.game.send("@series off");
            }
        }
        self.phase = Phase::Offline {
            ready_at: now + rng.between(REST_FOR.0, REST_FOR.1),
        };
    }

    fn on_error(&mut self, now: Instant, rng: &mut Rng) {
        if let Phase::Connecting { .. } = self.phase {
            self.counts.refused += 1;
            self.phase = Phase::Offline {
                ready_at: now + rng.between(REST_FOR.0, REST_FOR.1),
            };
        }
    }

    fn on_time(&mut self, now: Instant, rng: &mut Rng) {
        match self.phase {
            Phase::Connecting { since } if now >= since + CONNECT_TIMEOUT => {
                self.counts.connect_timeouts += 1;
                self.game.send("disconnect");
                self.phase = Phase::Offline {
                    ready_at: now + rng.between(REST_FOR.0, REST_FOR.1),
                };
            }
            Phase::Seated {
                unjoin_at: Some(at),
                leave_at,
            } if now >= at => {
                self.game.send("unjoin");
                self.counts.unjoins += 1;
                self.phase = Phase::Unjoined {
                    rejoin_at: now + UNJOINED_FOR,
                    leave_at,
                };
            }
            Phase::Seated { leave_at, .. } if now >= leave_at => self.start_leaving(now, rng),
            Phase::Unjoined {
                rejoin_at,
                leave_at,
            } if now >= rejoin_at => {
                self.game.send("join");
                self.counts.rejoins += 1;
                self.phase = Phase::Seated {
                    leave_at: leave_at.max(now + Duration::from_secs(1)),
                    unjoin_at: None,
                };
            }
            Phase::Quieting { leave_at, switch } if now >= leave_at => {
                self.leaves.push(now);
                self.game.send(if switch {
                    "net.subsys peer"
                } else {
                    "disconnect"
                });
                self.in_peer_mode = switch;
                self.phase = Phase::Leaving { since: now, switch };
            }
            Phase::Leaving { since, .. } if now >= since + LEAVE_TIMEOUT => {
                self.problems.push(format!(
                    "no DISCONNECTED within {LEAVE_TIMEOUT:?} of leaving"
                ));
                self.phase = Phase::Offline { ready_at: now };
            }
            _ => {}
        }
    }

    /// Stop the series and leave after [`QUIET_BEFORE_LEAVING`] (by protocol switch sometimes).
    fn start_leaving(&mut self, now: Instant, rng: &mut Rng) {
        self.game.send("@series off");
        self.phase = Phase::Quieting {
            leave_at: now + QUIET_BEFORE_LEAVING,
            switch: rng.chance(SWITCH_PERCENT),
        };
    }

    /// The game, to end it.
    pub fn into_game(self) -> LiveGame {
        self.game
    }

    /// At the end of the run: stop the series now and leave once quiet, if connected.
    pub fn wind_down(&mut self, now: Instant) {
        self.winding_down = true;
        self.game.send("@series off");
        match self.phase {
            Phase::Seated { .. } | Phase::Unjoined { .. } => {
                self.phase = Phase::Quieting {
                    leave_at: now + QUIET_BEFORE_LEAVING,
                    switch: false,
                };
            }
            Phase::Offline { .. } => {
                self.phase = Phase::Offline {
                    ready_at: now + Duration::from_secs(3600),
                }
            }
            _ => {}
        }
    }

    /// During the wind-down: a client that connected late leaves too.
    pub fn leave_if_seated(&mut self, now: Instant) {
        if let Phase::Seated { .. } = self.phase {
            self.phase = Phase::Quieting {
                leave_at: now,
                switch: false,
            };
        }
    }
}
