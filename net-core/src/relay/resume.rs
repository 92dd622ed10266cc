//! The gameserver's side of stream resumption (RE_RESUME, see `session::resume`): a client that
//! switches packet backend leaves the game and joins again under a new token, and what was in
//! flight between it and the server at that moment must arrive exactly once.
//!
//! When a client leaves, the relay parks its link ([`RelayParked`]): the last reliable id of the
//! client's stream it delivered (forwarded to the others), and the relayed events the client may
//! not have delivered, with their origins and their ids on the old link. A new client says hello
//! listing its earlier tokens; the relay answers for every parked link of those tokens (and
//! answers again from a [`RelayReceipt`] if the client left before reading an earlier answer),
//! then "done". The relay also says hello (it has no earlier tokens: its token never changes),
//! and the client answers what it delivered of the relay's old streams; on the client's "done"
//! the relay sends again exactly the parked events after each answered id, then what it held
//! for the new link, in the order it received them (each event has one relay serial however
//! many links it went to, so one that sits in two of them, e.g. sent to the old link and held
//! for the new one while the server had not yet seen the old connection close, goes once).
//!
//! Events for a new client are held until its hello settled whether it is someone coming back
//! (normally one round trip, at most [`HOLD_LIMIT`]), so carried events come before newer ones
//! from the same player.
//!
//! Each parked link also says which relayed events were the client's own ([`OwnEvents`]: its
//! slot and the relay serials it sent under), so the returning client is never sent what its
//! earlier self said while the relay still counted that self as another player.
//!
//! This module keeps the parked links and receipts; `RelayCore` runs the exchange.

use std::net::IpAddr;
use std::time::Instant;

use super::outbox::Relayed;
use crate::rmev::RemoteEvent;
use crate::session::link::seq_before;
use crate::session::parking::{Parked, ParkingLot, Receipt};
pub use crate::session::parking::{ResumeStats, PARK_TIME};
pub use crate::session::resume::HOLD_LIMIT;

/// Most parked links kept (the oldest goes first).
pub const MAX_PARKED: usize = 64;
/// Most events kept of one parked link (a client that stopped acknowledging long before it
/// left gets the oldest ones; the rest are counted as dropped).
pub const MAX_PARKED_EVENTS: usize = 8192;

/// What the relay kept of a client's link that ended.
#[derive(Clone, Debug, PartialEq)]
pub struct RelayParked {
    /// The client's token on that link.
    pub client_token: u32,
    /// Where the client was: only a client from the same host may pick the link up (tokens
    /// are told to every player, so a token alone proves nothing).
    pub ip: IpAddr,
    /// The last reliable id of the client's stream the relay delivered (0: none).
    pub delivered: u32,
    /// Relayed events the client may not have delivered, oldest first, with their reliable id
    /// on the old link.
    pub outgoing: Vec<(u32, Relayed)>,
    /// Which relayed events were the client's own on that link: its slot and its serials.
    pub own: OwnEvents,
    pub parked_at: Instant,
    /// The reliable id the old link would have given its next event.
    pub next_id: u32,
    /// Still taking the events the relay forwards (until a client from the same host joins:
    /// from then on they wait in that newcomer's hold). The others still seat the departed
    /// player until the server's `remove ip:` line reaches them, so what they say meanwhile is
    /// owed to it as much as what was in flight (see `RelayResume::append`).
    pub open: bool,
}

/// The events one client sent through the relay while it sat in a slot: relayed events from
/// `slot` with a serial after `after` and up to `up_to`. A client coming back must never be
/// sent these (they are its own, from its earlier session).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnEvents {
    pub slot: u8,
    pub after: u64,
    pub up_to: u64,
}

impl OwnEvents {
    pub fn contains(&self, origin: u8, serial: u64) -> bool {
        origin == self.slot && serial > self.after && serial <= self.up_to
    }
}

impl RelayParked {
    /// Split the events by `delivered`, the last id of this link's stream the client said it
    /// delivered (None: it kept nothing of the link, so it got none): the ones it misses go to
    /// `owed`, the serials of the ones it got to `got`.
    pub fn settle(self, delivered: Option<u32>, owed: &mut Vec<Relayed>, got: &mut Vec<u64>) {
        let delivered = delivered.unwrap_or(0);
        for (id, relayed) in self.outgoing {
            if delivered == 0 || seq_before(delivered, id) {
                owed.push(relayed);
            } else {
                got.push(relayed.1);
            }
        }
    }
}

/// What the relay answered for an old link, kept in case the client leaves again before it
/// reads the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelayReceipt {
    pub client_token: u32,
    pub ip: IpAddr,
    pub delivered: u32,
    pub own: OwnEvents,
    pub parked_at: Instant,
}

impl Parked for RelayParked {
    fn parked_at(&self) -> Instant {
        self.parked_at
    }

    fn event_count(&self) -> usize {
        self.outgoing.len()
    }
}

impl Receipt for RelayReceipt {
    fn parked_at(&self) -> Instant {
        self.parked_at
    }
}

/// The relay's parked links and receipts.
#[derive(Debug, Default)]
pub struct RelayResume {
    lot: ParkingLot<RelayParked, RelayReceipt, MAX_PARKED>,
}

impl RelayResume {
    pub fn stats(&self) -> &ResumeStats {
        self.lot.stats()
    }

    pub fn stats_mut(&mut self) -> &mut ResumeStats {
        self.lot.stats_mut()
    }

    pub fn has_parked(&self) -> bool {
        self.lot.parked().next().is_some()
    }

    /// Keep `stream` (bounded: the oldest link goes first, a long one keeps its oldest events).
    pub fn park(&mut self, mut stream: RelayParked) {
        if stream.client_token == 0 {
            self.stats_mut().count_dropped(stream.outgoing.len());
            return;
        }
        if stream.outgoing.len() > MAX_PARKED_EVENTS {
            let cut = stream.outgoing.len() - MAX_PARKED_EVENTS;
            self.stats_mut().count_dropped(cut);
            stream.outgoing.truncate(MAX_PARKED_EVENTS);
        }
        let token = stream.client_token;
        self.lot.park(stream, |p| p.client_token == token);
    }

    /// A relayed event forwarded while clients are away: kept on every open parked link
    /// (except the one whose client said it), numbered on from the old link's ids, so a client
    /// that comes back gets what the others said between its leaving and its return.
    pub fn append(&mut self, origin: u8, serial: u64, event: &RemoteEvent) {
        let mut dropped = 0;
        for stream in self.lot.parked_mut().filter(|p| p.open) {
            if stream.outgoing.len() >= MAX_PARKED_EVENTS {
                dropped += 1;
                continue;
            }
            let id = stream.next_id;
            stream.next_id = id.wrapping_add(1).max(1);
            stream.outgoing.push((id, (origin, serial, event.clone())));
        }
        if dropped > 0 {
            self.stats_mut().count_dropped(dropped);
        }
    }

    /// A client from `ip` joined: the parked links of that host take no more events (the
    /// newcomer's hold has them from now on).
    pub fn close_for(&mut self, ip: IpAddr) {
        for stream in self.lot.parked_mut().filter(|p| p.ip == ip) {
            stream.open = false;
        }
    }

    /// Take the parked links of a client at `ip` whose earlier tokens are `tokens`, oldest
    /// first, and remember what is answered for them.
    pub fn take_matching(&mut self, ip: IpAddr, tokens: &[u32]) -> Vec<RelayParked> {
        let found = self
            .lot
            .take_where(|p| p.ip == ip && tokens.contains(&p.client_token));
        for stream in &found {
            let receipt = RelayReceipt {
                client_token: stream.client_token,
                ip: stream.ip,
                delivered: stream.delivered,
                own: stream.own,
                parked_at: stream.parked_at,
            };
            self.lot
                .remember(receipt, |r| r.client_token == receipt.client_token);
        }
        found
    }

    /// Receipts of old links of a client at `ip` whose earlier tokens are `tokens`.
    pub fn receipts_matching<'a>(
        &'a self,
        ip: IpAddr,
        tokens: &'a [u32],
    ) -> impl Iterator<Item = RelayReceipt> + 'a {
        self.lot
            .receipts_where(move |r| r.ip == ip && tokens.contains(&r.client_token))
    }

    /// Forget links and receipts older than `PARK_TIME`.
    pub fn expire(&mut self, now: Instant) {
        self.lot.expire(now);
    }

    /// When the oldest parked link or receipt expires.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.lot.next_expiry()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rmev::{ChatText, RemoteEvent};
    use std::time::Duration;

    fn text(t: &str) -> RemoteEvent {
        RemoteEvent::SendText(ChatText::new(t.as_bytes()).unwrap())
    }

    const HOST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    fn parked(token: u32, at: Instant) -> RelayParked {
        RelayParked {
            client_token: token,
            ip: HOST,
            delivered: 9,
            outgoing: vec![(4, (1, 40, text("four"))), (5, (2, 50, text("five")))],
            own: OwnEvents {
                slot: 0,
                after: 0,
                up_to: 60,
            },
            parked_at: at,
            next_id: 6,
            open: false,
        }
    }

    #[test]
    fn a_client_is_owed_what_follows_the_id_it_delivered() {
        let now = Instant::now();
        let settle = |delivered| {
            let (mut owed, mut got) = (Vec::new(), Vec::new());
            parked(7, now).settle(delivered, &mut owed, &mut got);
            (owed, got)
        };
        assert_eq!(settle(Some(4)), (vec![(2, 50, text("five"))], vec![40]));
        assert_eq!(settle(None).0.len(), 2, "no answer: all of it");
        assert_eq!(settle(Some(5)), (vec![], vec![40, 50]));
    }

    #[test]
    fn parked_links_are_taken_once_answered_again_from_receipts_and_expire() {
        let now = Instant::now();
        let mut resume = RelayResume::default();
        resume.park(parked(7, now));
        resume.park(parked(8, now + Duration::from_secs(30)));
        assert!(resume.take_matching(HOST, &[1, 2]).is_empty());
        let elsewhere = IpAddr::V4(std::net::Ipv4Addr::new(10, 9, 9, 9));
        assert!(
            resume.take_matching(elsewhere, &[7]).is_empty(),
            "another host knowing the token gets nothing"
        );
        let found = resume.take_matching(HOST, &[7]);
        assert_eq!(found.len(), 1);
        assert!(resume.take_matching(HOST, &[7]).is_empty(), "taken once");
        assert_eq!(resume.receipts_matching(elsewhere, &[7]).count(), 0);
        let receipts: Vec<_> = resume.receipts_matching(HOST, &[7]).collect();
        assert_eq!(receipts.len(), 1);
        assert_eq!(receipts[0].delivered, 9);
        resume.expire(now + PARK_TIME + Duration::from_secs(1));
        assert!(resume.has_parked(), "the newer one is still there");
        assert_eq!(resume.receipts_matching(HOST, &[7]).count(), 0);
        resume.expire(now + PARK_TIME + Duration::from_secs(31));
        assert!(!resume.has_parked());
        assert_eq!(resume.stats().events_dropped, 2);
    }

    #[test]
    fn parking_is_bounded_in_links_and_events() {
        let now = Instant::now();
        let mut resume = RelayResume::default();
        for token in 1..=(MAX_PARKED as u32 + 1) {
            resume.park(parked(token, now));
        }
        assert!(
            resume.take_matching(HOST, &[1]).is_empty(),
            "the oldest went first"
        );
        let mut long = parked(500, now);
        long.outgoing = (1..=MAX_PARKED_EVENTS as u32 + 3)
            .map(|id| (id, (1, u64::from(id), text("x"))))
            .collect();
        resume.park(long);
        let found = resume.take_matching(HOST, &[500]);
        assert_eq!(found[0].outgoing.len(), MAX_PARKED_EVENTS);
        assert_eq!(
            found[0].outgoing.last().unwrap().0,
            MAX_PARKED_EVENTS as u32
        );
        // Two links of two events went to make room, and three events were cut off.
        assert_eq!(resume.stats().events_dropped, 2 + 2 + 3);
    }
}
