//! Line framing for the servers' text protocols: bytes from a TCP stream in, whole lines out.
//!
//! A line ends with "\n" ("\r\n" is accepted); its text is at most `max_len` bytes. A line split
//! across many reads is reassembled; a line that grows past the limit is reported once as
//! [`LineFault::Overlong`] the moment it does (its rest is discarded up to the next "\n"), so a
//! peer can never make this buffer hold more than `max_len + 1` bytes of an unfinished line.
//! This module never interprets a line and never does I/O.

/// The servers' line limit (the design: at most 255 bytes, terminator excluded).
pub const MAX_LINE_LEN: usize = 255;

/// Why a received line cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineFault {
    /// Longer than the limit; the rest of it up to "\n" is discarded.
    Overlong,
    /// Holds a control byte (below 0x20, or 0x7F), e.g. binary data or a stray CR.
    ControlBytes,
    /// Not valid UTF-8.
    NotUtf8,
}

impl LineFault {
    /// A short text for logs and counters.
    pub fn describe(self) -> &'static str {
        match self {
            LineFault::Overlong => "line too long",
            LineFault::ControlBytes => "control or binary bytes in line",
            LineFault::NotUtf8 => "line is not UTF-8",
        }
    }
}

/// One framed line: its text, or why it is unusable.
pub type FramedLine = Result<String, LineFault>;

/// Incremental framing state of one connection.
#[derive(Debug)]
pub struct LineBuffer {
    max_len: usize,
    pending: Vec<u8>,
    /// The current line was reported overlong: drop bytes until the next "\n".
    discarding: bool,
    /// Bytes of the current (unfinished) line seen so far, discarded ones included.
    unfinished: bool,
}

impl LineBuffer {
    /// A buffer for lines of at most `max_len` bytes (terminator excluded).
    pub fn new(max_len: usize) -> Self {
        LineBuffer {
            max_len,
            pending: Vec::new(),
            discarding: false,
            unfinished: false,
        }
    }

    /// Whether a line has begun but not yet ended (bytes are waiting for their "\n").
    pub fn has_unfinished_line(&self) -> bool {
        self.unfinished
    }

    /// Feed received bytes; returns the lines (and faults) they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<FramedLine> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let (chunk, ended) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], true),
                None => (rest, false),
            };
            rest = if ended { &rest[chunk.len() + 1..] } else { &[] };
            self.take_chunk(chunk, &mut out);
            if ended {
                self.end_line(&mut out);
            } else {
                self.unfinished = true;
            }
        }
        out
    }

    /// The stream ended: its unfinished last line, if any, as if its "\n" had come (nothing for
    /// a line already reported overlong).
    pub fn finish(&mut self) -> Option<FramedLine> {
        if !self.unfinished {
            return None;
        }
        let mut out = Vec::new();
        self.end_line(&mut out);
        out.pop()
    }

    /// Add bytes of the current line (no "\n" among them).
    fn take_chunk(&mut self, chunk: &[u8], out: &mut Vec<FramedLine>) {
        if self.discarding {
            return;
        }
        // One byte more than the limit may be a CR whose LF has not arrived yet.
        let room = self.max_len + 1 - self.pending.len();
        if chunk.len() <= room {
            self.pending.extend_from_slice(chunk);
        } else {
            self.pending.extend_from_slice(&chunk[..room]);
        }
        let too_long = chunk.len() > room
            || (self.pending.len() == self.max_len + 1 && self.pending.last() != Some(&b'\r'));
        if too_long {
            self.pending.clear();
            self.discarding = true;
            out.push(Err(LineFault::Overlong));
        }
    }

    /// The "\n" of the current line arrived.
    fn end_line(&mut self, out: &mut Vec<FramedLine>) {
        self.unfinished = false;
        if self.discarding {
            self.discarding = false;
            return;
        }
        let mut line = std::mem::take(&mut self.pending);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        out.push(classify(line, self.max_len));
    }
}

/// Check a complete line's bytes (terminator removed).
fn classify(line: Vec<u8>, max_len: usize) -> FramedLine {
    if line.len() > max_len {
        return Err(LineFault::Overlong);
    }
    if line.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(LineFault::ControlBytes);
    }
    String::from_utf8(line).map_err(|_| LineFault::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(buf: &mut LineBuffer, bytes: &[u8]) -> Vec<FramedLine> {
        buf.push(bytes)
    }

    #[test]
    fn splits_lf_and_crlf_lines() {
        let mut b = LineBuffer::new(255);
        assert_eq!(
            lines(&mut b, b"remove me\nmy new name: x\r\n"),
            vec![Ok("remove me".into()), Ok("my new name: x".into())]
        );
        assert!(!b.has_unfinished_line());
    }

    #[test]
    fn reassembles_a_line_fed_byte_by_byte() {
        let mut b = LineBuffer::new(255);
        let text = b"version: 1.0 join me: sid os: powerpc-apple-macos\r\n";
        let mut got = Vec::new();
        for byte in text.iter() {
            got.extend(b.push(std::slice::from_ref(byte)));
            if got.is_empty() {
                assert!(b.has_unfinished_line());
            }
        }
        assert_eq!(
            got,
            vec![Ok(
                "version: 1.0 join me: sid os: powerpc-apple-macos".into()
            )]
        );
    }

    #[test]
    fn exactly_the_limit_is_accepted_with_either_terminator() {
        let mut b = LineBuffer::new(10);
        assert_eq!(
            lines(&mut b, b"0123456789\n"),
            vec![Ok("0123456789".into())]
        );
        assert_eq!(lines(&mut b, b"0123456789\r"), vec![]);
        assert_eq!(lines(&mut b, b"\n"), vec![Ok("0123456789".into())]);
    }

    #[test]
    fn overlong_is_reported_once_and_its_rest_discarded() {
        let mut b = LineBuffer::new(10);
        assert_eq!(
            lines(&mut b, b"01234567890"),
            vec![Err(LineFault::Overlong)]
        );
        assert_eq!(lines(&mut b, &[b'x'; 10_000]), vec![]);
        assert!(b.pending.is_empty(), "nothing of an overlong line is kept");
        assert_eq!(lines(&mut b, b"yy\nok\n"), vec![Ok("ok".into())]);
    }

    #[test]
    fn overlong_across_reads_is_detected_without_the_newline() {
        let mut b = LineBuffer::new(10);
        assert_eq!(lines(&mut b, b"01234"), vec![]);
        assert_eq!(lines(&mut b, b"56789"), vec![]);
        assert_eq!(lines(&mut b, b"\r"), vec![]);
        assert_eq!(lines(&mut b, b"x"), vec![Err(LineFault::Overlong)]);
    }

    #[test]
    fn the_end_of_the_stream_ends_an_unfinished_line() {
        let mut b = LineBuffer::new(10);
        assert_eq!(b.finish(), None, "nothing begun");
        assert_eq!(lines(&mut b, b"done\nrem"), vec![Ok("done".into())]);
        assert_eq!(b.finish(), Some(Ok("rem".into())));
        assert_eq!(b.finish(), None, "taken once");
        assert_eq!(lines(&mut b, b"crlf\r"), vec![]);
        assert_eq!(b.finish(), Some(Ok("crlf".into())));
        assert_eq!(
            lines(&mut b, b"0123456789x"),
            vec![Err(LineFault::Overlong)]
        );
        assert_eq!(b.finish(), None, "an overlong line was reported already");
    }

    #[test]
    fn control_bytes_and_bad_utf8_are_faults() {
        let mut b = LineBuffer::new(255);
        assert_eq!(lines(&mut b, b"a\0b\n"), vec![Err(LineFault::ControlBytes)]);
        assert_eq!(lines(&mut b, b"a\rb\n"), vec![Err(LineFault::ControlBytes)]);
        assert_eq!(lines(&mut b, b"\xff\xfe\n"), vec![Err(LineFault::NotUtf8)]);
        assert_eq!(lines(&mut b, b"\n"), vec![Ok(String::new())]);
    }
}
