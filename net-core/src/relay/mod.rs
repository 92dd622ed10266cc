//! The gameserver's packet relay (design section 2.3.3), sans-IO: clients send every game
//! packet to the server, which forwards to the others.
//!
//! - One reliable link per client; reliable events stay reliable end to end (acknowledged by
//!   the server, then queued reliably towards each other client).
//! - A client's ship state goes to another only if they are within `distance` of each other
//!   (looked up in a spatial grid, not over all pairs); a spectator (connected, not joined)
//!   receives every state.
//! - NODE_ALIVE packets are consumed here: the server keeps each client's alive time and reports
//!   a client silent for `alive_timeout` (`poll_silent`); nothing is forwarded for them.
//! - Bursts: what arrives is buffered in each destination's `Outbox` and forwarded by the next
//!   `handle_timeout` (the driver reads a whole burst of datagrams first; `poll_timeout` asks for
//!   the pass at once). Laser and missile creations go first, only the newest state per player
//!   is kept, other events wait at most `event_delay`.
//! - A relay packet carries one player's state and events, with that player's slot as sender
//!   slot and the server's token; its sequence and acks belong to the server-client link. Each
//!   new link starts numbering past every earlier one (`LinkNumbering`), and a client's session
//!   numbers its link from a point its token picks, so a client that reconnects at the same
//!   address refuses a late packet written for its earlier session.
//!
//! Clients are known by slot (from the TCP join) and reached at their address; a packet from an
//! unknown port of a client's host whose token and slot match the client moves that client there
//! (NAT rebinding).
//!
//! A client that leaves and comes back under a new token (a backend switch) resumes both
//! directions of its old link exactly once (RE_RESUME, see `resume`).

pub mod grid;
pub mod out_buffers;
pub mod outbox;
pub mod resume;
pub mod service;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::rmev::{EarlierTokens, RemoteEvent, ResumeStep, MAX_SLOTS};
use crate::session::rate::RateBudget;
use crate::session::resume::is_game_event;
use crate::session::{Delivery, Link, LinkConfig, LinkNumbering, PacketMeta, PacketVerdict};
use crate::wire::{decode_packet, PacketType, WireEvent};
use grid::SpatialGrid;
use out_buffers::OutBuffers;
use outbox::{Outbox, Relayed};
use resume::{OwnEvents, RelayParked, RelayResume, HOLD_LIMIT};

/// Settings of the relay.
#[derive(Clone, Copy, Debug)]
pub struct RelayConfig {
    /// States are forwarded only between clients at most this far apart (0: no limit).
    pub distance: f32,
    /// A client silent this long is reported by `poll_silent`.
    pub alive_timeout: Duration,
    /// The longest a non-critical event waits in a burst buffer.
    pub event_delay: Duration,
    /// The server sends each client at least this often (acknowledgements, keep-alive).
    pub keepalive: Duration,
    pub max_payload: usize,
    /// The server's token in its packets (told to clients at join).
    pub server_token: u32,
    pub link: LinkConfig,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            distance: 5000.0,
            alive_timeout: Duration::from_secs(20),
            event_delay: Duration::from_millis(20),
            keepalive: Duration::from_millis(500),
            max_payload: 1400,
            server_token: 1,
            link: LinkConfig::default(),
        }
    }
}

/// Counters shown by the server's status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    pub packets_received: u64,
    pub packets_sent: u64,
    pub bad_packets: u64,
    pub unknown_senders: u64,
    pub wrong_tokens: u64,
    pub duplicates: u64,
    pub node_alive_consumed: u64,
    pub states_in: u64,
    pub states_filtered_by_distance: u64,
    pub events_in: u64,
    pub clients_timed_out: u64,
    pub address_changes: u64,
    /// Packets from an unknown address claiming a client's slot, refused.
    pub impostors: u64,
    /// Departures told in band (RE_VACATED queued towards each other client).
    pub departures_told: u64,
    /// RE_VACATED sent by a client (only the relay says it): dropped, never forwarded.
    pub forged_departures: u64,
}

struct Client {
    slot: u8,
    addr: SocketAddr,
    token: u32,
    /// The id the others' `add ip:` lines gave it (0: not known here), named when it leaves.
    told: u32,
    link: Link,
    last_heard: Instant,
    last_sent: Option<Instant>,
    joined: bool,
    outbox: Outbox,
    /// Events for this client held back (and since when) until its hello settled whether it is
    /// someone coming back, whose older events go first (see `resume`).
    held: Option<(Vec<Relayed>, Instant)>,
    /// Its old links found from its hello (oldest first), waiting for its answers.
    resuming: Vec<RelayParked>,
    /// Its answers so far: (its token on the old link, the last id it delivered).
    answers: Vec<(u32, u32)>,
    /// The relay's serial when it took this slot: the client's own events come after it.
    seated_after: u64,
    /// What its earlier sessions sent (from its hello): never relayed back to it.
    earlier_selves: Vec<OwnEvents>,
    /// The receive rate it asked for (RE_RATE, `net.rate`): states to it are held back while
    /// what it was sent is over that rate.
    budget: RateBudget,
}

impl Client {
    /// Whether a relayed event is this client's own, sent by one of its earlier sessions.
    fn is_own(&self, origin: u8, serial: u64) -> bool {
        self.earlier_selves
            .iter()
            .any(|own| own.contains(origin, serial))
    }

    /// Whether an event must never be relayed to this client: its own (from an earlier session
    /// of it), or one under its own slot (an earlier player's of that slot, which it would take
    /// for its own).
    fn never_relayed_to(&self, origin: u8, serial: u64) -> bool {
        origin == self.slot || self.is_own(origin, serial)
    }
}

/// The relay of one gameserver.
pub struct RelayCore {
    config: RelayConfig,
    clients: Vec<Option<Client>>,
    grid: SpatialGrid,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    silent: VecDeque<u8>,
    /// Clients followed to a new address, for the TCP side to tell the others.
    moved: VecDeque<(u8, SocketAddr)>,
    scratch: Vec<WireEvent>,
    deliveries: Vec<Delivery>,
    near: Vec<u16>,
    due: Vec<Relayed>,
    /// The serial of the last event received from a client (each is forwarded under it).
    serial: u64,
    /// Since when buffered input waits for a forwarding pass.
    pending_since: Option<Instant>,
    stats: RelayStats,
    /// The burst counters of clients that left (so totals survive them).
    retired_outbox: outbox::OutboxStats,
    /// The packet being written, and the buffers of datagrams already sent, kept for reuse so
    /// forwarding does not allocate in steady state.
    write_buf: Vec<u8>,
    spare_out: OutBuffers,
    /// The players with something for the client being served (reused between clients).
    origins: Vec<Option<u8>>,
    /// Links of clients that left, kept for their return.
    resume: RelayResume,
    /// Where the next client link starts numbering its packets: past every earlier one, so a
    /// client that reconnects at the same address can tell a late packet written for its
    /// earlier session from the new link's (see `LinkNumbering`).
    numbering: LinkNumbering,
}

impl RelayCore {
    pub fn new(config: RelayConfig) -> RelayCore {
        RelayCore {
            config,
            clients: (0..MAX_SLOTS).map(|_| None).collect(),
            grid: SpatialGrid::new(if config.distance > 0.0 {
                config.distance
            } else {
                1.0
            }),
            out: VecDeque::new(),
            silent: VecDeque::new(),
            moved: VecDeque::new(),
            scratch: Vec::new(),
            deliveries: Vec::new(),
            near: Vec::new(),
            due: Vec::new(),
            serial: 0,
            pending_since: None,
            stats: RelayStats::default(),
            retired_outbox: outbox::OutboxStats::default(),
            write_buf: Vec::new(),
            spare_out: OutBuffers::default(),
            origins: Vec::new(),
            resume: RelayResume::default(),
            numbering: LinkNumbering::new(config.server_token),
        }
    }

    pub fn stats(&self) -> &RelayStats {
        &self.stats
    }

    pub fn config(&self) -> &RelayConfig {
        &self.config
    }

    pub fn client_count(&self) -> usize {
        self.clients.iter().flatten().count()
    }

    /// Burst-buffer counters summed over all clients, present and gone.
    pub fn outbox_stats(&self) -> outbox::OutboxStats {
        let mut sum = self.retired_outbox.clone();
        for c in self.clients.iter().flatten() {
            sum.add(c.outbox.stats());
        }
        sum
    }

    /// Resumption counters (links parked, resumed, events carried and dropped).
    pub fn resume_stats(&self) -> &resume::ResumeStats {
        self.resume.stats()
    }

    /// Forget the client in `slot`, keeping its counters in the totals and parking what its
    /// link still owed it and what it delivered from it, for its return (see `resume`).
    fn retire(&mut self, now: Instant, slot: usize) {
        let Some(mut client) = self.clients.get_mut(slot).and_then(Option::take) else {
            return;
        };
        self.numbering.retire(&client.link);
        for parked in client.resuming {
            self.resume.park(parked);
        }
        // Not yet sent: what was held for it, then what waits in its burst buffer.
        let mut unsent = client.held.map(|(held, _)| held).unwrap_or_default();
        client
            .outbox
            .take_due_events(now, Duration::ZERO, &mut self.due);
        unsent.append(&mut self.due);
        self.retired_outbox.add(client.outbox.stats());
        let stream = client.link.relayed_stream(&unsent);
        let next_id = stream
            .last()
            .map_or(client.link.next_reliable_id(), |entry| {
                entry.0.wrapping_add(1).max(1)
            });
        let outgoing: Vec<(u32, Relayed)> = stream
            .into_iter()
            .filter_map(|(id, origin, serial, event)| Some((id, (origin?, serial, event))))
            // Departures too: the client's next session may get the leaver's last events
            // carried over, and the word behind them says that they are all.
            .filter(|(_, (_, serial, event))| {
                *serial != 0
                    && (is_game_event(event) || matches!(event, RemoteEvent::Vacated { .. }))
            })
            .collect();
        let ip = client.addr.ip();
        // A newcomer from the same host still awaiting its hello may be this client coming
        // back: what is forwarded from now on is held for it already.
        let open = !self
            .clients
            .iter()
            .flatten()
            .any(|c| c.addr.ip() == ip && c.held.is_some());
        self.resume.park(RelayParked {
            client_token: client.token,
            ip: client.addr.ip(),
            delivered: client.link.delivered_id(),
            outgoing,
            own: OwnEvents {
                slot: client.slot,
                after: client.seated_after,
                up_to: self.serial,
            },
            parked_at: now,
            next_id,
            open,
        });
    }

    /// A player joined over TCP: expect its packets from `addr` signed with `token`. The others
    /// know it by no id here: its departure is told to them as whoever sits in `slot`.
    pub fn add_client(&mut self, now: Instant, slot: u8, addr: SocketAddr, token: u32) {
        self.add_client_told(now, slot, addr, token, 0);
    }

    /// [`add_client`](Self::add_client) of a player the others' `add ip:` lines name by the id
    /// `told`; its departure is told to them under that id (RE_VACATED).
    pub fn add_client_told(
        &mut self,
        now: Instant,
        slot: u8,
        addr: SocketAddr,
        token: u32,
        told: u32,
    ) {
        if usize::from(slot) >= self.clients.len() {
            return;
        }
        let start = self
            .numbering
            .start(self.clients.iter().flatten().map(|c| &c.link));
        let mut link = Link::starting_at(self.config.link, start);
        // The relay's hello first: a client coming back answers what it delivered of its old
        // links (the relay's token never changes, so it lists no earlier ones).
        link.queue_event(RemoteEvent::Resume(ResumeStep::Hello(
            EarlierTokens::default(),
        )));
        // The newcomer hears who is already in the game (names and seats come over TCP; the
        // joins were said before it was here).
        for other in self.clients.iter().flatten() {
            if other.joined && other.slot != slot {
                let joined = RemoteEvent::PlayerStatus {
                    joined: true,
                    flag: 0,
                };
                link.queue_relayed(other.slot, 0, joined);
            }
        }
        self.remove_client(now, slot);
        // From now on what the others say is held for the newcomer, who may be a parked
        // client of this host coming back.
        self.resume.close_for(addr.ip());
        self.clients[usize::from(slot)] = Some(Client {
            slot,
            addr,
            token,
            told,
            link,
            last_heard: now,
            last_sent: None,
            joined: false,
            outbox: Outbox::default(),
            // Anyone may be someone coming back, even while its earlier self still seems to be
            // here (the server has not seen that connection close yet).
            held: Some((Vec::new(), now)),
            resuming: Vec::new(),
            answers: Vec::new(),
            seated_after: self.serial,
            earlier_selves: Vec::new(),
            budget: RateBudget::default(),
        });
        self.pending_since.get_or_insert(now);
    }

    /// A player left: forget it (what its link owed it is parked for its return); what it said
    /// that still waits in the others' burst buffers goes to their links now, before anyone
    /// else can sit in its slot.
    ///
    /// Behind those events each other client is told, in the same stream, that the player left
    /// (RE_VACATED under the id its `add ip:` line gave): the server's TCP `remove ip:` line
    /// may overtake what is still in flight on the UDP path (lost and sent again, or held for a
    /// newcomer's hello), so clients take the departure from here.
    pub fn remove_client(&mut self, now: Instant, slot: u8) {
        let Some(told) = self
            .clients
            .get(usize::from(slot))
            .and_then(Option::as_ref)
            .map(|c| c.told)
        else {
            return;
        };
        self.retire(now, usize::from(slot));
        self.grid.remove(u16::from(slot));
        self.serial += 1;
        let departure = (slot, self.serial, RemoteEvent::Vacated { told });
        let mut due = std::mem::take(&mut self.due);
        for client in self.clients.iter_mut().flatten() {
            client.outbox.take_departed(slot, &mut due);
            due.push(departure.clone());
            Self::queue_for(client, due.drain(..), self.config.link.max_queued);
            self.stats.departures_told += 1;
        }
        self.due = due;
        self.pending_since.get_or_insert(now);
    }

    /// Queue relayed events for `client`: held back while its hello is awaited, else on its
    /// link; never its own, from an earlier session of it that was still seated.
    fn queue_for(client: &mut Client, events: impl Iterator<Item = Relayed>, max: usize) {
        for (origin, serial, event) in events {
            if client.never_relayed_to(origin, serial) {
                continue;
            }
            match client.held.as_mut() {
                Some((held, _)) if held.len() >= max => {
                    log::warn!("relay: held events for slot {} full", client.slot);
                }
                Some((held, _)) => held.push((origin, serial, event)),
                None if !client.link.queue_relayed(origin, serial, event) => {
                    log::warn!("relay: queue towards slot {} full", client.slot);
                }
                None => {}
            }
        }
    }

    fn find_sender(
        &mut self,
        now: Instant,
        from: SocketAddr,
        header: &crate::wire::PacketHeader,
    ) -> Option<usize> {
        let (token, slot) = (header.token, header.sender_slot);
        if let Some(i) = self
            .clients
            .iter()
            .position(|c| c.as_ref().is_some_and(|c| c.addr == from))
        {
            return Some(i);
        }
        // A known client at a new port of its host (NAT rebinding): see `session::may_rebind`.
        // A client's token is a secret between it and the server (the `add` lines tell the
        // others another id), so another player cannot send with it even from the same NAT
        // address. Still never at another host: one who read the token off the client's
        // traffic could, and a NAT keeps the host's address for its port changes, while a
        // client at a new address has lost its TCP connection (from the address it was seated
        // at) anyway.
        let i = usize::from(slot?);
        let client = self.clients.get_mut(i)?.as_mut()?;
        if from.ip() != client.addr.ip().to_canonical()
            || !crate::session::may_rebind(
                &client.link,
                token,
                client.token,
                header.sequence,
                client.last_heard,
                now,
            )
        {
            self.stats.impostors += 1;
            return None;
        }
        client.addr = from;
        self.stats.address_changes += 1;
        self.moved.push_back((client.slot, from));
        Some(i)
    }

    /// A datagram arrived on the server's UDP port.
    ///
    /// An IPv4 client heard on a dual-stack (`::`) socket comes as `::ffff:a.b.c.d`; it is the
    /// client the TCP side seated at `a.b.c.d` (which it names as IPv4 too), not a stranger.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        let from = SocketAddr::new(from.ip().to_canonical(), from.port());
        self.stats.packets_received += 1;
        let mut events = std::mem::take(&mut self.scratch);
        let packet = match decode_packet(data, &mut events) {
            Ok(packet) => packet,
            Err(err) => {
                log::debug!("relay: bad packet from {from}: {err}");
                self.stats.bad_packets += 1;
                self.scratch = events;
                return;
            }
        };
        let header = packet.header;
        let Some(index) = self.find_sender(now, from, &header) else {
            self.stats.unknown_senders += 1;
            self.scratch = events;
            return;
        };
        let client = self.clients[index].as_mut().expect("found above");
        if client.token == 0 && header.sender_slot == Some(client.slot) {
            // Joined without our ` token:` extension: its first packet from the address it
            // was seated at says its token (as a client's session learns a player's).
            client.token = header.token;
        }
        if header.token != client.token || header.sender_slot != Some(client.slot) {
            self.stats.wrong_tokens += 1;
            self.scratch = events;
            return;
        }
        let mut deliveries = std::mem::take(&mut self.deliveries);
        deliveries.clear();
        let verdict =
            client
                .link
                .handle_packet(now, &header, packet.state.as_ref(), &events, &mut |d| {
                    deliveries.push(d)
                });
        self.scratch = events;
        if verdict != PacketVerdict::Accepted {
            self.stats.duplicates += 1;
            self.deliveries = deliveries;
            return;
        }
        client.last_heard = now;
        let origin = client.slot;
        if header.kind == PacketType::NodeAlive {
            // Consumed here: the alive counter is the server's, not the other clients'.
            self.stats.node_alive_consumed += 1;
        }
        for delivery in deliveries.drain(..) {
            match delivery {
                Delivery::State { state, .. } => {
                    self.stats.states_in += 1;
                    self.buffer_state(origin, state);
                }
                // Between this client and the relay; never forwarded.
                Delivery::Event {
                    event: RemoteEvent::Resume(step),
                    ..
                } => self.handle_resume(now, origin, step),
                // Its receive rate: for the relay only.
                Delivery::Event {
                    event: RemoteEvent::Rate(rate),
                    ..
                } => {
                    if let Some(c) = self.clients[usize::from(origin)].as_mut() {
                        c.budget.set_rate(rate);
                    }
                }
                // Only the relay tells departures.
                Delivery::Event {
                    event: RemoteEvent::Vacated { .. },
                    ..
                } => {
                    log::debug!("relay: slot {origin} sent RE_VACATED; dropped");
                    self.stats.forged_departures += 1;
                }
                Delivery::Event { event, .. } => {
                    self.stats.events_in += 1;
                    self.serial += 1;
                    let serial = self.serial;
                    if let RemoteEvent::PlayerStatus { joined, .. } = event {
                        if let Some(c) = self.clients[usize::from(origin)].as_mut() {
                            c.joined = joined;
                        }
                        if !joined {
                            self.grid.remove(u16::from(origin));
                        }
                    }
                    for client in self
                        .clients
                        .iter_mut()
                        .flatten()
                        .filter(|c| c.slot != origin)
                    {
                        client
                            .outbox
                            .push_event(now, (origin, serial, event.clone()));
                    }
                    // A departed client may be on its way back (a backend switch): the others
                    // still seat it until they read the server's `remove ip:` line.
                    if is_game_event(&event) && event.is_reliable() {
                        self.resume.append(origin, serial, &event);
                    }
                }
            }
        }
        self.deliveries = deliveries;
        // Forwarded when the burst has been read (the driver calls `handle_timeout`).
        self.pending_since.get_or_insert(now);
    }

    /// Buffer `origin`'s newest state for every client within the distance, and for every
    /// spectator (a client that has not joined).
    fn buffer_state(&mut self, origin: u8, state: crate::rmev::ShipState) {
        let id = u16::from(origin);
        self.grid.update(id, state.pos);
        let limited = self.config.distance > 0.0;
        if limited {
            self.grid
                .within(state.pos, self.config.distance, &mut self.near);
        }
        for client in self
            .clients
            .iter_mut()
            .flatten()
            .filter(|c| c.slot != origin)
        {
            let dest = u16::from(client.slot);
            // Spectators (not joined) watch everything; a joined ship gets the states around it
            // once the server knows where it is.
            let in_range = !limited || !client.joined || self.near.contains(&dest);
            if in_range {
                client.outbox.push_state(origin, state);
            } else {
                self.stats.states_filtered_by_distance += 1;
            }
        }
    }

    /// Move what is due from the burst buffers into the links and write the packets.
    fn forward(&mut self, now: Instant) {
        let mut buf = std::mem::take(&mut self.write_buf);
        buf.resize(self.config.max_payload, 0);
        for index in 0..self.clients.len() {
            let Some(client) = self.clients[index].as_mut() else {
                continue;
            };
            client
                .outbox
                .take_due_events(now, self.config.event_delay, &mut self.due);
            Self::queue_for(client, self.due.drain(..), self.config.link.max_queued);
            // One packet per player with something for this client: its state and events.
            let origins = &mut self.origins;
            origins.clear();
            // Over its receive rate, the newest states wait in the outbox (events do not).
            let states_allowed = client.budget.allows_state(now, 1);
            if states_allowed {
                origins.extend(client.outbox.state_origins().map(Some));
            }
            client.link.pending_origins(now, origins);
            let keepalive_due = client
                .last_sent
                .is_none_or(|t| now.saturating_duration_since(t) >= self.config.keepalive);
            if origins.is_empty() && (client.link.wants_to_send(now) || keepalive_due) {
                origins.push(None);
            }
            for origin in origins.drain(..) {
                let state = if client.budget.allows_state(now, 1) {
                    origin.and_then(|o| client.outbox.take_state(o))
                } else {
                    None
                };
                let joined = origin.is_some();
                let meta = PacketMeta {
                    kind: if joined {
                        PacketType::GameState
                    } else {
                        PacketType::NodeAlive
                    },
                    sender_slot: origin,
                    joined,
                    token: self.config.server_token,
                    relay: true,
                };
                match client
                    .link
                    .write_packet(now, &mut buf, meta, state.as_ref())
                {
                    Ok(len) => {
                        let mut data = self.spare_out.take(len, buf.len());
                        data.extend_from_slice(&buf[..len]);
                        self.out.push_back((client.addr, data));
                        client.last_sent = Some(now);
                        client.budget.spend(now, 1, len);
                        self.stats.packets_sent += 1;
                    }
                    Err(err) => log::error!("relay: cannot encode a packet: {err}"),
                }
            }
        }
        self.write_buf = buf;
    }

    /// The next datagram to send: destination and length in `buf`.
    pub fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        let (to, data) = self.out.pop_front()?;
        let len = data.len().min(buf.len());
        buf[..len].copy_from_slice(&data[..len]);
        self.spare_out.give_back(data);
        Some((to, len))
    }

    /// Run timers and the forwarding pass: forward what the last burst buffered and what is
    /// due, retransmit, keep links alive, find silent clients.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.pending_since = None;
        self.resume.expire(now);
        for client in self.clients.iter_mut().flatten() {
            let Some(&(_, since)) = client.held.as_ref() else {
                continue;
            };
            if now.saturating_duration_since(since) >= HOLD_LIMIT {
                if client.last_heard <= since {
                    // Nothing came at all: the usual cause is a firewall, which an admin can fix.
                    log::warn!(
                        "relay: no UDP packet from slot {} ({}) in the {} s since it joined; is \
                         the gameserver's UDP port blocked on the way?",
                        client.slot,
                        client.addr,
                        HOLD_LIMIT.as_secs()
                    );
                } else {
                    log::info!(
                        "relay: slot {} ({}) did not answer the resume hello within {} s; \
                         relaying to it without resumption",
                        client.slot,
                        client.addr,
                        HOLD_LIMIT.as_secs()
                    );
                }
                for parked in std::mem::take(&mut client.resuming) {
                    self.resume.stats_mut().count_dropped(parked.outgoing.len());
                }
                self.resume.stats_mut().count_hold_timeout();
                Self::release_held(client);
            }
        }
        for client in self.clients.iter().flatten() {
            if now.saturating_duration_since(client.last_heard) >= self.config.alive_timeout
                && !self.silent.contains(&client.slot)
            {
                self.silent.push_back(client.slot);
            }
        }
        self.forward(now);
    }

    /// When `handle_timeout` should run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let clients = self
            .clients
            .iter()
            .flatten()
            .flat_map(|c| {
                [
                    Some(c.last_heard + self.config.alive_timeout),
                    Some(
                        c.last_sent
                            .map_or(c.last_heard, |t| t + self.config.keepalive),
                    ),
                    c.outbox.next_due(self.config.event_delay),
                    c.link.next_retransmit(c.last_heard),
                    c.held.as_ref().map(|(_, since)| *since + HOLD_LIMIT),
                    c.outbox
                        .state_origins()
                        .next()
                        .and_then(|_| c.budget.state_ready_at(1)),
                ]
            })
            .flatten()
            .min();
        [clients, self.pending_since, self.resume.next_expiry()]
            .into_iter()
            .flatten()
            .min()
    }

    /// RE_RESUME from the client in `slot` (see `resume`).
    fn handle_resume(&mut self, now: Instant, slot: u8, step: ResumeStep) {
        match step {
            ResumeStep::Hello(tokens) => {
                let tokens = tokens.as_slice();
                let Some(ip) = self.clients[usize::from(slot)]
                    .as_ref()
                    .map(|c| c.addr.ip())
                else {
                    return;
                };
                // Its earlier self may still be seated (the TCP side has not seen it leave):
                // it has left, and what its link owed is parked now. Only from the same host,
                // as for a move (`find_sender`).
                let stale: Vec<u8> = self
                    .clients
                    .iter()
                    .flatten()
                    .filter(|c| c.slot != slot && c.addr.ip() == ip && tokens.contains(&c.token))
                    .map(|c| c.slot)
                    .collect();
                for old in stale {
                    self.remove_client(now, old);
                }
                let server_token = self.config.server_token;
                let found = self.resume.take_matching(ip, tokens);
                let answered: Vec<u32> = found.iter().map(|p| p.client_token).collect();
                let receipts: Vec<_> = self
                    .resume
                    .receipts_matching(ip, tokens)
                    .filter(|r| !answered.contains(&r.client_token))
                    .collect();
                let Some(client) = self.clients[usize::from(slot)].as_mut() else {
                    return;
                };
                // What its earlier selves sent may already wait for it (relayed while they
                // still seemed to be other players): it is its own, and never goes back.
                client.earlier_selves.extend(
                    found
                        .iter()
                        .map(|p| p.own)
                        .chain(receipts.iter().map(|r| r.own)),
                );
                if let Some((held, _)) = client.held.as_mut() {
                    let selves = &client.earlier_selves;
                    held.retain(|(origin, serial, _)| {
                        !selves.iter().any(|own| own.contains(*origin, *serial))
                    });
                }
                let answers = found
                    .iter()
                    .map(|p| (p.client_token, p.delivered))
                    .chain(receipts.iter().map(|r| (r.client_token, r.delivered)));
                for (client_token, delivered) in answers {
                    client
                        .link
                        .queue_event(RemoteEvent::Resume(ResumeStep::Answer {
                            yours: client_token,
                            mine: server_token,
                            delivered,
                        }));
                }
                client
                    .link
                    .queue_event(RemoteEvent::Resume(ResumeStep::Done));
                if found.is_empty() {
                    // Not someone coming back (or nothing of it was kept): send on.
                    Self::release_held(client);
                } else {
                    client.resuming = found;
                }
            }
            ResumeStep::Answer {
                yours,
                mine,
                delivered,
            } => {
                if let Some(client) = self.clients[usize::from(slot)].as_mut() {
                    if yours == self.config.server_token {
                        client.answers.push((mine, delivered));
                    }
                }
            }
            ResumeStep::Done => {
                let Some(client) = self.clients[usize::from(slot)].as_mut() else {
                    return;
                };
                let streams = std::mem::take(&mut client.resuming);
                if streams.is_empty() {
                    client.answers.clear();
                    return;
                }
                // Every event owed over the old links and held for this one, each once, in the
                // order the relay received them, minus what an old link delivered.
                let count = streams.len();
                let (mut owed, mut got) = (Vec::new(), Vec::new());
                for parked in streams {
                    let answer = client
                        .answers
                        .iter()
                        .find(|(token, _)| *token == parked.client_token)
                        .map(|(_, delivered)| *delivered);
                    parked.settle(answer, &mut owed, &mut got);
                }
                got.sort_unstable();
                let delivered = |serial: &u64| got.binary_search(serial).is_ok();
                owed.retain(|(_, serial, _)| !delivered(serial));
                // Back in another slot than before, what the earlier player of its new slot said
                // would go out under its own slot: the client would take it for its own.
                let before = owed.len();
                owed.retain(|(origin, _, _)| *origin != slot);
                self.resume
                    .stats_mut()
                    .count_dropped(before.saturating_sub(owed.len()));
                let carried = owed.len();
                // What waits in its burst buffer was meant for the held queue too (an old link
                // may hold the same events).
                client
                    .outbox
                    .take_due_events(now, Duration::ZERO, &mut self.due);
                let held = client.held.take().map(|(held, _)| held).unwrap_or_default();
                owed.extend(
                    held.into_iter()
                        .chain(self.due.drain(..))
                        .filter(|(_, serial, _)| !delivered(serial)),
                );
                owed.retain(|(origin, serial, _)| !client.never_relayed_to(*origin, *serial));
                owed.sort_by_key(|(_, serial, _)| *serial);
                owed.dedup_by(|a, b| a.1 == b.1);
                for (origin, serial, event) in owed {
                    // Bounded like the held queue.
                    let _ = client.link.queue_relayed(origin, serial, event);
                }
                client.answers.clear();
                log::info!(
                    "relay: slot {slot} came back; {carried} events sent again over {count} old links"
                );
                self.resume.stats_mut().count_resumed(count, carried);
            }
        }
    }

    /// Queue what was held back for `client`, in order, after whatever was carried.
    fn release_held(client: &mut Client) {
        if let Some((held, _)) = client.held.take() {
            for (origin, serial, event) in held {
                if !client.link.queue_relayed(origin, serial, event) {
                    log::warn!("relay: queue towards slot {} full", client.slot);
                }
            }
        }
    }

    /// A client whose alive counter ran out (it is removed by the caller through the TCP side).
    pub fn poll_silent(&mut self) -> Option<u8> {
        let slot = self.silent.pop_front()?;
        self.stats.clients_timed_out += 1;
        Some(slot)
    }

    /// A client now heard at a new address (its slot and the address), oldest first.
    pub fn poll_moved(&mut self) -> Option<(u8, SocketAddr)> {
        self.moved.pop_front()
    }

    /// Lines for the server's status.
    pub fn status_lines(&self) -> Vec<String> {
        let s = &self.stats;
        let o = self.outbox_stats();
        let r = self.resume.stats();
        vec![
            format!(
                "relay: {} clients, packets in {} out {}, bad {}, unknown senders {}, wrong tokens {}, node-alive consumed {}, duplicates {}, clients moved {}, departures told {}, forged departures dropped {}",
                self.client_count(),
                s.packets_received,
                s.packets_sent,
                s.bad_packets,
                s.unknown_senders,
                s.wrong_tokens,
                s.node_alive_consumed,
                s.duplicates,
                s.address_changes,
                s.departures_told,
                s.forged_departures
            ),
            format!(
                "forwarding: states in {} forwarded {} dropped as outdated {} filtered by distance {}; events in {} critical first {} others {}",
                s.states_in, o.states_forwarded, o.states_dropped, s.states_filtered_by_distance, s.events_in, o.critical_forwarded, o.events_forwarded
            ),
            format!(
                "resumption: links parked {} resumed {}, events sent again {} dropped {}, hold timeouts {}",
                r.parked, r.resumed, r.events_carried, r.events_dropped, r.hold_timeouts
            ),
        ]
    }
}
