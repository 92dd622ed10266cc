//! Slot conflicts: a player's packets claim a slot this peer holds for someone else. A silent
//! holder has left and the claimant takes the slot; two live players in one slot (answers given
//! at the same time) are settled by token, the same way at every peer, and the loser is told.

use std::time::Instant;

use super::{Claim, PeerProtocol};
use crate::rmev::{ChatText, ConnectRequest, PlayerListEntry, RemoteEvent};
use crate::wire::PacketType;
use crate::Node;

impl PeerProtocol {
    /// Make `claimant.slot` free for a player whose own packet claims it, if the claim wins.
    /// The slot may be free already, or held by an unconfirmed entry (moved aside to hearsay),
    /// or by this peer or a confirmed player.
    ///
    /// A confirmed holder that has gone silent for the deference window while the claimant
    /// talks has left (its DISCONNECT was lost; a player that switched backend is often seated
    /// again in its old slot): the claim wins. A holder heard within the window is not judged at
    /// once, because a ghost is silent only from its last packet on: the claim stays undecided
    /// until a later packet of the claimant's finds the holder silent, or, once the claim is a
    /// window old and both still talk, it is a real conflict (two answers seated two players in
    /// one slot), settled by token, the same way at every peer. A claim on this peer's own slot
    /// is a real conflict at once.
    pub(super) fn clear_slot_for(&mut self, now: Instant, claimant: &PlayerListEntry) -> Claim {
        let window = self.deference_window();
        let (my_token, my_node) = (self.my_token(), self.my_node);
        let Some(session) = self.session.as_mut() else {
            return Claim::Lost;
        };
        let slot = claimant.slot;
        let is_me = slot == session.my_slot();
        let (token, node, heard) = if is_me {
            (my_token, my_node, now)
        } else {
            match session.players().get(slot).cloned() {
                None => return self.end_contest(claimant.token, Claim::Free),
                Some(p) if !p.confirmed => {
                    // Hearsay placed someone here; it will claim its own slot when it talks,
                    // and goes on with its link there.
                    session.displace_player(now, slot, "moved to another slot");
                    self.remember_hearsay(p.list_entry());
                    return self.end_contest(claimant.token, Claim::Free);
                }
                Some(p) => (p.token, p.node, p.last_heard),
            }
        };
        if !is_me && now.saturating_duration_since(heard) >= window {
            self.remove_departed(slot, token, "went silent; its slot was taken");
            self.stats.silent_holders_replaced += 1;
            return self.end_contest(claimant.token, Claim::Free);
        }
        if !is_me {
            let first = self.contests.get(claimant.token).unwrap_or(now);
            if now.saturating_duration_since(first) < window {
                self.contests.set(claimant.token, first);
                return Claim::Undecided;
            }
        }
        let outcome = if self.settle_slot_conflict(now, claimant, (token, node)) {
            Claim::Free
        } else {
            Claim::Lost
        };
        self.end_contest(claimant.token, outcome)
    }

    /// Forget `token`'s contest (it was decided) and pass the decision on.
    fn end_contest(&mut self, token: u32, outcome: Claim) -> Claim {
        self.contests.remove(token);
        outcome
    }

    /// Two players were seated in one slot (possible only when peers answering at the same
    /// time lost each other's replies). Every peer applies the same rule: the lower token keeps
    /// the slot; the other is told so and reconnects. Returns true if the claimant keeps it
    /// (the holder is gone from the table; the caller seats the claimant).
    fn settle_slot_conflict(
        &mut self,
        now: Instant,
        claimant: &PlayerListEntry,
        holder: (u32, Node),
    ) -> bool {
        self.stats.slot_conflicts += 1;
        let (holder_token, holder_node) = holder;
        log::warn!(
            "peer: slot {} claimed twice; the lower token keeps it",
            claimant.slot
        );
        if claimant.token < holder_token {
            if holder_token == self.my_token() {
                self.rejoin(
                    now,
                    "slot conflict: another player holds this slot; reconnecting",
                    None,
                );
                return false;
            }
            self.remove_departed(claimant.slot, holder_token, "slot conflict");
            self.send_conflict_notice(holder_token, holder_node);
            true
        } else {
            self.note_departed(claimant.token);
            self.send_conflict_notice(claimant.token, claimant.node);
            false
        }
    }

    /// A packet of a player that lost a slot conflict here: its notice was lost, so say it again
    /// (at most every `reply_wait`). Returns false: the packet is not accepted.
    pub(super) fn remind_conflict_loser(&mut self, now: Instant, from: &Node, token: u32) -> bool {
        let Some(told) = self.conflict_losers.get(token) else {
            return false;
        };
        if now.saturating_duration_since(told) >= self.timings.reply_wait {
            self.stats.conflict_notices_repeated += 1;
            self.send_conflict_notice(token, *from);
        }
        false
    }

    fn send_conflict_notice(&mut self, token: u32, node: Node) {
        self.conflict_losers.set(token, self.last_now);
        let events = vec![
            RemoteEvent::ConnectQueue(vec![ConnectRequest {
                token,
                node,
                name: Default::default(),
            }]),
            RemoteEvent::SendText(
                ChatText::new(b"slot conflict: another player holds this slot; reconnecting")
                    .unwrap_or_default(),
            ),
        ];
        self.send_oob(node, PacketType::ConnectRefused, events);
    }
}
