//! The `relay_datagrams` target: the gameserver's relay (`RelayCore`, sans-IO, virtual time)
//! driven by a script read from the fuzz input. Each operation is one byte (which operation,
//! and which player) followed by its arguments: players join (seated by the TCP side, with a
//! fresh session token) and leave, send packets written by their own side of the link with the
//! project's wire writer (ship states, reliable and unreliable events, NODE_ALIVE, resume
//! steps, bursts), lose packets that are replayed later from anywhere, move to a new port (NAT
//! rebinding), send truncated, oversized or header-changed copies; forgers send packets with a
//! wrong token, another player's slot, or from another player's address; raw input bytes
//! arrive from anyone. Time advances by the script; the relay's timers run when due, as the
//! gameserver's driver runs them.
//!
//! What must hold (beyond no panic):
//! - a forged packet (a token that is not its slot's current one, or a slot's token from
//!   another player's address) is never taken: the relay's counters show it dropped, nobody
//!   moves, and nothing of it (its text, its state) ever reaches anyone;
//! - a genuine client's newest packet from where the relay knows it is always taken; from a new
//!   port (NAT) it is taken, and the client followed there, exactly when the relay has heard
//!   nothing of that client for `REBIND_SILENCE`; no client is ever moved otherwise, nor to
//!   another host (strangers send from other hosts and from another port of the players' host);
//! - every datagram the relay sends decodes, fits the payload limit, carries the server's token
//!   and goes to a seated client where the relay knows it; it never carries a player's state or
//!   events to that player itself, and a player's state and chat lines arrive attributed to the
//!   player that sent them; each player's chat lines reach each other player at most once and
//!   in order.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use net_core::relay::{RelayConfig, RelayCore, RelayStats};
use net_core::rmev::{ChatText, CustomData, EarlierTokens, RemoteEvent, ResumeStep, ShipState};
use net_core::session::{Delivery, Link, LinkConfig, PacketMeta, REBIND_SILENCE};
use net_core::wire::{
    decode_packet, encode_packet, PacketHeader, PacketType, WireEvent, HEADER_LEN,
};

/// Slots the script uses (the relay has 16).
const SLOTS: u8 = 4;
const SERVER_TOKEN: u32 = 0x5E4E;
/// What forged packets say: a chat line starting so, a ship state with this `pos[1]`.
const FORGED_TEXT: &[u8] = b"FORGED";
const FORGED_MARK: f32 = -9999.0;
/// Most operations one input runs.
const MAX_OPS: usize = 600;

/// The fuzz input read as a script: bytes in order, zeros once it is used up.
struct Script<'a> {
    data: &'a [u8],
    at: usize,
}

impl Script<'_> {
    fn done(&self) -> bool {
        self.at >= self.data.len()
    }
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    fn bytes(&mut self, len: usize) -> &[u8] {
        let start = self.at.min(self.data.len());
        let end = (start + len).min(self.data.len());
        self.at = start + len;
        &self.data[start..end]
    }
}

/// One seated player: its side of the link, and what the relay should know of it.
struct Player {
    link: Link,
    token: u32,
    /// Where its packets come from now (its NAT's current mapping).
    addr: SocketAddr,
    /// Where the relay knows it: where it was seated, then where the relay said it followed it.
    relay_addr: SocketAddr,
    /// When the relay last took a packet of this player.
    last_heard: Instant,
    /// No changed packet with its token was taken: its newest packet must be taken.
    trusted: bool,
    /// Its recent packets, for replays.
    sent: Vec<Vec<u8>>,
    chats: u32,
    /// Its current port offset (`seat_addr`): where it joined, then each NAT port change.
    ports_used: u16,
}

/// What the script says a datagram is, for the checks after the relay read it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// The newest packet written by the slot's player.
    Genuine(u8),
    /// An earlier packet of the slot's current player.
    Replay(u8),
    /// A genuine packet with its header or length changed (the token may still be right).
    Changed(u8),
    /// Must never be taken.
    Forged,
    /// Raw input bytes.
    Raw,
}

struct Run {
    relay: RelayCore,
    now: Instant,
    players: Vec<Option<Player>>,
    /// Earlier tokens of each slot's players, newest first (a player coming back names them).
    earlier: Vec<Vec<u32>>,
    next_token: u32,
    /// The last chat line each reader got from each writer (reader's slot, writer's token).
    chat_marks: HashMap<(u8, u32), u32>,
    /// The port each slot's latest player was seated at.
    last_port: [u16; SLOTS as usize],
    /// Packets of each slot's earlier players (their tokens are no longer anyone's).
    stale: Vec<Vec<u8>>,
    /// Slots whose player's token was in a taken packet the script did not write in order (raw
    /// bytes, a changed header): what arrives from them is not checked for attribution.
    untrusted_origins: [bool; 16],
    buf: Vec<u8>,
    scratch: Vec<WireEvent>,
}

fn seat_addr(slot: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7000 + u16::from(slot) * 100 + port))
}

fn stranger(which: u8) -> SocketAddr {
    match which % 3 {
        0 => SocketAddr::from(([10, 0, 0, 9], 7000)),
        1 => SocketAddr::from(([10, 0, 0, 9], 7001)),
        // The players' host, another port: a resume is matched by host.
        _ => SocketAddr::from(([127, 0, 0, 1], 9000)),
    }
}

fn accepted_delta(before: &RelayStats, after: &RelayStats) -> u64 {
    let dropped =
        |s: &RelayStats| s.bad_packets + s.unknown_senders + s.wrong_tokens + s.duplicates;
    (after.packets_received - before.packets_received) - (dropped(after) - dropped(before))
}

impl Run {
    fn new(distance: f32) -> Run {
        Run {
            relay: RelayCore::new(RelayConfig {
                distance,
                server_token: SERVER_TOKEN,
                ..RelayConfig::default()
            }),
            now: Instant::now(),
            players: (0..SLOTS).map(|_| None).collect(),
            earlier: (0..SLOTS).map(|_| Vec::new()).collect(),
            next_token: 0x100,
            chat_marks: HashMap::new(),
            last_port: [0; SLOTS as usize],
            stale: Vec::new(),
            untrusted_origins: [false; 16],
            buf: vec![0u8; 1400],
            scratch: Vec::new(),
        }
    }

    fn player(&mut self, slot: u8) -> Option<&mut Player> {
        self.players.get_mut(usize::from(slot))?.as_mut()
    }

    /// The next packet of `slot`'s player from its link, with `events` queued first: `None`
    /// when nobody sits there.
    fn write(
        &mut self,
        slot: u8,
        kind: PacketType,
        state: Option<ShipState>,
        events: Vec<RemoteEvent>,
    ) -> Option<Vec<u8>> {
        let now = self.now;
        let mut buf = std::mem::take(&mut self.buf);
        let player = self.player(slot)?;
        for event in events {
            let _ = player.link.queue_event(event);
        }
        let meta = PacketMeta {
            kind,
            sender_slot: Some(slot),
            joined: true,
            token: player.token,
            relay: false,
        };
        let len = player
            .link
            .write_packet(now, &mut buf, meta, state.as_ref())
            .expect("a player's packet encodes");
        let packet = buf[..len].to_vec();
        if player.sent.len() >= 8 {
            player.sent.remove(0);
        }
        player.sent.push(packet.clone());
        self.buf = buf;
        Some(packet)
    }

    /// Hand a datagram to the relay and check what it did with it.
    fn deliver(&mut self, from: SocketAddr, data: &[u8], kind: Kind) {
        let before = self.relay.stats().clone();
        self.relay.handle_datagram(self.now, from, data);
        let accepted = accepted_delta(&before, self.relay.stats()) == 1;
        let mut moves = Vec::new();
        while let Some(moved) = self.relay.poll_moved() {
            moves.push(moved);
        }
        let now = self.now;
        // The player the relay knew at the datagram's source.
        let seated_there = self
            .players
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.relay_addr == from))
            .map(|i| i as u8);
        match kind {
            Kind::Forged => {
                assert!(!accepted, "a forged packet from {from} was taken");
                assert!(moves.is_empty(), "a forged packet moved {moves:?}");
            }
            Kind::Genuine(slot) | Kind::Replay(slot) | Kind::Changed(slot) => {
                let p = self.players[usize::from(slot)]
                    .as_ref()
                    .expect("written by a seated player");
                let silent = now.saturating_duration_since(p.last_heard) >= REBIND_SILENCE;
                if let Some(other) = seated_there.filter(|&o| o != slot) {
                    assert!(
                        !accepted,
                        "slot {slot}'s packet from slot {other}'s address was taken"
                    );
                }
                for &(moved, to) in &moves {
                    assert_eq!((moved, to), (slot, from), "{kind:?} moved the wrong client");
                    assert!(silent, "slot {slot} moved while heard within the silence");
                    assert_eq!(
                        to.ip(),
                        p.relay_addr.ip(),
                        "slot {slot} moved to another host"
                    );
                }
                if kind == Kind::Genuine(slot) && p.trusted {
                    if from == p.relay_addr {
                        assert!(
                            accepted,
                            "slot {slot}'s newest packet from its address refused"
                        );
                    } else if seated_there.is_none() {
                        assert_eq!(
                            accepted, silent,
                            "slot {slot}'s newest packet from a new port (silent: {silent})"
                        );
                        assert_eq!(moves.len(), usize::from(silent), "slot {slot} followed");
                    }
                }
                let p = self.players[usize::from(slot)].as_mut().expect("seated");
                if let Some(&(_, to)) = moves.last() {
                    p.relay_addr = to;
                }
                if accepted {
                    p.last_heard = now;
                    if matches!(kind, Kind::Changed(_)) {
                        p.trusted = false;
                        self.untrusted_origins[usize::from(slot)] = true;
                    }
                }
            }
            Kind::Raw => {
                // Raw bytes taken carry a seated player's token: from then on that player's
                // packets are not all the script's.
                if accepted {
                    let by = moves.last().map(|m| m.0).or(seated_there);
                    let by = by.expect("a taken packet belongs to a seated player");
                    let p = self.players[usize::from(by)].as_mut().expect("seated");
                    p.last_heard = now;
                    p.trusted = false;
                    self.untrusted_origins[usize::from(by)] = true;
                }
                for &(moved, to) in &moves {
                    let p = self.players[usize::from(moved)].as_mut().expect("seated");
                    assert_eq!(
                        to.ip(),
                        p.relay_addr.ip(),
                        "slot {moved} moved to another host"
                    );
                    p.relay_addr = to;
                }
            }
        }
    }

    /// Run the relay's timers if due (or `force`), then take everything it sends to the
    /// players, checking each datagram.
    fn pump(&mut self, force: bool) {
        if force || self.relay.poll_timeout().is_some_and(|t| t <= self.now) {
            self.relay.handle_timeout(self.now);
        }
        let mut buf = std::mem::take(&mut self.buf);
        let mut events = std::mem::take(&mut self.scratch);
        let max_payload = self.relay.config().max_payload;
        while let Some((to, n)) = self.relay.poll_transmit(self.now, &mut buf) {
            assert!(n <= max_payload, "a datagram of {n} bytes");
            let dest = self
                .players
                .iter()
                .position(|p| p.as_ref().is_some_and(|p| p.relay_addr == to))
                .unwrap_or_else(|| panic!("sent to {to}, where no client is known"));
            let packet =
                decode_packet(&buf[..n], &mut events).expect("the relay sends valid packets");
            let header = packet.header;
            assert_eq!(header.token, SERVER_TOKEN, "the relay signs with its token");
            assert_ne!(
                header.sender_slot,
                Some(dest as u8),
                "slot {dest} was sent its own state or events"
            );
            if let Some(state) = &packet.state {
                self.check_state(header.sender_slot, state);
            }
            let player = self.players[dest].as_mut().expect("seated");
            if player.addr != to {
                // Its NAT mapping there is gone: lost on the way.
                continue;
            }
            let mut out = Vec::new();
            let now = self.now;
            player
                .link
                .handle_packet(now, &header, packet.state.as_ref(), &events, &mut |d| {
                    out.push(d)
                });
            let mut answer_hello = false;
            for delivery in out {
                match delivery {
                    Delivery::State { origin, state } => self.check_state(origin, &state),
                    Delivery::Event { origin, event } => {
                        if let RemoteEvent::SendText(text) = &event {
                            self.check_text(dest as u8, origin, text.as_bytes());
                        }
                        if matches!(event, RemoteEvent::Resume(ResumeStep::Hello(_))) {
                            answer_hello = true;
                        }
                        // The relay tells departures under the id it was given (none here);
                        // a client's own word (never 0 in the script) is never relayed.
                        if let RemoteEvent::Vacated { told } = event {
                            assert_eq!(told, 0, "a client's RE_VACATED was relayed");
                        }
                    }
                }
            }
            if answer_hello {
                let player = self.players[dest].as_mut().expect("seated");
                let _ = player
                    .link
                    .queue_event(RemoteEvent::Resume(ResumeStep::Done));
            }
        }
        self.scratch = events;
        self.buf = buf;
        while let Some(slot) = self.relay.poll_silent() {
            // The gameserver drops a silent client (its TCP side says so to the others).
            self.leave(slot);
        }
    }

    /// Whether what arrives from `origin` is all the script's (no raw or changed packet of
    /// that slot's players was taken).
    fn checked(&self, origin: Option<u8>) -> bool {
        origin.is_none_or(|o| !self.untrusted_origins[usize::from(o)])
    }

    fn check_state(&self, origin: Option<u8>, state: &ShipState) {
        if !self.checked(origin) {
            return;
        }
        assert_ne!(state.pos[1], FORGED_MARK, "a forged state was forwarded");
        if let Some(o) = origin {
            assert_eq!(state.pos[1], f32::from(o), "slot {o}'s state is another's");
        }
    }

    fn check_text(&mut self, dest: u8, origin: Option<u8>, text: &[u8]) {
        if !self.checked(origin) {
            return;
        }
        assert!(
            !text.starts_with(FORGED_TEXT),
            "a forged chat line was forwarded"
        );
        let Some(o) = origin else {
            return;
        };
        let Some(line) = text
            .strip_prefix(b"g")
            .and_then(|rest| std::str::from_utf8(rest).ok())
        else {
            return;
        };
        let mut parts = line.split(':').map(|p| p.parse::<u32>().ok());
        let (writer, token, n) = (
            parts.next().flatten(),
            parts.next().flatten(),
            parts.next().flatten(),
        );
        assert_eq!(
            writer,
            Some(u32::from(o)),
            "a chat line of slot {writer:?} came as slot {o}'s"
        );
        // Each writer's lines reach each reader once and in order.
        let (Some(token), Some(n)) = (token, n) else {
            panic!("a chat line {line:?} of no script");
        };
        let last = self.chat_marks.insert((dest, token), n);
        assert!(
            last.is_none_or(|last| last < n),
            "slot {dest} got line {n} of slot {o} (token {token}) after line {last:?}"
        );
    }

    fn join(&mut self, slot: u8, how: u8) {
        self.pump(false);
        if self.players[usize::from(slot)].is_some() {
            self.leave(slot);
        }
        let token = self.next_token;
        self.next_token += 7;
        // Bit 0: at the port of its earlier session (a reconnect from the same address).
        let port = self.players_port(slot, how & 1 != 0);
        let addr = seat_addr(slot, port);
        self.relay.add_client(self.now, slot, addr, token);
        self.chat_marks.retain(|(reader, _), _| *reader != slot);
        self.players[usize::from(slot)] = Some(Player {
            link: Link::new(LinkConfig::default()),
            token,
            addr,
            relay_addr: addr,
            last_heard: self.now,
            trusted: true,
            sent: Vec::new(),
            chats: 0,
            ports_used: port,
        });
        // Bit 1: no hello (the relay holds what the others say until its hold limit); bit 2: it
        // is coming back and names its earlier tokens (with bit 3, those of the players of
        // another slot: it sat there before, and the server seats it elsewhere now).
        if how & 2 == 0 {
            let before = if how & 8 != 0 {
                (how >> 4) % SLOTS
            } else {
                slot
            };
            let tokens = if how & 4 != 0 {
                EarlierTokens::new(self.earlier[usize::from(before)].iter().copied().take(4))
            } else {
                EarlierTokens::default()
            };
            let hello = RemoteEvent::Resume(ResumeStep::Hello(tokens));
            if let Some(p) = self.write(slot, PacketType::NodeAlive, None, vec![hello]) {
                self.deliver(addr, &p, Kind::Genuine(slot));
            }
        }
    }

    /// The port a newcomer in `slot` takes: its predecessor's, or another one.
    fn players_port(&mut self, slot: u8, same: bool) -> u16 {
        let last = &mut self.last_port[usize::from(slot)];
        if !same {
            *last = (*last + 10) % 100;
        }
        *last
    }

    fn leave(&mut self, slot: u8) {
        if let Some(player) = self.players[usize::from(slot)].take() {
            self.relay.remove_client(self.now, slot);
            self.earlier[usize::from(slot)].insert(0, player.token);
            self.stale.extend(player.sent);
            if self.stale.len() > 16 {
                self.stale.drain(..self.stale.len() - 16);
            }
        }
    }

    fn chat(&mut self, slot: u8) -> RemoteEvent {
        let (token, n) = self.player(slot).map_or((0, 0), |p| {
            p.chats += 1;
            (p.token, p.chats)
        });
        let line = format!("g{slot}:{token}:{n}");
        RemoteEvent::SendText(ChatText::new(line.as_bytes()).expect("a short line"))
    }

    fn event(&mut self, slot: u8, script: &mut Script) -> RemoteEvent {
        let which = script.byte();
        let pos = [f32::from(script.byte()) * 100.0, 0.0, 0.0];
        match which % 10 {
            0 | 1 => self.chat(slot),
            2 => RemoteEvent::CreateMissile {
                object_id: u32::from(which),
                class: 1,
                pos,
                dir: [1.0, 0.0, 0.0],
                target_id: 0,
            },
            3 => RemoteEvent::CreateLaser {
                object_id: u32::from(which),
                class: 2,
                pos,
                dir: [0.0, 1.0, 0.0],
            },
            4 => RemoteEvent::PlayerStatus {
                joined: which & 0x10 != 0,
                flag: which >> 5,
            },
            5 => RemoteEvent::Custom {
                custom_type: 7,
                data: CustomData::new(&[which; 12]).expect("short"),
                reliable: which & 0x10 != 0,
            },
            6 => RemoteEvent::KillObject {
                object_id: u32::from(which),
                list_id: 0,
            },
            // A receive rate (0: unlimited): states to it are held back over it.
            7 => RemoteEvent::Rate(u32::from(script.byte()) * 200),
            8 => RemoteEvent::Resume(ResumeStep::Answer {
                yours: if which & 0x10 != 0 {
                    SERVER_TOKEN
                } else {
                    script.u32().max(1)
                },
                mine: self.earlier[usize::from(slot)]
                    .first()
                    .copied()
                    .unwrap_or(1),
                delivered: u32::from(script.byte()),
            }),
            // Only the relay may say a player left: a client's word is dropped.
            9 if which & 0x10 != 0 => RemoteEvent::Vacated {
                told: script.u32().max(1),
            },
            _ => RemoteEvent::Resume(ResumeStep::Done),
        }
    }

    fn state(slot: u8, script: &mut Script) -> ShipState {
        ShipState {
            pos: [f32::from(script.byte()) * 100.0, f32::from(slot), 0.0],
            ..ShipState::default()
        }
    }

    /// A datagram source chosen by the script: a player's current or seated address, or a
    /// stranger.
    fn source(&self, which: u8) -> SocketAddr {
        let slot = usize::from((which >> 2) % SLOTS);
        let p = self.players[slot].as_ref();
        match which % 4 {
            0 => p.map_or(stranger(which), |p| p.addr),
            1 => p.map_or(stranger(which), |p| p.relay_addr),
            _ => stranger(which >> 4),
        }
    }

    /// A packet that must never be taken: a token that is not its slot's current player's, or
    /// a slot's token from another player's address. It says FORGED in its state and text.
    fn forge(&mut self, script: &mut Script) {
        let how = script.byte();
        let claimed = script.byte() % 16;
        let tokens: Vec<Option<u32>> = (0..16)
            .map(|s| {
                self.players
                    .get(s)
                    .and_then(|p| p.as_ref())
                    .map(|p| p.token)
            })
            .collect();
        let fresh_sequence = self
            .players
            .get(usize::from(claimed))
            .and_then(|p| p.as_ref())
            .map_or(1, |p| p.link.next_sequence())
            .wrapping_add(u32::from(how >> 4))
            .max(1);
        let (slot, token, from) = if how & 1 == 0 {
            // A wrong token: an earlier one of the slot, another player's, or a guess.
            let token = match how & 6 {
                0 => self.earlier[usize::from(claimed % SLOTS)]
                    .first()
                    .copied()
                    .unwrap_or(0x77),
                2 => tokens
                    .iter()
                    .flatten()
                    .copied()
                    .find(|&t| Some(t) != tokens[usize::from(claimed)])
                    .unwrap_or(0x78),
                _ => script.u32().max(1),
            };
            if Some(token) == tokens[usize::from(claimed)] {
                return;
            }
            let slot = if how & 8 != 0 { None } else { Some(claimed) };
            let from = self.source(script.byte());
            // Without a slot, a packet from a player's address is that player's: only a
            // wrong token makes it forged.
            if slot.is_none() {
                if let Some(p) = self.players.iter().flatten().find(|p| p.relay_addr == from) {
                    if p.token == token {
                        return;
                    }
                }
            }
            (slot, token, from)
        } else {
            // The right token of the slot it claims, from another seated player's address.
            let Some(token) = tokens[usize::from(claimed)] else {
                return;
            };
            let Some(from) = self
                .players
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != usize::from(claimed))
                .filter_map(|(_, p)| p.as_ref())
                .map(|p| p.relay_addr)
                .nth(usize::from(how >> 1) % 4)
            else {
                return;
            };
            (Some(claimed), token, from)
        };
        let header = PacketHeader {
            kind: if how & 0x20 != 0 {
                PacketType::NodeAlive
            } else {
                PacketType::GameState
            },
            sender_slot: slot,
            joined: true,
            sequence: fresh_sequence,
            ack: None,
            token,
        };
        let state = ShipState {
            pos: [0.0, FORGED_MARK, 0.0],
            ..ShipState::default()
        };
        let events = [WireEvent {
            reliable_id: Some(u32::from(script.byte()).max(1)),
            event: RemoteEvent::SendText(ChatText::new(FORGED_TEXT).expect("short")),
        }];
        let mut buf = [0u8; 512];
        let len = encode_packet(&mut buf, &header, Some(&state), &events).expect("fits");
        self.deliver(from, &buf[..len], Kind::Forged);
    }

    fn step(&mut self, script: &mut Script) {
        let op = script.byte();
        let slot = op % SLOTS;
        let seated = self.players[usize::from(slot)].is_some();
        match op >> 2 {
            // Seating and leaving (the gameserver's TCP side).
            0..=2 => self.join(slot, script.byte()),
            3 => {
                self.pump(false);
                self.leave(slot);
            }
            // Its ship state.
            4..=11 if seated => {
                let state = Self::state(slot, script);
                let p = self.write(slot, PacketType::GameState, Some(state), vec![]);
                self.send_genuine(slot, p);
            }
            // Events (with a state or not).
            12..=19 if seated => {
                let count = 1 + script.byte() % 3;
                let events = (0..count).map(|_| self.event(slot, script)).collect();
                let state = (op & 0x80 != 0).then(|| Self::state(slot, script));
                let p = self.write(slot, PacketType::GameState, state, events);
                self.send_genuine(slot, p);
            }
            20..=21 if seated => {
                let p = self.write(slot, PacketType::NodeAlive, None, vec![]);
                self.send_genuine(slot, p);
            }
            // A burst: several packets read before the next forwarding pass.
            22..=23 if seated => {
                for _ in 0..1 + script.byte() % 8 {
                    let state = Self::state(slot, script);
                    let events = if script.byte() & 1 == 0 {
                        vec![]
                    } else {
                        vec![self.event(slot, script)]
                    };
                    let p = self.write(slot, PacketType::GameState, Some(state), events);
                    self.send_genuine(slot, p);
                }
            }
            // A packet lost on the way (kept for a replay).
            24 if seated => {
                let state = Self::state(slot, script);
                let chat = self.chat(slot);
                self.write(slot, PacketType::GameState, Some(state), vec![chat]);
            }
            // The NAT gives it a new port.
            25..=26 if seated => {
                let p = self.player(slot).expect("seated");
                p.ports_used = (p.ports_used + 1) % 100;
                p.addr = seat_addr(slot, p.ports_used);
            }
            // A packet of an earlier session (another token), from anywhere.
            27 if !self.stale.is_empty() => {
                let packet = self.stale[usize::from(script.byte()) % self.stale.len()].clone();
                let from = self.source(script.byte());
                self.deliver(from, &packet, Kind::Forged);
            }
            // An earlier packet of it again, from anywhere.
            28..=29 if seated => {
                let at = usize::from(script.byte());
                let from = self.source(script.byte());
                let p = self.player(slot).expect("seated");
                if !p.sent.is_empty() {
                    let packet = p.sent[at % p.sent.len()].clone();
                    self.deliver(from, &packet, Kind::Replay(slot));
                }
            }
            // Its newest packet truncated, grown, or with a header byte changed.
            30..=32 if seated => {
                let how = script.byte();
                let arg = script.byte();
                let from = self.source(script.byte());
                let state = Self::state(slot, script);
                let chat = self.chat(slot);
                let Some(mut p) = self.write(slot, PacketType::GameState, Some(state), vec![chat])
                else {
                    return;
                };
                match how % 3 {
                    0 => p.truncate(usize::from(arg) % p.len()),
                    1 => p.resize(p.len() + 1 + usize::from(arg) * 12, how),
                    _ => p[usize::from(arg) % HEADER_LEN] ^= how | 1,
                }
                self.deliver(from, &p, Kind::Changed(slot));
            }
            // Forged packets.
            33..=40 => self.forge(script),
            // Raw bytes from anyone.
            41..=43 => {
                let from = self.source(script.byte());
                let len = usize::from(script.byte());
                let data = script.bytes(len).to_vec();
                self.deliver(from, &data, Kind::Raw);
            }
            // Time passes (the relay's timers run when due); sometimes a long silence.
            44..=55 => {
                let step = u64::from(script.byte());
                let unit = if op & 0x40 != 0 { 100 } else { 8 };
                self.now += Duration::from_millis(step * unit);
                self.pump(false);
            }
            // The driver's forwarding pass after a burst was read.
            _ => self.pump(true),
        }
    }

    /// Send a player's newest packet from where it is now.
    fn send_genuine(&mut self, slot: u8, packet: Option<Vec<u8>>) {
        if let Some(packet) = packet {
            let from = self.player(slot).expect("seated").addr;
            self.deliver(from, &packet, Kind::Genuine(slot));
        }
    }
}

/// See the module's documentation.
pub fn relay_datagrams(data: &[u8]) {
    let mut script = Script { data, at: 0 };
    let distance = match script.byte() % 3 {
        0 => 0.0,
        1 => 5000.0,
        _ => 300.0,
    };
    let mut run = Run::new(distance);
    // Two players seated and greeted, so most inputs start inside a game.
    run.join(0, 0);
    run.join(1, 0);
    let mut ops = 0;
    while !script.done() && ops < MAX_OPS {
        run.step(&mut script);
        ops += 1;
    }
    run.pump(true);
}
