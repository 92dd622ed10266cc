//! Claims by a newcomer's earlier sessions (a RE_RESUME hello naming tokens this session seats):
//! a player named is taken for the newcomer's earlier self only once it has gone silent or the
//! hello comes from its own node; a claim on a player still heard from is refused.

use std::time::{Duration, Instant};

use super::{Player, Session};
use crate::rmev::{EarlierTokens, ResumeStep};
use crate::Node;

impl Session {
    /// How long a player must have been silent at its own node before another node's claim to
    /// be its next session (a RE_RESUME hello, or a connect request naming its token) removes
    /// it. A live player is heard from at least every `keepalive_interval`; a player that
    /// switched backend closed its old socket, so it went silent at once.
    pub fn earlier_session_silence(&self) -> Duration {
        self.config.keepalive_interval * 3
    }

    /// Whether `player` may be taken for an earlier session of whoever at `claimant` names its
    /// token: it is at that same node, or it has been silent there for
    /// `earlier_session_silence`. Every player is told the others' tokens, so a token alone
    /// proves nothing.
    pub fn may_retire(&self, player: &Player, claimant: &Node, now: Instant) -> bool {
        (self.node_eq)(&player.node, claimant)
            || now.saturating_duration_since(player.last_heard) >= self.earlier_session_silence()
    }

    /// Pending claims (see `Remote::claim`): once every player the hello named has left or gone
    /// silent, remove the silent ones and handle the steps; once the claim is two silences old
    /// and one of them still talks, refuse it (counted) and handle the steps without the live
    /// players' tokens.
    pub fn settle_claims(&mut self, now: Instant) {
        let limit = self.earlier_session_silence() * 2;
        loop {
            let mut decided = None;
            for remote in self.remotes.iter().filter(|r| r.claim.is_some()) {
                let Some((since, steps)) = &remote.claim else {
                    continue;
                };
                let Some(ResumeStep::Hello(tokens)) = steps.first() else {
                    decided = Some((remote.slot, None));
                    break;
                };
                let live = self.live_claimed(remote.slot, &remote.node, tokens.as_slice(), now);
                if live.is_empty() {
                    decided = Some((remote.slot, None));
                    break;
                }
                if now.saturating_duration_since(*since) >= limit {
                    decided = Some((remote.slot, Some(live)));
                    break;
                }
            }
            let Some((slot, refused)) = decided else {
                return;
            };
            let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == slot) else {
                return;
            };
            let (_, mut steps) = remote.claim.take().expect("a claim");
            if let Some(live) = refused {
                self.stats.earlier_claims_refused += 1;
                log::warn!(
                    "session: slot {slot:?} named a live player as its earlier session; refused"
                );
                if let Some(ResumeStep::Hello(tokens)) = steps.first_mut() {
                    *tokens = EarlierTokens::new(
                        tokens
                            .as_slice()
                            .iter()
                            .copied()
                            .filter(|t| !live.contains(t)),
                    );
                }
            }
            for step in steps {
                self.handle_resume(now, slot, step);
            }
        }
    }

    /// The tokens of the players (other than `slot`'s) named in `tokens` that may not be taken
    /// for an earlier session of the player at `claimant` yet (see `may_retire`).
    pub(super) fn live_claimed(
        &self,
        slot: Option<u8>,
        claimant: &Node,
        tokens: &[u32],
        now: Instant,
    ) -> Vec<u32> {
        self.players
            .iter()
            .filter(|p| Some(p.slot) != slot && tokens.contains(&p.token))
            .filter(|p| !self.may_retire(p, claimant, now))
            .map(|p| p.token)
            .collect()
    }
}
