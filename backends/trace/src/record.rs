//! The trace file: one text line per datagram, appended to a file and written in batches.
//!
//! Line format (fields separated by one space):
//!
//! ```text
//! <ms since the socket was opened> send|recv <node text> <length> <first 32 bytes in hex>
//! ```
//!
//! for example `1532 send 127.0.0.1:5000 5 68656c6c6f`. The node is printed by the inner backend
//! (whitespace in it becomes '_'; a node it cannot print is written as `raw:` and its 32 bytes in
//! hex). An empty payload is written as `-`. Lines are kept in memory and appended to the file
//! every [`FLUSH_LINES`] lines, at least once a second while datagrams flow, and on close. Each
//! line reaches the file in a single write, so sockets sharing a file interleave whole lines.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Lines buffered before they are written out.
pub const FLUSH_LINES: usize = 100;
/// Longest time buffered lines wait while more datagrams arrive.
const FLUSH_INTERVAL: Duration = Duration::from_secs(1);
/// Payload bytes shown per line.
pub const SHOWN_BYTES: usize = 32;

/// Which way a datagram went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Send,
    Receive,
}

impl Direction {
    fn word(self) -> &'static str {
        match self {
            Direction::Send => "send",
            Direction::Receive => "recv",
        }
    }
}

/// An open trace file.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    file: File,
    /// Whole lines not yet written.
    pending: String,
    pending_lines: usize,
    last_flush: Instant,
}

impl Recorder {
    /// Open (creating if needed) `path` for appending.
    pub fn open(path: &Path) -> Result<Recorder, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("trace: cannot open trace file {}: {e}", path.display()))?;
        Ok(Recorder {
            path: path.to_path_buf(),
            file,
            pending: String::new(),
            pending_lines: 0,
            last_flush: Instant::now(),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Add the line of one `len`-byte datagram whose payload starts with `head` (only its first
    /// [`SHOWN_BYTES`] bytes are shown); writes the batch out when it is due. An error means
    /// nothing more should be recorded (the message names the file).
    pub fn record(
        &mut self,
        ms: u128,
        direction: Direction,
        node_text: &str,
        len: usize,
        head: &[u8],
    ) -> Result<(), String> {
        // Writing into a String cannot fail.
        let _ = write!(self.pending, "{ms} {} {node_text} {len} ", direction.word());
        let shown = &head[..head.len().min(len).min(SHOWN_BYTES)];
        if shown.is_empty() {
            self.pending.push('-');
        } else {
            push_hex(&mut self.pending, shown);
        }
        self.pending.push('\n');
        self.pending_lines += 1;
        if self.pending_lines >= FLUSH_LINES || self.last_flush.elapsed() >= FLUSH_INTERVAL {
            self.flush()?;
        }
        Ok(())
    }

    /// Write every buffered line to the file.
    pub fn flush(&mut self) -> Result<(), String> {
        self.last_flush = Instant::now();
        if self.pending.is_empty() {
            return Ok(());
        }
        let result = self.file.write_all(self.pending.as_bytes());
        self.pending.clear();
        self.pending_lines = 0;
        result.map_err(|e| {
            format!(
                "trace: cannot write trace file {}: {e}; recording stopped",
                self.path.display()
            )
        })
    }
}

/// Append `bytes` as lowercase hex digits.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
}

/// Make node text usable as one field: whitespace and control characters become '_'.
pub fn field(text: &str) -> String {
    if text.is_empty() {
        return "-".to_string();
    }
    text.chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str) -> PathBuf {
        let dir = format!("pn-trace-record-{}-{name}", std::process::id());
        let dir = std::env::temp_dir().join(dir);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("trace.log")
    }

    #[test]
    fn lines_have_the_documented_format() {
        let path = temp_file("format.log");
        let mut r = Recorder::open(&path).unwrap();
        r.record(7, Direction::Send, "127.0.0.1:5", 5, b"hello")
            .unwrap();
        r.record(9, Direction::Receive, "[::1]:6", 40, &[0xab; 40])
            .unwrap();
        r.record(10, Direction::Send, "x", 0, b"").unwrap();
        r.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "7 send 127.0.0.1:5 5 68656c6c6f");
        assert_eq!(lines[1], format!("9 recv [::1]:6 40 {}", "ab".repeat(32)));
        assert_eq!(lines[2], "10 send x 0 -");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn lines_are_written_every_hundred_and_on_flush() {
        let path = temp_file("batches.log");
        let mut r = Recorder::open(&path).unwrap();
        let count = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count();
        for i in 0..FLUSH_LINES - 1 {
            r.record(0, Direction::Send, "n", 1, &[i as u8]).unwrap();
        }
        assert_eq!(count(&path), 0);
        r.record(0, Direction::Send, "n", 1, b"x").unwrap();
        assert_eq!(count(&path), FLUSH_LINES);
        r.record(0, Direction::Receive, "n", 1, b"y").unwrap();
        r.flush().unwrap();
        assert_eq!(count(&path), FLUSH_LINES + 1);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn node_text_becomes_one_field() {
        assert_eq!(field("a b\tc\n"), "a_b_c_");
        assert_eq!(field(""), "-");
        assert_eq!(field("[::1]:5"), "[::1]:5");
    }

    #[test]
    fn an_unopenable_file_is_a_clear_error() {
        let e = Recorder::open(Path::new("/nonexistent-dir/x/trace.log")).unwrap_err();
        assert!(e.starts_with("trace: cannot open trace file /nonexistent-dir/x/trace.log: "));
    }
}
