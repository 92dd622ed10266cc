//! Demo recording and playback: the stream of items the game-interface layer hands the game (every
//! [`GameEvent`] and every remote ship-state update), with the time since recording started,
//! written to a file and fed back at the same relative times, so the game sees exactly what it
//! saw live.
//!
//! - [`format`](mod@format): the versioned file format (docs/demo-format.md), [`encode_item`],
//!   [`decode_demo`];
//! - [`recorder`]: [`DemoRecorder`], buffered writing of a demo file (console `record FILE`);
//! - [`player`]: [`DemoPlayer`], timed playback of a demo file (console `play FILE`);
//! - [`world`]: [`PlaybackWorld`], the players and objects a demo shows the game's lookups.
//!
//! This module must never panic on any file contents, never play an item from a record that
//! failed validation, and never take a broken tail for an error that hides the good part before
//! it: what decoded cleanly up to the first bad byte still plays.

pub mod format;
pub mod player;
pub mod recorder;
pub mod world;

use crate::rmev::{PlayerName, ShipState};
use crate::session::events::GameEvent;

pub use format::{
    decode_demo, decode_header, encode_end, encode_header, encode_item, DemoBreak, DemoContents,
    DemoHeader, RecordKind, DEMO_VERSION, HEADER_LEN, MAGIC, MAX_RECORD_LEN, MAX_STRING_LEN,
};
pub use player::DemoPlayer;
pub use recorder::{DemoRecorder, DemoSummary};
pub use world::PlaybackWorld;

/// One thing the game was handed while recording: an event, a player's ship state, what the
/// game's own player did that its lookups show (`NET_FetchPlayerName`, `NET_GetPlayerState`,
/// `NET_FetchOwner` of its own slot and objects), or, at the start of a recording begun in a
/// game, who created the objects that were alive then.
///
/// A recording begun in a game starts with a snapshot of what the game knew then, as items at
/// time zero: Connected with the own player and ship state, every remote player's
/// PlayerConnected (with the name it has), PlayerJoined when joined and its ship state when one
/// had arrived, then the owners of the live objects (`OwnObject` for the game's own,
/// `ObjectOwner` for the others'). Played back, the game is handed what it knew as events it
/// would have seen, and its lookups answer as the live ones did.
#[derive(Clone, Debug, PartialEq)]
pub enum DemoItem {
    /// An event `NET_PollEvent` returned.
    Event(GameEvent),
    /// The ship state of the player in `slot` (0-15) was updated: a remote player's as it
    /// arrived, or the game's own as it set it (recorded once per frame when it changed).
    State { slot: u8, state: ShipState },
    /// The recording game's own player: its slot and name while it is in a game, `None` while it
    /// is not. Recorded when recording starts, with every Connected event and when the game
    /// changes its name; never shown to the game as an event.
    OwnPlayer(Option<OwnPlayer>),
    /// The recording game created (`created`) or killed the object `object_id` (non-zero), as
    /// its own `NET_RmEv*` calls did; never shown to the game as an event.
    OwnObject { object_id: u32, created: bool },
    /// The object `object_id` (non-zero), created by the remote player in `slot` before the
    /// recording began, was alive then: written at the start of a recording begun in a game, so
    /// `NET_FetchOwner` answers for it; never shown to the game as an event.
    ObjectOwner { object_id: u32, slot: u8 },
}

/// The recording game's own player while it is in a game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnPlayer {
    /// 0-15.
    pub slot: u8,
    pub name: PlayerName,
}
