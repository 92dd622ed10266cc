//! Claims by a player's earlier sessions: a RE_RESUME hello (in a CONNECT, a SLOT_REQUEST or on
//! a link) names the tokens the player had before it switched backend or reconnected. A seat or
//! queued request under one of them is removed at once when the claim comes from that entry's
//! own node or the entry has gone silent; otherwise the claim is watched until one of the two
//! goes silent, and refused if the entry is still heard from.

use std::time::{Duration, Instant};

use super::{PeerProtocol, MAX_DEPARTED};
use crate::rmev::{ConnectRequest, EarlierTokens, RemoteEvent, ResumeStep};
use crate::wire::{PacketHeader, PacketType, WireEvent};
use crate::Node;

impl PeerProtocol {
    /// A connect request may say which sessions the sender had before (it switched packet
    /// backend, or reconnects): those players are gone, whether or not their DISCONNECT came
    /// (before this request, or at all). Without this a full game refuses a player that comes
    /// back at once, because it still seats the player's earlier session.
    ///
    /// Every player is told the others' tokens, so the claim alone proves nothing: a seated
    /// player, or a queued request of a player still connecting, is removed at once only if the
    /// request comes from its own node or it has been silent for
    /// `Session::earlier_session_silence` (a switched player's old socket is closed; a
    /// connecting player repeats its request every connect or slot-request interval). One still
    /// heard from is only claimed: it is removed once it goes silent, and the claim is refused
    /// (counted) if it still talks two silences later. The claimant's request waits for the
    /// decision (`answer_due_requests`). A token known here neither as a player nor as a
    /// request (a stranger's packet may overtake a newcomer's first request) is only watched:
    /// the claimant does not wait for it, and it is retired if nothing of it shows up within the
    /// silence; if its request or a seat does show up, the claim is decided as above
    /// (`review_watches`). A token that already left is retired at once. While a claim on a
    /// seated player is undecided, no request is answered here (`seat_claimed`).
    ///
    /// `from` is the node the claim came from, or None for a hello a player forwarded with the
    /// claimant's request (`hello_owner`): such a claim is decided by silence alone.
    pub(super) fn retire_earlier_sessions(
        &mut self,
        now: Instant,
        from: Option<&Node>,
        sender_token: u32,
        tokens: EarlierTokens,
    ) {
        let my_token = self.my_token();
        let earlier: Vec<u32> = tokens
            .as_slice()
            .iter()
            .copied()
            .filter(|t| *t != sender_token && *t != my_token)
            .collect();
        let Some(silence) = self.session.as_ref().map(|s| s.earlier_session_silence()) else {
            return;
        };
        let mut retire = Vec::new();
        for token in earlier {
            if self.last_heard_of(token).is_none() && !self.departed.contains(&token) {
                if !self
                    .watches
                    .iter()
                    .any(|w| w.0 == token && w.1 == sender_token)
                {
                    if self.watches.len() >= MAX_DEPARTED {
                        // Many unknown tokens named (a forger): forget the oldest rather than
                        // retire it unseen.
                        self.watches.remove(0);
                    }
                    self.watches.push((token, sender_token, from.copied(), now));
                }
                continue;
            }
            let settled = self
                .last_heard_of(token)
                .is_none_or(|heard| self.claim_holds_at_once(token, heard, from, now, silence));
            if settled {
                retire.push(token);
            } else {
                self.add_claim(token, sender_token, now);
            }
        }
        self.retire_tokens_now(&mut retire);
    }

    /// Whether a claim on `token`, last heard from at `heard`, made from `from`, is honoured
    /// at once: it came from the token's own node, or the token has been silent long enough.
    fn claim_holds_at_once(
        &self,
        token: u32,
        heard: Instant,
        from: Option<&Node>,
        now: Instant,
        silence: Duration,
    ) -> bool {
        now.saturating_duration_since(heard) >= silence
            || from.is_some_and(|from| self.placed_at(token, from))
    }

    /// The hello a CONNECT or SLOT_REQUEST carries, if any.
    pub(super) fn hello_in(events: &[WireEvent]) -> Option<EarlierTokens> {
        events.iter().find_map(|w| match &w.event {
            RemoteEvent::Resume(ResumeStep::Hello(tokens)) => Some(*tokens),
            _ => None,
        })
    }

    /// Whose earlier sessions a packet's hello names, and the node the claim counts as coming
    /// from: the sender's, from its node, as a rule. A SLOT_REQUEST that a player of this game
    /// sends from its own node with one request that is not its own forwards that request
    /// (`forward_to_higher`), and the hello is the requester's; the forwarder's node proves
    /// nothing about the tokens named, so that claim is decided by silence alone.
    pub(super) fn hello_owner(
        &self,
        from: &Node,
        header: &PacketHeader,
        requests: &[ConnectRequest],
    ) -> (u32, Option<Node>) {
        let forwarded = match requests {
            [only] if header.kind == PacketType::SlotRequest && only.token != header.token => self
                .session
                .as_ref()
                .is_some_and(|s| s.slot_of(from, header.token).is_some()),
            _ => false,
        };
        if forwarded {
            (requests[0].token, None)
        } else {
            (header.token, Some(*from))
        }
    }

    /// Whether a claim that a seated player is someone's earlier session is undecided here.
    pub(super) fn seat_claimed(&self) -> bool {
        let Some(session) = &self.session else {
            return false;
        };
        self.claims
            .iter()
            .any(|c| session.players().iter().any(|p| p.token == c.0))
    }

    /// Keep a pending claim on `token` by `sender_token`, made at `since` (once per pair).
    fn add_claim(&mut self, token: u32, sender_token: u32, since: Instant) {
        if !self
            .claims
            .iter()
            .any(|c| c.0 == token && c.1 == sender_token)
        {
            self.claims.push((token, sender_token, since));
        }
    }

    /// Decide the watched tokens (see `retire_earlier_sessions`): one that now has a seat or a
    /// queued request here is claimed by the rule for known tokens (retired at once if the claim
    /// came from its node or it has been silent long enough, else claimed from when it was
    /// first named); one still unknown a silence after it was named is retired.
    pub(super) fn review_watches(&mut self, now: Instant) {
        if self.watches.is_empty() {
            return;
        }
        let Some(silence) = self.session.as_ref().map(|s| s.earlier_session_silence()) else {
            self.watches.clear();
            return;
        };
        let mut retire = Vec::new();
        let mut claims = Vec::new();
        let mut watches = std::mem::take(&mut self.watches);
        watches.retain(|&(token, sender_token, from, since)| {
            if self.departed.contains(&token) {
                return false;
            }
            match self.last_heard_of(token) {
                None if now.saturating_duration_since(since) >= silence => {
                    retire.push(token);
                    false
                }
                None => true,
                Some(heard) => {
                    if self.claim_holds_at_once(token, heard, from.as_ref(), now, silence) {
                        retire.push(token);
                    } else {
                        claims.push((token, sender_token, since));
                    }
                    false
                }
            }
        });
        self.watches = watches;
        for (token, sender_token, since) in claims {
            self.add_claim(token, sender_token, since);
        }
        self.retire_tokens_now(&mut retire);
    }

    /// When the player or connecting requester holding `token` was last heard from here: the
    /// later of its seat's last packet and its queued request's (a seat given to a newcomer
    /// whose reply was lost hears only its requests). None if it is neither seated nor queued.
    pub(super) fn last_heard_of(&self, token: u32) -> Option<Instant> {
        let seated = self
            .session
            .as_ref()
            .and_then(|s| s.players().iter().find(|p| p.token == token))
            .map(|p| p.last_heard);
        let queued = self.queue.get(token).map(|e| e.heard);
        seated.max(queued)
    }

    /// Whether this peer seats `token`, or has its request queued, at `node`.
    pub(super) fn placed_at(&self, token: u32, node: &Node) -> bool {
        let seated = self
            .session
            .as_ref()
            .and_then(|s| s.players().iter().find(|p| p.token == token))
            .map(|p| p.node);
        let queued = self.queue.get(token).map(|e| e.node);
        [seated, queued]
            .into_iter()
            .flatten()
            .any(|n| self.same_node(&n, node))
    }

    /// Remove the players holding `tokens` (earlier sessions of a player that came back; each
    /// once, whatever the order given) and forget their requests and seats.
    fn retire_tokens_now(&mut self, tokens: &mut Vec<u32>) {
        if tokens.is_empty() {
            return;
        }
        tokens.sort_unstable();
        tokens.dedup();
        let tokens: &[u32] = tokens;
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let seated: Vec<u8> = session
            .players()
            .iter()
            .filter(|p| tokens.contains(&p.token))
            .map(|p| p.slot)
            .collect();
        for slot in seated {
            session.remove_player(slot, "came back at a new address");
            self.stats.earlier_sessions_retired += 1;
        }
        session.retire_tokens(tokens);
        self.claims.retain(|c| !tokens.contains(&c.0));
        self.watches.retain(|w| !tokens.contains(&w.0));
        for &token in tokens {
            // A seat given to an earlier session that never confirmed it: stop resending it.
            self.queue.remove(token);
            self.note_departed(token);
        }
        if let Some(session) = self.session.as_mut() {
            session.settle_claims(self.last_now);
        }
    }

    /// Decide the pending claims (see `retire_earlier_sessions`): a claimed player that left or
    /// went silent is retired; one still heard from two silences after the claim stays, and the
    /// claim is refused.
    pub(super) fn settle_earlier_claims(&mut self, now: Instant) {
        self.review_watches(now);
        if self.claims.is_empty() {
            return;
        }
        let Some(session) = self.session.as_ref() else {
            self.claims.clear();
            return;
        };
        let silence = session.earlier_session_silence();
        let mut retire = Vec::new();
        let mut refused = 0;
        let mut claims = std::mem::take(&mut self.claims);
        claims.retain(|&(token, _, since)| match self.last_heard_of(token) {
            None => {
                retire.push(token);
                false
            }
            Some(heard) if now.saturating_duration_since(heard) >= silence => {
                retire.push(token);
                false
            }
            Some(_) if now.saturating_duration_since(since) >= silence * 2 => {
                refused += 1;
                false
            }
            Some(_) => true,
        });
        self.claims = claims;
        if refused > 0 {
            log::warn!(
                "peer: a connect request named a live player as its earlier session; refused"
            );
            self.stats.earlier_claims_refused += refused;
        }
        self.retire_tokens_now(&mut retire);
    }

    /// When the next pending claim may be decided.
    pub(super) fn next_claim_decision(&self) -> Option<Instant> {
        let session = self.session.as_ref()?;
        let silence = session.earlier_session_silence();
        let claims = self.claims.iter().map(|&(token, _, since)| {
            let silent_at = self
                .last_heard_of(token)
                .map_or(since, |heard| heard + silence);
            silent_at.min(since + silence * 2)
        });
        let watches = self.watches.iter().map(|w| w.3 + silence);
        claims.chain(watches).min()
    }

    // ----- withdrawn connect requests ------------------------------------------------------
}
