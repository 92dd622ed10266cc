//! What the networking layer tells the game: the events `NET_PollEvent` returns (converted to
//! `NET_Event` at the C boundary), in the order they happened.

use crate::rmev::{PlayerName, RemoteEvent};

/// One event for the game.
// The remote-event variant is large (inline text and custom data) by design: events move
// through queues without a heap allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum GameEvent {
    /// This client got a slot in a game.
    Connected {
        slot: u8,
    },
    /// This client left the game (asked to, refused, timed out, or the server went away).
    Disconnected {
        reason: String,
    },
    /// Another player appeared in the slot.
    PlayerConnected {
        slot: u8,
        name: PlayerName,
    },
    /// Another player left the game or was dropped after going silent.
    PlayerDisconnected {
        slot: u8,
        reason: String,
    },
    PlayerJoined {
        slot: u8,
    },
    PlayerUnjoined {
        slot: u8,
        flag: u8,
    },
    PlayerName {
        slot: u8,
        name: PlayerName,
    },
    /// A remote event from the player in `slot` (text, creations, kills, particles, custom).
    Remote {
        slot: u8,
        event: RemoteEvent,
    },
    /// Something went wrong that the game should show (a timeout, a refusal, ...).
    Error {
        text: String,
    },
    /// A message from the server (the admin's lines after a join).
    ServerMessage {
        text: String,
    },
    /// A fetch of the masterservers' lists completed (`servers`, `NET_FetchServerList`):
    /// `count` servers are listed now; `errors` names the masterservers that failed, if any.
    ServerList {
        count: u32,
        errors: String,
    },
}

impl GameEvent {
    /// The slot the event is about, if any.
    pub fn slot(&self) -> Option<u8> {
        match self {
            GameEvent::Connected { slot }
            | GameEvent::PlayerConnected { slot, .. }
            | GameEvent::PlayerDisconnected { slot, .. }
            | GameEvent::PlayerJoined { slot }
            | GameEvent::PlayerUnjoined { slot, .. }
            | GameEvent::PlayerName { slot, .. }
            | GameEvent::Remote { slot, .. } => Some(*slot),
            GameEvent::Disconnected { .. }
            | GameEvent::Error { .. }
            | GameEvent::ServerMessage { .. }
            | GameEvent::ServerList { .. } => None,
        }
    }
}
