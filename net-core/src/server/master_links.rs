//! The server runtime's registration with masterservers (up to three, as Parsec allowed): one
//! sans-IO [`Registration`] per masterserver, driven over an [`OutgoingLine`] with host names
//! resolved off the loop ([`PendingResolve`]). The runtime calls [`MasterLinks::turn`] after
//! every wake-up with the core's player count.
//!
//! It only carries out what the registrations ask and logs what they report; it never decides
//! protocol questions and never blocks.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::{Registry, Token};

use crate::error::{NetError, NetResult};
use crate::master::protocol::{self as proto, JoinRequest, ServerKind};
use crate::master::registration::{
    Registration, RegistrationCommand, RegistrationConfig, RegistrationEvent,
};
use crate::master::resolve::{split_host_port, PendingResolve};
use crate::master::MASTER_PORT;

use super::outgoing::{OutgoingEvent, OutgoingLine};

/// Most masterservers a server registers with.
pub const MAX_MASTERS: usize = 3;

/// How often the loop looks at a name lookup in progress.
const RESOLVE_POLL: Duration = Duration::from_millis(10);

/// What the admin configures about registering (everything else comes from the server).
#[derive(Clone, Debug)]
pub struct RegistrationSettings {
    /// `HOST[:PORT]` of each masterserver (default port 6502), at most [`MAX_MASTERS`].
    pub masters: Vec<String>,
    /// The OS told to the masterservers (1-31 printable ASCII).
    pub os: String,
    /// The URL of a page about the server (1-127 printable ASCII without spaces; `-`: none).
    pub url: String,
    /// A `players:` line is sent at least this often (zero: only on changes).
    pub keepalive: Duration,
    /// First and longest wait before connecting again after a masterserver went away.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
}

impl RegistrationSettings {
    /// Register with `masters`: OS from the build target, no URL, keep-alive 60 s, backoff
    /// 1 s doubling to 60 s.
    pub fn new(masters: Vec<String>) -> RegistrationSettings {
        RegistrationSettings {
            masters,
            os: default_os(),
            url: "-".to_string(),
            keepalive: Duration::from_secs(60),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
        }
    }

    /// Check every field; the message names the wrong one.
    pub fn validate(&self) -> NetResult<()> {
        if self.masters.len() > MAX_MASTERS {
            return Err(NetError::invalid(format!(
                "at most {MAX_MASTERS} masterservers ({} given)",
                self.masters.len()
            )));
        }
        for master in &self.masters {
            split_host_port(master, MASTER_PORT)?;
        }
        proto::validate_os(&self.os).map_err(|_| {
            NetError::invalid(format!(
                "OS '{}' must be 1-31 printable ASCII characters",
                self.os
            ))
        })?;
        proto::validate_url(&self.url).map_err(|_| {
            NetError::invalid(format!(
                "URL '{}' must be 1-127 printable ASCII characters without spaces",
                self.url
            ))
        })?;
        if self.backoff_min.is_zero() || self.backoff_max < self.backoff_min {
            return Err(NetError::invalid("the reconnect backoff must be positive"));
        }
        Ok(())
    }
}

/// `ARCH-OS` of the build target, e.g. `x86_64-linux`.
pub fn default_os() -> String {
    format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS)
}

/// What the server tells the masterservers about itself.
#[derive(Clone, Debug)]
pub struct ServerIdentity {
    pub name: String,
    pub kind: &'static str,
    pub tcp_port: u16,
    /// 0: none (a slotserver).
    pub udp_port: u16,
    pub max_players: u16,
}

struct Link {
    registration: Registration,
    host: String,
    port: u16,
    token: Token,
    resolve: Option<PendingResolve>,
    conn: Option<OutgoingLine>,
    /// The address `conn` goes to (kept while it is open).
    addr: Option<SocketAddr>,
}

/// Counted for the run summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkCounters {
    pub registrations: u64,
    pub refusals: u64,
    pub losses: u64,
}

/// Every masterserver registration of one server.
pub struct MasterLinks {
    links: Vec<Link>,
    counters: LinkCounters,
}

impl MasterLinks {
    /// Registrations for `settings.masters`, using the tokens from `first_token` on.
    pub fn new(
        settings: &RegistrationSettings,
        identity: &ServerIdentity,
        first_token: usize,
        now: Instant,
    ) -> NetResult<MasterLinks> {
        settings.validate()?;
        let kind = ServerKind::parse(identity.kind).unwrap_or(ServerKind::Unknown);
        let join = JoinRequest {
            version_major: proto::PROTOCOL_MAJOR,
            version_minor: 0,
            name: proto::validate_name(&identity.name).map_err(|_| {
                NetError::invalid(format!(
                    "server name '{}' cannot be sent to a masterserver",
                    identity.name
                ))
            })?,
            os: settings.os.clone(),
            max_players: identity.max_players.max(1),
            url: settings.url.clone(),
            kind,
            port: identity.tcp_port,
            udp_port: identity.udp_port,
        };
        let mut links = Vec::new();
        for (i, master) in settings.masters.iter().enumerate() {
            let (host, port) = split_host_port(master, MASTER_PORT)?;
            let mut config = RegistrationConfig::new(master, join.clone());
            config.keepalive = settings.keepalive;
            config.backoff_min = settings.backoff_min;
            config.backoff_max = settings.backoff_max;
            links.push(Link {
                registration: Registration::new(config, now),
                host,
                port,
                token: Token(first_token + i),
                resolve: None,
                conn: None,
                addr: None,
            });
        }
        Ok(MasterLinks {
            links,
            counters: LinkCounters::default(),
        })
    }

    /// No masterservers.
    pub fn none() -> MasterLinks {
        MasterLinks {
            links: Vec::new(),
            counters: LinkCounters::default(),
        }
    }

    pub fn counters(&self) -> LinkCounters {
        self.counters
    }

    /// Whether `token` belongs to one of the links.
    pub fn owns(&self, token: Token) -> bool {
        self.links.iter().any(|l| l.token == token)
    }

    /// Tell the registrations the player count, run their timers and carry out what they ask.
    pub fn turn(&mut self, now: Instant, registry: &Registry, occupancy: Option<(u16, u16)>) {
        for i in 0..self.links.len() {
            let link = &mut self.links[i];
            if let Some((players, max)) = occupancy {
                link.registration.set_players(now, players, max);
            }
            if link.registration.poll_timeout().is_some_and(|t| t <= now) {
                link.registration.handle_timeout(now);
            }
            self.drive(i, now, registry);
        }
    }

    /// When a link next needs a turn.
    pub fn next_timeout(&self, now: Instant) -> Option<Instant> {
        self.links
            .iter()
            .filter_map(|l| {
                if l.resolve.is_some() {
                    Some(now + RESOLVE_POLL)
                } else {
                    l.registration.poll_timeout()
                }
            })
            .min()
    }

    /// Leave every masterserver's list (`remove me`); see [`all_finished`](Self::all_finished).
    pub fn leave(&mut self, now: Instant, registry: &Registry) {
        for i in 0..self.links.len() {
            self.links[i].registration.leave(now);
            self.drive(i, now, registry);
        }
    }

    pub fn all_finished(&self) -> bool {
        self.links.iter().all(|l| l.registration.is_finished())
    }

    /// Close whatever is still open.
    pub fn close_all(&mut self, registry: &Registry) {
        for link in &mut self.links {
            if let Some(conn) = link.conn.take() {
                conn.close(registry);
            }
            link.resolve = None;
        }
    }

    /// One line per masterserver.
    pub fn status_lines(&self, now: Instant) -> Vec<String> {
        self.links
            .iter()
            .map(|l| l.registration.describe(now))
            .collect()
    }

    /// Carry out commands, the lookup and the connection's I/O until nothing moves.
    fn drive(&mut self, i: usize, now: Instant, registry: &Registry) {
        for _ in 0..16 {
            let mut progressed = false;
            let link = &mut self.links[i];
            while let Some(command) = link.registration.poll_command() {
                progressed = true;
                match command {
                    RegistrationCommand::Connect => {
                        if let Some(old) = link.conn.take() {
                            old.close(registry);
                        }
                        link.resolve = Some(PendingResolve::start(&link.host, link.port));
                    }
                    RegistrationCommand::SendLine(line) => {
                        let queued = link.conn.as_mut().is_some_and(|c| c.send_line(&line));
                        if !queued {
                            link.registration
                                .handle_closed(now, "the masterserver does not read");
                        }
                    }
                    RegistrationCommand::Close => {
                        link.resolve = None;
                        if let Some(conn) = link.conn.take() {
                            conn.close(registry);
                        }
                    }
                }
            }
            if let Some(answer) = link.resolve.as_mut().and_then(PendingResolve::poll) {
                progressed = true;
                link.resolve = None;
                // Two names of one masterserver (`localhost:6502` and `127.0.0.1:6502`) would
                // list the server twice there: a link whose address another link is already
                // connected to stays out while that one lasts (docs/decisions.md).
                let twin = answer.as_ref().ok().and_then(|addr| {
                    self.links.iter().enumerate().find_map(|(j, other)| {
                        (j != i && other.conn.is_some() && other.addr == Some(*addr))
                            .then(|| other.registration.config().master.clone())
                    })
                });
                let link = &mut self.links[i];
                let connected = answer.and_then(|addr: SocketAddr| {
                    if let Some(twin) = twin {
                        return Err(format!(
                            "the same masterserver as {twin} (both {addr}), where this server is registered already"
                        ));
                    }
                    OutgoingLine::connect(registry, link.token, addr)
                        .map(|conn| (conn, addr))
                        .map_err(|e| format!("cannot connect to {addr}: {e}"))
                });
                match connected {
                    Ok((conn, addr)) => {
                        link.conn = Some(conn);
                        link.addr = Some(addr);
                    }
                    Err(why) => link.registration.handle_closed(now, &why),
                }
            }
            let link = &mut self.links[i];
            if let Some(conn) = link.conn.as_mut() {
                let mut events = Vec::new();
                if !conn.drive(&mut events) {
                    if let Some(conn) = link.conn.take() {
                        conn.close(registry);
                    }
                }
                for event in events {
                    progressed = true;
                    match event {
                        OutgoingEvent::Connected => link.registration.handle_connected(now),
                        OutgoingEvent::Line(line) => link.registration.handle_line(now, &line),
                        OutgoingEvent::Closed(why) => link.registration.handle_closed(now, &why),
                    }
                }
            }
            self.log_events(i);
            if !progressed {
                break;
            }
        }
    }

    fn log_events(&mut self, i: usize) {
        let link = &mut self.links[i];
        let master = link.registration.config().master.clone();
        while let Some(event) = link.registration.poll_event() {
            match event {
                RegistrationEvent::Registered => {
                    self.counters.registrations += 1;
                    log::info!("registered with masterserver {master}");
                }
                RegistrationEvent::Refused { request, reply } => {
                    self.counters.refusals += 1;
                    log::warn!("masterserver {master} refused our {request} line: '{reply}'");
                }
                RegistrationEvent::Lost { reason, retry_in } => {
                    self.counters.losses += 1;
                    log::warn!(
                        "masterserver {master}: {reason}; trying again in {:.1} s",
                        retry_in.as_secs_f32()
                    );
                }
                RegistrationEvent::Left { confirmed } => {
                    if confirmed {
                        log::info!("left the list of masterserver {master}");
                    } else {
                        log::info!("stopped registering with masterserver {master}");
                    }
                }
            }
        }
    }
}
