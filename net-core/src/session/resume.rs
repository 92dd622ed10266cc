//! Resuming the reliable event streams of two players whose link ended and who meet again on a
//! new one: one of them switched packet backend (`net.api` in a running game), or dropped out
//! and came back. Without this, whatever one had queued for the other and the other had not
//! delivered yet would be lost with the old link, and re-sending it blindly would deliver some
//! of it twice.
//!
//! When a link ends, each side parks what it needs ([`ParkedStream`]): its own reliable game
//! events the other may not have delivered (with their reliable ids on the old link), and the
//! last reliable id of the other's stream it delivered to its game. Parked streams are kept for
//! [`PARK_TIME`], at most [`MAX_PARKED`] of them.
//!
//! On every new mesh link both sides say hello (RE_RESUME, listing their tokens of earlier
//! sessions) and answer the other's hello with one answer per parked stream they have with it
//! (the two tokens of that old link, and the last id of the other's stream they delivered),
//! then "done"; what it answered is kept as a receipt, in case the other leaves again before
//! reading it and asks under a newer token. On "done" a side sends again, as new events on the new link and oldest stream
//! first, exactly the parked events after each answered id; so each event is delivered once, in
//! order. A stream the other side did not answer for is sent in full: it keeps every link it had
//! as long as this side does, so it never had that one (it seated the player too late). Any new link may be someone coming back
//! under a new token, so the game's events for it are held until its answer arrived (at most
//! [`HOLD_LIMIT`] from its first packet, normally one round trip): carried events come before
//! newer ones.
//!
//! This module holds the parked streams; `Session` runs the exchange.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::rmev::{EarlierTokens, RemoteEvent, ShipState, MAX_EARLIER_TOKENS};

use super::parking::{Parked, ParkingLot};
pub use super::parking::{ResumeStats, PARK_TIME};

/// Most parked streams kept (the oldest goes first).
pub const MAX_PARKED: usize = 32;
/// Longest time the game's events for a new link wait for that link's answer, counted from the
/// first packet heard on it.
pub const HOLD_LIMIT: Duration = Duration::from_secs(5);

/// What one side kept of a link that ended.
#[derive(Clone, Debug, PartialEq)]
pub struct ParkedStream {
    /// This side's token on that link.
    pub my_token: u32,
    /// The other side's token on that link.
    pub peer_token: u32,
    /// This side's reliable game events the other may not have delivered, oldest first: (their
    /// reliable id on the old link, their serial, the event). Events never sent got the ids
    /// they would have had.
    pub outgoing: Vec<(u32, u64, RemoteEvent)>,
    /// The first serial of the game events queued for that link (it was added then).
    pub first_serial: u64,
    /// Every event of that link with a lower serial was delivered (acknowledged in order).
    pub delivered_below: u64,
    /// The last reliable id of the other side's stream delivered to this side's game (0: none).
    pub delivered: u32,
    pub parked_at: Instant,
}

impl ParkedStream {
    /// Split the outgoing events by what the other said it delivered (`delivered`, the last
    /// reliable id, 0: nothing): returns the highest serial known delivered over this link,
    /// and pushes the events still owed (serial, event) to `owed`.
    pub fn settle(self, delivered: u32, owed: &mut Vec<(u64, RemoteEvent)>) -> u64 {
        let mut watermark = self.delivered_below.saturating_sub(1);
        for (id, serial, event) in self.outgoing {
            let got = delivered != 0 && !super::link::seq_before(delivered, id);
            if got {
                watermark = watermark.max(serial);
            } else {
                owed.push((serial, event));
            }
        }
        watermark
    }
}

/// Whether an event is the game's own (carried to a resumed link), not the session's or the
/// protocol's (names, join status and player lists are said again on every new link).
pub fn is_game_event(event: &RemoteEvent) -> bool {
    !matches!(
        event,
        RemoteEvent::PlayerName(_)
            | RemoteEvent::PlayerStatus { .. }
            | RemoteEvent::PlayerList(_)
            | RemoteEvent::ConnectQueue(_)
            | RemoteEvent::Resume(_)
            | RemoteEvent::Rate(_)
            | RemoteEvent::Vacated { .. }
    )
}

/// What this side answered for an old link: the other side may leave before it reads the
/// answer and ask again under yet another token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub my_token: u32,
    pub peer_token: u32,
    pub delivered: u32,
    pub parked_at: Instant,
}

impl Parked for ParkedStream {
    fn parked_at(&self) -> Instant {
        self.parked_at
    }

    fn event_count(&self) -> usize {
        self.outgoing.len()
    }
}

impl super::parking::Receipt for Receipt {
    fn parked_at(&self) -> Instant {
        self.parked_at
    }
}

/// Parked streams and this side's earlier tokens, handed from session to session across a
/// backend switch.
#[derive(Clone, Debug, Default)]
pub struct ResumeState {
    /// The serial the next session continues from (serials number this side's events across
    /// sessions, so the same event parked in two streams is recognised).
    pub next_serial: u64,
    /// This side's tokens of earlier sessions, newest first.
    earlier_tokens: VecDeque<u32>,
    lot: ParkingLot<ParkedStream, Receipt, MAX_PARKED>,
    /// Star: slots whose player left shortly before the switch (see `EarlyEvents`). Events of
    /// those players that the server carries over to the next session are late ones of a
    /// player that left, not early ones of a newcomer, and must not wait for a seat.
    pub departed_slots: Vec<(u8, Option<Instant>)>,
    /// Whether the player had joined: the next session joins again by itself (a switch is
    /// transparent to the game, which does not join again).
    pub joined: bool,
    /// The player's latest ship, which the next session sends on.
    pub local_state: ShipState,
}

impl ResumeState {
    pub fn stats(&self) -> &ResumeStats {
        self.lot.stats()
    }

    pub fn stats_mut(&mut self) -> &mut ResumeStats {
        self.lot.stats_mut()
    }

    pub fn has_parked(&self) -> bool {
        self.lot.parked().next().is_some()
    }

    /// Whether a stream with the player (or server) whose token is `token` is parked.
    pub fn has_parked_with(&self, token: u32) -> bool {
        token != 0 && self.lot.parked().any(|p| p.peer_token == token)
    }

    /// This side's earlier tokens as a hello lists them.
    pub fn earlier_tokens(&self) -> EarlierTokens {
        EarlierTokens::new(self.earlier_tokens.iter().copied())
    }

    /// This side leaves a session in which its token was `token`.
    pub fn note_my_token(&mut self, token: u32) {
        if token == 0 || self.earlier_tokens.front() == Some(&token) {
            return;
        }
        self.earlier_tokens.push_front(token);
        self.earlier_tokens.truncate(MAX_EARLIER_TOKENS);
    }

    /// Keep `stream` (unless it holds nothing worth resuming); a newer stream with the same
    /// player replaces an older one.
    pub fn park(&mut self, stream: ParkedStream) {
        if stream.peer_token == 0 {
            self.stats_mut().count_dropped(stream.outgoing.len());
            return;
        }
        let key = (stream.my_token, stream.peer_token);
        self.lot.park(stream, |p| (p.my_token, p.peer_token) == key);
    }

    /// Remember what was answered for `stream`'s old link.
    pub fn remember_receipt(&mut self, stream: &ParkedStream) {
        let receipt = Receipt {
            my_token: stream.my_token,
            peer_token: stream.peer_token,
            delivered: stream.delivered,
            parked_at: stream.parked_at,
        };
        let key = (receipt.my_token, receipt.peer_token);
        self.lot
            .remember(receipt, |r| (r.my_token, r.peer_token) == key);
    }

    /// Receipts of old links with the player whose tokens are `tokens`.
    pub fn receipts_matching<'a>(
        &'a self,
        tokens: &'a [u32],
    ) -> impl Iterator<Item = Receipt> + 'a {
        self.lot.receipts_where(|r| tokens.contains(&r.peer_token))
    }

    /// Forget streams and receipts older than `PARK_TIME`.
    pub fn expire(&mut self, now: Instant) {
        self.lot.expire(now);
    }

    /// When the oldest parked stream or receipt expires.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.lot.next_expiry()
    }

    /// Take every parked stream with the player whose tokens (current and earlier) are
    /// `tokens`, oldest first.
    pub fn take_all_matching(&mut self, tokens: &[u32]) -> Vec<ParkedStream> {
        self.lot
            .take_where(|p| p.peer_token != 0 && tokens.contains(&p.peer_token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rmev::ChatText;

    fn text(t: &str) -> RemoteEvent {
        RemoteEvent::SendText(ChatText::new(t.as_bytes()).unwrap())
    }

    fn stream(my: u32, peer: u32, at: Instant) -> ParkedStream {
        ParkedStream {
            my_token: my,
            peer_token: peer,
            outgoing: vec![
                (5, 15, text("five")),
                (6, 16, text("six")),
                (7, 17, text("seven")),
            ],
            first_serial: 1,
            delivered_below: 15,
            delivered: 3,
            parked_at: at,
        }
    }

    #[test]
    fn only_what_the_other_has_not_delivered_is_owed() {
        let now = Instant::now();
        let mut owed = Vec::new();
        assert_eq!(stream(1, 2, now).settle(5, &mut owed), 15);
        assert_eq!(owed, vec![(16, text("six")), (17, text("seven"))]);
        owed.clear();
        assert_eq!(
            stream(1, 2, now).settle(0, &mut owed),
            14,
            "acknowledged in order before"
        );
        assert_eq!(owed.len(), 3);
        owed.clear();
        assert_eq!(stream(1, 2, now).settle(7, &mut owed), 17);
        assert!(owed.is_empty());
    }

    #[test]
    fn streams_are_found_by_any_token_of_the_player_and_expire() {
        let now = Instant::now();
        let mut state = ResumeState::default();
        state.park(stream(1, 20, now));
        state.park(stream(1, 30, now + Duration::from_secs(30)));
        assert!(state.take_all_matching(&[99, 40]).is_empty());
        let found = state.take_all_matching(&[99, 20]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].peer_token, 20);
        assert!(state.take_all_matching(&[20]).is_empty(), "taken once");
        state.expire(now + PARK_TIME + Duration::from_secs(1));
        assert!(state.has_parked(), "the newer one is still there");
        state.expire(now + PARK_TIME + Duration::from_secs(31));
        assert!(!state.has_parked());
        assert_eq!(state.stats().events_dropped, 3);
    }

    #[test]
    fn earlier_tokens_are_kept_newest_first_and_bounded() {
        let mut state = ResumeState::default();
        for token in 1..=6 {
            state.note_my_token(token);
        }
        state.note_my_token(6);
        assert_eq!(state.earlier_tokens().as_slice(), &[6, 5, 4, 3]);
    }

    #[test]
    fn at_most_max_parked_streams_are_kept() {
        let now = Instant::now();
        let mut state = ResumeState::default();
        for peer in 1..=(MAX_PARKED as u32 + 2) {
            state.park(stream(1, peer, now));
        }
        assert!(
            state.take_all_matching(&[1]).is_empty(),
            "the oldest went first"
        );
        assert_eq!(state.take_all_matching(&[MAX_PARKED as u32 + 2]).len(), 1);
    }
}
