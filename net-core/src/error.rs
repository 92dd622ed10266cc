//! Result codes and the error type every fallible core operation returns.
//!
//! The numbers are a stable C ABI (`NET_ERR_*` in parsec_net.h): never renumber, never reuse a
//! retired number. -1 is deliberately never an error code, because `NETs_CompareNodes` returns -1
//! for "less than".

use std::fmt;

/// Stable numbered result codes (negative; 0 is success).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorCode {
    /// A pointer was NULL, a length or value out of range, or an argument malformed.
    InvalidArgument = -2,
    /// `NET_Init` has not been called (or `NET_Shutdown` was).
    NotInitialized = -3,
    /// No protocol is selected, or the selected one cannot do this.
    NoProtocol = -4,
    /// No packet backend is active.
    NoBackend = -5,
    /// A backend library could not be loaded or opened; the previous one stays active.
    BackendLoad = -6,
    /// An operating-system or backend I/O error.
    Io = -7,
    /// Data larger than the limit (backend payload, text length, line length).
    TooLarge = -8,
    /// The caller's output buffer is too small; nothing was consumed.
    BufferTooSmall = -9,
    /// Text (a node, a number, a console argument) did not parse.
    Parse = -10,
    /// The console command is unknown.
    UnknownCommand = -11,
    /// The operation needs a connection and there is none.
    NotConnected = -12,
    /// The operation is not valid in the current state (already connected, busy, re-entered).
    State = -13,
    /// A table or queue is full (player slots, server list).
    Full = -14,
    /// The backend or protocol does not support this.
    Unsupported = -15,
    /// The other side refused (server full, banned, name taken, ...).
    Refused = -16,
    /// Timed out waiting for the other side.
    Timeout = -17,
    /// An internal error (a caught panic); the call had no effect that can be relied on.
    Internal = -18,
}

impl ErrorCode {
    /// The stable number of this code.
    pub fn number(self) -> i32 {
        self as i32
    }

    /// Every code, in numbering order (for tables and tests).
    pub const ALL: [ErrorCode; 17] = [
        ErrorCode::InvalidArgument,
        ErrorCode::NotInitialized,
        ErrorCode::NoProtocol,
        ErrorCode::NoBackend,
        ErrorCode::BackendLoad,
        ErrorCode::Io,
        ErrorCode::TooLarge,
        ErrorCode::BufferTooSmall,
        ErrorCode::Parse,
        ErrorCode::UnknownCommand,
        ErrorCode::NotConnected,
        ErrorCode::State,
        ErrorCode::Full,
        ErrorCode::Unsupported,
        ErrorCode::Refused,
        ErrorCode::Timeout,
        ErrorCode::Internal,
    ];
}

/// An error with its stable code and a one-line human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetError {
    pub code: ErrorCode,
    pub message: String,
}

impl NetError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let mut message = message.into();
        // Messages are one line: the console and NET_GetLastError show them as such. A carriage
        // return or a terminal escape (from a backend's text, say) would garble that line too.
        if message.contains(char::is_control) {
            message = message
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
        }
        NetError { code, message }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NetError {}

pub type NetResult<T> = Result<T, NetError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_negative_and_never_minus_one() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(code.number() < -1, "{code:?}");
            assert!(seen.insert(code.number()), "duplicate number {code:?}");
        }
    }

    #[test]
    fn messages_are_single_line() {
        let e = NetError::invalid("first\nsecond");
        assert_eq!(e.message, "first second");
        let e = NetError::new(ErrorCode::Io, "open: cable\r\nunplugged\x1b[2J");
        assert_eq!(e.message, "open: cable  unplugged [2J");
    }
}
