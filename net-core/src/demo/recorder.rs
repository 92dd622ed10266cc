//! Writing a demo file while the game plays (console `record FILE` ... `stop`): the header, then
//! one record per item the game is handed, then the end record.
//!
//! Cheap enough for every item of a busy game: records are encoded into one reused buffer and go
//! through a `BufWriter`, so an item costs no allocation (except the rare RE_PLAYERLIST and
//! RE_CONNECTQUEUE events, which the wire codec clones). The recorder must never write a partial
//! or invalid record, never let record times go backwards, and never keep writing after an I/O
//! error: the first one is reported and recording stops, leaving a file whose complete records
//! still play.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::format::{encode_end, encode_header, encode_item, HEADER_LEN};
use super::DemoItem;
use crate::error::{ErrorCode, NetError, NetResult};

/// What a finished recording holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoSummary {
    pub path: PathBuf,
    /// Items recorded (not counting the end record).
    pub items: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// Time of the end record: how long the recording lasted.
    pub duration: Duration,
}

/// A demo file being written.
#[derive(Debug)]
pub struct DemoRecorder {
    path: PathBuf,
    start: Instant,
    /// `None` once finished or after an I/O error.
    out: Option<BufWriter<File>>,
    /// Reused record buffer.
    buf: Vec<u8>,
    items: u64,
    bytes: u64,
    /// Time of the last record written (record times never go backwards).
    last: Duration,
    /// The I/O error that stopped recording.
    failed: Option<NetError>,
}

fn io_error(action: &str, path: &Path, e: &std::io::Error) -> NetError {
    NetError::new(
        ErrorCode::Io,
        format!("{action} demo file {}: {e}", path.display()),
    )
}

impl DemoRecorder {
    /// Create (or truncate) the file at `path` and write the header; `now` is time zero of the
    /// recording. Errors name the path and the operating system's reason.
    pub fn create(path: &Path, now: Instant) -> NetResult<DemoRecorder> {
        let file = File::create(path).map_err(|e| io_error("cannot create", path, &e))?;
        let mut out = BufWriter::new(file);
        let start_unix_micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .ok()
            .and_then(|d| u64::try_from(d.as_micros()).ok())
            .unwrap_or(0);
        let mut buf = Vec::with_capacity(512);
        encode_header(start_unix_micros, &mut buf);
        out.write_all(&buf)
            .map_err(|e| io_error("cannot write", path, &e))?;
        Ok(DemoRecorder {
            path: path.to_path_buf(),
            start: now,
            out: Some(out),
            buf,
            items: 0,
            bytes: HEADER_LEN as u64,
            last: Duration::ZERO,
            failed: None,
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Items recorded so far.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Bytes handed to the file so far (some may still be buffered).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Time since the recording started, as of the last record.
    pub fn elapsed(&self) -> Duration {
        self.last
    }

    /// The I/O error that stopped recording, if one did.
    pub fn failure(&self) -> Option<&NetError> {
        self.failed.as_ref()
    }

    /// Whether items are still being recorded (no I/O error so far).
    pub fn is_recording(&self) -> bool {
        self.out.is_some()
    }

    fn stopped_error(&self) -> NetError {
        match &self.failed {
            Some(e) => NetError::new(
                ErrorCode::State,
                format!("recording stopped after an earlier error: {}", e.message),
            ),
            None => NetError::new(ErrorCode::State, "recording has stopped"),
        }
    }

    /// The record time for `now`: time since start, never before the previous record's.
    fn time_at(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start).max(self.last)
    }

    /// Record `item` as handed to the game at `now`.
    ///
    /// An item the format cannot hold (`InvalidArgument`, `TooLarge`: see
    /// [`encode_item`]) is not written and recording goes on. An I/O error (`Io`) stops
    /// recording: this and every later call fail, and the file keeps its complete records.
    pub fn record(&mut self, now: Instant, item: &DemoItem) -> NetResult<()> {
        if self.out.is_none() {
            return Err(self.stopped_error());
        }
        let time = self.time_at(now);
        self.buf.clear();
        encode_item(time, item, &mut self.buf)?;
        self.write_buf()?;
        self.items += 1;
        self.last = time;
        Ok(())
    }

    fn write_buf(&mut self) -> NetResult<()> {
        let Some(out) = self.out.as_mut() else {
            return Err(self.stopped_error());
        };
        match out.write_all(&self.buf) {
            Ok(()) => {
                self.bytes += self.buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                let err = io_error("cannot write", &self.path, &e);
                let reported =
                    NetError::new(ErrorCode::Io, format!("{}; recording stopped", err.message));
                self.failed = Some(err);
                // Dropping the writer tries once more to flush what it buffered. The file then
                // holds the complete records before this one and at most a part of this one,
                // which the player reports as the break.
                self.out = None;
                Err(reported)
            }
        }
    }

    /// Hand what is buffered to the file (once a frame while recording), so a game that is
    /// killed or crashes leaves a file with every record up to its last frame, which plays and
    /// reports the missing end record. Not synced: that is for `finish`. An I/O error stops
    /// recording as in [`DemoRecorder::record`].
    pub fn flush(&mut self) -> NetResult<()> {
        let Some(out) = self.out.as_mut() else {
            return Err(self.stopped_error());
        };
        if let Err(e) = out.flush() {
            let err = io_error("cannot write", &self.path, &e);
            let reported =
                NetError::new(ErrorCode::Io, format!("{}; recording stopped", err.message));
            self.failed = Some(err);
            self.out = None;
            return Err(reported);
        }
        Ok(())
    }

    /// Write the end record with the time of the last item, flush and sync the file.
    pub fn finish(self) -> NetResult<DemoSummary> {
        let end = self.last;
        self.finish_with(end)
    }

    /// Write the end record at `now` (the moment recording was stopped), flush and sync the
    /// file.
    pub fn finish_at(self, now: Instant) -> NetResult<DemoSummary> {
        let end = self.time_at(now);
        self.finish_with(end)
    }

    fn finish_with(mut self, end: Duration) -> NetResult<DemoSummary> {
        if self.out.is_none() {
            return Err(self.stopped_error());
        }
        self.buf.clear();
        encode_end(end, &mut self.buf)?;
        self.write_buf()?;
        let Some(out) = self.out.take() else {
            return Err(self.stopped_error());
        };
        let file = out
            .into_inner()
            .map_err(|e| io_error("cannot write", &self.path, e.error()))?;
        file.sync_all()
            .map_err(|e| io_error("cannot sync", &self.path, &e))?;
        Ok(DemoSummary {
            path: self.path.clone(),
            items: self.items,
            bytes: self.bytes,
            duration: end,
        })
    }
}

impl Drop for DemoRecorder {
    /// A recorder dropped without `finish` (an unwinding panic, a subsystem torn down) still
    /// ends its file properly, best effort: the end record at the last item's time, then flush.
    fn drop(&mut self) {
        if let Some(mut out) = self.out.take() {
            self.buf.clear();
            if encode_end(self.last, &mut self.buf).is_ok() {
                let _ = out.write_all(&self.buf);
            }
            let _ = out.flush();
        }
    }
}
