//! The stable numbered result codes as C constants. The numbers come from
//! `net_core::ErrorCode`; a test checks both lists agree. Never renumber or reuse a number.

/// Success.
pub const NET_OK: i32 = 0;
/// A pointer was NULL, a length or value out of range, or an argument malformed.
pub const NET_ERR_INVALID_ARGUMENT: i32 = -2;
/// NET_Init has not been called (or NET_Shutdown was).
pub const NET_ERR_NOT_INITIALIZED: i32 = -3;
/// No protocol is selected (net.subsys), or it cannot do this.
pub const NET_ERR_NO_PROTOCOL: i32 = -4;
/// No packet backend is active (net.api).
pub const NET_ERR_NO_BACKEND: i32 = -5;
/// A backend library could not be loaded or opened; the previous backend stays active.
pub const NET_ERR_BACKEND_LOAD: i32 = -6;
/// An operating-system or backend I/O error.
pub const NET_ERR_IO: i32 = -7;
/// Data larger than its limit (backend payload, name, text, console line).
pub const NET_ERR_TOO_LARGE: i32 = -8;
/// The output buffer is too small; nothing was consumed or written.
pub const NET_ERR_BUFFER_TOO_SMALL: i32 = -9;
/// Text did not parse (a node, a number, a console argument).
pub const NET_ERR_PARSE: i32 = -10;
/// Unknown console command.
pub const NET_ERR_UNKNOWN_COMMAND: i32 = -11;
/// Needs a connection and there is none.
pub const NET_ERR_NOT_CONNECTED: i32 = -12;
/// Not valid in the current state (already connected, re-entered from a callback, ...).
pub const NET_ERR_STATE: i32 = -13;
/// A table or queue is full.
pub const NET_ERR_FULL: i32 = -14;
/// The backend or protocol does not support this.
pub const NET_ERR_UNSUPPORTED: i32 = -15;
/// The other side refused (server full, banned, name taken, ...).
pub const NET_ERR_REFUSED: i32 = -16;
/// Timed out waiting for the other side.
pub const NET_ERR_TIMEOUT: i32 = -17;
/// Internal error (a caught panic).
pub const NET_ERR_INTERNAL: i32 = -18;

#[cfg(test)]
mod tests {
    use net_core::ErrorCode;

    #[test]
    fn c_constants_match_core_codes() {
        let pairs = [
            (super::NET_ERR_INVALID_ARGUMENT, ErrorCode::InvalidArgument),
            (super::NET_ERR_NOT_INITIALIZED, ErrorCode::NotInitialized),
            (super::NET_ERR_NO_PROTOCOL, ErrorCode::NoProtocol),
            (super::NET_ERR_NO_BACKEND, ErrorCode::NoBackend),
            (super::NET_ERR_BACKEND_LOAD, ErrorCode::BackendLoad),
            (super::NET_ERR_IO, ErrorCode::Io),
            (super::NET_ERR_TOO_LARGE, ErrorCode::TooLarge),
            (super::NET_ERR_BUFFER_TOO_SMALL, ErrorCode::BufferTooSmall),
            (super::NET_ERR_PARSE, ErrorCode::Parse),
            (super::NET_ERR_UNKNOWN_COMMAND, ErrorCode::UnknownCommand),
            (super::NET_ERR_NOT_CONNECTED, ErrorCode::NotConnected),
            (super::NET_ERR_STATE, ErrorCode::State),
            (super::NET_ERR_FULL, ErrorCode::Full),
            (super::NET_ERR_UNSUPPORTED, ErrorCode::Unsupported),
            (super::NET_ERR_REFUSED, ErrorCode::Refused),
            (super::NET_ERR_TIMEOUT, ErrorCode::Timeout),
            (super::NET_ERR_INTERNAL, ErrorCode::Internal),
        ];
        assert_eq!(pairs.len(), ErrorCode::ALL.len());
        for (c, code) in pairs {
            assert_eq!(c, code.number(), "{code:?}");
        }
    }
}
