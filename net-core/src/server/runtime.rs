//! The servers' I/O driver: one thread, one mio event loop, around a [`TextServerCore`] (the
//! slot/gameserver's [`SlotServerCore`] or the masterserver's `MasterCore`).
//!
//! It owns the sockets: the TCP listener of the text protocol, the optional HTTP listener
//! (the list as HTML and JSON), the optional UDP socket of a [`UdpService`] (the gameserver's
//! forwarding), and the outgoing connections to masterservers ([`MasterLinks`], when
//! [`RuntimeConfig::registration`] is set). It feeds the core what arrives, carries out the
//! core's actions (bounded, non-blocking writes; a client that does not read is dropped),
//! renders the published pages lazily (at most once per file write or HTTP request, however
//! often the list changes), publishes the HTML and JSON files (replaced atomically), tells the
//! masterservers the player count, and stops gracefully when `stop` becomes true (sending
//! `remove me` to the masterservers first). Its own refusal lines (a connection over the byte
//! rate, a client that does not read, a UDP source over its rate) go through the core's
//! [`RefusalLog`](super::RefusalLog), so one limit covers every refusal line of a server.
//!
//! It must never decide protocol questions (who gets which line or slot is the core's job) and
//! never block: every socket is non-blocking and every wait is bounded. No step of the loop
//! costs time in proportion to the number of idle connections (a masterserver holds 10,000).
//!
//! [`RuntimeConfig`] is built with [`RuntimeConfig::new`] and updated with struct-update syntax,
//! so new optional fields break no caller.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mio::net::{TcpListener, TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Token};

use crate::error::{ErrorCode, NetError, NetResult};

use super::bans::BanList;
use super::html;
use super::http::{self, HttpConnection, Pages};
use super::master_links::{MasterLinks, RegistrationSettings, ServerIdentity, MAX_MASTERS};
use super::outbuf::{OutBuffer, DEFAULT_OUT_LIMIT};
use super::rate::{Bucket, RateLimits, UdpLimiter, Verdict, TCP_BURST};
use super::slots::{ConnId, RosterChange, ServerAction, SlotServerCore};
use super::text_core::TextServerCore;

/// The gameserver's UDP side, driven by the runtime (sans-IO, like the core).
pub trait UdpService: Send {
    /// A player joined, left or was renamed on the TCP side.
    fn roster(&mut self, now: Instant, change: &RosterChange);
    /// A datagram arrived.
    fn handle_datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]);
    /// The next datagram to send: written into `buf`, returns its destination and length.
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(SocketAddr, usize)>;
    /// Run timers (called when [`poll_timeout`](Self::poll_timeout) has come).
    fn handle_timeout(&mut self, now: Instant);
    fn poll_timeout(&self) -> Option<Instant>;
    /// A slot whose alive counter ran out: the runtime removes it on the TCP side.
    fn poll_silent(&mut self) -> Option<u8>;
    /// A slot now heard at another address (a local port change, NAT rebinding): the runtime
    /// tells the other players on the TCP side.
    fn poll_moved(&mut self) -> Option<(u8, SocketAddr)> {
        None
    }
    /// Lines for the status page and the run summary.
    fn status_lines(&self) -> Vec<String>;
}

/// Where the runtime listens and what it publishes.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// The text protocol's TCP address (port 0: any free port).
    pub tcp: SocketAddr,
    /// The HTTP list endpoint, if any.
    pub http: Option<SocketAddr>,
    /// The UDP game socket (only with a [`UdpService`]).
    pub udp: Option<SocketAddr>,
    /// The HTML list file, replaced atomically on every change.
    pub html_file: Option<PathBuf>,
    /// The JSON list file, replaced atomically on every change.
    pub json_file: Option<PathBuf>,
    /// The ban file, loaded at start (replacing the core's list) and re-read when it changes.
    pub ban_file: Option<PathBuf>,
    /// "slotserver", "gameserver" or "masterserver": shown in logs and lists, and told to
    /// masterservers.
    pub kind: &'static str,
    /// Masterservers to register with (a slot- or gameserver), if any.
    pub registration: Option<RegistrationSettings>,
    /// Bytes per second per connection, datagrams and bytes per second per UDP source.
    pub limits: RateLimits,
}

impl RuntimeConfig {
    /// Text protocol on `tcp`; nothing else.
    pub fn new(kind: &'static str, tcp: SocketAddr) -> Self {
        RuntimeConfig {
            tcp,
            http: None,
            udp: None,
            html_file: None,
            json_file: None,
            ban_file: None,
            kind,
            registration: None,
            limits: RateLimits::default(),
        }
    }
}

/// The addresses actually bound (tests bind port 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoundAddrs {
    pub tcp: SocketAddr,
    pub http: Option<SocketAddr>,
    pub udp: Option<SocketAddr>,
}

/// What a run did, for the log at exit and for tests.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    /// The core's counters followed by the runtime's.
    pub counters: Vec<(String, u64)>,
    /// The UDP service's last status lines.
    pub status: Vec<String>,
}

impl RunSummary {
    /// A counter by name (0 if unknown).
    pub fn counter(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }
}

/// Make SIGINT and SIGTERM set `stop` (a graceful shutdown); a second one exits at once.
pub fn stop_on_signals(stop: &Arc<AtomicBool>) -> NetResult<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for signal in [SIGINT, SIGTERM] {
        // The exit must be registered first: it only fires once the flag is already set.
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(stop))
            .and_then(|_| signal_hook::flag::register(signal, Arc::clone(stop)))
            .map_err(|e| NetError::new(ErrorCode::Io, format!("installing signal handler: {e}")))?;
    }
    Ok(())
}

const TCP_LISTENER: Token = Token(0);
const HTTP_LISTENER: Token = Token(1);
const UDP_SOCKET: Token = Token(2);
/// The masterserver links use the tokens from here on, one each.
const FIRST_LINK_TOKEN: usize = 3;
const FIRST_CONN_TOKEN: usize = FIRST_LINK_TOKEN + MAX_MASTERS;

/// Bytes read from one connection before others get their turn.
const READ_BUDGET: usize = 64 * 1024;
/// Datagrams received before others get their turn.
const UDP_BUDGET: usize = 256;
/// Time a closing connection has to take its last lines and close.
const CLOSE_LINGER: Duration = Duration::from_secs(2);
/// Bytes of a closing connection's input read and discarded at most.
const DRAIN_LIMIT: usize = 256 * 1024;
/// Bytes of a refused connection's input read (and dropped) before its refusal line.
const REFUSED_READ: usize = 1024;
/// Open HTTP connections at most.
const MAX_HTTP_CONNECTIONS: usize = 64;
/// Longest sleep without checking `stop`.
const STOP_CHECK: Duration = Duration::from_millis(100);
/// Shortest time between two rewrites of the list files.
const FILE_WRITE_INTERVAL: Duration = Duration::from_millis(200);
/// How often the pages are re-rendered when a UDP service adds status lines.
const STATUS_REFRESH: Duration = Duration::from_secs(5);
/// Time given to the clients to take their last lines at shutdown.
const SHUTDOWN_FLUSH: Duration = Duration::from_secs(2);
/// Largest datagram received or sent.
const MAX_DATAGRAM: usize = 65_536;

/// Tell a connection refused at accept why, without waiting and without keeping it: what it
/// already sent is read and dropped (so closing sends a FIN, not a reset), the reply (a text
/// line with its newline, or an HTTP response) is written (a new socket's send buffer takes it
/// whole; if not, it is skipped), and the sending side is shut down. Bounded: one read of at
/// most [`REFUSED_READ`] bytes, one write.
fn say_and_close(stream: &mut TcpStream, reply: &[u8]) {
    use std::io::Write;
    let mut sink = [0u8; REFUSED_READ];
    let _ = stream.read(&mut sink);
    let _ = stream.write(reply);
    let _ = stream.shutdown(Shutdown::Write);
}

/// Run a slot- or gameserver until `stop` is true; `ready` is called with the bound addresses
/// before the first connection is served.
pub fn run(
    config: RuntimeConfig,
    core: SlotServerCore,
    udp: Option<Box<dyn UdpService>>,
    stop: Arc<AtomicBool>,
    ready: impl FnOnce(BoundAddrs),
) -> NetResult<RunSummary> {
    run_core(config, core, udp, stop, ready)
}

/// Run any text-protocol core (the masterserver's too) until `stop` is true; `ready` is called
/// with the bound addresses before the first connection is served.
pub fn run_core<C: TextServerCore>(
    config: RuntimeConfig,
    mut core: C,
    udp: Option<Box<dyn UdpService>>,
    stop: Arc<AtomicBool>,
    ready: impl FnOnce(BoundAddrs),
) -> NetResult<RunSummary> {
    if let Some(path) = &config.ban_file {
        let bans = BanList::load(path)
            .map_err(|e| NetError::new(e.code, format!("ban file {}: {e}", path.display())))?;
        core.set_bans(bans).map_err(NetError::invalid)?;
    }
    if let Some(settings) = &config.registration {
        settings.validate()?;
    }
    let poll = Poll::new().map_err(|e| io_error("creating the event loop", e))?;
    let mut listener = TcpListener::bind(config.tcp)
        .map_err(|e| io_error(&format!("binding TCP {}", config.tcp), e))?;
    let tcp_addr = listener
        .local_addr()
        .map_err(|e| io_error("TCP address", e))?;
    register(&poll, &mut listener, TCP_LISTENER, Interest::READABLE)?;
    let http_listener = match config.http {
        Some(addr) => {
            let mut l = TcpListener::bind(addr)
                .map_err(|e| io_error(&format!("binding HTTP {addr}"), e))?;
            register(&poll, &mut l, HTTP_LISTENER, Interest::READABLE)?;
            Some(l)
        }
        None => None,
    };
    let http_addr = match &http_listener {
        Some(l) => Some(l.local_addr().map_err(|e| io_error("HTTP address", e))?),
        None => None,
    };
    let udp = match (config.udp, udp) {
        (Some(addr), Some(service)) => {
            let mut socket =
                UdpSocket::bind(addr).map_err(|e| io_error(&format!("binding UDP {addr}"), e))?;
            register(
                &poll,
                &mut socket,
                UDP_SOCKET,
                Interest::READABLE | Interest::WRITABLE,
            )?;
            let bound = socket
                .local_addr()
                .map_err(|e| io_error("UDP address", e))?;
            core.set_udp_port(bound.port());
            Some(UdpEndpoint {
                socket,
                service,
                bound,
                pending: None,
                buf: vec![0; MAX_DATAGRAM],
                read_again: false,
                limiter: UdpLimiter::new(config.limits, Instant::now()),
            })
        }
        (None, None) => None,
        (Some(_), None) => return Err(NetError::invalid("a UDP address needs a UDP service")),
        (None, Some(_)) => return Err(NetError::invalid("a UDP service needs a UDP address")),
    };
    let bound = BoundAddrs {
        tcp: tcp_addr,
        http: http_addr,
        udp: udp.as_ref().map(|u| u.bound),
    };
    let links = match &config.registration {
        Some(settings) if !settings.masters.is_empty() => {
            let identity = ServerIdentity {
                name: core.display_name(),
                kind: config.kind,
                tcp_port: bound.tcp.port(),
                udp_port: bound.udp.map_or(0, |a| a.port()),
                max_players: core.occupancy().map_or(1, |(_, max)| max),
            };
            MasterLinks::new(settings, &identity, FIRST_LINK_TOKEN, Instant::now())?
        }
        _ => MasterLinks::none(),
    };
    let mut driver = Driver {
        poll,
        core,
        udp,
        links,
        listener: Some(listener),
        http_listener,
        text: HashMap::new(),
        http: HashMap::new(),
        next_token: FIRST_CONN_TOKEN,
        pages: Pages::default(),
        pages_dirty: true,
        pending: HashSet::new(),
        html_file: config.html_file.clone(),
        json_file: config.json_file.clone(),
        files_dirty: false,
        next_file_write: None,
        next_status_refresh: None,
        kind: config.kind,
        counters: RuntimeCounters::default(),
        retry_accept: false,
        read_again: Vec::new(),
        shutting_down: false,
        limits: config.limits,
    };
    driver.write_first_files(Instant::now())?;
    // Only now: a server stopped by a list file it cannot write never said it was listening.
    log::info!(
        "{} '{}' listening on TCP {}{}{}",
        config.kind,
        driver.core.display_name(),
        bound.tcp,
        bound.http.map_or(String::new(), |a| format!(", HTTP {a}")),
        bound.udp.map_or(String::new(), |a| format!(", UDP {a}")),
    );
    ready(bound);
    driver.serve(&stop)?;
    driver.shut_down();
    Ok(driver.summary())
}

/// The address to give the UDP socket bound at `bound` for `to`: the relay names IPv4 clients
/// by their IPv4 address (see `RelayCore::handle_datagram`), which a dual-stack IPv6 socket
/// reaches as `::ffff:a.b.c.d` (not every OS takes a plain IPv4 address there).
fn towards_socket(to: SocketAddr, bound: SocketAddr) -> SocketAddr {
    match (to, bound) {
        (SocketAddr::V4(v4), SocketAddr::V6(_)) => {
            SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port())
        }
        _ => to,
    }
}

fn io_error(what: &str, e: io::Error) -> NetError {
    NetError::new(ErrorCode::Io, format!("{what}: {e}"))
}

fn register(
    poll: &Poll,
    source: &mut impl mio::event::Source,
    token: Token,
    interest: Interest,
) -> NetResult<()> {
    poll.registry()
        .register(source, token, interest)
        .map_err(|e| io_error("registering a socket", e))
}

/// A text-protocol connection's socket side.
struct TextConn {
    stream: TcpStream,
    peer: SocketAddr,
    out: OutBuffer,
    state: TextState,
    /// What it may still send (`RateLimits::tcp_bytes_per_sec`).
    bytes: Bucket,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TextState {
    /// Reading lines for the core.
    Open,
    /// The core closed it: sending what is queued, reading nothing.
    Closing { deadline: Instant },
    /// Everything sent and our side shut down: discarding input until the peer closes.
    Draining { deadline: Instant, discarded: usize },
}

enum FlushStep {
    Nothing,
    Drop(String),
    StartDraining,
}

struct UdpEndpoint {
    socket: UdpSocket,
    service: Box<dyn UdpService>,
    bound: SocketAddr,
    /// A datagram the socket would not take yet.
    pending: Option<(SocketAddr, Vec<u8>)>,
    buf: Vec<u8>,
    read_again: bool,
    limiter: UdpLimiter,
}

#[derive(Debug, Default)]
struct RuntimeCounters {
    slow_clients_dropped: u64,
    refused_at_accept: u64,
    accept_errors: u64,
    http_requests: u64,
    http_errors: u64,
    http_refused: u64,
    udp_datagrams_in: u64,
    udp_datagrams_out: u64,
    udp_send_errors: u64,
    /// Datagrams over a source's rate limit, dropped.
    udp_rate_limited: u64,
    /// Connections dropped for sending more bytes per second than allowed.
    tcp_rate_limited: u64,
    file_writes: u64,
    file_write_errors: u64,
}

struct Driver<C: TextServerCore> {
    poll: Poll,
    core: C,
    udp: Option<UdpEndpoint>,
    links: MasterLinks,
    listener: Option<TcpListener>,
    http_listener: Option<TcpListener>,
    text: HashMap<Token, TextConn>,
    http: HashMap<Token, HttpConnection>,
    next_token: usize,
    pages: Pages,
    /// The list changed since `pages` was rendered.
    pages_dirty: bool,
    /// Text connections with output queued, or closing: the only ones a flush looks at.
    pending: HashSet<Token>,
    html_file: Option<PathBuf>,
    json_file: Option<PathBuf>,
    files_dirty: bool,
    next_file_write: Option<Instant>,
    next_status_refresh: Option<Instant>,
    kind: &'static str,
    counters: RuntimeCounters,
    retry_accept: bool,
    read_again: Vec<Token>,
    shutting_down: bool,
    limits: RateLimits,
}

impl<C: TextServerCore> Driver<C> {
    /// The event loop, until `stop`.
    fn serve(&mut self, stop: &AtomicBool) -> NetResult<()> {
        let mut events = Events::with_capacity(256);
        let now = Instant::now();
        self.core.handle_timeout(now);
        self.refresh_pages(now);
        self.pump(now);
        let occupancy = self.core.occupancy();
        self.links.turn(now, self.poll.registry(), occupancy);
        while !stop.load(Ordering::SeqCst) {
            let timeout = self.next_wakeup(Instant::now());
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(io_error("waiting for events", e));
            }
            let now = Instant::now();
            for event in events.iter() {
                self.dispatch(now, event.token(), event.is_writable());
            }
            self.turn(now);
        }
        Ok(())
    }

    /// Everything after the events of one wake-up.
    fn turn(&mut self, now: Instant) {
        if self.retry_accept {
            self.accept_text(now);
        }
        for token in std::mem::take(&mut self.read_again) {
            self.read_text(now, token);
        }
        if self.udp.as_ref().is_some_and(|u| u.read_again) {
            self.receive_udp(now);
        }
        self.run_timers(now);
        self.pump(now);
        self.flush_text(now);
        let occupancy = self.core.occupancy();
        self.links.turn(now, self.poll.registry(), occupancy);
        self.publish(now);
    }

    fn next_wakeup(&self, now: Instant) -> Duration {
        if self.retry_accept
            || !self.read_again.is_empty()
            || self.udp.as_ref().is_some_and(|u| u.read_again)
        {
            return Duration::ZERO;
        }
        let text_deadlines = self
            .pending
            .iter()
            .filter_map(|t| self.text.get(t))
            .filter_map(|c| match c.state {
                TextState::Open => None,
                TextState::Closing { deadline } | TextState::Draining { deadline, .. } => {
                    Some(deadline)
                }
            });
        let http_deadlines = self.http.values().map(HttpConnection::deadline);
        let file_write = if self.files_dirty {
            self.next_file_write
        } else {
            None
        };
        let wake = [
            self.core.poll_timeout(),
            self.udp.as_ref().and_then(|u| u.service.poll_timeout()),
            self.links.next_timeout(now),
            file_write,
            self.next_status_refresh,
        ]
        .into_iter()
        .flatten()
        .chain(text_deadlines)
        .chain(http_deadlines)
        .min();
        match wake {
            Some(t) => t.saturating_duration_since(now).min(STOP_CHECK),
            None => STOP_CHECK,
        }
    }

    fn dispatch(&mut self, now: Instant, token: Token, writable: bool) {
        match token {
            TCP_LISTENER => self.accept_text(now),
            HTTP_LISTENER => self.accept_http(now),
            UDP_SOCKET => {
                self.receive_udp(now);
                if writable {
                    self.transmit_udp(now);
                }
            }
            token if self.text.contains_key(&token) => {
                // A client's datagrams sent before its line (its last events before `remove
                // me`) are read before the line, whichever the wake-up lists first.
                self.receive_udp(now);
                self.read_text(now, token);
            }
            // Driven every turn.
            token if self.links.owns(token) => {}
            token => {
                self.ensure_pages();
                if let Some(conn) = self.http.get_mut(&token) {
                    conn.drive(now, &self.pages);
                }
                self.reap_http(token);
            }
        }
    }

    fn new_token(&mut self) -> Token {
        let token = Token(self.next_token);
        self.next_token += 1;
        token
    }

    // ----- text protocol connections -----

    fn accept_text(&mut self, now: Instant) {
        self.retry_accept = false;
        loop {
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            let (mut stream, peer) = match listener.accept() {
                Ok(pair) => pair,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of file descriptors or similar: try again on the next turn.
                    self.counters.accept_errors += 1;
                    log::warn!("accepting a connection: {e}");
                    self.retry_accept = true;
                    return;
                }
            };
            let token = self.new_token();
            let id = token.0 as ConnId;
            // A refusal is logged by the core, within the refusal log's limit.
            if self.core.accept(now, id, peer).is_err() {
                self.counters.refused_at_accept += 1;
                if let Some(line) = self.core.refusal_line() {
                    say_and_close(&mut stream, format!("{line}\n").as_bytes());
                }
                continue; // dropping the stream closes it
            }
            let _ = stream.set_nodelay(true);
            if let Err(e) = register(
                &self.poll,
                &mut stream,
                token,
                Interest::READABLE | Interest::WRITABLE,
            ) {
                log::warn!("{e}");
                self.core.closed(now, id);
                continue;
            }
            self.text.insert(
                token,
                TextConn {
                    stream,
                    peer,
                    out: OutBuffer::new(DEFAULT_OUT_LIMIT),
                    state: TextState::Open,
                    bytes: Bucket::new(self.limits.tcp_bytes_per_sec, TCP_BURST, now),
                },
            );
            // The core may already have work (a ban reload closing others).
            self.pump(now);
        }
    }

    /// Read what a connection sent: lines to the core while open, discarded while draining.
    fn read_text(&mut self, now: Instant, token: Token) {
        let id = token.0 as ConnId;
        let mut buf = [0u8; 4096];
        let mut budget = READ_BUDGET;
        let why = loop {
            let Some(conn) = self.text.get_mut(&token) else {
                return;
            };
            match conn.state {
                TextState::Closing { .. } => return,
                TextState::Draining { discarded, .. } if discarded > DRAIN_LIMIT => {
                    break "sent too much while closing".to_string();
                }
                _ => {}
            }
            match conn.stream.read(&mut buf) {
                Ok(0) if conn.state == TextState::Open => {
                    self.input_ended(now, token);
                    return;
                }
                Ok(0) => break "closed by peer".to_string(),
                Ok(n) => {
                    if conn.state == TextState::Open && !conn.bytes.take(now, n as u64) {
                        self.counters.tcp_rate_limited += 1;
                        self.core.refusal_log().refused(
                            now,
                            conn.peer.ip().to_canonical(),
                            log::Level::Warn,
                            format_args!(
                                "{}: sent more than {} bytes/s; connection dropped",
                                conn.peer, self.limits.tcp_bytes_per_sec
                            ),
                        );
                        break format!(
                            "over the rate limit of {} bytes/s",
                            self.limits.tcp_bytes_per_sec
                        );
                    }
                    match &mut conn.state {
                        TextState::Open => self.core.receive(now, id, &buf[..n]),
                        TextState::Draining { discarded, .. } => *discarded += n,
                        TextState::Closing { .. } => {}
                    }
                    budget = budget.saturating_sub(n);
                    if budget == 0 {
                        self.read_again.push(token);
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.shutting_down && matches!(conn.state, TextState::Draining { .. }) {
                        break "server shut down".to_string();
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break format!("read error: {e}"),
            }
        };
        self.drop_text(now, token, &why);
    }

    /// The peer of an open connection closed its sending side: the core answers what it sent and
    /// forgets it, and the connection is closed once those replies are written.
    fn input_ended(&mut self, now: Instant, token: Token) {
        self.core.input_ended(now, token.0 as ConnId);
        // Queue the replies while the connection is still open.
        self.pump(now);
        if let Some(conn) = self.text.get_mut(&token) {
            if conn.state == TextState::Open {
                conn.state = TextState::Closing {
                    deadline: now + CLOSE_LINGER,
                };
            }
            self.pending.insert(token);
        }
    }

    /// Forget a connection's socket (closing it) and tell the core.
    fn drop_text(&mut self, now: Instant, token: Token, why: &str) {
        self.pending.remove(&token);
        if let Some(mut conn) = self.text.remove(&token) {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            log::debug!("connection {} from {}: {why}", token.0, conn.peer);
        }
        self.core.closed(now, token.0 as ConnId);
    }

    /// Write queued output; move closing connections along.
    fn flush_text(&mut self, now: Instant) {
        let tokens: Vec<Token> = self.pending.iter().copied().collect();
        let mut broke = false;
        for token in tokens {
            let Some(conn) = self.text.get_mut(&token) else {
                self.pending.remove(&token);
                continue;
            };
            let step = match conn.out.write_to(&mut conn.stream) {
                Err(e) => FlushStep::Drop(format!("write error: {e}")),
                Ok(()) => match conn.state {
                    TextState::Open => FlushStep::Nothing,
                    TextState::Closing { deadline } | TextState::Draining { deadline, .. }
                        if now >= deadline =>
                    {
                        FlushStep::Drop("close timed out".to_string())
                    }
                    TextState::Closing { deadline } if conn.out.is_empty() => {
                        let _ = conn.stream.shutdown(Shutdown::Write);
                        conn.state = TextState::Draining {
                            deadline,
                            discarded: 0,
                        };
                        FlushStep::StartDraining
                    }
                    TextState::Closing { .. } | TextState::Draining { .. } => FlushStep::Nothing,
                },
            };
            if conn.out.is_empty() && conn.state == TextState::Open {
                self.pending.remove(&token);
            }
            match step {
                FlushStep::Nothing => {}
                FlushStep::Drop(why) => {
                    broke = true;
                    // A client that left may have reset the connection after its last line
                    // ("remove me"), which is still waiting to be read: read it first, so the
                    // leave counts as a leave.
                    self.read_text(now, token);
                    if self.text.contains_key(&token) {
                        self.drop_text(now, token, &why);
                    }
                }
                // The peer may have closed already: no new event would say so.
                FlushStep::StartDraining => self.read_text(now, token),
            }
        }
        if broke {
            // Dropped players produce lines for the others.
            self.pump(now);
        }
    }

    // ----- the core's and the UDP service's outputs -----

    fn pump(&mut self, now: Instant) {
        loop {
            let mut progressed = false;
            while let Some(action) = self.core.poll_action() {
                progressed = true;
                self.carry_out(now, action);
            }
            while let Some(change) = self.core.poll_roster_change() {
                progressed = true;
                self.tell_udp_service(now, &change);
            }
            let silent: Vec<u8> = match self.udp.as_mut() {
                Some(udp) => std::iter::from_fn(|| udp.service.poll_silent()).collect(),
                None => Vec::new(),
            };
            for slot in silent {
                progressed = true;
                self.core.remove_slot(now, slot, "no alive packets");
            }
            let moved: Vec<(u8, SocketAddr)> = match self.udp.as_mut() {
                Some(udp) => std::iter::from_fn(|| udp.service.poll_moved()).collect(),
                None => Vec::new(),
            };
            for (slot, to) in moved {
                progressed = true;
                self.core.player_moved(slot, to);
            }
            if !progressed {
                break;
            }
        }
        self.transmit_udp(now);
    }

    fn carry_out(&mut self, now: Instant, action: ServerAction) {
        match action {
            ServerAction::SendLine { conn, line } => {
                let token = Token(conn as usize);
                let Some(c) = self.text.get_mut(&token) else {
                    return;
                };
                if c.state != TextState::Open {
                    return;
                }
                let mut bytes = line.into_bytes();
                bytes.push(b'\n');
                let queued = c.out.push(&bytes);
                self.queued_or_drop(now, token, queued);
            }
            ServerAction::SendShared { conn, bytes } => {
                let token = Token(conn as usize);
                let Some(c) = self.text.get_mut(&token) else {
                    return;
                };
                if c.state != TextState::Open {
                    return;
                }
                let queued = c.out.push_shared(bytes);
                self.queued_or_drop(now, token, queued);
            }
            ServerAction::Close { conn, reason } => {
                let token = Token(conn as usize);
                if let Some(c) = self.text.get_mut(&token) {
                    log::debug!("closing connection {conn} ({}): {reason}", c.peer);
                    if c.state == TextState::Open {
                        c.state = TextState::Closing {
                            deadline: now + CLOSE_LINGER,
                        };
                    }
                    self.pending.insert(token);
                }
            }
            ServerAction::ListChanged => self.refresh_pages(now),
        }
    }

    /// Output was queued for `token` (flush it at the end of the turn), or could not be: the
    /// client does not read what it is sent and is dropped.
    fn queued_or_drop(&mut self, now: Instant, token: Token, queued: bool) {
        if queued {
            self.pending.insert(token);
            return;
        }
        self.counters.slow_clients_dropped += 1;
        if let Some(c) = self.text.get(&token) {
            self.core.refusal_log().refused(
                now,
                c.peer.ip().to_canonical(),
                log::Level::Warn,
                format_args!("dropping {}: it does not read what it is sent", c.peer),
            );
        }
        self.drop_text(now, token, "output buffer full");
    }

    fn tell_udp_service(&mut self, now: Instant, change: &RosterChange) {
        if let Some(udp) = self.udp.as_mut() {
            udp.service.roster(now, change);
        }
    }

    fn run_timers(&mut self, now: Instant) {
        if self.core.poll_timeout().is_some_and(|t| t <= now) {
            self.core.handle_timeout(now);
        }
        if let Some(udp) = self.udp.as_mut() {
            if udp.service.poll_timeout().is_some_and(|t| t <= now) {
                udp.service.handle_timeout(now);
            }
        }
        let expired: Vec<Token> = self
            .http
            .iter()
            .filter(|(_, c)| c.deadline() <= now)
            .map(|(&t, _)| t)
            .collect();
        for token in expired {
            self.ensure_pages();
            if let Some(conn) = self.http.get_mut(&token) {
                conn.drive(now, &self.pages);
            }
            self.reap_http(token);
        }
        if self.next_status_refresh.is_some_and(|t| t <= now) {
            self.refresh_pages(now);
        }
    }

    // ----- UDP -----

    fn receive_udp(&mut self, now: Instant) {
        let Some(udp) = self.udp.as_mut() else {
            return;
        };
        udp.read_again = false;
        for _ in 0..UDP_BUDGET {
            match udp.socket.recv_from(&mut udp.buf) {
                Ok((n, from)) => {
                    self.counters.udp_datagrams_in += 1;
                    match udp.limiter.check(now, from, n) {
                        Verdict::Allow => udp.service.handle_datagram(now, from, &udp.buf[..n]),
                        Verdict::Refuse { first } => {
                            self.counters.udp_rate_limited += 1;
                            if first {
                                self.core.refusal_log().refused(
                                    now,
                                    from.ip().to_canonical(),
                                    log::Level::Warn,
                                    format_args!(
                                        "{from}: over the UDP rate limit ({} datagrams, {} bytes \
                                         a second); dropping its datagrams",
                                        self.limits.udp_datagrams_per_sec,
                                        self.limits.udp_bytes_per_sec
                                    ),
                                );
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP errors of earlier sends surface here; they concern no one now.
                Err(e) => log::debug!("UDP receive: {e}"),
            }
        }
        udp.read_again = true;
    }

    fn transmit_udp(&mut self, now: Instant) {
        let Some(udp) = self.udp.as_mut() else {
            return;
        };
        if let Some((to, data)) = udp.pending.take() {
            match udp.socket.send_to(&data, to) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    udp.pending = Some((to, data));
                    return;
                }
                Err(e) => {
                    self.counters.udp_send_errors += 1;
                    log::debug!("UDP send to {to}: {e}");
                }
                Ok(_) => self.counters.udp_datagrams_out += 1,
            }
        }
        while let Some((to, len)) = udp.service.poll_transmit(now, &mut udp.buf) {
            let to = towards_socket(to, udp.bound);
            let data = &udp.buf[..len.min(udp.buf.len())];
            match udp.socket.send_to(data, to) {
                Ok(_) => self.counters.udp_datagrams_out += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    udp.pending = Some((to, data.to_vec()));
                    return;
                }
                Err(e) => {
                    self.counters.udp_send_errors += 1;
                    log::debug!("UDP send to {to}: {e}");
                }
            }
        }
    }

    // ----- HTTP -----

    fn accept_http(&mut self, now: Instant) {
        loop {
            let Some(listener) = self.http_listener.as_ref() else {
                return;
            };
            let (mut stream, peer) = match listener.accept() {
                Ok(pair) => pair,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    log::warn!("accepting an HTTP connection: {e}");
                    return;
                }
            };
            if self.http.len() >= MAX_HTTP_CONNECTIONS {
                self.counters.http_refused += 1;
                self.core.refusal_log().refused(
                    now,
                    peer.ip().to_canonical(),
                    log::Level::Debug,
                    format_args!(
                        "refused HTTP connection from {peer}: {MAX_HTTP_CONNECTIONS} at once at \
                         most"
                    ),
                );
                say_and_close(&mut stream, &http::busy_response());
                continue;
            }
            let token = self.new_token();
            if register(
                &self.poll,
                &mut stream,
                token,
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
            {
                continue;
            }
            let mut conn = HttpConnection::new(stream, peer, now);
            self.ensure_pages();
            conn.drive(now, &self.pages);
            self.http.insert(token, conn);
            self.reap_http(token);
        }
    }

    /// Drop an HTTP connection that is finished.
    fn reap_http(&mut self, token: Token) {
        if !self.http.get(&token).is_some_and(HttpConnection::is_done) {
            return;
        }
        if let Some(mut conn) = self.http.remove(&token) {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            match conn.status {
                Some(200) => self.counters.http_requests += 1,
                Some(code) => {
                    self.counters.http_errors += 1;
                    log::debug!("HTTP {} from {}", code, conn.peer);
                }
                None => {}
            }
        }
    }

    // ----- published lists -----

    /// The list changed: the pages are rendered again when next needed, and the files rewritten.
    fn refresh_pages(&mut self, now: Instant) {
        self.pages_dirty = true;
        self.files_dirty = self.html_file.is_some() || self.json_file.is_some();
        if self.udp.is_some() {
            self.next_status_refresh = Some(now + STATUS_REFRESH);
        }
    }

    /// Render the pages if the list changed since they were rendered.
    fn ensure_pages(&mut self) {
        if !self.pages_dirty {
            return;
        }
        self.pages_dirty = false;
        let status = self
            .udp
            .as_ref()
            .map(|u| u.service.status_lines())
            .unwrap_or_default();
        self.pages =
            self.core
                .render_pages(self.kind, &status, SystemTime::now(), !self.shutting_down);
    }

    fn publish(&mut self, now: Instant) {
        if !self.files_dirty || self.next_file_write.is_some_and(|t| t > now) {
            return;
        }
        self.write_files_or_warn();
        self.next_file_write = Some(now + FILE_WRITE_INTERVAL);
    }

    /// Write the list files before the first connection is served: a file that cannot be
    /// written (a directory that does not exist, no permission) stops the server at start
    /// instead of warning at every change while the list is never published.
    fn write_first_files(&mut self, now: Instant) -> NetResult<()> {
        self.next_file_write = Some(now + FILE_WRITE_INTERVAL);
        match self.write_files().into_iter().next() {
            Some(problem) => Err(problem),
            None => Ok(()),
        }
    }

    /// Write the list files (a later failure, a full disk, is a warning: the server goes on).
    fn write_files_or_warn(&mut self) {
        for problem in self.write_files() {
            log::warn!("{problem}");
        }
    }

    /// Write the list files; what could not be written, and why.
    fn write_files(&mut self) -> Vec<NetError> {
        self.files_dirty = false;
        self.ensure_pages();
        let files = [
            (&self.html_file, &self.pages.html, "HTML"),
            (&self.json_file, &self.pages.json, "JSON"),
        ];
        let mut problems = Vec::new();
        for (path, contents, what) in files {
            let Some(path) = path else {
                continue;
            };
            match html::write_atomically(path, contents.as_bytes()) {
                Ok(()) => self.counters.file_writes += 1,
                Err(e) => {
                    self.counters.file_write_errors += 1;
                    problems.push(io_error(
                        &format!("writing the {what} list {}", path.display()),
                        e,
                    ));
                }
            }
        }
        problems
    }

    // ----- shutdown -----

    fn shut_down(&mut self) {
        log::info!("{} shutting down", self.kind);
        self.shutting_down = true;
        for mut listener in [self.listener.take(), self.http_listener.take()]
            .into_iter()
            .flatten()
        {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        let now = Instant::now();
        self.links.leave(now, self.poll.registry());
        self.core.shutdown("server shutting down");
        self.core.refusal_log().flush(now);
        self.pump(now);
        let deadline = now + SHUTDOWN_FLUSH;
        let mut events = Events::with_capacity(64);
        while !self.text.is_empty() || !self.links.all_finished() {
            let now = Instant::now();
            self.links.turn(now, self.poll.registry(), None);
            self.flush_text(now);
            // Draining connections with nothing more to read are dropped now.
            let draining: Vec<Token> = self
                .text
                .iter()
                .filter(|(_, c)| matches!(c.state, TextState::Draining { .. }))
                .map(|(&t, _)| t)
                .collect();
            for token in draining {
                self.read_text(now, token);
            }
            if (self.text.is_empty() && self.links.all_finished()) || now >= deadline {
                break;
            }
            let wait = deadline
                .saturating_duration_since(now)
                .min(Duration::from_millis(20));
            let _ = self.poll.poll(&mut events, Some(wait));
            let now = Instant::now();
            for event in events.iter() {
                if self.text.contains_key(&event.token()) {
                    self.read_text(now, event.token());
                }
            }
        }
        for token in self.text.keys().copied().collect::<Vec<_>>() {
            self.drop_text(Instant::now(), token, "server shut down");
        }
        self.links.close_all(self.poll.registry());
        self.refresh_pages(Instant::now());
        if self.files_dirty {
            self.write_files_or_warn();
        }
    }

    fn summary(&self) -> RunSummary {
        let c = &self.counters;
        let mut counters: Vec<(String, u64)> = self
            .core
            .counters()
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        for (name, value) in [
            ("slow_clients_dropped", c.slow_clients_dropped),
            ("refused_at_accept", c.refused_at_accept),
            ("accept_errors", c.accept_errors),
            ("http_requests", c.http_requests),
            ("http_errors", c.http_errors),
            ("http_refused", c.http_refused),
            ("udp_datagrams_in", c.udp_datagrams_in),
            ("udp_datagrams_out", c.udp_datagrams_out),
            ("udp_send_errors", c.udp_send_errors),
            ("udp_rate_limited", c.udp_rate_limited),
            ("tcp_rate_limited", c.tcp_rate_limited),
            ("file_writes", c.file_writes),
            ("file_write_errors", c.file_write_errors),
            ("master_registrations", self.links.counters().registrations),
            ("master_refusals", self.links.counters().refusals),
            ("master_losses", self.links.counters().losses),
        ] {
            counters.push((name.to_string(), value));
        }
        RunSummary {
            counters,
            status: self
                .udp
                .as_ref()
                .map(|u| u.service.status_lines())
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::towards_socket;
    use std::net::SocketAddr;

    #[test]
    fn an_ipv4_client_is_sent_to_as_mapped_through_an_ipv6_socket() {
        let v4: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let v6: SocketAddr = "[::1]:7000".parse().unwrap();
        let dual: SocketAddr = "[::]:6522".parse().unwrap();
        let plain: SocketAddr = "0.0.0.0:6522".parse().unwrap();
        assert_eq!(
            towards_socket(v4, dual),
            "[::ffff:127.0.0.1]:7000".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(towards_socket(v6, dual), v6);
        assert_eq!(towards_socket(v4, plain), v4);
    }
}
