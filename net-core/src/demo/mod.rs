//! Demo recording and playback: the stream of items the game-interface layer hands the game (every
//! [`GameEvent`] and every remote ship-state update), with the time since recording started,
//! written to a file and fed back at the same relative times, so the game sees exactly what it
//! saw live.
//!
//! - [`format`](mod@format): the versioned file format (docs/demo-format.md), [`encode_item`],
//!   [`decode_demo`];
//! - [`recorder`]: [`DemoRecorder`], buffered writing of a demo file (console `record FILE`);
//! - [`player`]: [`DemoPlayer`], timed playback of a demo file (console `play FILE`).
//!
//! This module must never panic on any file contents, never play an item from a record that
//! failed validation, and never take a broken tail for an error that hides the good part before
//! it: what decoded cleanly up to the first bad byte still plays.

pub mod format;
pub mod player;
pub mod recorder;

use crate::rmev::ShipState;
use crate::session::events::GameEvent;

pub use format::{
    decode_demo, decode_header, encode_end, encode_header, encode_item, DemoBreak, DemoContents,
    DemoHeader, RecordKind, DEMO_VERSION, HEADER_LEN, MAGIC, MAX_RECORD_LEN, MAX_STRING_LEN,
};
pub use player::DemoPlayer;
pub use recorder::{DemoRecorder, DemoSummary};

/// One thing the game was handed while recording: an event, or a remote player's ship state.
#[derive(Clone, Debug, PartialEq)]
pub enum DemoItem {
    /// An event `NET_PollEvent` returned.
    Event(GameEvent),
    /// The ship state of the remote player in `slot` (0-15) was updated.
    State { slot: u8, state: ShipState },
}
