//! Playing a demo file back (console `play FILE`): the items come out one at a time, in file
//! order, each once its time since the start of playback has come, so the game sees them at the
//! same relative times it saw them live. Sans-IO like the protocols: the owner passes `now`.
//!
//! The player must never hand out an item from a record that failed validation, never reorder or
//! repeat items, and never treat a broken tail as an error that hides the good part: a file with
//! a valid header always opens, and [`DemoPlayer::broken`] says where the rest broke.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::format::{decode_demo, DemoBreak, DemoContents, DemoHeader};
use super::DemoItem;
use crate::error::{ErrorCode, NetError, NetResult};

/// A demo being played back.
#[derive(Debug)]
pub struct DemoPlayer {
    path: Option<PathBuf>,
    start: Instant,
    header: DemoHeader,
    pending: VecDeque<(Duration, DemoItem)>,
    total: usize,
    duration: Duration,
    broken: Option<DemoBreak>,
}

impl DemoPlayer {
    /// Read and decode the whole file at `path`; playback time zero is `now`. Errors: the file
    /// cannot be read (`Io`, naming the path and the operating system's reason), or its header is
    /// bad (the message names the path). A broken record is not an error: see
    /// [`DemoPlayer::broken`].
    pub fn open(path: &Path, now: Instant) -> NetResult<DemoPlayer> {
        let bytes = std::fs::read(path).map_err(|e| {
            NetError::new(
                ErrorCode::Io,
                format!("cannot read demo file {}: {e}", path.display()),
            )
        })?;
        let contents = decode_demo(&bytes).map_err(|e| {
            NetError::new(
                e.code,
                format!("demo file {}: {}", path.display(), e.message),
            )
        })?;
        let mut player = DemoPlayer::from_contents(contents, now);
        player.path = Some(path.to_path_buf());
        Ok(player)
    }

    /// Play already decoded contents; playback time zero is `now`.
    pub fn from_contents(contents: DemoContents, now: Instant) -> DemoPlayer {
        let duration = contents.duration();
        let total = contents.items.len();
        DemoPlayer {
            path: None,
            start: now,
            header: contents.header,
            pending: contents.items.into(),
            total,
            duration,
            broken: contents.broken,
        }
    }

    /// The file played, when opened from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The file header (version, wall-clock start of the recording).
    pub fn header(&self) -> &DemoHeader {
        &self.header
    }

    /// Where and why the file broke, if it did; the items before that point still play.
    pub fn broken(&self) -> Option<&DemoBreak> {
        self.broken.as_ref()
    }

    /// How long the recording lasted (its end record's time, else its last item's).
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The next item due at `now`, if any: one per call, in recorded order.
    pub fn poll(&mut self, now: Instant) -> Option<DemoItem> {
        self.poll_timed(now).map(|(_, item)| item)
    }

    /// [`DemoPlayer::poll`] with the item's recorded time (since the recording started).
    pub fn poll_timed(&mut self, now: Instant) -> Option<(Duration, DemoItem)> {
        let (time, _) = self.pending.front()?;
        let due = self.start.checked_add(*time)?;
        if due > now {
            return None;
        }
        self.pending.pop_front()
    }

    /// When the next item is due; `None` when everything has been played (or the next item's
    /// time is beyond what `Instant` can represent, so it is never due).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let (time, _) = self.pending.front()?;
        self.start.checked_add(*time)
    }

    /// Whether every item has been played.
    pub fn is_finished(&self) -> bool {
        self.pending.is_empty()
    }

    /// Items the file holds (up to the break, if any).
    pub fn items_total(&self) -> usize {
        self.total
    }

    /// Items handed out by [`DemoPlayer::poll`] so far.
    pub fn items_played(&self) -> usize {
        self.total - self.pending.len()
    }
}
