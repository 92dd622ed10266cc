//! The store both sides of stream resumption keep (a player's session, `session::resume`, and
//! the gameserver, `relay::resume`): links that ended, parked for [`PARK_TIME`] and at most
//! `MAX` of them (the oldest goes first), the receipts of what was answered for them, and the
//! resumption counters. What a parked link holds and how it is matched is the owner's.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long a parked link waits for its player to come back.
pub const PARK_TIME: Duration = Duration::from_secs(60);

/// A parked link: when it ended and how many events it still holds.
pub trait Parked {
    fn parked_at(&self) -> Instant;
    fn event_count(&self) -> usize;
}

/// A receipt: when the link it answers for ended.
pub trait Receipt {
    fn parked_at(&self) -> Instant;
}

/// Counters of the resumption, shown by `status` (and by the gameserver's status).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResumeStats {
    /// Links that ended with something parked.
    pub parked: u64,
    /// Parked links picked up again by a returning player.
    pub resumed: u64,
    /// Events sent again on a resumed link.
    pub events_carried: u64,
    /// Events of parked links nobody came back for (expired, evicted or cut off) or given up
    /// when a new link's answers did not come in time.
    pub events_dropped: u64,
    /// New links whose answer did not come within the hold limit.
    pub hold_timeouts: u64,
}

impl ResumeStats {
    /// Count `links` old links picked up again and the events sent again over them.
    pub fn count_resumed(&mut self, links: usize, carried: usize) {
        self.resumed += links as u64;
        self.events_carried += carried as u64;
    }

    /// Count events given up.
    pub fn count_dropped(&mut self, events: usize) {
        self.events_dropped += events as u64;
    }

    pub fn count_hold_timeout(&mut self) {
        self.hold_timeouts += 1;
    }
}

/// Parked links, receipts and counters; at most `MAX` of each.
#[derive(Clone, Debug)]
pub struct ParkingLot<P, R, const MAX: usize> {
    parked: VecDeque<P>,
    receipts: VecDeque<R>,
    stats: ResumeStats,
}

impl<P, R, const MAX: usize> Default for ParkingLot<P, R, MAX> {
    fn default() -> Self {
        ParkingLot {
            parked: VecDeque::new(),
            receipts: VecDeque::new(),
            stats: ResumeStats::default(),
        }
    }
}

impl<P: Parked, R: Receipt + Copy, const MAX: usize> ParkingLot<P, R, MAX> {
    pub fn stats(&self) -> &ResumeStats {
        &self.stats
    }

    pub fn stats_mut(&mut self) -> &mut ResumeStats {
        &mut self.stats
    }

    pub fn parked(&self) -> impl Iterator<Item = &P> {
        self.parked.iter()
    }

    pub fn parked_mut(&mut self) -> impl Iterator<Item = &mut P> {
        self.parked.iter_mut()
    }

    /// Keep `link`, replacing a parked one that is `same` link and making room by dropping the
    /// oldest; what is dropped is counted.
    pub fn park(&mut self, link: P, same: impl Fn(&P) -> bool) {
        if let Some(i) = self.parked.iter().position(same) {
            let old = self.parked.remove(i).expect("index in range");
            self.stats.count_dropped(old.event_count());
        }
        if self.parked.len() == MAX {
            if let Some(old) = self.parked.pop_front() {
                self.stats.count_dropped(old.event_count());
            }
        }
        self.stats.parked += 1;
        self.parked.push_back(link);
    }

    /// Take every parked link `matching`, oldest first.
    pub fn take_where(&mut self, matching: impl Fn(&P) -> bool) -> Vec<P> {
        let (found, kept): (VecDeque<P>, VecDeque<P>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(matching);
        self.parked = kept;
        found.into()
    }

    /// Remember `receipt`, replacing one that is `same`.
    pub fn remember(&mut self, receipt: R, same: impl Fn(&R) -> bool) {
        self.receipts.retain(|r| !same(r));
        if self.receipts.len() == MAX {
            self.receipts.pop_front();
        }
        self.receipts.push_back(receipt);
    }

    /// Receipts `matching`.
    pub fn receipts_where<'a>(
        &'a self,
        matching: impl Fn(&R) -> bool + 'a,
    ) -> impl Iterator<Item = R> + 'a {
        self.receipts.iter().filter(move |r| matching(r)).copied()
    }

    /// Forget links and receipts parked `PARK_TIME` before `now` or earlier (the links' events
    /// counted as dropped).
    pub fn expire(&mut self, now: Instant) {
        let fresh = |at: Instant| now.saturating_duration_since(at) < PARK_TIME;
        self.receipts.retain(|r| fresh(r.parked_at()));
        let stats = &mut self.stats;
        self.parked.retain(|p| {
            let keep = fresh(p.parked_at());
            if !keep {
                stats.count_dropped(p.event_count());
            }
            keep
        });
    }

    /// When the oldest parked link or receipt expires.
    pub fn next_expiry(&self) -> Option<Instant> {
        if self.parked.is_empty() && self.receipts.is_empty() {
            return None; // the common case, asked every frame: no chained walk
        }
        let parked = self.parked.iter().map(Parked::parked_at);
        let receipts = self.receipts.iter().map(Receipt::parked_at);
        parked.chain(receipts).min().map(|t| t + PARK_TIME)
    }
}
