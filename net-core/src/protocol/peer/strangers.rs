//! Players that think they are in this peer's game while this peer has never seated them.
//!
//! A newcomer is seated by the peer that answers its request; that peer tells the others with
//! the new player list, reliably. If it leaves the game (its player switches backend) or dies
//! right after answering, before the list reached anyone, the newcomer is in the game only in
//! its own eyes: it lists the players the reply named and sends them its packets, and they
//! reject every one as from an unknown sender and never send it anything. Nothing ended that:
//! the newcomer sat in a game of its own, the others in theirs without it, and a player seated
//! later by them never learnt of it either.
//!
//! A peer in the game that keeps getting packets with a sender slot from a token it knows
//! nothing of (not seated, not a queued request, not named by a list, not in a slot contest, not
//! a conflict loser, not dropped for silence) for the deference window (a list from a live
//! seater arrives long before that) tells the sender so with the slot-conflict notice's form
//! (CONNECT_REFUSED naming its token), at most every `reply_wait`; the sender leaves and
//! connects again, as after a lost slot conflict, keeping what it owed and its joined state.
//!
//! A notice from an address where the told peer lists a player under another token than the
//! teller's means that player's process is gone and a new one answers there (it restarted on the
//! same port and plays a game of its own): the told peer drops that entry and stays in its game.
//! Otherwise it leaves and connects to the teller, not to its old `connect` address: that
//! address may be a player of the same stale game, which seats it again with the same entries,
//! and the notices then go on for good (chaos seed 3101). The notice carries the teller's player
//! list, so should the teller not answer, the told peer tries the teller's other players, then
//! its old address; if that list shows a full game, it goes to its old address at once.

use std::time::{Duration, Instant};

use super::{PeerProtocol, MAX_DEPARTED};
use crate::wire::PacketHeader;
use crate::Node;

/// What the notice says (the sender's game shows it with its `NET_EVENT_DISCONNECTED`); the
/// receiver also tells the notice from the other CONNECT_REFUSED packets naming it by this text.
pub(super) const NOTICE: &str =
    "not in the other players' game (the player that let you in left before telling them); reconnecting";

/// One unknown sender: when its packets began coming, the latest, and when it was last told.
#[derive(Debug)]
struct Stranger {
    token: u32,
    first: Instant,
    last: Instant,
    told: Option<Instant>,
}

/// The unknown senders heard lately, by token (at most `MAX_DEPARTED`, the oldest goes first).
#[derive(Debug, Default)]
pub(super) struct Strangers(Vec<Stranger>);

impl Strangers {
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }

    fn forget(&mut self, token: u32) {
        self.0.retain(|s| s.token != token);
    }

    /// Note a packet of `token` at `now`; a sender silent for `gap` starts over. Returns the
    /// entry.
    fn heard(&mut self, token: u32, now: Instant, gap: Duration) -> &mut Stranger {
        let at = match self.0.iter().position(|s| s.token == token) {
            Some(at) => at,
            None => {
                if self.0.len() >= MAX_DEPARTED {
                    self.0.remove(0);
                }
                self.0.push(Stranger {
                    token,
                    first: now,
                    last: now,
                    told: None,
                });
                self.0.len() - 1
            }
        };
        let entry = &mut self.0[at];
        if now.saturating_duration_since(entry.last) > gap {
            *entry = Stranger {
                token,
                first: now,
                last: now,
                told: None,
            };
        }
        entry.last = now;
        entry
    }
}

impl PeerProtocol {
    /// A stranger notice came from `from` under `teller`: drop the players listed at that address
    /// under another token (a new process answers there). Returns whether any was dropped.
    pub(super) fn drop_replaced_player(&mut self, from: &Node, teller: u32) -> bool {
        let replaced: Vec<(u8, u32)> = self
            .others_at(from, teller)
            .map(|p| (p.slot, p.token))
            .collect();
        for &(slot, token) in &replaced {
            log::info!("peer: another process answers at the address of the player in slot {slot}; dropping it");
            self.remove_departed(slot, token, "gone: another process answers at its address");
            self.stats.replaced_players_dropped += 1;
        }
        !replaced.is_empty()
    }

    /// Whether this peer knows `token` in any way that lets its packets be placed later: a
    /// seated player, a queued request, a list entry waiting for its slot, a slot contest, a
    /// conflict loser, a player dropped for silence, or a claim on an earlier session.
    fn knows_token(&self, token: u32) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| s.players().iter().any(|p| p.token == token))
            || self.queue.get(token).is_some()
            || self.hearsay.iter().any(|h| h.token == token)
            || self.contests.get(token).is_some()
            || self.conflict_losers.get(token).is_some()
            || self.silenced.get(token).is_some()
            || self
                .claims
                .iter()
                .any(|&(claimed, claimant, _)| claimed == token || claimant == token)
    }

    /// A game packet with a sender slot that no player here sent (the session said unknown
    /// sender, and nothing else placed it): once such packets of one token have come for the
    /// deference window, tell it that it is not in this game (at most every `reply_wait`), so it
    /// connects again. Never seats it: returns false.
    pub(super) fn tell_stranger(
        &mut self,
        now: Instant,
        from: &Node,
        header: &PacketHeader,
    ) -> bool {
        let token = header.token;
        if header.sender_slot.is_none() || token == 0 || self.session.is_none() {
            return false;
        }
        if self.knows_token(token) {
            self.strangers.forget(token);
            return false;
        }
        let window = self.deference_window();
        let reply_wait = self.timings.reply_wait;
        let entry = self.strangers.heard(token, now, window);
        if now.saturating_duration_since(entry.first) < window
            || entry
                .told
                .is_some_and(|told| now.saturating_duration_since(told) < reply_wait)
        {
            return false;
        }
        entry.told = Some(now);
        self.stats.stranger_notices_sent += 1;
        log::info!(
            "peer: telling an unknown sender (slot {:?}) it is not in this game",
            header.sender_slot
        );
        self.send_leave_notice(*from, token, NOTICE);
        false
    }
}
