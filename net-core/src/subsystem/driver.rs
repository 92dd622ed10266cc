//! The protocol driver: binds the selected protocol module to the packet layer and the game
//! interface. It does the I/O the sans-IO protocol asks for (each `maintain` call receives,
//! runs timers, refreshes time-critical positions, sends) and routes what comes out: events to
//! the game (and to a demo being recorded), datagrams to the backend.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::stream::LineStream;
use super::Subsystem;
use crate::error::{ErrorCode, NetError, NetResult};
use crate::game::Departing;
use crate::master::resolve::split_host_port;
use crate::packet_api::{Datagram, DEFAULT_CLIENT_PORT};
use crate::protocol::peer::PeerProtocol;
use crate::protocol::server_client::{ServerClient, GAMESERVER_TCP_PORT, SLOTSERVER_PORT};
use crate::protocol::{
    no_protocol_error, not_in_game_error, ClientProtocol, ConnectParams, NameUpdate, NodeOrder,
    NodeResolver, ProtocolKind, StreamCommand, StreamEvent,
};
use crate::rmev::{ChatText, PlayerName, RemoteEvent, ShipState, MAX_SLOTS};
use crate::session::{GameEvent, Session};
use crate::Node;

/// Most datagrams one `maintain` call reads (the rest wait for the next frame).
const MAX_RECEIVE_PER_FRAME: usize = 1024;
/// How long a connection the protocol closed may take to get its last lines out (a server
/// that stops reading): then it is dropped as it is.
const CLOSING_STREAM_LIMIT: Duration = Duration::from_secs(10);

impl Subsystem {
    // ----- protocol selection and calls -------------------------------------------------------

    /// `net.subsys NAME`: bind another protocol, disconnecting first if connected.
    pub fn select_protocol(&mut self, kind: ProtocolKind, now: Instant) -> NetResult<String> {
        if kind.is_client_server() {
            if let Some(backend) = self.packets.backend() {
                if !backend.supports_client_server() {
                    return Err(NetError::new(
                        ErrorCode::Unsupported,
                        format!(
                            "{} supports only the peer-to-peer protocol; switch the packet backend first (net.api udp)",
                            backend.name()
                        ),
                    ));
                }
            }
        }
        if kind == self.protocol_kind && self.protocol.is_some() {
            return Ok(format!("protocol {kind} is already selected"));
        }
        let module: Box<dyn ClientProtocol> = match kind {
            ProtocolKind::Peer => Box::new(PeerProtocol::new(self.settings.peer)),
            ProtocolKind::SlotServer | ProtocolKind::GameServer => {
                Box::new(ServerClient::new(kind))
            }
            ProtocolKind::Unselected => {
                return Err(NetError::invalid("choose peer, slotserver or gameserver"))
            }
        };
        let mut line = self.leave_first(now, &format!("switching protocol to {kind}"))?;
        self.protocol = Some(module);
        self.protocol_kind = kind;
        // What a backend switch left for its reconnect (which never came) is not for a game of
        // another protocol: the game connects again itself, as a newcomer.
        self.carry_resume = None;
        line.push_str(&format!("protocol {kind} selected"));
        Ok(line)
    }

    fn protocol_mut(&mut self, call: &str) -> NetResult<&mut Box<dyn ClientProtocol>> {
        self.protocol
            .as_mut()
            .ok_or_else(|| no_protocol_error(call))
    }

    fn session_mut(&mut self, call: &str) -> NetResult<&mut Session> {
        self.protocol_mut(call)?
            .session_mut()
            .ok_or_else(|| not_in_game_error(call))
    }

    /// `connect [HOST[:PORT]]`: start connecting with the bound protocol. The outcome arrives as
    /// an event (Connected, or Error with the reason).
    pub fn connect(&mut self, now: Instant, target: Option<&str>) -> NetResult<String> {
        if self.protocol.is_none() {
            return Err(no_protocol_error("connect"));
        }
        if self.protocol.as_ref().is_some_and(|p| p.is_active()) {
            return Err(NetError::new(
                ErrorCode::State,
                "already connected or connecting (disconnect first)",
            ));
        }
        if self.game.shows_playback() {
            // The game would not see the live game's events (see `start_playback`).
            let what = if self.game.is_playing() {
                "a demo is playing (stop first: while it plays the game sees only the demo)"
            } else {
                "a finished demo is still shown (stop first: until then the game sees only the demo)"
            };
            return Err(NetError::new(ErrorCode::State, what));
        }
        if self.protocol_kind == ProtocolKind::Peer {
            // A fresh module, so the current net.peer.* timings apply.
            self.protocol = Some(Box::new(PeerProtocol::new(self.settings.peer)));
        }
        let backend = Arc::clone(self.backend()?);
        let client_server = self.protocol_kind.is_client_server();
        let server = if client_server {
            let text = target
                .map(str::to_string)
                .or_else(|| self.settings.server.clone())
                .ok_or_else(|| {
                    NetError::invalid(
                        "no server set (net.server HOST[:PORT] or connect HOST[:PORT])",
                    )
                })?;
            let default_port = if self.protocol_kind == ProtocolKind::GameServer {
                GAMESERVER_TCP_PORT
            } else {
                SLOTSERVER_PORT
            };
            Some(split_host_port(&text, default_port)?)
        } else {
            None
        };
        let target_node = match target {
            Some(text) if !client_server => Some(backend.parse_node(text, DEFAULT_CLIENT_PORT)?),
            _ => None,
        };
        let options = self.current_options();
        let configured = self.packets.port();
        let socket = self.packets.socket(&options)?;
        // Discovery reaches the peers' port: the configured one, or the design's default.
        let discovery_port = if configured == 0 {
            DEFAULT_CLIENT_PORT
        } else {
            configured
        };
        let broadcast = if backend.supports_broadcast() && !client_server {
            socket.broadcast_node(discovery_port).ok()
        } else {
            None
        };
        let towards = target_node.or(broadcast);
        let local_node = socket.local_node(towards.as_ref())?;
        let game_port = socket.bound_port().unwrap_or(configured);
        let order_backend = Arc::clone(&backend);
        let order: NodeOrder = Arc::new(move |a, b| order_backend.compare_nodes(a, b));
        let host_backend = Arc::clone(&backend);
        let same_host: crate::session::NodeSameHost =
            Arc::new(move |a, b| host_backend.same_host(a, b));
        let params = ConnectParams {
            target: target_node,
            broadcast,
            local_node,
            name: *self.game.name(),
            token: crate::random::nonzero_u32(),
            order,
            same_host,
            session: self.settings.session_config(backend.max_payload()),
            server: server.clone(),
            game_port,
            resolve: resolver(&backend),
            resume: self.carry_resume.take().map(Arc::new),
        };
        self.protocol_mut("connect")?.connect(now, params)?;
        self.last_target = target.map(str::to_string);
        Ok(match (server, target) {
            (Some((host, port)), _) => {
                let at = crate::master::resolve::join_host_port(&host, port);
                format!("connecting to the {} at {at}", self.protocol_kind)
            }
            (None, Some(text)) => format!("connecting to {text}"),
            (None, None) => "looking for other players (broadcast)".to_string(),
        })
    }

    /// `disconnect`.
    pub fn disconnect(&mut self, now: Instant) -> NetResult<()> {
        self.disconnect_reason(now, "disconnected")
    }

    /// Events the game queued since the last frame (a last chat line, a kill) go out in one
    /// last packet before the protocol leaves: they were accepted, and leaving at once would
    /// drop them unsent. (Not retransmitted: the player is gone.)
    fn disconnect_reason(&mut self, now: Instant, reason: &str) -> NetResult<()> {
        if let Some(session) = self.protocol.as_mut().and_then(|p| p.session_mut()) {
            // Events waiting for a rename's answer go in that last packet too, without the name.
            if let Err(err) = session.release_rename_holds() {
                log::warn!("disconnect: {err}");
            }
            session.release_resume_holds_on_leaving();
            let options = self.current_options();
            self.send_frame(now, &options);
            self.send_farewell_copies(now, &options);
        }
        self.protocol_mut("disconnect")?.disconnect(now, reason)?;
        self.take_protocol_output(now);
        Ok(())
    }

    /// After the last packets of a player that leaves: copies of what its links still owe
    /// (`Session::farewell_copies`), so one lost datagram does not cost its last events.
    fn send_farewell_copies(&mut self, now: Instant, options: &str) {
        let Some(session) = self.protocol.as_mut().and_then(|p| p.session_mut()) else {
            return;
        };
        let packets = &mut self.packets;
        let max = packets
            .backend()
            .map_or(0, |b| b.max_payload())
            .min(self.transmit_buf.len());
        session.farewell_copies(now, &mut self.transmit_buf[..max], &mut |to, bytes| {
            if let Err(err) = packets.send(&to, bytes, options) {
                log::debug!("disconnect: farewell copy: {err}");
            }
        });
        if let Err(err) = packets.flush(options) {
            log::debug!("disconnect: flush: {err}");
        }
    }

    /// Leave the game for a backend switch (which connects again). A reconnect still under way
    /// (an earlier switch's) ends without a second DISCONNECTED: the game was told it left, and
    /// has not been told it is back.
    fn leave_for_switch(&mut self, now: Instant, reason: &str) -> NetResult<()> {
        let in_game = self.session().is_some();
        self.protocol_mut("disconnect")?.disconnect(now, reason)?;
        if let Some(protocol) = self.protocol.as_mut().filter(|_| !in_game) {
            while let Some(event) = protocol.poll_event() {
                if !matches!(event, GameEvent::Disconnected { .. }) {
                    self.game.deliver(now, event);
                }
            }
        }
        self.take_protocol_output(now);
        Ok(())
    }

    /// `join`: returns whether the player joined now. Joining while joined changes nothing
    /// and is no error: a backend switch keeps the player joined, and a game that joins again
    /// on the CONNECTED after it must not be refused.
    pub fn join(&mut self, _now: Instant) -> NetResult<bool> {
        let session = self.session_mut("join")?;
        if session.is_joined() {
            return Ok(false);
        }
        session.join().map(|()| true)
    }

    pub fn unjoin(&mut self, flag: u8, _now: Instant) -> NetResult<()> {
        self.session_mut("unjoin")?.unjoin(flag)
    }

    /// Tell the others the local name (RE_PLAYERNAME): at once in a peer-to-peer game; through
    /// a slot or game server once it accepted the name (a refused name is put back, see
    /// `take_protocol_output`).
    pub fn update_name(&mut self, _now: Instant) -> NetResult<NameUpdate> {
        let name = *self.game.name();
        let result = self.protocol_mut("update name")?.update_name(name);
        if result
            .as_ref()
            .is_err_and(|e| e.code == ErrorCode::InvalidArgument)
        {
            // A name the server could not take: the one in use stays, as after its refusal.
            if let Some(kept) = self
                .protocol
                .as_mut()
                .and_then(|p| p.session_mut())
                .map(|s| *s.my_name())
            {
                self.game.set_name(kept);
            }
        }
        result
    }

    /// Set the local player name (at most 31 bytes, no NUL); sent by `update_name`.
    pub fn set_player_name(&mut self, name: &str) -> NetResult<()> {
        let name = PlayerName::new(name.as_bytes()).map_err(|e| {
            NetError::new(
                ErrorCode::TooLarge,
                format!("player name {e} (at most 31 bytes, no NUL)"),
            )
        })?;
        if name.is_empty() {
            return Err(NetError::invalid("player name is empty"));
        }
        self.game.set_name(name);
        Ok(())
    }

    /// Set the local ship state (sent at the send frequency while it changes and joined).
    pub fn set_local_state(&mut self, state: ShipState) -> NetResult<()> {
        if !state.is_finite() {
            return Err(NetError::invalid(
                "ship state has a non-finite number (NaN or infinity)",
            ));
        }
        self.game.set_local_state(state);
        if let Some(session) = self.protocol.as_mut().and_then(|p| p.session_mut()) {
            session.set_local_state(state);
        }
        Ok(())
    }

    /// Queue a remote event for the others (`NET_RmEv*`).
    pub fn queue_remote_event(&mut self, event: RemoteEvent) -> NetResult<()> {
        self.queue_event_for("send event", event)
    }

    /// Queue `event` for the others on behalf of `call` (which an error names).
    fn queue_event_for(&mut self, call: &str, event: RemoteEvent) -> NetResult<()> {
        crate::wire::validate_parts(event.is_reliable().then_some(1), &event)
            .map_err(|e| NetError::invalid(format!("remote event refused: {e}")))?;
        let object = event
            .object_id()
            .map(|id| (id, !matches!(event, RemoteEvent::KillObject { .. })));
        let queued = self.session_mut(call)?.queue_event(event);
        // The session took the object's owner in even if its queue was full: so does a demo.
        if let Some((object_id, created)) = object {
            self.game.note_own_object(object_id, created);
        }
        queued
    }

    /// `say TEXT`: RE_SENDTEXT.
    pub fn say(&mut self, text: &str) -> NetResult<()> {
        let text = ChatText::new(text.as_bytes()).map_err(|e| {
            NetError::new(
                ErrorCode::TooLarge,
                format!("chat text {e} (at most 255 bytes)"),
            )
        })?;
        self.queue_event_for("say", RemoteEvent::SendText(text))
    }

    /// `net.api SPEC` while the game runs: if connected, leave the game, switch the backend,
    /// and connect again over the new one (the game sees a disconnect and a connect).
    pub fn switch_backend_in_session(&mut self, spec: &str, now: Instant) -> NetResult<String> {
        let connected = self.protocol.as_ref().is_some_and(|p| p.is_active());
        if !connected {
            return self.switch_backend(spec);
        }
        // A backend that cannot be loaded (a typo, a missing library), cannot serve this
        // protocol or cannot open a socket is refused before the game is left.
        let backend = self.backend_for_switch(spec)?;
        self.try_open_for_switch(&backend)?;
        let target = self.last_target.clone();
        // Acknowledgements already in the socket count: what they cover is not sent again.
        // What those packets delivered goes to the game now, before the session ends (the
        // others are told it arrived, so it is not coming again).
        self.receive_for_protocol(now);
        if let Some(session) = self.protocol.as_mut().and_then(|p| p.session_mut()) {
            // Relayed events whose player is not seated yet go to the game now, not with the
            // session: the server counts them as delivered.
            session.release_early_events();
            // Events waiting for a rename's answer are carried on, without the name (the new
            // session's server is asked again when the game connects with its name).
            if let Err(err) = session.release_rename_holds() {
                log::warn!("net.api: {err}");
            }
        }
        self.take_protocol_output(now);
        // What the game queued that the others have not delivered goes out in the session
        // found over the new backend: per player (mesh) or to the server (star), exactly what
        // the other side misses (see `session::resume`).
        // A reconnect still under way (an earlier switch's) hands on what it was given, and its
        // token: a player may have seated it already, and must not keep that seat as a ghost.
        self.carry_resume = self
            .protocol
            .as_ref()
            .and_then(|p| p.resume_state_for_next());
        self.leave_for_switch(now, &format!("switching packet backend to {spec}"))?;
        self.maintain(now);
        let switched = self.switch_to_backend(backend);
        // Connect again over whichever backend is active now (the old one if the switch failed).
        let (usable, by_broadcast) = self.target_for_reconnect(target.clone());
        let reconnect = self.connect(now, usable.as_deref());
        if usable.is_none() {
            // Kept for a later switch back to a backend that reads it.
            self.last_target = target;
        }
        match (switched, reconnect) {
            (Ok(line), Ok(again)) => Ok(format!("{line}; left the game and {again}{by_broadcast}")),
            (Ok(line), Err(err)) => Err(NetError::new(
                err.code,
                format!("{line}; but could not connect again: {err}"),
            )),
            (Err(err), _) => Err(err),
        }
    }

    /// The address to connect to again after a backend switch: the game's last `connect`
    /// address, unless the peer-to-peer game was found there over another kind of backend and the
    /// active one cannot read it (a UDP address after `net.api ipx`): then the others are looked
    /// for by broadcast, as `connect` without an address does (the address is kept for a switch
    /// back), and the second value says why for the reply (empty otherwise). A server address is kept: it is read by the TCP connection,
    /// not by the backend.
    fn target_for_reconnect(&self, target: Option<String>) -> (Option<String>, String) {
        let Some(text) = target else {
            return (None, String::new());
        };
        if self.protocol_kind != ProtocolKind::Peer {
            return (Some(text), String::new());
        }
        let Ok(backend) = self.backend() else {
            return (Some(text), String::new());
        };
        match backend.parse_node(&text, DEFAULT_CLIENT_PORT) {
            Ok(_) => (Some(text), String::new()),
            Err(err) => (None, format!(", since {err}")),
        }
    }

    /// `record FILE`. Begun in a game, the recording starts with what the game knows of it
    /// (the players, their names, join status and ships, the objects' owners; see
    /// `GameInterface::record_snapshot`), so a played demo shows the game as it was.
    ///
    /// What the protocol has for the game goes to it first, unrecorded: it happened before the
    /// recording, and the snapshot, taken from the session, already holds what it did. Remote
    /// ship states are taken for the recording from here on, not only from the next frame.
    pub fn start_recording(&mut self, path: &Path, now: Instant) -> NetResult<String> {
        if !self.game.is_recording() && !self.game.is_playing() {
            self.take_protocol_output(now);
        }
        let session = self.protocol.as_ref().and_then(|p| p.session());
        let line = self.game.start_recording(path, now, session)?;
        if let Some(session) = self.protocol.as_mut().and_then(|p| p.session_mut()) {
            session.set_state_tap(true);
        }
        Ok(line)
    }

    /// `play FILE`. In a game (or while connecting) the game is left first, and the reply says
    /// so: while a demo plays the game sees only the demo, so staying would leave the player in
    /// the others' game while its events went unseen. The game polls what it had not polled of
    /// the live game and its DISCONNECTED first, as after `disconnect`, and then the demo's
    /// events exactly as recorded (`GameInterface::begin_playback`). A file that cannot be
    /// played is refused before the game is left.
    pub fn start_playback(&mut self, path: &Path, now: Instant) -> NetResult<String> {
        let (player, line) = self.game.open_playback(path, now)?;
        let left = self.leave_first(now, "left the game to play a demo")?;
        self.game.begin_playback(player);
        Ok(left + &line)
    }

    /// Leave the game (or stop connecting) before a command that needs it left (`net.subsys`,
    /// `play`), and say so: "disconnected from the peer game first; " or "stopped connecting
    /// (peer) first; ", or nothing when there was no game.
    fn leave_first(&mut self, now: Instant, reason: &str) -> NetResult<String> {
        if !self.protocol.as_ref().is_some_and(|p| p.is_active()) {
            return Ok(String::new());
        }
        let kind = self.protocol_kind;
        let in_game = self.session().is_some();
        self.disconnect_reason(now, reason)?;
        self.maintain(now);
        Ok(if in_game {
            format!("disconnected from the {kind} game first; ")
        } else {
            format!("stopped connecting ({kind}) first; ")
        })
    }

    // ----- the frame --------------------------------------------------------------------------

    /// Once per frame: send, receive, run timers, send what that made due; then hand events to
    /// the game.
    ///
    /// Sending comes first, so what the game queued since the last frame (its answers to the
    /// events it polled then) leaves without waiting behind a receive system call, carrying the
    /// acknowledgements owed for what arrived in the last frame. After receiving, what the
    /// protocol must say at once (replies, events released by a resumption) goes out in the
    /// same frame; an acknowledgement alone waits for the next frame and the answers the game
    /// queues in between (`LinkConfig::ack_with_next_frame`), so a game that answers in its
    /// next frame sends one packet, not an acknowledgement and then its answer.
    ///
    /// A frame in which nothing arrived, no timer ran and the stream was quiet skips the second
    /// pass: the protocol is as the first pass left it at the same `now`, so nothing is due.
    ///
    /// While recording, the frame starts by recording what the game changed of its own since
    /// the last one (name, ship state, objects), so the demo's lookups keep up with them, and
    /// ends by handing the frame's records to the file (a game killed later leaves them there).
    pub fn maintain(&mut self, now: Instant) {
        self.game.record_own_changes(now);
        let options = self.current_options();
        self.send_frame(now, &options);
        let mut changed = self.receive_with(now, &options) > 0;
        if let Some(protocol) = self.protocol.as_mut() {
            if protocol.poll_timeout().is_some_and(|t| t <= now) {
                protocol.handle_timeout(now);
                changed = true;
            }
        }
        changed |= self.drive_stream(now, &options);
        if changed {
            self.send_frame(now, &options);
        }
        self.take_protocol_output(now);
        if let Some(session) = self.protocol.as_mut().and_then(|p| p.session_mut()) {
            session.sample_rates(now);
        }
        if let Some(event) = self.server_list.maintain(now) {
            self.game.deliver(now, event);
        }
        self.game.advance_playback(now);
        self.game.flush_recording();
    }

    /// Give the session the game's state and object positions, then send every datagram due.
    fn send_frame(&mut self, now: Instant, options: &str) {
        if let Some(session) = self.protocol.as_mut().and_then(|p| p.session_mut()) {
            session.set_local_state(*self.game.local_state());
            if self.game.has_position_callback() {
                let game = &mut self.game;
                session.refresh_positions(&mut |id| game.position_of(id));
            }
        }
        self.send_transmits(now, options);
        if let Err(err) = self.packets.flush(options) {
            log::debug!("maintain: flush: {err}");
        }
    }

    fn send_transmits(&mut self, now: Instant, options: &str) {
        let Some(protocol) = self.protocol.as_mut() else {
            return;
        };
        let max = self
            .packets
            .backend()
            .map_or(0, |b| b.max_payload())
            .min(self.transmit_buf.len());
        while let Some((to, len)) = protocol.poll_transmit(now, &mut self.transmit_buf[..max]) {
            if let Err(err) = self.packets.send(&to, &self.transmit_buf[..len], options) {
                log::debug!("maintain: send: {err}");
            }
        }
    }

    /// Read what the socket holds (at most a frame's worth): game packets go to the protocol,
    /// the rest is kept for `NETs_ReceiveDatagram`.
    fn receive_for_protocol(&mut self, now: Instant) {
        let options = self.current_options();
        self.receive_with(now, &options);
    }

    /// Returns how many datagrams went to the protocol.
    fn receive_with(&mut self, now: Instant, options: &str) -> usize {
        let active = self.protocol.as_ref().is_some_and(|p| p.is_active());
        if !(self.packets.is_open() || active) {
            return 0;
        }
        let mut routed = 0;
        let protocol = &mut self.protocol;
        let input_errors = &mut self.input_errors;
        let mut take = |node: Node, data: &[u8]| {
            if !crate::wire::is_game_packet(data) {
                return false;
            }
            hand_to_protocol(protocol, input_errors, now, node, data);
            true
        };
        for _ in 0..MAX_RECEIVE_PER_FRAME {
            match self.packets.receive_offered(options, &mut take) {
                Ok(Some(true)) => routed += 1,
                Ok(Some(false)) => {}
                Ok(None) => break,
                Err(err) => {
                    log::debug!("receive: {err}");
                    break;
                }
            }
        }
        routed
    }

    /// Carry out the protocol's TCP commands and feed it what the connection did, twice, so what
    /// the protocol answers goes out in the same frame. Returns whether there was anything to
    /// carry out or feed.
    ///
    /// Before the server's lines, the datagrams that came before them: a server sends what it
    /// relays (and a player its last packet) before the line that says the player left, so a
    /// datagram that arrived after this frame's receive but before the line is read now, and
    /// the player's last events still come before its PLAYER_DISCONNECTED (and are looked up
    /// with its name). One more receive, only in a frame that got lines.
    ///
    /// `net.sim` delays datagrams, and a real path would delay the TCP lines with them: a line
    /// (or the close) waits for the datagrams the send path held when it was queued, so a
    /// player's `remove me` does not overtake its last events; what the connection brings waits
    /// for the datagrams the receive path held when it came (`stream_holds::IncomingHold`).
    pub(super) fn drive_stream(&mut self, now: Instant, options: &str) -> bool {
        let mut busy = !self.closing_streams.is_empty() && self.finish_closing_streams(now);
        for _ in 0..2 {
            while let Some(command) = self.protocol.as_mut().and_then(|p| p.poll_stream()) {
                busy = true;
                self.carry_out_stream_command(now, command);
            }
            if !self.closing_streams.is_empty() {
                busy |= self.finish_closing_streams(now);
            }
            if self.stream.is_none() && self.incoming_hold.is_empty() {
                return busy;
            }
            busy |= self.exchange_with_stream(now, options);
        }
        busy
    }

    /// One of the protocol's TCP commands (see `drive_stream`).
    #[inline(never)]
    fn carry_out_stream_command(&mut self, now: Instant, command: StreamCommand) {
        let send_path = self.packets.send_path_clear_at().filter(|t| *t > now);
        match command {
            StreamCommand::Connect { host, port } => {
                // What an earlier connection brought is not the new one's.
                self.incoming_hold.clear();
                match LineStream::connect(&host, port) {
                    Ok(stream) => self.stream = Some(stream),
                    Err(reason) => {
                        if let Some(protocol) = self.protocol.as_mut() {
                            protocol.handle_stream(now, StreamEvent::Closed { reason });
                        }
                    }
                }
            }
            StreamCommand::SendLine(line) => {
                if let Some(stream) = self.stream.as_mut() {
                    stream.send_line(&line);
                    if let Some(until) = send_path {
                        stream.hold_writes_until(until);
                    }
                }
            }
            StreamCommand::Close => {
                // The connection is the protocol's no more: it closes once its last lines are
                // out, and nothing it brings is fed to the protocol.
                self.incoming_hold.clear();
                if let Some(mut stream) = self.stream.take() {
                    if let Some(until) = send_path {
                        stream.hold_writes_until(until);
                    }
                    stream.close();
                    self.closing_streams
                        .push((stream, now + CLOSING_STREAM_LIMIT));
                }
            }
        }
    }

    /// Write to and read from the connection, and feed the protocol what it brought (or what
    /// waited for the receive path and is due now). Returns whether anything happened.
    #[inline(never)]
    fn exchange_with_stream(&mut self, now: Instant, options: &str) -> bool {
        let mut busy = false;
        let mut happened = Vec::new();
        if let Some(stream) = self.stream.as_mut() {
            stream.end_hold_if_due(now);
            if !stream.poll(&mut happened) {
                self.stream = None;
                busy = true;
            }
        }
        busy |= !happened.is_empty();
        if happened.iter().any(|e| matches!(e, StreamEvent::Line(_))) {
            self.receive_with(now, options);
        }
        if !happened.is_empty() || !self.incoming_hold.is_empty() {
            let receive_path = self.packets.receive_path_clear_at().filter(|t| *t > now);
            self.incoming_hold.take_in(&mut happened, receive_path);
            if let Some(released) = self.incoming_hold.take_due(now, receive_path) {
                // The datagrams that came before them are due: the protocol hears those first.
                self.receive_with(now, options);
                happened.splice(0..0, released);
            }
        }
        if let Some(protocol) = self.protocol.as_mut() {
            for event in happened {
                protocol.handle_stream(now, event);
            }
        }
        busy
    }

    /// Drive the connections the protocol closed until their last lines are out. Returns whether
    /// one finished.
    #[cold]
    fn finish_closing_streams(&mut self, now: Instant) -> bool {
        let before = self.closing_streams.len();
        let mut ignored = Vec::new();
        self.closing_streams.retain_mut(|(stream, give_up_at)| {
            stream.end_hold_if_due(now);
            ignored.clear();
            stream.poll(&mut ignored) && now < *give_up_at
        });
        self.closing_streams.len() != before
    }

    /// At shutdown: the lines still held go out now (the process is leaving; `net.sim` has
    /// handed on what it held), and each connection gets one last chance to write them.
    pub(super) fn flush_streams_now(&mut self) {
        let mut ignored = Vec::new();
        let closing = self.closing_streams.iter_mut().map(|(stream, _)| stream);
        for stream in self.stream.iter_mut().chain(closing) {
            stream.end_hold();
            stream.poll(&mut ignored);
        }
        self.closing_streams.clear();
    }

    /// A game-protocol datagram: to the protocol if one is active, else counted and dropped.
    pub(super) fn route_to_protocol(&mut self, now: Instant, datagram: Datagram) {
        hand_to_protocol(
            &mut self.protocol,
            &mut self.input_errors,
            now,
            datagram.node,
            &datagram.data,
        );
        self.packets.recycle(datagram.data);
    }

    /// Move the protocol's events (and, while recording, the state updates) to the game.
    pub(super) fn take_protocol_output(&mut self, now: Instant) {
        let Some(protocol) = self.protocol.as_mut() else {
            return;
        };
        // A name the server refused is not the player's: the one in use stays (unless the game
        // has chosen yet another since).
        while let Some(refusal) = protocol.poll_name_refusal() {
            if *self.game.name() == refusal.refused {
                self.game.set_name(refusal.kept);
            }
        }
        let mut connected = false;
        while let Some(event) = protocol.poll_event() {
            connected |= matches!(event, GameEvent::Connected { .. });
            // A player leaving stays shown until the game polls its leaving: with its name, and
            // with the state shown after the last frame (a player seated in this frame had
            // shown the default state; a state of this frame never showed, see below).
            let departing = match &event {
                GameEvent::PlayerDisconnected { slot, .. } => protocol
                    .session_mut()
                    .and_then(|s| s.take_departure(*slot))
                    .map(|(token, name)| {
                        let state = match self.shown_states.get(usize::from(*slot)) {
                            Some(Some((shown, state))) if *shown == token => *state,
                            _ => ShipState::default(),
                        };
                        Departing {
                            slot: *slot,
                            name: Some(name),
                            state: Some(state),
                        }
                    }),
                _ => None,
            };
            self.game.deliver_departing(now, event, departing);
        }
        // A name chosen while connecting (`name`, NET_SetPlayerName) came after the connect
        // request that carried the old one: the others are told it now, as they would have
        // been in the game (a server is asked first). One the server cannot take is not kept.
        let kept = protocol.session().map(|s| *s.my_name());
        if let Some(kept) = kept.filter(|kept| connected && kept != self.game.name()) {
            let name = *self.game.name();
            if let Err(err) = protocol.update_name(name) {
                self.game.set_name(kept);
                let text = format!("{}; your name stays '{kept}'", err.message);
                self.game.deliver(now, GameEvent::Error { text });
            }
        }
        if let Some(session) = protocol.session_mut() {
            if self.game.is_recording() != session.is_state_tapped() {
                session.set_state_tap(self.game.is_recording());
                if self.game.is_recording() {
                    // A session made in this frame (the game was seated while recording) had
                    // no tap yet: the states its players got in this frame, which the game's
                    // lookups show after it, are recorded now, after the frame's events.
                    for player in session.players().iter() {
                        if player.state_time.is_some() {
                            self.game.state_update(now, player.slot, player.state);
                        }
                    }
                }
            }
            // Recorded as the game's lookups show it after this frame: a state whose player
            // left (or was replaced) in the same frame, or that a later one of the frame
            // overtook, never shows live; recorded after the frame's events, it would seat the
            // departed player again in playback.
            while let Some((slot, state)) = session.poll_state_update() {
                let shown = session
                    .players()
                    .get(slot)
                    .is_some_and(|p| p.state.same_bits(&state));
                if shown {
                    self.game.state_update(now, slot, state);
                }
            }
        }
        self.copy_shown_states();
    }

    /// Keep `shown_states` as the player table shows now. Copied again only when the table may
    /// have changed (most frames of a game that polls without pause change nothing), and then
    /// only the slots that may have changed since the last copy (a packet changes its
    /// sender's state alone).
    fn copy_shown_states(&mut self) {
        let Some(session) = self.protocol.as_mut().and_then(|p| p.session_mut()) else {
            if self.shown_generation.take().is_some() {
                self.shown_states = [None; crate::rmev::MAX_SLOTS];
            }
            return;
        };
        let players = session.players();
        let generation = players.generation();
        if self.shown_generation == Some(generation) {
            return;
        }
        let (since, changed) = players.changes();
        let mut slots = if self.shown_generation == Some(since) {
            changed
        } else {
            u16::MAX
        };
        while slots != 0 {
            let slot = slots.trailing_zeros() as u8;
            slots &= slots - 1;
            if let Some(shown) = self.shown_states.get_mut(usize::from(slot)) {
                *shown = players.get(slot).map(|p| (p.token, p.state));
            }
        }
        self.shown_generation = Some(generation);
        session.restart_player_changes();
    }

    /// The next event for the game (`NET_PollEvent`).
    pub fn poll_event(&mut self) -> Option<GameEvent> {
        self.game.poll_event()
    }

    /// When the subsystem next has work (a timer, a playback item), for loops that sleep.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let protocol = self.protocol.as_ref().and_then(|p| p.poll_timeout());
        [protocol, self.game.playback_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    // ----- what the game asks about players ---------------------------------------------------

    fn session(&self) -> Option<&Session> {
        self.protocol.as_ref()?.session()
    }

    /// The name of the player in `slot` (this client's own name for its own slot).
    pub fn player_name(&self, slot: u8) -> Option<PlayerName> {
        if let Some(departing) = self.game.departing(slot) {
            return departing.name;
        }
        if self.game.shows_playback() {
            return self.game.playback_name(slot);
        }
        let session = self.session()?;
        if slot == session.my_slot() {
            return Some(*self.game.name());
        }
        session.players().get(slot).map(|p| p.name)
    }

    /// The latest ship state of the player in `slot`.
    pub fn player_state(&self, slot: u8) -> NetResult<ShipState> {
        if usize::from(slot) >= MAX_SLOTS {
            return Err(NetError::invalid(format!(
                "player id {slot} is not 0-{}",
                MAX_SLOTS - 1
            )));
        }
        let missing = || {
            NetError::new(
                ErrorCode::InvalidArgument,
                format!("no player in slot {slot}"),
            )
        };
        if let Some(state) = self.game.departing(slot).and_then(|d| d.state) {
            return Ok(state);
        }
        if self.game.shows_playback() {
            return self.game.playback_state(slot);
        }
        let session = self
            .session()
            .ok_or_else(|| NetError::new(ErrorCode::NotConnected, "not connected to a game"))?;
        if slot == session.my_slot() {
            return Ok(*self.game.local_state());
        }
        session
            .players()
            .get(slot)
            .map(|p| p.state)
            .ok_or_else(missing)
    }

    /// The slot of the player that created `object_id`.
    pub fn owner_of(&self, object_id: u32) -> Option<u8> {
        if self.game.shows_playback() {
            return self.game.playback_owner(object_id);
        }
        self.session()?.owner_of(object_id)
    }
}

/// Nodes of `backend` for addresses a server names (`add ip: IP ...` with a port).
fn resolver(backend: &Arc<crate::packet_api::Backend>) -> NodeResolver {
    let backend = Arc::clone(backend);
    Arc::new(move |ip: &str, port: u16| {
        let text = if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        };
        backend.parse_node(&text, port).ok()
    })
}

/// Give a game packet to the protocol, or count it when no protocol is playing.
fn hand_to_protocol(
    protocol: &mut Option<Box<dyn ClientProtocol>>,
    input_errors: &mut super::InputErrors,
    now: Instant,
    node: Node,
    data: &[u8],
) {
    match protocol.as_mut() {
        Some(protocol) if protocol.is_active() => protocol.handle_datagram(now, node, data),
        _ => input_errors.game_packets_without_protocol += 1,
    }
}
