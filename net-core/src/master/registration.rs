//! `Registration`: a slot- or gameserver's registration with one masterserver (design section
//! 3.1, the server side) as a sans-IO state machine: join at start, `players: P max: M` on every
//! change and as a keep-alive, `remove me` at shutdown, and reconnecting with exponential
//! backoff whenever the masterserver goes away, refuses, or stops answering.
//!
//! Calling order, as in quinn-proto:
//! - inputs: [`handle_connected`](Registration::handle_connected),
//!   [`handle_line`](Registration::handle_line), [`handle_closed`](Registration::handle_closed)
//!   for the TCP connection; [`handle_timeout`](Registration::handle_timeout) once
//!   [`poll_timeout`](Registration::poll_timeout) has come;
//! - requests: [`set_players`](Registration::set_players), [`leave`](Registration::leave);
//! - outputs, drained after every input: [`poll_command`](Registration::poll_command) (connect,
//!   send a line, close) and [`poll_event`](Registration::poll_event) (for logs and tests);
//! - getters: [`state`](Registration::state), [`is_finished`](Registration::is_finished).
//!
//! Replies are matched to requests in order (the masterserver answers every line once). The
//! machine never touches a socket, never reads a clock and never blocks; deterministic with
//! virtual time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::protocol::{self as proto, JoinRequest};

/// What the registration is configured with.
#[derive(Clone, Debug)]
pub struct RegistrationConfig {
    /// The masterserver as `HOST:PORT` (for messages).
    pub master: String,
    /// The join line's fields (name, OS, max players, URL, kind, ports).
    pub join: JoinRequest,
    /// A `players:` line is sent at least this often while registered (a keep-alive, so the
    /// masterserver's idle timeout never removes a quiet server).
    pub keepalive: Duration,
    /// A reply that does not come within this long means the masterserver is gone.
    pub reply_timeout: Duration,
    /// A TCP connect that does not complete within this long is given up.
    pub connect_timeout: Duration,
    /// The first wait before connecting again; doubled after every failure.
    pub backoff_min: Duration,
    /// The longest wait before connecting again.
    pub backoff_max: Duration,
    /// How long `leave` waits for `removing you` before closing anyway.
    pub leave_timeout: Duration,
}

impl RegistrationConfig {
    /// The defaults for `join`: keep-alive 60 s, reply timeout 30 s, connect timeout 10 s,
    /// backoff 1 s doubling to 60 s, leave timeout 2 s.
    pub fn new(master: &str, join: JoinRequest) -> RegistrationConfig {
        RegistrationConfig {
            master: master.to_string(),
            join,
            keepalive: Duration::from_secs(60),
            reply_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            leave_timeout: Duration::from_secs(2),
        }
    }
}

/// What the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistrationCommand {
    /// Open a TCP connection to the masterserver (report with `handle_connected` or
    /// `handle_closed`).
    Connect,
    /// Send one line (the driver appends "\n").
    SendLine(String),
    /// Close the connection (after sending what is queued).
    Close,
}

/// What happened, for logs and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistrationEvent {
    /// `join accepted`: listed.
    Registered,
    /// The masterserver refused a line (its reply, e.g. `masterserver full`).
    Refused {
        request: &'static str,
        reply: String,
    },
    /// The connection is gone or failed; the next try is after `retry_in`.
    Lost { reason: String, retry_in: Duration },
    /// `leave` finished (`removing you` arrived, or it gave up waiting).
    Left { confirmed: bool },
}

/// Where the registration is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegistrationState {
    /// Not connected; connects at `until`.
    Waiting { until: Instant },
    /// Connect asked for, not yet confirmed.
    Connecting { since: Instant },
    /// Join sent, its reply not yet here.
    Joining,
    /// Listed by the masterserver.
    Registered,
    /// `remove me` sent, waiting for the reply.
    Leaving { deadline: Instant },
    /// Done: left, or never to connect again.
    Finished,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sent {
    Join,
    Players,
    RemoveMe,
}

impl Sent {
    fn name(self) -> &'static str {
        match self {
            Sent::Join => "join",
            Sent::Players => "players",
            Sent::RemoveMe => "remove me",
        }
    }
}

/// One registration (see the module documentation for the calling order).
#[derive(Debug)]
pub struct Registration {
    config: RegistrationConfig,
    state: RegistrationState,
    /// Lines sent and not yet answered, oldest first, with when they were sent.
    awaiting: VecDeque<(Sent, Instant)>,
    /// The current player count and maximum (what the masterserver should know).
    players: (u16, u16),
    /// What the masterserver was last told, while registered.
    told: Option<(u16, u16)>,
    last_players_sent: Option<Instant>,
    backoff: Duration,
    commands: VecDeque<RegistrationCommand>,
    events: VecDeque<RegistrationEvent>,
}

impl Registration {
    /// A registration that connects at once (its first command is `Connect`).
    pub fn new(config: RegistrationConfig, now: Instant) -> Registration {
        let max = config.join.max_players;
        let backoff = config.backoff_min;
        let mut r = Registration {
            config,
            state: RegistrationState::Waiting { until: now },
            awaiting: VecDeque::new(),
            players: (0, max),
            told: None,
            last_players_sent: None,
            backoff,
            commands: VecDeque::new(),
            events: VecDeque::new(),
        };
        r.connect(now);
        r
    }

    pub fn config(&self) -> &RegistrationConfig {
        &self.config
    }

    pub fn state(&self) -> RegistrationState {
        self.state
    }

    /// Whether nothing more will happen (left, or stopped before connecting).
    pub fn is_finished(&self) -> bool {
        self.state == RegistrationState::Finished
    }

    /// One line saying where the registration is.
    pub fn describe(&self, now: Instant) -> String {
        let master = &self.config.master;
        match self.state {
            RegistrationState::Waiting { until } => format!(
                "masterserver {master}: retrying in {:.1} s",
                until.saturating_duration_since(now).as_secs_f32()
            ),
            RegistrationState::Connecting { .. } => format!("masterserver {master}: connecting"),
            RegistrationState::Joining => format!("masterserver {master}: joining"),
            RegistrationState::Registered => format!("masterserver {master}: registered"),
            RegistrationState::Leaving { .. } => format!("masterserver {master}: leaving"),
            RegistrationState::Finished => format!("masterserver {master}: done"),
        }
    }

    // ----- inputs -----

    /// The TCP connection is open: send the join line.
    pub fn handle_connected(&mut self, now: Instant) {
        if !matches!(self.state, RegistrationState::Connecting { .. }) {
            return;
        }
        self.state = RegistrationState::Joining;
        let line = proto::join_line(&self.config.join);
        self.send(Sent::Join, line, now);
    }

    /// A line from the masterserver.
    pub fn handle_line(&mut self, now: Instant, line: &str) {
        let Some((sent, _)) = self.awaiting.pop_front() else {
            log::debug!(
                "masterserver {}: unexpected line '{line}'",
                self.config.master
            );
            return;
        };
        match (sent, line) {
            (Sent::Join, proto::JOIN_ACCEPTED) => {
                self.backoff = self.config.backoff_min;
                self.events.push_back(RegistrationEvent::Registered);
                if self.state == RegistrationState::Joining {
                    self.state = RegistrationState::Registered;
                    // The masterserver starts a listed server at 0 players; the join line
                    // counts as the first sign of life for the keep-alive.
                    self.told = Some((0, self.config.join.max_players));
                    self.last_players_sent = Some(now);
                    self.send_players_if_changed(now);
                }
            }
            (Sent::Join, reply) => {
                self.events.push_back(RegistrationEvent::Refused {
                    request: sent.name(),
                    reply: reply.to_string(),
                });
                if let RegistrationState::Leaving { .. } = self.state {
                    return; // the reply to `remove me` follows
                }
                self.lose(now, format!("join refused: {reply}"));
            }
            (Sent::Players, proto::PLAYERS_ACKNOWLEDGED) => {}
            (Sent::Players, reply) => {
                self.events.push_back(RegistrationEvent::Refused {
                    request: sent.name(),
                    reply: reply.to_string(),
                });
            }
            (Sent::RemoveMe, reply) => {
                let confirmed = reply == proto::REMOVING_YOU || reply == proto::NOT_JOINED;
                if !confirmed {
                    self.events.push_back(RegistrationEvent::Refused {
                        request: sent.name(),
                        reply: reply.to_string(),
                    });
                }
                self.finish(confirmed);
            }
        }
    }

    /// The connection closed or could not be opened.
    pub fn handle_closed(&mut self, now: Instant, reason: &str) {
        match self.state {
            RegistrationState::Connecting { .. }
            | RegistrationState::Joining
            | RegistrationState::Registered => self.lose_without_close(now, reason.to_string()),
            RegistrationState::Leaving { .. } => {
                self.awaiting.clear();
                self.state = RegistrationState::Finished;
                self.events
                    .push_back(RegistrationEvent::Left { confirmed: false });
            }
            RegistrationState::Waiting { .. } | RegistrationState::Finished => {}
        }
    }

    /// Run the timers: reconnect, connect and reply timeouts, keep-alive, leave timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            RegistrationState::Waiting { until } if until <= now => self.connect(now),
            RegistrationState::Connecting { since }
                if since + self.config.connect_timeout <= now =>
            {
                self.lose(
                    now,
                    format!(
                        "connect did not complete within {:?}",
                        self.config.connect_timeout
                    ),
                );
            }
            RegistrationState::Leaving { deadline } if deadline <= now => self.finish(false),
            RegistrationState::Joining | RegistrationState::Registered => {
                if self.reply_deadline().is_some_and(|d| d <= now) {
                    self.lose(
                        now,
                        format!("no reply within {:?}", self.config.reply_timeout),
                    );
                    return;
                }
                if self.keepalive_due().is_some_and(|d| d <= now) {
                    let (players, max) = self.players;
                    self.send(Sent::Players, proto::players_line(players, max), now);
                    self.told = Some(self.players);
                }
            }
            _ => {}
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            RegistrationState::Waiting { until } => Some(until),
            RegistrationState::Connecting { since } => Some(since + self.config.connect_timeout),
            RegistrationState::Leaving { deadline } => Some(deadline),
            RegistrationState::Joining | RegistrationState::Registered => {
                match (self.reply_deadline(), self.keepalive_due()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            RegistrationState::Finished => None,
        }
    }

    // ----- requests -----

    /// The server's player count changed: tell the masterserver (at once when registered).
    pub fn set_players(&mut self, now: Instant, players: u16, max: u16) {
        let max = max.max(1);
        self.players = (players.min(max), max);
        if self.state == RegistrationState::Registered {
            self.send_players_if_changed(now);
        }
    }

    /// Leave the list: `remove me` when registered (or joining), then close; at once otherwise.
    pub fn leave(&mut self, now: Instant) {
        match self.state {
            RegistrationState::Joining | RegistrationState::Registered => {
                self.send_line(Sent::RemoveMe, proto::REMOVE_ME.to_string(), now);
                self.state = RegistrationState::Leaving {
                    deadline: now + self.config.leave_timeout,
                };
            }
            RegistrationState::Connecting { .. } | RegistrationState::Waiting { .. } => {
                self.finish(false)
            }
            RegistrationState::Leaving { .. } | RegistrationState::Finished => {}
        }
    }

    // ----- outputs -----

    pub fn poll_command(&mut self) -> Option<RegistrationCommand> {
        self.commands.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<RegistrationEvent> {
        self.events.pop_front()
    }

    // ----- helpers -----

    fn connect(&mut self, now: Instant) {
        self.awaiting.clear();
        self.told = None;
        self.last_players_sent = None;
        self.state = RegistrationState::Connecting { since: now };
        self.commands.push_back(RegistrationCommand::Connect);
    }

    fn send(&mut self, sent: Sent, line: String, now: Instant) {
        if sent == Sent::Players {
            self.last_players_sent = Some(now);
        }
        self.send_line(sent, line, now);
    }

    fn send_line(&mut self, sent: Sent, line: String, now: Instant) {
        self.awaiting.push_back((sent, now));
        self.commands.push_back(RegistrationCommand::SendLine(line));
    }

    fn send_players_if_changed(&mut self, now: Instant) {
        if self.told != Some(self.players) {
            let (players, max) = self.players;
            self.send(Sent::Players, proto::players_line(players, max), now);
            self.told = Some(self.players);
        }
    }

    fn reply_deadline(&self) -> Option<Instant> {
        self.awaiting
            .front()
            .map(|(_, at)| *at + self.config.reply_timeout)
    }

    fn keepalive_due(&self) -> Option<Instant> {
        if self.state != RegistrationState::Registered || self.config.keepalive.is_zero() {
            return None;
        }
        self.last_players_sent.map(|at| at + self.config.keepalive)
    }

    /// Give the connection up (closing it) and wait before trying again.
    fn lose(&mut self, now: Instant, reason: String) {
        self.commands.push_back(RegistrationCommand::Close);
        self.lose_without_close(now, reason);
    }

    fn lose_without_close(&mut self, now: Instant, reason: String) {
        let retry_in = self.backoff;
        self.backoff = (self.backoff * 2).min(self.config.backoff_max);
        self.awaiting.clear();
        self.told = None;
        self.state = RegistrationState::Waiting {
            until: now + retry_in,
        };
        self.events
            .push_back(RegistrationEvent::Lost { reason, retry_in });
    }

    /// Stop for good, closing the connection if there is one.
    fn finish(&mut self, confirmed: bool) {
        if matches!(
            self.state,
            RegistrationState::Connecting { .. } | RegistrationState::Leaving { .. }
        ) {
            self.commands.push_back(RegistrationCommand::Close);
        }
        self.awaiting.clear();
        self.state = RegistrationState::Finished;
        self.events.push_back(RegistrationEvent::Left { confirmed });
    }
}
