//! The game's server browser: fetching the lists of the `net.master` masterservers (the
//! `list servers` extension) over non-blocking TCP connections that progress a little in every
//! `maintain` call, keeping the latest merged list, and raising `GameEvent::ServerList` when a
//! fetch completes. The protocol logic is the sans-IO [`ListFetch`]; this module does its I/O
//! ([`LineStream`], [`PendingResolve`]).
//!
//! It must never block the frame loop: no blocking connect, read or name lookup, and every
//! fetch ends within [`FETCH_TIMEOUT`]. The one wait is
//! [`wait_for_server_list`](Subsystem::wait_for_server_list), for the console's `servers`: it
//! drives the same fetch for a bounded time (measured on the real clock) so the reply can hold
//! the list.

use std::time::{Duration, Instant};

use super::stream::LineStream;
use super::Subsystem;
use crate::error::{NetError, NetResult};
use crate::master::fetch::{FetchCommand, ListFetch};
use crate::master::list_line::ListedServer;
use crate::master::resolve::{split_host_port, PendingResolve};
use crate::master::MASTER_PORT;
use crate::protocol::StreamEvent;
use crate::session::GameEvent;

/// A list older than this is fetched again when asked for.
pub const REFRESH_AFTER: Duration = Duration::from_secs(5);
/// A fetch ends after this long at most (masterservers not done by then count as failed).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between two rounds of I/O while [`Subsystem::wait_for_server_list`] waits.
const WAIT_STEP: Duration = Duration::from_millis(1);

/// How [`Subsystem::wait_for_server_list`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListWait {
    /// The list from these masterservers was fresh: nothing was fetched.
    Fresh,
    /// A fetch completed within the bound (its `ServerList` event is queued as well).
    Fetched,
    /// The bound passed first: the fetch goes on over later `maintain` calls and raises the
    /// event when it completes.
    StillFetching,
}

/// The fetch in progress: the machine and one connection (or lookup) per masterserver.
struct RunningFetch {
    machine: ListFetch,
    targets: Vec<Result<(String, u16), String>>,
    resolves: Vec<Option<PendingResolve>>,
    streams: Vec<Option<LineStream>>,
}

/// The latest server list and the fetch that renews it.
#[derive(Default)]
pub struct ServerListClient {
    /// The masterservers the list (and the running fetch) come from.
    masters: Vec<String>,
    servers: Vec<ListedServer>,
    /// The masterservers whose list came in with the latest fetch.
    answered: Vec<String>,
    errors: Vec<String>,
    fetched_at: Option<Instant>,
    running: Option<RunningFetch>,
    /// The latest fetch completed inside `wait_for_server_list`, whose caller showed the list.
    shown_in_reply: bool,
}

impl ServerListClient {
    /// The latest merged list (empty before the first fetch completed).
    pub fn servers(&self) -> &[ListedServer] {
        &self.servers
    }

    /// The masterservers that gave their list in the latest fetch.
    pub fn answered(&self) -> &[String] {
        &self.answered
    }

    /// The masterservers that failed in the latest fetch, with why.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// When the latest fetch completed.
    pub fn fetched_at(&self) -> Option<Instant> {
        self.fetched_at
    }

    pub fn is_fetching(&self) -> bool {
        self.running.is_some()
    }

    /// The masterservers the running fetch still waits for.
    pub fn waiting_for(&self) -> Vec<String> {
        self.running
            .as_ref()
            .map_or_else(Vec::new, |run| run.machine.unfinished())
    }

    /// Whether the latest list came in while `servers` waited, so its reply already showed
    /// it (the console then need not print the event's list again).
    pub fn shown_in_reply(&self) -> bool {
        self.shown_in_reply
    }

    /// The masterservers the list and the running fetch come from.
    pub fn masters(&self) -> &[String] {
        &self.masters
    }

    /// Whether the list is from `masters` and younger than [`REFRESH_AFTER`] at `now`.
    pub fn is_fresh(&self, now: Instant, masters: &[String]) -> bool {
        self.masters == masters
            && self
                .fetched_at
                .is_some_and(|t| now.saturating_duration_since(t) < REFRESH_AFTER)
    }

    /// Start a fetch from `masters` (`HOST[:PORT]`) unless one from them is running. Other
    /// masterservers than the list's (`net.master` changed) drop the list and any fetch from
    /// the old ones: their servers are not shown as the new ones'. Returns whether a fetch was
    /// started.
    pub fn start(&mut self, now: Instant, masters: &[String]) -> bool {
        if masters.is_empty() {
            return false;
        }
        if self.masters != masters {
            *self = ServerListClient {
                masters: masters.to_vec(),
                ..ServerListClient::default()
            };
        }
        if self.running.is_some() {
            return false;
        }
        let targets: Vec<Result<(String, u16), String>> = masters
            .iter()
            .map(|m| split_host_port(m, MASTER_PORT).map_err(|e| e.to_string()))
            .collect();
        self.running = Some(RunningFetch {
            machine: ListFetch::start(now, masters.to_vec(), FETCH_TIMEOUT),
            resolves: targets.iter().map(|_| None).collect(),
            streams: targets.iter().map(|_| None).collect(),
            targets,
        });
        true
    }

    /// Make progress (called every frame); the event once the fetch completes.
    pub fn maintain(&mut self, now: Instant) -> Option<GameEvent> {
        let run = self.running.as_mut()?;
        if run.machine.poll_timeout().is_some_and(|t| t <= now) {
            run.machine.handle_timeout(now);
        }
        for _ in 0..8 {
            if !run.step() {
                break;
            }
        }
        if !run.machine.is_done() {
            return None;
        }
        let result = run.machine.result();
        self.running = None;
        self.servers = result.servers;
        self.answered = result.answered;
        self.errors = result.errors;
        self.fetched_at = Some(now);
        self.shown_in_reply = false;
        if result.bad_lines > 0 {
            log::debug!("server list: {} lines skipped", result.bad_lines);
        }
        Some(GameEvent::ServerList {
            count: u32::try_from(self.servers.len()).unwrap_or(u32::MAX),
            errors: self.errors.join("; "),
        })
    }
}

impl RunningFetch {
    /// One round of commands, lookups and socket I/O; whether anything happened.
    fn step(&mut self) -> bool {
        let mut progressed = false;
        while let Some(command) = self.machine.poll_command() {
            progressed = true;
            match command {
                FetchCommand::Connect { master } => match &self.targets[master] {
                    Ok((host, port)) => {
                        self.resolves[master] = Some(PendingResolve::start(host, *port))
                    }
                    Err(why) => self.machine.handle_closed(master, why),
                },
                FetchCommand::SendLine { master, line } => {
                    if let Some(stream) = self.streams[master].as_mut() {
                        stream.send_line(&line);
                    }
                }
                FetchCommand::Close { master } => {
                    self.resolves[master] = None;
                    self.streams[master] = None; // dropping the socket closes it
                }
            }
        }
        for master in 0..self.targets.len() {
            if let Some(answer) = self.resolves[master]
                .as_mut()
                .and_then(PendingResolve::poll)
            {
                progressed = true;
                self.resolves[master] = None;
                let connected = answer
                    .and_then(|addr| LineStream::connect(&addr.ip().to_string(), addr.port()));
                match connected {
                    Ok(stream) => self.streams[master] = Some(stream),
                    Err(why) => self.machine.handle_closed(master, &why),
                }
            }
            let Some(stream) = self.streams[master].as_mut() else {
                continue;
            };
            let mut events = Vec::new();
            if !stream.poll(&mut events) {
                self.streams[master] = None;
            }
            for event in events {
                progressed = true;
                match event {
                    StreamEvent::Connected { .. } => self.machine.handle_connected(master),
                    StreamEvent::Line(line) => self.machine.handle_line(master, &line),
                    StreamEvent::Closed { reason } => self.machine.handle_closed(master, &reason),
                }
            }
        }
        progressed
    }
}

impl Subsystem {
    /// Ask for the server list (`servers`, `NET_FetchServerList`): starts a fetch from the
    /// `net.master` masterservers unless one from them is running or their list is younger
    /// than [`REFRESH_AFTER`]. Returns whether a fetch was started. Never blocks; the fetch completes
    /// over later `maintain` calls and raises `GameEvent::ServerList`.
    pub fn request_server_list(&mut self, now: Instant) -> NetResult<bool> {
        if self.settings.masters.is_empty() {
            return Err(NetError::invalid(
                "no masterserver set (net.master HOST[:PORT])",
            ));
        }
        if self.server_list.is_fresh(now, &self.settings.masters) {
            return Ok(false);
        }
        let masters = self.settings.masters.clone();
        Ok(self.server_list.start(now, &masters))
    }

    /// `servers`: the list now if it can be had within `bound`. Starts a fetch as
    /// [`request_server_list`](Self::request_server_list) does (or takes over the one
    /// running), then drives it here, sleeping [`WAIT_STEP`] between rounds, until it completes
    /// or `bound` has passed on the real clock (times given to the fetch are `now` plus the
    /// time waited). A completed fetch raises its `ServerList` event as usual.
    pub fn wait_for_server_list(&mut self, now: Instant, bound: Duration) -> NetResult<ListWait> {
        self.request_server_list(now)?;
        if !self.server_list.is_fetching() {
            return Ok(ListWait::Fresh);
        }
        let waiting = Instant::now();
        loop {
            let waited = waiting.elapsed();
            if let Some(end) = self.server_list_wait_step(now + waited, waited, bound) {
                return Ok(end);
            }
            std::thread::sleep(WAIT_STEP);
        }
    }

    /// One round of a wait for the list that has lasted `waited` of `bound`: how it ended, or
    /// `None` while it goes on. A fetch that a frame completed meanwhile (a caller that waits
    /// without holding the subsystem lets frames run) counts as fetched: its list is there.
    pub fn server_list_wait_step(
        &mut self,
        now: Instant,
        waited: Duration,
        bound: Duration,
    ) -> Option<ListWait> {
        if !self.server_list.is_fetching() {
            return Some(ListWait::Fetched);
        }
        if let Some(event) = self.server_list.maintain(now) {
            self.server_list.shown_in_reply = true;
            self.game.deliver(now, event);
            return Some(ListWait::Fetched);
        }
        (waited >= bound).then_some(ListWait::StillFetching)
    }
}
