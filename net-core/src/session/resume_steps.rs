//! RE_RESUME on a link: the hello each new link starts with, the answers naming the old links'
//! tokens and what was delivered, and the done step after which what the old links still owed
//! is sent again once; with the parking of a link's streams for the next session.

use std::time::Instant;

use super::resume::is_game_event;
use super::{ParkedStream, Remote, ResumeState, Session};
use crate::rmev::{RemoteEvent, ResumeStep};

impl Session {
    /// What the next session should pick up after this one ends for a backend switch: the
    /// streams parked so far plus every current link's (the server's, in a star), this
    /// session's token as an earlier one, and whether the player had joined, with its ship.
    /// The session itself is left as it is (it still says goodbye).
    pub fn resume_state_for_next(&self) -> ResumeState {
        let mut state = self.resume.clone();
        let displaced = self.displaced.iter().map(|(remote, _)| remote);
        for remote in displaced.chain(&self.remotes) {
            Self::park_remote(&mut state, remote, self.my_token, self.game_event_serial);
        }
        state.note_my_token(self.my_token);
        state.next_serial = self.game_event_serial;
        state.departed_slots = self.early.departures();
        state.joined = self.joined;
        state.local_state = self.local_state;
        state
    }

    /// Pick up what an earlier session left (see `resume_state_for_next`); call right after
    /// the session is created, before any player is added. A star session that parked a link
    /// with its server holds the game's events until the server's answer (carried events go
    /// first). A player that had joined joins again: the others are told after what was
    /// carried (a mesh greets every player it adds with the join; a star queues it for the
    /// server behind the resumption), and its ship flies on.
    pub fn set_resume_state(&mut self, mut state: ResumeState) {
        self.game_event_serial = self.game_event_serial.max(state.next_serial);
        self.early.inherit(&state.departed_slots);
        let joined = std::mem::take(&mut state.joined);
        self.set_local_state(state.local_state);
        self.resume = state;
        for remote in self.remotes.iter_mut().filter(|r| r.slot.is_none()) {
            remote.added_at_serial = self.game_event_serial;
            if self.resume.has_parked_with(remote.token) && remote.held.is_none() {
                remote.held = Some((Vec::new(), remote.last_heard));
            }
        }
        if joined && !self.joined {
            if let Err(err) = self.join() {
                log::warn!("session: could not join again after the switch: {err}");
            }
        }
    }

    /// Park what `remote` has not got: the streams of an unfinished resumption with it as they
    /// were, then its link's.
    pub(super) fn park_remote(
        resume: &mut ResumeState,
        remote: &Remote,
        my_token: u32,
        serial: u64,
    ) {
        for parked in &remote.resuming {
            resume.park(parked.clone());
        }
        resume.park(Self::link_stream(remote, my_token, serial));
    }

    /// What `remote`'s link has not got through; `serial` is the session's serial now.
    fn link_stream(remote: &Remote, my_token: u32, serial: u64) -> ParkedStream {
        let held = remote.held.as_ref().map_or(&[][..], |(events, _)| events);
        let stream = remote.link.outgoing_stream(held);
        // Events the session numbered (tag 0: the session's own hello and answers) before the
        // oldest one not acknowledged in order were delivered.
        let delivered_below = stream
            .iter()
            .map(|(_, tag, _)| *tag)
            .find(|tag| *tag != 0)
            .unwrap_or(serial + 1);
        let outgoing = stream
            .into_iter()
            .filter(|(_, tag, event)| *tag != 0 && is_game_event(event))
            .collect();
        ParkedStream {
            my_token,
            peer_token: remote.token,
            outgoing,
            first_serial: remote.added_at_serial + 1,
            delivered_below,
            delivered: remote.link.delivered_id(),
            parked_at: remote.last_heard,
        }
    }

    /// RE_RESUME from the player in `slot` (mesh) or from the server (star, `None`); see
    /// `resume`.
    pub(super) fn handle_resume(&mut self, now: Instant, slot: Option<u8>, step: ResumeStep) {
        if let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == slot) {
            if let Some((_, steps)) = remote.claim.as_mut() {
                steps.push(step);
                return;
            }
        }
        if let (ResumeStep::Hello(tokens), Some(slot)) = (step, slot) {
            // A player still heard from at its own node is not taken for the sender's earlier
            // session at once: wait until it goes silent (a switched player's old socket is
            // closed) or the claim is refused (see `settle_claims`).
            let claimant = self
                .remotes
                .iter()
                .find(|r| r.slot == Some(slot))
                .map(|r| r.node);
            if let Some(claimant) = claimant {
                if !self
                    .live_claimed(Some(slot), &claimant, tokens.as_slice(), now)
                    .is_empty()
                {
                    if let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == Some(slot)) {
                        remote.claim = Some((now, vec![step]));
                    }
                    return;
                }
            }
            // The same player under an earlier token, still seated (its goodbye was lost, it
            // came back at a new address): it has left; what it was owed is parked for it now.
            let stale: Vec<(u8, u32)> = self
                .remotes
                .iter()
                .filter(|r| r.slot != Some(slot) && tokens.as_slice().contains(&r.token))
                .filter_map(|r| Some((r.slot?, r.token)))
                .collect();
            for (old, _) in stale {
                self.remove_player(old, "came back at a new address");
            }
            self.retire_tokens(tokens.as_slice());
        }
        if let ResumeStep::Hello(tokens) = step {
            // A displaced player that came back under a new token (or one just removed above
            // whose link never heard from it, kept aside by `remove_player`): what its link
            // holds is resumed like any parked stream.
            self.park_displaced_where(|token, _| tokens.as_slice().contains(&token));
        }
        let earlier = self.resume.earlier_tokens();
        let Some(remote) = self.remotes.iter_mut().find(|r| r.slot == slot) else {
            return;
        };
        match step {
            ResumeStep::Hello(tokens) => {
                // Our hello goes first: the other side reads it before our answers.
                if std::mem::take(&mut remote.hello_due) {
                    remote
                        .link
                        .queue_event(RemoteEvent::Resume(ResumeStep::Hello(earlier)));
                }
                let mut candidates = vec![remote.token];
                candidates.extend_from_slice(tokens.as_slice());
                let mut answered = Vec::new();
                for parked in self.resume.take_all_matching(&candidates) {
                    remote
                        .link
                        .queue_event(RemoteEvent::Resume(ResumeStep::Answer {
                            yours: parked.peer_token,
                            mine: parked.my_token,
                            delivered: parked.delivered,
                        }));
                    answered.push((parked.peer_token, parked.my_token));
                    self.resume.remember_receipt(&parked);
                    remote.resuming.push(parked);
                }
                // Old links answered before to an identity that left before reading it.
                for receipt in self.resume.receipts_matching(&candidates) {
                    if !answered.contains(&(receipt.peer_token, receipt.my_token)) {
                        remote
                            .link
                            .queue_event(RemoteEvent::Resume(ResumeStep::Answer {
                                yours: receipt.peer_token,
                                mine: receipt.my_token,
                                delivered: receipt.delivered,
                            }));
                    }
                }
                remote
                    .link
                    .queue_event(RemoteEvent::Resume(ResumeStep::Done));
            }
            ResumeStep::Answer {
                yours,
                mine,
                delivered,
            } => remote.answers.push((yours, mine, delivered)),
            ResumeStep::Done => {
                // Every event owed over the old links and held for this one, each once, in the
                // order the game queued them (serial order); minus what one of the old links
                // delivered (the same event can sit in several of them: it was queued while
                // the player had two identities here).
                let mut owed = Vec::new();
                let mut delivered_ranges = Vec::new();
                let streams = std::mem::take(&mut remote.resuming);
                let count = streams.len();
                for parked in streams {
                    let answer = remote
                        .answers
                        .iter()
                        .find(|(yours, mine, _)| {
                            *yours == parked.my_token && *mine == parked.peer_token
                        })
                        .map(|(_, _, delivered)| *delivered);
                    // No answer: the other side kept nothing of that link, so it never had it
                    // (it parks every link it had for as long as this side does): it got none
                    // of it.
                    let first = parked.first_serial;
                    let watermark = parked.settle(answer.unwrap_or(0), &mut owed);
                    delivered_ranges.push((first, watermark));
                }
                let delivered = |serial: u64| {
                    delivered_ranges
                        .iter()
                        .any(|(first, last)| (*first..=*last).contains(&serial))
                };
                owed.retain(|(serial, _)| !delivered(*serial));
                let carried = owed.len();
                if let Some((held, _)) = remote.held.take() {
                    owed.extend(
                        held.into_iter()
                            .filter(|(serial, e)| !is_game_event(e) || !delivered(*serial)),
                    );
                }
                owed.sort_by_key(|(serial, _)| *serial);
                owed.dedup_by_key(|(serial, _)| *serial);
                for (serial, event) in owed {
                    // Bounded like the held queue.
                    let _ = remote.link.queue_tagged(serial, event);
                }
                if count > 0 {
                    log::info!(
                        "session: slot {:?} came back; {carried} events sent again",
                        remote.slot
                    );
                    self.resume.stats_mut().count_resumed(count, carried);
                }
                remote.answers.clear();
            }
        }
    }

    /// The session ends for good (a disconnect): the game's events still held for a new link's
    /// RE_RESUME answer go in its last packets, when nothing parked could have gone before them
    /// (with no parked stream, the answer could only have said "nothing to send again").
    /// Otherwise they stay held and are lost with the session, rather than risk repeating what
    /// a parked stream already delivered.
    pub fn release_resume_holds_on_leaving(&mut self) {
        if self.resume.has_parked() {
            return;
        }
        for remote in &mut self.remotes {
            Self::release_held(remote);
        }
    }

    /// Send what was held back for `remote`, in order, after whatever was carried.
    pub(super) fn release_held(remote: &mut Remote) {
        if let Some((held, _)) = remote.held.take() {
            for (serial, event) in held {
                // The held queue was bounded by the same limit.
                let _ = remote.link.queue_tagged(serial, event);
            }
        }
    }

    /// Queue a resume hello on every remote that owes one (rare: checked first by the caller,
    /// so a frame with none does not build the list of earlier tokens).
    pub(super) fn queue_due_hellos(&mut self) {
        let earlier = self.resume.earlier_tokens();
        for remote in self.remotes.iter_mut().filter(|r| r.hello_due) {
            remote.hello_due = false;
            remote
                .link
                .queue_event(RemoteEvent::Resume(ResumeStep::Hello(earlier)));
        }
    }
}
