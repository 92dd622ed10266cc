//! The `Subsystem`: one complete networking instance (configuration, packet layer, bound
//! protocol). The C API drives one global instance; tests, the demo and servers may hold many.
//!
//! It owns no clock and no threads: callers pass `now` where time matters (the one wait, the
//! console's `servers` waiting up to 2 s for the masterservers, measures its bound on the real
//! clock; see `server_list`). Methods are grouped as
//! the C API groups them: packet API (`*_node`, `send_datagram`, `receive_datagram`), protocol
//! calls (`connect`, ..., `maintain`), and the console (`console_exec`).

mod driver;
#[cfg(test)]
mod leaving_tests;
pub mod server_list;
pub mod settings;
mod stream;
mod stream_holds;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parsec_backend_abi::NET_Node;

use crate::error::{ErrorCode, NetError, NetResult};
use crate::game::GameInterface;
use crate::packet_api::{loader, Backend, BackendSpec, Datagram, PacketLayer};
use crate::protocol::{ClientProtocol, ProtocolKind};
pub use settings::NetSettings;

/// Longest node text accepted by `resolve_node`.
pub const MAX_NODE_TEXT: usize = 255;

/// Counters of bad input the subsystem refused (shown by `status`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputErrors {
    pub console_lines: u64,
    pub node_texts: u64,
    pub datagrams_refused: u64,
    /// Game-protocol datagrams that arrived while no protocol was active.
    pub game_packets_without_protocol: u64,
}

/// One networking instance.
pub struct Subsystem {
    packets: PacketLayer,
    /// `net.<backend>.<key> value` settings, by backend name.
    backend_options: BTreeMap<String, BTreeMap<String, String>>,
    /// The active backend's options as text (its name and the text), built once and shared:
    /// the frame loop passes it on every call, so it must not be rebuilt every frame.
    options_cache: Option<(String, std::sync::Arc<str>)>,
    protocol_kind: ProtocolKind,
    protocol: Option<Box<dyn ClientProtocol>>,
    settings: NetSettings,
    game: GameInterface,
    /// Each slot's remote player (token) and ship state as the lookups showed them after the
    /// last frame (`take_protocol_output`): a player leaving is shown with this state until the
    /// game polls its PlayerDisconnected, the state a recording holds last for it.
    shown_states: [Option<(u32, crate::rmev::ShipState)>; crate::rmev::MAX_SLOTS],
    /// The player table's generation `shown_states` was copied at (None: no session).
    shown_generation: Option<u64>,
    input_errors: InputErrors,
    /// A console line's wait left to its caller (`NET_ConsoleExec`'s `servers`).
    console_waits: ConsoleWaits,
    started: Instant,
    /// Where the last `connect` went (None: broadcast discovery), to connect again after a
    /// backend switch.
    last_target: Option<String>,
    /// The TCP connection of a client-server protocol.
    stream: Option<stream::LineStream>,
    /// Connections the protocol closed whose last lines wait for `net.sim` (see `drive_stream`),
    /// and when they are given up.
    closing_streams: Vec<(stream::LineStream, Instant)>,
    /// What the connection brought while `net.sim` held datagrams that came before it.
    incoming_hold: stream_holds::IncomingHold,
    /// What a mesh session left for the next one across a backend switch (see
    /// `session::resume`).
    carry_resume: Option<crate::session::ResumeState>,
    transmit_buf: Vec<u8>,
    /// The masterservers' server list (`servers`, `NET_FetchServerList`).
    server_list: server_list::ServerListClient,
}

impl Subsystem {
    /// A new instance with the UDP backend selected (opened on first use) if it can be found,
    /// and the peer-to-peer protocol selected.
    pub fn new() -> Subsystem {
        let mut sub = Subsystem {
            packets: PacketLayer::new(),
            backend_options: BTreeMap::new(),
            options_cache: None,
            protocol_kind: ProtocolKind::Unselected,
            protocol: None,
            settings: NetSettings::default(),
            game: GameInterface::default(),
            shown_states: [None; crate::rmev::MAX_SLOTS],
            shown_generation: None,
            input_errors: InputErrors::default(),
            console_waits: ConsoleWaits::default(),
            started: Instant::now(),
            last_target: None,
            stream: None,
            closing_streams: Vec::new(),
            incoming_hold: stream_holds::IncomingHold::default(),
            carry_resume: None,
            transmit_buf: vec![0; 65_536],
            server_list: server_list::ServerListClient::default(),
        };
        match loader::load(&BackendSpec::Name("udp".into())) {
            Ok(backend) => sub.packets.select(backend),
            Err(err) => log::warn!("default backend udp not available: {err}"),
        }
        if let Err(err) = sub.select_protocol(ProtocolKind::Peer, Instant::now()) {
            log::warn!("default protocol: {err}");
        }
        sub
    }

    // ----- getters ---------------------------------------------------------------------------

    /// The protocol bound now (`net.subsys`).
    pub fn protocol(&self) -> ProtocolKind {
        self.protocol_kind
    }

    /// The protocol module, if one is bound.
    pub fn protocol_module(&self) -> Option<&dyn ClientProtocol> {
        self.protocol.as_deref()
    }

    pub fn settings(&self) -> &NetSettings {
        &self.settings
    }

    pub fn settings_mut(&mut self) -> &mut NetSettings {
        &mut self.settings
    }

    /// Give the game in progress or the connect under way, if any, the current send frequency
    /// and receive rate (`net.sendfreq`, `net.rate` typed in a game), also for the sessions it
    /// starts by itself later (see `ClientProtocol::set_rates`). Returns whether there was a
    /// game.
    pub fn apply_rates_to_game(&mut self) -> bool {
        let interval = std::time::Duration::from_secs(1) / self.settings.send_hz.max(1);
        let rate = self.settings.rate;
        match self.protocol.as_mut() {
            Some(protocol) => {
                protocol.set_rates(interval, rate);
                protocol.session().is_some()
            }
            None => false,
        }
    }

    pub fn game(&self) -> &GameInterface {
        &self.game
    }

    pub fn game_mut(&mut self) -> &mut GameInterface {
        &mut self.game
    }

    pub fn packets(&self) -> &PacketLayer {
        &self.packets
    }

    /// The latest server list and the fetch renewing it.
    pub fn server_list(&self) -> &server_list::ServerListClient {
        &self.server_list
    }

    pub fn input_errors(&self) -> &InputErrors {
        &self.input_errors
    }

    pub fn uptime(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.started)
    }

    pub fn backend(&self) -> NetResult<&Arc<Backend>> {
        self.packets.backend().ok_or_else(|| {
            NetError::new(
                ErrorCode::NoBackend,
                "no packet backend selected (use net.api udp)",
            )
        })
    }

    /// The `key=value` option lines for a backend.
    pub fn backend_options_text(&self, backend_name: &str) -> String {
        self.backend_options
            .get(backend_name)
            .map(|opts| opts.iter().map(|(k, v)| format!("{k}={v}\n")).collect())
            .unwrap_or_default()
    }

    pub fn backend_options(&self) -> &BTreeMap<String, BTreeMap<String, String>> {
        &self.backend_options
    }

    /// The active backend's options text (empty without a backend); cached until an option
    /// changes or another backend becomes active.
    fn current_options(&mut self) -> std::sync::Arc<str> {
        let name = self.packets.backend().map_or("", |b| b.name());
        match &self.options_cache {
            Some((cached, text)) if cached == name => std::sync::Arc::clone(text),
            _ => {
                let name = name.to_string();
                let text: std::sync::Arc<str> = self.backend_options_text(&name).into();
                self.options_cache = Some((name, std::sync::Arc::clone(&text)));
                text
            }
        }
    }

    // ----- packet API ------------------------------------------------------------------------

    /// Count a console line refused before it reached the console (too long, not UTF-8).
    pub fn note_refused_console_line(&mut self) {
        self.input_errors.console_lines += 1;
    }

    /// Count a node text refused before it reached the backend (too long, not UTF-8).
    pub fn note_refused_node_text(&mut self) {
        self.input_errors.node_texts += 1;
    }

    pub fn resolve_node(&mut self, text: &str) -> NetResult<NET_Node> {
        let result = self.resolve_node_inner(text);
        if result.is_err() {
            self.input_errors.node_texts += 1;
        }
        result
    }

    fn resolve_node_inner(&self, text: &str) -> NetResult<NET_Node> {
        if text.len() > MAX_NODE_TEXT {
            return Err(NetError::new(
                ErrorCode::TooLarge,
                format!(
                    "node text of {} bytes is longer than {MAX_NODE_TEXT}",
                    text.len()
                ),
            ));
        }
        self.backend()?.parse_node(text, self.packets.port())
    }

    pub fn print_node(&self, node: &NET_Node) -> NetResult<String> {
        self.backend()?.print_node(node)
    }

    pub fn compare_nodes(&self, a: &NET_Node, b: &NET_Node) -> NetResult<std::cmp::Ordering> {
        Ok(self.backend()?.compare_nodes(a, b))
    }

    /// This instance's node on the primary network (opens the socket if needed).
    pub fn local_node(&mut self) -> NetResult<NET_Node> {
        let options = self.current_options();
        self.packets.socket(&options)?.local_node(None)
    }

    pub fn send_datagram(&mut self, to: &NET_Node, data: &[u8]) -> NetResult<()> {
        let options = self.current_options();
        let result = self.packets.send(to, data, &options);
        if result.is_err() {
            self.input_errors.datagrams_refused += 1;
        }
        result
    }

    /// The next datagram for the game (not for the game protocol), copied into `buf`.
    /// A datagram that does not fit stays queued and `BufferTooSmall` says how big it is.
    /// Game-protocol datagrams met on the way go to the protocol.
    pub fn receive_datagram(&mut self, buf: &mut [u8]) -> NetResult<Option<(NET_Node, usize)>> {
        let options = self.current_options();
        let datagram = loop {
            let Some(datagram) = self.packets.receive(&options)? else {
                return Ok(None);
            };
            if !crate::wire::is_game_packet(&datagram.data) {
                break datagram;
            }
            self.route_to_protocol(Instant::now(), datagram);
        };
        if datagram.data.len() > buf.len() {
            let len = datagram.data.len();
            self.packets.unreceive(datagram);
            return Err(NetError::new(
                ErrorCode::BufferTooSmall,
                format!(
                    "the next datagram has {len} bytes; the buffer holds {}",
                    buf.len()
                ),
            ));
        }
        let Datagram { node, data } = datagram;
        buf[..data.len()].copy_from_slice(&data);
        Ok(Some((node, data.len())))
    }

    /// Wait up to `timeout` for a datagram (used by frame loops that sleep).
    pub fn wait(&mut self, timeout: Duration) -> NetResult<bool> {
        let options = self.current_options();
        self.packets.wait(timeout, &options)
    }

    // ----- backend and port switching -------------------------------------------------------

    /// `net.api SPEC`: load and switch to another backend; on failure the current one stays.
    pub fn switch_backend(&mut self, spec_text: &str) -> NetResult<String> {
        let backend = self.backend_for_switch(spec_text)?;
        self.switch_to_backend(backend)
    }

    /// Load the backend `spec_text` names and check it can serve the selected protocol; a
    /// failure is counted and says which backend stays.
    pub(crate) fn backend_for_switch(&mut self, spec_text: &str) -> NetResult<Arc<Backend>> {
        let keeping = self.keeping_text();
        let loaded = BackendSpec::parse(spec_text).and_then(|spec| loader::load(&spec));
        let backend = match loaded {
            Ok(backend) => backend,
            Err(e) => {
                self.packets.note_failed_switch();
                return Err(NetError::new(e.code, format!("{}; {keeping}", e.message)));
            }
        };
        if !backend.supports_client_server() && self.protocol_kind.is_client_server() {
            self.packets.note_failed_switch();
            return Err(NetError::new(
                ErrorCode::Unsupported,
                format!(
                    "{} supports only the peer-to-peer protocol, and {} is selected; {keeping}",
                    backend.name(),
                    self.protocol_kind
                ),
            ));
        }
        Ok(backend)
    }

    /// What stays active when a switch is refused: "keeping udp" (or "no backend active").
    fn keeping_text(&self) -> String {
        match self.packets.backend() {
            Some(b) => format!("keeping {}", b.name()),
            None => "no backend active".to_string(),
        }
    }

    /// Open and close at once a socket of `backend` on any free port, with the options it would
    /// open with: a switch in a game tries this before it leaves the game, so a backend whose
    /// `open` fails (a missing privilege, an address this host lacks, a broken library) is
    /// refused like one that cannot be loaded, and the game goes on. A failure is counted as a
    /// failed switch and says which backend stays.
    pub(crate) fn try_open_for_switch(&mut self, backend: &Arc<Backend>) -> NetResult<()> {
        let options = self.backend_options_text(backend.name());
        match backend.open(0, &options) {
            Ok(socket) => {
                drop(socket);
                Ok(())
            }
            Err(e) => {
                self.packets.note_failed_switch();
                Err(NetError::new(
                    e.code,
                    format!("{}; {}", e.message, self.keeping_text()),
                ))
            }
        }
    }

    /// Close the socket of the active backend and open one of `backend` on the same port.
    pub(crate) fn switch_to_backend(&mut self, backend: Arc<Backend>) -> NetResult<String> {
        let new_options = self.backend_options_text(backend.name());
        let port = self.packets.port();
        self.packets.switch(backend, port, &new_options)
    }

    /// `net.sim`: the link conditioner on the send and receive paths.
    pub fn set_conditions(&mut self, conditions: crate::packet_api::Conditions) {
        self.packets.set_conditions(conditions);
    }

    /// `net.port N`.
    pub fn set_port(&mut self, port: u16) -> NetResult<String> {
        let options = self.current_options();
        self.packets.set_port(port, &options)
    }

    /// `net.<backend>.<key> value`: store a backend option (applied when that backend opens).
    pub fn set_backend_option(
        &mut self,
        backend: &str,
        key: &str,
        value: &str,
    ) -> NetResult<String> {
        let valid = |s: &str| {
            !s.is_empty()
                && s.len() <= 63
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        if !valid(backend) || !valid(key) {
            return Err(NetError::invalid(format!(
                "'net.{backend}.{key}' is not a backend option name"
            )));
        }
        if value.len() > 255 || value.chars().any(|c| c.is_control()) {
            return Err(NetError::invalid(
                "option values are at most 255 printable characters",
            ));
        }
        let active =
            self.packets.backend().is_some_and(|b| b.name() == backend) && self.packets.is_open();
        // `""` (or `''`): back to the backend's default, as if never set.
        if value == "\"\"" || value == "''" {
            let removed = self
                .backend_options
                .get_mut(backend)
                .and_then(|o| o.remove(key))
                .is_some();
            self.options_cache = None;
            let what = if removed { "cleared" } else { "is not set" };
            return Ok(if active && removed {
                format!("net.{backend}.{key} {what}: the backend's default (applies when {backend} is reopened: net.api {backend})")
            } else {
                format!("net.{backend}.{key} {what}: the backend's default")
            });
        }
        self.backend_options
            .entry(backend.to_string())
            .or_default()
            .insert(key.to_string(), value.to_string());
        self.options_cache = None;
        Ok(if active {
            format!("net.{backend}.{key} = {value} (applies when {backend} is reopened: net.api {backend})")
        } else {
            format!("net.{backend}.{key} = {value}")
        })
    }

    // ----- console ---------------------------------------------------------------------------

    /// Run one console line (several commands may be separated by ';').
    pub fn console_exec(&mut self, line: &str, now: Instant) -> crate::console::ConsoleReply {
        let reply = crate::console::exec(self, line, now);
        self.count_console_reply(&reply);
        reply
    }

    /// [`console_exec`](Self::console_exec) for a caller that waits for the network without
    /// holding the subsystem (see [`crate::console::exec_deferring_waits`]).
    pub fn console_exec_deferring_waits(
        &mut self,
        line: &str,
        now: Instant,
    ) -> crate::console::ConsoleStep {
        let step = crate::console::exec_deferring_waits(self, line, now);
        self.count_console_step(step)
    }

    /// The next round of a line [`console_exec_deferring_waits`](Self::console_exec_deferring_waits)
    /// left waiting.
    pub fn console_continue_wait(
        &mut self,
        wait: crate::console::ConsoleWait,
        now: Instant,
    ) -> crate::console::ConsoleStep {
        let step = crate::console::continue_wait(self, wait, now);
        self.count_console_step(step)
    }

    /// A finished line's reply counts like [`console_exec`](Self::console_exec)'s.
    fn count_console_step(
        &mut self,
        step: crate::console::ConsoleStep,
    ) -> crate::console::ConsoleStep {
        if let crate::console::ConsoleStep::Done(reply) = &step {
            self.count_console_reply(reply);
        }
        step
    }

    fn count_console_reply(&mut self, reply: &crate::console::ConsoleReply) {
        if reply.result.is_err() {
            self.input_errors.console_lines += 1;
        }
    }

    /// Whether the running console line's waits are left to its caller.
    pub(crate) fn console_waits_deferred(&self) -> bool {
        self.console_waits.deferred
    }

    pub(crate) fn set_console_waits_deferred(&mut self, deferred: bool) {
        self.console_waits.deferred = deferred;
    }

    /// The running console line waits, from `started`, for its caller to continue it.
    pub(crate) fn defer_console_wait(&mut self, started: Instant) {
        self.console_waits.waiting_since = Some(started);
    }

    pub(crate) fn take_deferred_console_wait(&mut self) -> Option<Instant> {
        self.console_waits.waiting_since.take()
    }

    /// Finish a recording, leave the game (telling the others), close the backend socket
    /// (flushing queued datagrams first). The recording ends first: the game never polls the
    /// DISCONNECTED (or anything else) that leaving produces, so a demo must not hold it.
    pub fn shutdown(&mut self) {
        let now = Instant::now();
        if self.game.is_recording() {
            let _ = self.game.stop(now);
        }
        if self.protocol.as_ref().is_some_and(|p| p.is_active()) {
            let _ = self.disconnect(now);
            self.maintain(now);
        }
        self.packets.close();
        self.flush_streams_now();
    }
}

/// See [`Subsystem::console_exec_deferring_waits`].
#[derive(Default)]
struct ConsoleWaits {
    /// The running line's caller waits itself.
    deferred: bool,
    /// The running line left a wait, begun then.
    waiting_since: Option<Instant>,
}

impl Default for Subsystem {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Subsystem {
    fn drop(&mut self) {
        self.shutdown();
    }
}
