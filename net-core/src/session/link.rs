//! A link: what one endpoint keeps about one remote node. Packet sequence numbers and
//! acknowledgements (sequence, ack, 32 ack bits), the reliable event stream in both directions
//! (retransmitted until acknowledged, delivered exactly once and in order, at most
//! [`RELIABLE_PACKET_WINDOW`] packets of it unacknowledged), and RTT and loss measured from
//! acknowledgements. Sans-IO: time is passed in, bytes go in and out as slices.
//!
//! Methods come in the usual sans-IO kinds: getters; `queue_event` (what the game asks);
//! `write_packet` (what goes out, when the owner decides a packet is due); `handle_packet`
//! (what arrived, after the codec validated it). A link never sends by itself; its owner asks
//! `wants_to_send` to know whether reliable data or an acknowledgement is waiting.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::rmev::{RemoteEvent, ShipState};
use crate::wire::{Ack, EncodeError, PacketHeader, PacketType, PacketWriter, WireEvent};

/// Tunables of a link.
#[derive(Clone, Copy, Debug)]
pub struct LinkConfig {
    /// Retransmission timeout before the first RTT sample.
    pub initial_rto: Duration,
    pub min_rto: Duration,
    pub max_rto: Duration,
    /// Most reliable events sent and not yet acknowledged; newer ones wait (not lost).
    pub max_in_flight: usize,
    /// Most events waiting to be sent for the first time; beyond this `queue_event` refuses.
    pub max_queued: usize,
    /// Most out-of-order reliable events held while an earlier one is missing.
    pub max_reorder: u32,
    /// An acknowledgement alone is not worth a packet at the moment it became owed, only from
    /// the next moment on: a game's frame (`NETs_MaintainNet`) receives and then sends at one
    /// `now`, so the acknowledgement waits for the next frame and rides with the answers the
    /// game queued in between. Off for the relay, which answers at once.
    pub ack_with_next_frame: bool,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            initial_rto: Duration::from_millis(200),
            min_rto: Duration::from_millis(40),
            max_rto: Duration::from_millis(1500),
            max_in_flight: 1024,
            max_queued: 65_536,
            max_reorder: 8192,
            ack_with_next_frame: false,
        }
    }
}

/// Sequence numbers of sent packets remembered for acknowledgement.
const SENT_WINDOW: usize = 1024;
/// Received sequence numbers covered by the ack bits.
const ACK_BITS: u32 = 32;
/// Most packets carrying reliable events a link has in flight: counted from the oldest packet
/// that last carried a still unacknowledged reliable event to the packet being written, packets
/// with reliable events only (a packet of state alone neither counts nor waits). One
/// acknowledgement names the latest sequence and the 32 before it, and a receiver reads a burst
/// in one frame and answers once, so a link that sent more at once would see the older ones as
/// lost though they arrived, and send their events again. New reliable events wait in the queue
/// until acknowledgements open the window; retransmissions are never held back.
pub const RELIABLE_PACKET_WINDOW: u64 = ACK_BITS as u64;
/// Loss is measured over this many resolved packets (acked or given up on).
const LOSS_WINDOW: u32 = 256;
/// A packet still unacknowledged this many retransmission timeouts after it was sent, when an
/// acknowledgement of a later packet comes without it, counts as lost at once: at a low packet
/// rate (keep-alives, 5 Hz) waiting until 32 later packets are acknowledged kept `status` at
/// loss 0.0% for many seconds. If it is acknowledged after all (it came late), it counts as
/// acknowledged instead, never as lost.
const LOSS_AFTER_RTOS: u32 = 2;

/// The header fields of an outgoing packet that the link's owner decides (the link adds the
/// sequence and acknowledgement fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketMeta {
    pub kind: PacketType,
    pub sender_slot: Option<u8>,
    pub joined: bool,
    pub token: u32,
    /// A relay packet (gameserver): it carries only the events queued from origin
    /// `sender_slot`, so the receiver attributes them to that player.
    pub relay: bool,
}

/// What `handle_packet` did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketVerdict {
    /// New packet: acks processed, events delivered.
    Accepted,
    /// Already received this sequence number: ignored entirely.
    Duplicate,
    /// Too old to tell whether it was received: ignored entirely.
    Stale,
}

/// Something a packet delivered to the owner.
#[derive(Clone, Debug, PartialEq)]
pub enum Delivery {
    /// The newest ship state of `origin` (older states are dropped, never delivered). `origin`
    /// is the sender slot of the packet that carried it (None: no slot, e.g. a server).
    State {
        origin: Option<u8>,
        state: ShipState,
    },
    /// An event, exactly once and in order for reliable ones, with the sender slot of the packet
    /// that carried it.
    Event {
        origin: Option<u8>,
        event: RemoteEvent,
    },
}

/// Counters shown by `status` and checked by tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub duplicate_packets: u64,
    pub stale_packets: u64,
    pub reliable_sent: u64,
    pub retransmissions: u64,
    pub reliable_acked: u64,
    pub reliable_delivered: u64,
    pub duplicate_events: u64,
    pub reorder_overflow: u64,
    pub outdated_states: u64,
    pub unreliable_delivered: u64,
    pub packets_acked: u64,
    pub packets_lost: u64,
}

#[derive(Clone, Debug)]
struct InFlight {
    id: u32,
    origin: Option<u8>,
    /// The owner's tag (see `queue_tagged`).
    tag: u64,
    event: RemoteEvent,
    last_sent: Instant,
    /// The number of the packet with reliable events that last carried it (see
    /// `Link::reliable_packets`).
    last_packet: u64,
    acked: bool,
}

#[derive(Clone, Debug, Default)]
struct SentPacket {
    sequence: u32,
    sent_at: Option<Instant>,
    /// How many reliable ids this packet carried (retransmissions interleave, so each is
    /// listed); the ids themselves are this packet's run in `Link::sent_ids`.
    id_count: u32,
    acked: bool,
    /// Counted as lost before it left the acknowledgement window (see `LOSS_AFTER_RTOS`).
    counted_lost: bool,
}

/// Smoothed round-trip time (RFC 6298 style) giving the retransmission timeout.
#[derive(Clone, Copy, Debug)]
struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    latest: Option<Duration>,
    /// The retransmission timeout these give, kept from the last sample (every frame's timers
    /// ask for it; it changes only with a sample).
    rto: Duration,
}

impl RttEstimator {
    fn new(config: &LinkConfig) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            latest: None,
            rto: config.initial_rto,
        }
    }

    fn sample(&mut self, rtt: Duration, config: &LinkConfig) {
        self.latest = Some(rtt);
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let delta = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + delta) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
        self.rto = self.compute_rto(config);
    }

    fn compute_rto(&self, config: &LinkConfig) -> Duration {
        match self.srtt {
            None => config.initial_rto,
            Some(srtt) => (srtt + self.rttvar * 4).clamp(config.min_rto, config.max_rto),
        }
    }
}

/// One remote node's reliable channel.
pub struct Link {
    config: LinkConfig,
    // --- outgoing ---
    /// The sequence of this link's first packet (see `starting_at`).
    first_sequence: u32,
    next_sequence: u32,
    sent: VecDeque<SentPacket>,
    /// The reliable ids of every packet in `sent`, packet after packet in the same order: one
    /// ring that reaches its working size once, instead of a list per packet.
    sent_ids: VecDeque<u32>,
    /// The ids of the packet being written (reused between packets).
    carried_scratch: Vec<u32>,
    /// The ids an acknowledgement covers (reused between acknowledgements).
    acked_scratch: Vec<u32>,
    /// The id the next reliable event gets (ids are given in queue order, see `number_queued`).
    next_reliable_id: u32,
    /// Events waiting for their first transmission, in creation order: (origin, tag, event,
    /// reliable id once given).
    queued: VecDeque<(Option<u8>, u64, RemoteEvent, Option<u32>)>,
    /// How many queued events have their reliable id already.
    numbered_unsent: usize,
    /// Reliable events sent and not yet acknowledged, by id.
    in_flight: VecDeque<InFlight>,
    /// The earliest `last_sent` of the unacknowledged events in `in_flight` (None: none), kept
    /// up to date by every change to `in_flight`, so that the checks a game makes every frame
    /// (`wants_to_send`, `next_retransmit`) do not walk the window.
    earliest_unacked_sent: Option<Instant>,
    /// How many packets with reliable events (new or retransmitted) this link has written; such
    /// a packet is numbered by this count once written.
    reliable_packets: u64,
    /// The smallest `last_packet` of the unacknowledged events in `in_flight` (None: none),
    /// kept up to date with `earliest_unacked_sent`: where the window of
    /// [`RELIABLE_PACKET_WINDOW`] starts.
    oldest_unacked_packet: Option<u64>,
    // --- incoming ---
    latest_received: Option<u32>,
    received_bits: u32,
    next_expected_id: u32,
    reorder: BTreeMap<u32, (Option<u8>, RemoteEvent)>,
    /// Sequence of the newest state delivered, per origin slot (index 16: no slot).
    latest_state_sequence: [Option<u32>; 17],
    /// An acknowledgement is owed since this time (the packet that made it owed).
    ack_owed: Option<Instant>,
    // --- measurement ---
    rtt: RttEstimator,
    loss_acked: u32,
    loss_lost: u32,
    stats: LinkStats,
}

/// Whether a queued event (with its reliable id, if it has one) may go in the next packet as far
/// as the windows go: an unreliable one always; a reliable one while the packet window
/// ([`RELIABLE_PACKET_WINDOW`]) is open and it has an id or the in-flight window has room for one.
fn passes_windows(
    event: &RemoteEvent,
    id: Option<u32>,
    packet_window_open: bool,
    room: bool,
) -> bool {
    !event.is_reliable() || (packet_window_open && (id.is_some() || room))
}

impl Link {
    pub fn new(config: LinkConfig) -> Link {
        Link::starting_at(config, 1)
    }

    /// A link whose packets are numbered from `first` (non-zero; 0 is taken as 1). The wire
    /// lets a sender start anywhere; a mesh session starts each link where no earlier link of
    /// the node could have reached, so an acknowledgement meant for an earlier link does not
    /// look like one of this link's (see `acks_this_link`).
    pub fn starting_at(config: LinkConfig, first: u32) -> Link {
        let first = first.max(1);
        let rtt = RttEstimator::new(&config);
        Link {
            config,
            first_sequence: first,
            next_sequence: first,
            sent: VecDeque::with_capacity(SENT_WINDOW),
            sent_ids: VecDeque::new(),
            carried_scratch: Vec::new(),
            acked_scratch: Vec::new(),
            next_reliable_id: 1,
            queued: VecDeque::new(),
            numbered_unsent: 0,
            in_flight: VecDeque::new(),
            earliest_unacked_sent: None,
            reliable_packets: 0,
            oldest_unacked_packet: None,
            latest_received: None,
            received_bits: 0,
            next_expected_id: 1,
            reorder: BTreeMap::new(),
            latest_state_sequence: [None; 17],
            ack_owed: None,
            rtt,
            loss_acked: 0,
            loss_lost: 0,
            stats: LinkStats::default(),
        }
    }

    // ----- getters ---------------------------------------------------------------------------

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Whether `sequence` is newer than every packet received on this link (a replay of an old
    /// packet from a new address cannot move the link there).
    pub fn is_fresh(&self, sequence: u32) -> bool {
        self.latest_received
            .is_none_or(|latest| seq_before(latest, sequence))
    }

    /// The sequence the next packet gets.
    pub fn next_sequence(&self) -> u32 {
        self.next_sequence
    }

    /// Whether a packet acknowledging `ack` can belong to this link: the acknowledgement names
    /// a packet this link sent (or none). A packet whose acknowledgement names one this link
    /// never sent was written for another link of this node: an earlier session at the same
    /// address (a player that reconnected with a new token), still in flight. Taking it would
    /// deliver events meant for that session under this link's reliable ids and count this
    /// link's packets of the same sequence as received, so their events would be acknowledged
    /// without ever being delivered.
    pub fn acks_this_link(&self, ack: Option<Ack>) -> bool {
        ack.is_none_or(|ack| {
            !seq_before(ack.latest, self.first_sequence)
                && seq_before(ack.latest, self.next_sequence)
        })
    }

    /// Smoothed round-trip time, once measured.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt.srtt
    }

    /// The current retransmission timeout.
    pub fn rto(&self) -> Duration {
        debug_assert_eq!(self.rtt.rto, self.rtt.compute_rto(&self.config));
        self.rtt.rto
    }

    /// Fraction of sent packets that were not acknowledged, over the recent window (0.0-1.0).
    pub fn loss(&self) -> f64 {
        let total = self.loss_acked + self.loss_lost;
        if total == 0 {
            0.0
        } else {
            f64::from(self.loss_lost) / f64::from(total)
        }
    }

    /// Reliable events not yet acknowledged plus events not yet sent.
    pub fn unacknowledged(&self) -> usize {
        self.in_flight.iter().filter(|f| !f.acked).count() + self.queued.len()
    }

    /// Whether something should be sent soon: an acknowledgement is owed, or events wait for
    /// their first transmission, or a retransmission is due at `now`.
    pub fn wants_to_send(&self, now: Instant) -> bool {
        self.ack_due_at().is_some_and(|due| due <= now)
            || self.has_new_events()
            || self.next_retransmit(now).is_some_and(|t| t <= now)
    }

    /// When an owed acknowledgement is worth a packet of its own (see
    /// [`LinkConfig::ack_with_next_frame`]); `None` when none is owed.
    pub fn ack_due_at(&self) -> Option<Instant> {
        let owed = self.ack_owed?;
        Some(if self.config.ack_with_next_frame {
            owed + Duration::from_nanos(1)
        } else {
            owed
        })
    }

    /// Whether events wait for their first transmission (and the in-flight windows have room
    /// for reliable ones).
    pub fn has_new_events(&self) -> bool {
        match self.queued.front() {
            None => false,
            Some((_, _, ev, id)) => self.may_send(ev, *id),
        }
    }

    /// [`passes_windows`] for the next packet.
    fn may_send(&self, event: &RemoteEvent, id: Option<u32>) -> bool {
        passes_windows(
            event,
            id,
            self.packet_window_open(self.reliable_packets + 1),
            self.window_has_room(),
        )
    }

    /// Whether packet `number` (see `reliable_packets`) may carry new reliable events: it stays
    /// within [`RELIABLE_PACKET_WINDOW`] packets of the oldest one that still carries an
    /// unacknowledged event.
    fn packet_window_open(&self, number: u64) -> bool {
        debug_assert_eq!(self.oldest_unacked_packet, self.scan_unacked().1);
        self.oldest_unacked_packet
            .is_none_or(|oldest| number - oldest < RELIABLE_PACKET_WINDOW)
    }

    /// When the earliest retransmission becomes due, if any event is in flight.
    pub fn next_retransmit(&self, _now: Instant) -> Option<Instant> {
        debug_assert_eq!(self.earliest_unacked_sent, self.scan_unacked().0);
        // The same rto is added to every send time, so the earliest send gives the earliest.
        self.earliest_unacked_sent.map(|t| t + self.rto())
    }

    /// Whether a retransmission is due at `now` (the test `write_packet` applies to each event
    /// in flight, applied to the earliest sent: if that one is not due, none is).
    fn retransmission_due(&self, now: Instant) -> bool {
        debug_assert_eq!(self.earliest_unacked_sent, self.scan_unacked().0);
        self.earliest_unacked_sent
            .is_some_and(|t| now.saturating_duration_since(t) >= self.rto())
    }

    /// `earliest_unacked_sent` and `oldest_unacked_packet` computed from the window.
    fn scan_unacked(&self) -> (Option<Instant>, Option<u64>) {
        let unacked = || self.in_flight.iter().filter(|f| !f.acked);
        (
            unacked().map(|f| f.last_sent).min(),
            unacked().map(|f| f.last_packet).min(),
        )
    }

    // ----- what the game asks -------------------------------------------------------------

    /// Queue an event for this link; sent with the next packets, in order.
    /// Returns false (and keeps nothing) if the queue is full.
    pub fn queue_event(&mut self, event: RemoteEvent) -> bool {
        self.queue_from(None, 0, event)
    }

    /// Queue an event with the owner's `tag` (given back by `outgoing_stream`; a session tags
    /// the game's events with their serial number).
    pub fn queue_tagged(&mut self, tag: u64, event: RemoteEvent) -> bool {
        self.queue_from(None, tag, event)
    }

    /// Queue an event another player (`origin`) sent, for a relay (see `PacketMeta::relay`),
    /// with the relay's serial of it as the tag.
    pub fn queue_relayed(&mut self, origin: u8, serial: u64, event: RemoteEvent) -> bool {
        self.queue_from(Some(origin), serial, event)
    }

    fn queue_from(&mut self, origin: Option<u8>, tag: u64, event: RemoteEvent) -> bool {
        if self.queued.len() >= self.config.max_queued {
            return false;
        }
        self.queued.push_back((origin, tag, event, None));
        true
    }

    /// Whether another reliable event may get an id: the ones in flight and the ones numbered
    /// but not yet sent stay within `max_in_flight`.
    fn window_has_room(&self) -> bool {
        self.in_flight.len() + self.numbered_unsent < self.config.max_in_flight
    }

    /// Give the queued reliable events their ids, in queue order, as far as the window allows.
    /// A relay writes one packet per origin, so events are not sent in queue order; numbering
    /// them in queue order keeps the receiver's delivery (by id) in the order the relay got
    /// them, also across origins (a player that came back from a backend switch has two).
    fn number_queued(&mut self) {
        for index in 0..self.queued.len() {
            if !self.window_has_room() {
                return;
            }
            let (_, _, event, id) = &mut self.queued[index];
            if !event.is_reliable() || id.is_some() {
                continue;
            }
            *id = Some(self.next_reliable_id);
            self.next_reliable_id = self.next_reliable_id.wrapping_add(1).max(1);
            self.numbered_unsent += 1;
        }
    }

    /// Add to `origins` (each once) the origins of the events waiting for a retransmission due
    /// at `now` or for their first transmission, if the windows let them go (a relay writes one
    /// packet per origin).
    pub fn pending_origins(&self, now: Instant, origins: &mut Vec<Option<u8>>) {
        let rto = self.rto();
        let due = self
            .in_flight
            .iter()
            .filter(|f| !f.acked && now.saturating_duration_since(f.last_sent) >= rto)
            .map(|f| f.origin);
        for origin in due {
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        // Queued events as far as the windows let them go: after an origin's first held
        // reliable event, nothing of that origin goes (its packet would carry nothing).
        let window_open = self.packet_window_open(self.reliable_packets + 1);
        let room = self.window_has_room();
        let mut held = [0u64; 5]; // origins 0-255, and bit 256 for none
        for (origin, _, event, id) in &self.queued {
            let bit = origin.map_or(256, usize::from);
            let (word, mask) = (bit / 64, 1u64 << (bit % 64));
            if held[word] & mask != 0 {
                continue;
            }
            if !passes_windows(event, *id, window_open, room) {
                held[word] |= mask;
            } else if !origins.contains(origin) {
                origins.push(*origin);
            }
        }
    }

    /// The reliable events of this link's outgoing stream the other side may not have
    /// delivered, with their reliable ids: everything from the oldest unacknowledged one on
    /// (acknowledged ones after it may still wait in the other's reorder buffer), then the
    /// queued ones with the ids they would get. Unreliable events are left out.
    /// `then` are (tag, event) pairs the owner holds back for this link, numbered after the
    /// queued ones. Each entry is (reliable id, tag, event).
    pub fn outgoing_stream(&self, then: &[(u64, RemoteEvent)]) -> Vec<(u32, u64, RemoteEvent)> {
        let then = then.iter().map(|(tag, e)| (None, *tag, e));
        self.stream_entries(then)
            .map(|(id, _, tag, e)| (id, tag, e.clone()))
            .collect()
    }

    /// The same for a relay, with each event's origin: `then` are (origin, serial, event)
    /// triples the relay holds back for this link. Each entry is (reliable id, origin, tag,
    /// event).
    /// The reliable id the next queued reliable event will get.
    pub fn next_reliable_id(&self) -> u32 {
        self.next_reliable_id
    }

    pub fn relayed_stream(
        &self,
        then: &[(u8, u64, RemoteEvent)],
    ) -> Vec<(u32, Option<u8>, u64, RemoteEvent)> {
        let then = then.iter().map(|(origin, tag, e)| (Some(*origin), *tag, e));
        self.stream_entries(then)
            .map(|(id, origin, tag, e)| (id, origin, tag, e.clone()))
            .collect()
    }

    /// In flight, then queued, then `then`, reliable ones only, numbered on from the ids in
    /// flight: (reliable id, origin, tag, event).
    fn stream_entries<'a>(
        &'a self,
        then: impl Iterator<Item = (Option<u8>, u64, &'a RemoteEvent)> + 'a,
    ) -> impl Iterator<Item = (u32, Option<u8>, u64, &'a RemoteEvent)> + 'a {
        let mut next_id = self.next_reliable_id;
        let waiting = self
            .queued
            .iter()
            .map(|(origin, tag, e, id)| (*origin, *tag, e, *id))
            .chain(then.map(|(origin, tag, e)| (origin, tag, e, None)));
        let queued =
            waiting
                .filter(|(_, _, e, _)| e.is_reliable())
                .map(move |(origin, tag, e, id)| {
                    let id = id.unwrap_or_else(|| {
                        let id = next_id;
                        next_id = next_id.wrapping_add(1).max(1);
                        id
                    });
                    (id, origin, tag, e)
                });
        self.in_flight
            .iter()
            .map(|f| (f.id, f.origin, f.tag, &f.event))
            .chain(queued)
    }

    /// The last reliable id of the other side's stream delivered, in order (0: none yet).
    pub fn delivered_id(&self) -> u32 {
        self.next_expected_id.wrapping_sub(1)
    }

    /// Events waiting for their first transmission (position refresh edits them in place).
    pub fn queued_events_mut(&mut self) -> impl Iterator<Item = &mut RemoteEvent> {
        self.queued.iter_mut().map(|(_, _, event, _)| event)
    }

    // ----- what goes out -------------------------------------------------------------------

    /// Write one packet into `buf`: header (next sequence, current acks), the state if given,
    /// then due retransmissions, then new events in creation order, as many as fit. Returns the
    /// packet length. Unreliable events that do not fit stay queued for the next packet.
    pub fn write_packet(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        meta: PacketMeta,
        state: Option<&ShipState>,
    ) -> Result<usize, EncodeError> {
        self.write_packet_resending(now, buf, meta, state, false)
    }

    /// A copy of what this link still owes, for a player that is leaving (see
    /// `Session::farewell_copies`): a packet as [`write_packet`](Self::write_packet) writes,
    /// with every unacknowledged reliable event sent again whatever its retransmission time.
    /// None when nothing is unacknowledged or queued.
    pub fn write_farewell(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        meta: PacketMeta,
        state: Option<&ShipState>,
    ) -> Result<Option<usize>, EncodeError> {
        if self.earliest_unacked_sent.is_none() && self.queued.is_empty() {
            return Ok(None);
        }
        self.write_packet_resending(now, buf, meta, state, true)
            .map(Some)
    }

    fn write_packet_resending(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        meta: PacketMeta,
        state: Option<&ShipState>,
        resend_all: bool,
    ) -> Result<usize, EncodeError> {
        let sequence = self.next_sequence;
        let PacketMeta {
            kind,
            sender_slot,
            joined,
            token,
            relay,
        } = meta;
        let wanted = |origin: Option<u8>| !relay || origin == sender_slot;
        let header = PacketHeader {
            kind,
            sender_slot,
            joined,
            sequence,
            ack: self.latest_received.map(|latest| Ack {
                latest,
                bits: self.received_bits,
            }),
            token,
        };
        let mut writer = PacketWriter::new(buf, &header, state)?;
        let mut carried = std::mem::take(&mut self.carried_scratch);
        carried.clear();
        let rto = if resend_all {
            Duration::ZERO
        } else {
            self.rto()
        };
        // The number this packet gets if it carries reliable events.
        let packet_number = self.reliable_packets + 1;
        // Retransmissions first: they are older than anything new, and never wait for the
        // packet window (they are what opens it). (The window is walked only when the earliest
        // event sent is due.)
        if resend_all || self.retransmission_due(now) {
            for flight in self
                .in_flight
                .iter_mut()
                .filter(|f| !f.acked && wanted(f.origin))
            {
                let due = now.saturating_duration_since(flight.last_sent) >= rto;
                if !due {
                    continue;
                }
                if !writer.push_parts(Some(flight.id), &flight.event)? {
                    break;
                }
                self.stats.retransmissions += 1;
                flight.last_sent = now;
                flight.last_packet = packet_number;
                carried.push(flight.id);
            }
        }
        if !carried.is_empty() {
            self.reliable_packets = packet_number;
            (self.earliest_unacked_sent, self.oldest_unacked_packet) = self.scan_unacked();
        }
        // New events in creation order (a relay packet takes only its origin's). Reliable ones
        // only while the packet window is open (checked once: this packet's own events do not
        // close it).
        self.number_queued();
        let window_open = self.packet_window_open(packet_number);
        let mut index = 0;
        while let Some((origin, _, event, id)) = self.queued.get(index) {
            if !wanted(*origin) {
                index += 1;
                continue;
            }
            if event.is_reliable() && (id.is_none() || !window_open) {
                break; // a window is full: this event and the ones after it wait
            }
            if !writer.push_parts(*id, event)? {
                break;
            }
            let (origin, tag, event, id) = self.queued.remove(index).expect("index exists");
            if let Some(id) = id {
                self.numbered_unsent -= 1;
                // In id order (a relay's per-origin packets send ids out of order): everything
                // after the oldest unacknowledged id may still wait in the other side's reorder
                // buffer, so only a prefix of acknowledged ids may be forgotten.
                let at = self
                    .in_flight
                    .iter()
                    .rposition(|f| seq_before(f.id, id))
                    .map_or(0, |i| i + 1);
                self.in_flight.insert(
                    at,
                    InFlight {
                        id,
                        origin,
                        tag,
                        event,
                        last_sent: now,
                        last_packet: packet_number,
                        acked: false,
                    },
                );
                self.stats.reliable_sent += 1;
                self.earliest_unacked_sent =
                    Some(self.earliest_unacked_sent.map_or(now, |t| t.min(now)));
                self.oldest_unacked_packet.get_or_insert(packet_number);
                self.reliable_packets = packet_number;
                carried.push(id);
            }
        }
        let len = writer.finish();
        self.next_sequence = self.next_sequence.wrapping_add(1).max(1);
        self.record_sent(
            SentPacket {
                sequence,
                sent_at: Some(now),
                id_count: carried.len() as u32,
                acked: false,
                counted_lost: false,
            },
            &carried,
        );
        self.carried_scratch = carried;
        self.ack_owed = None;
        self.stats.packets_sent += 1;
        Ok(len)
    }

    fn record_sent(&mut self, packet: SentPacket, ids: &[u32]) {
        if self.sent.len() == SENT_WINDOW {
            if let Some(old) = self.pop_oldest_sent() {
                if !old.acked && !old.counted_lost {
                    self.count_lost();
                }
            }
        }
        self.sent.push_back(packet);
        self.sent_ids.extend(ids);
    }

    /// Stop tracking the oldest sent packet, with its ids.
    fn pop_oldest_sent(&mut self) -> Option<SentPacket> {
        let packet = self.sent.pop_front()?;
        self.sent_ids.drain(..packet.id_count as usize);
        Some(packet)
    }

    // ----- what arrives ----------------------------------------------------------------------

    /// Take a validated packet from the remote: process its acknowledgements, its state and its
    /// events. Deliveries are pushed to `out` in order.
    pub fn handle_packet(
        &mut self,
        now: Instant,
        header: &PacketHeader,
        state: Option<&ShipState>,
        events: &[WireEvent],
        out: &mut impl FnMut(Delivery),
    ) -> PacketVerdict {
        let sequence = header.sequence;
        match self.latest_received {
            Some(latest) if sequence == latest => {
                self.stats.duplicate_packets += 1;
                return PacketVerdict::Duplicate;
            }
            Some(latest) if seq_before(sequence, latest) => {
                let behind = latest.wrapping_sub(sequence);
                if behind > ACK_BITS {
                    self.stats.stale_packets += 1;
                    return PacketVerdict::Stale;
                }
                let bit = 1u32 << (behind - 1);
                if self.received_bits & bit != 0 {
                    self.stats.duplicate_packets += 1;
                    return PacketVerdict::Duplicate;
                }
                self.received_bits |= bit;
            }
            Some(latest) => {
                let ahead = sequence.wrapping_sub(latest);
                self.received_bits = if ahead > ACK_BITS {
                    0
                } else {
                    (self.received_bits << 1 | 1) << (ahead - 1)
                };
                self.latest_received = Some(sequence);
            }
            None => {
                self.latest_received = Some(sequence);
                self.received_bits = 0;
            }
        }
        self.stats.packets_received += 1;
        if let Some(ack) = header.ack {
            self.process_ack(now, ack);
        }
        let origin = header.sender_slot;
        if let Some(state) = state {
            let latest =
                &mut self.latest_state_sequence[origin.map_or(16, |s| usize::from(s).min(16))];
            let newer = latest.is_none_or(|s| seq_before(s, sequence));
            if newer {
                *latest = Some(sequence);
                out(Delivery::State {
                    origin,
                    state: *state,
                });
            } else {
                self.stats.outdated_states += 1;
            }
        }
        for wire in events {
            match wire.reliable_id {
                None => {
                    self.stats.unreliable_delivered += 1;
                    out(Delivery::Event {
                        origin,
                        event: wire.event.clone(),
                    });
                }
                Some(id) => {
                    self.ack_owed.get_or_insert(now);
                    self.receive_reliable(id, origin, &wire.event, out);
                }
            }
        }
        PacketVerdict::Accepted
    }

    fn receive_reliable(
        &mut self,
        id: u32,
        origin: Option<u8>,
        event: &RemoteEvent,
        out: &mut impl FnMut(Delivery),
    ) {
        if seq_before(id, self.next_expected_id) || self.reorder.contains_key(&id) {
            self.stats.duplicate_events += 1;
            return;
        }
        if id != self.next_expected_id {
            if id.wrapping_sub(self.next_expected_id) > self.config.max_reorder {
                // Too far ahead to hold: the sender will retransmit it later.
                self.stats.reorder_overflow += 1;
                return;
            }
            self.reorder.insert(id, (origin, event.clone()));
            return;
        }
        self.deliver_reliable(origin, event.clone(), out);
        while let Some((origin, next)) = self.reorder.remove(&self.next_expected_id) {
            self.deliver_reliable(origin, next, out);
        }
    }

    fn deliver_reliable(
        &mut self,
        origin: Option<u8>,
        event: RemoteEvent,
        out: &mut impl FnMut(Delivery),
    ) {
        self.next_expected_id = self.next_expected_id.wrapping_add(1).max(1);
        self.stats.reliable_delivered += 1;
        out(Delivery::Event { origin, event });
    }

    /// Take what an acknowledgement says. RTT is sampled only from an acknowledgement that
    /// covers, for the first time, a packet that carried reliable events: those owe a prompt
    /// acknowledgement (the receiver's next frame), while a packet of state alone is acknowledged
    /// whenever the receiver next sends anyway, which can be half a second later on an idle link
    /// and would make a LAN look like a satellite hop.
    fn process_ack(&mut self, now: Instant, ack: Ack) {
        let mut newest_rtt = None;
        let mut prompt = false;
        let overdue = self.rto() * LOSS_AFTER_RTOS;
        let (mut newly_acked, mut lost, mut came_late) = (0, 0, 0);
        let mut acked_ids = std::mem::take(&mut self.acked_scratch);
        acked_ids.clear();
        let mut ids_at = 0;
        for packet in self.sent.iter_mut() {
            let ids = ids_at..ids_at + packet.id_count as usize;
            ids_at = ids.end;
            if packet.acked {
                continue;
            }
            let seq = packet.sequence;
            let acked = seq == ack.latest
                || (seq_before(seq, ack.latest) && {
                    let behind = ack.latest.wrapping_sub(seq);
                    behind <= ACK_BITS && ack.bits & (1 << (behind - 1)) != 0
                });
            if !acked {
                // A later packet arrived and this one, long overdue, did not: lost.
                let given_up = seq_before(seq, ack.latest)
                    && !packet.counted_lost
                    && packet
                        .sent_at
                        .is_some_and(|t| now.saturating_duration_since(t) >= overdue);
                if given_up {
                    packet.counted_lost = true;
                    lost += 1;
                }
                continue;
            }
            packet.acked = true;
            // Counted when acknowledged (a lost packet before it no longer holds it back).
            newly_acked += 1;
            if packet.counted_lost {
                came_late += 1;
            }
            prompt |= packet.id_count > 0;
            acked_ids.extend(self.sent_ids.range(ids));
            if seq == ack.latest {
                newest_rtt = packet.sent_at.map(|t| now.saturating_duration_since(t));
            }
        }
        if let Some(rtt) = newest_rtt.filter(|_| prompt) {
            self.rtt.sample(rtt, &self.config);
        }
        // Packets older than the ack window that were never acked are lost (unless counted so
        // already).
        while let Some(front) = self.sent.front() {
            let behind = ack.latest.wrapping_sub(front.sequence);
            let resolved =
                front.acked || (seq_before(front.sequence, ack.latest) && behind > ACK_BITS);
            if !resolved {
                break;
            }
            let packet = self.pop_oldest_sent().expect("front exists");
            if !packet.acked && !packet.counted_lost {
                lost += 1;
            }
        }
        // Counted as lost early, but acknowledged after all: it came late.
        for _ in 0..came_late {
            self.stats.packets_lost -= 1;
            self.loss_lost = self.loss_lost.saturating_sub(1);
        }
        for _ in 0..newly_acked {
            self.count_acked();
        }
        for _ in 0..lost {
            self.count_lost();
        }
        if !acked_ids.is_empty() {
            acked_ids.sort_unstable();
            let mut earliest = None::<Instant>;
            let mut oldest = None::<u64>;
            for flight in self.in_flight.iter_mut() {
                if !flight.acked && acked_ids.binary_search(&flight.id).is_ok() {
                    flight.acked = true;
                    self.stats.reliable_acked += 1;
                }
                if !flight.acked {
                    let t = flight.last_sent;
                    earliest = Some(earliest.map_or(t, |e| e.min(t)));
                    let n = flight.last_packet;
                    oldest = Some(oldest.map_or(n, |o| o.min(n)));
                }
            }
            self.earliest_unacked_sent = earliest;
            self.oldest_unacked_packet = oldest;
            while self.in_flight.front().is_some_and(|f| f.acked) {
                self.in_flight.pop_front();
            }
        }
        self.acked_scratch = acked_ids;
    }

    fn count_acked(&mut self) {
        self.stats.packets_acked += 1;
        self.loss_acked += 1;
        self.age_loss_window();
    }

    fn count_lost(&mut self) {
        self.stats.packets_lost += 1;
        self.loss_lost += 1;
        self.age_loss_window();
    }

    fn age_loss_window(&mut self) {
        if self.loss_acked + self.loss_lost > LOSS_WINDOW {
            self.loss_acked = self.loss_acked * 3 / 4;
            self.loss_lost = self.loss_lost * 3 / 4;
        }
    }
}

/// Whether sequence `a` comes before `b` (serial number arithmetic, RFC 1982 style).
pub fn seq_before(a: u32, b: u32) -> bool {
    a != b && b.wrapping_sub(a) < 0x8000_0000
}
