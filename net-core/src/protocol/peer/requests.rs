//! The queue of connect requests a peer knows about and has not seen answered yet. Starting
//! peers queue the requests they receive and forward the whole queue when they yield, so no
//! request is lost; peers in the game loop schedule their reply by rank and keep an assigned
//! request until the new player's first game packet confirms that the reply arrived.

use std::time::Instant;

use crate::rmev::{ConnectRequest, EarlierTokens, PlayerName, MAX_SLOTS};
use crate::Node;

/// What is to be done about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Decided when this peer ends its connect loop as temporary master (or yields and
    /// forwards it).
    AtStartupEnd,
    /// This peer answers at that time unless another peer's reply is snooped first.
    At(Instant),
}

/// One queued connect request.
#[derive(Clone, Debug)]
pub struct QueuedRequest {
    pub token: u32,
    pub node: Node,
    pub name: PlayerName,
    pub reply: Reply,
    /// The slot this peer gave the requester (the reply is resent until confirmed).
    pub assigned: Option<u8>,
    /// Replies sent so far (to give up on a requester that never confirms).
    pub replies_sent: u32,
    /// Times this peer let a live higher-ranked player answer first.
    pub deferrals: u32,
    /// When a request of this token last came from its own node (a connecting player repeats
    /// it every connect or slot-request interval); when it was queued if it came by another
    /// peer. A claim that this request is someone's earlier session waits for its silence.
    pub heard: Instant,
    /// The requester's tokens of earlier sessions, when its request came with a hello (its
    /// own, or one a player forwarded with it): a forwarded request carries them on, so the
    /// peer that answers it does not find the game full because of the requester's own
    /// earlier session.
    pub earlier: Option<EarlierTokens>,
}

/// Most requests kept (more than can ever be seated).
const MAX_QUEUED: usize = MAX_SLOTS * 2;

/// The queue, in arrival order, without duplicate tokens.
#[derive(Clone, Debug, Default)]
pub struct RequestQueue {
    entries: Vec<QueuedRequest>,
}

impl RequestQueue {
    pub fn iter(&self) -> impl Iterator<Item = &QueuedRequest> {
        self.entries.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut QueuedRequest> {
        self.entries.iter_mut()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, token: u32) -> Option<&QueuedRequest> {
        self.entries.iter().find(|e| e.token == token)
    }

    pub fn get_mut(&mut self, token: u32) -> Option<&mut QueuedRequest> {
        self.entries.iter_mut().find(|e| e.token == token)
    }

    /// Add a request (heard `now`) unless its token is already queued. Returns true if it was
    /// added.
    pub fn merge(&mut self, request: &ConnectRequest, reply: Reply, now: Instant) -> bool {
        if request.token == 0
            || self.get(request.token).is_some()
            || self.entries.len() >= MAX_QUEUED
        {
            return false;
        }
        self.entries.push(QueuedRequest {
            token: request.token,
            node: request.node,
            name: request.name,
            reply,
            assigned: None,
            replies_sent: 0,
            deferrals: 0,
            heard: now,
            earlier: None,
        });
        true
    }

    pub fn remove(&mut self, token: u32) -> Option<QueuedRequest> {
        let at = self.entries.iter().position(|e| e.token == token)?;
        Some(self.entries.remove(at))
    }

    pub fn retain(&mut self, keep: impl FnMut(&QueuedRequest) -> bool) {
        self.entries.retain(keep);
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The queue as RE_CONNECTQUEUE entries (at most 16), starting with `own` if given.
    pub fn to_wire(&self, own: Option<ConnectRequest>) -> Vec<ConnectRequest> {
        own.into_iter()
            .chain(self.entries.iter().map(|e| ConnectRequest {
                token: e.token,
                node: e.node,
                name: e.name,
            }))
            .take(MAX_SLOTS)
            .collect()
    }
}
