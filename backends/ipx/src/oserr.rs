//! Operating-system errors turned into one-line text and ABI result codes, including the error
//! `open` reports (the groups every backend shares are `parsec_backend_abi::os_error`). This
//! module only describes and classifies; it must never perform I/O or decide whether an
//! operation is retried (that is the caller's policy).
// Without packet sockets only the messages are used; the errno mapping stays (and is tested).
#![cfg_attr(
    not(all(target_os = "linux", not(parsec_ipx_unsupported))),
    allow(dead_code)
)]

use std::io;

use parsec_backend_abi::{
    NET_BACKEND_ERR_IO, NET_BACKEND_ERR_PERMISSION, NET_BACKEND_ERR_UNREACHABLE,
    NET_BACKEND_ERR_UNSUPPORTED,
};

/// `open` failed: an ABI result code and a one-line message (starting with "ipx: ").
pub use parsec_backend_abi::shim::OpenError;

/// The message when the process may not open raw packet sockets.
pub const NEED_CAP_NET_RAW: &str =
    "ipx: raw packet sockets need CAP_NET_RAW (run as root or grant the capability)";
/// The message on systems without Linux packet sockets.
pub const NOT_SUPPORTED: &str = "ipx: not supported on this system (needs Linux AF_PACKET)";

pub use parsec_backend_abi::os_error::{
    describe, errno_is, is_family_unsupported, is_interrupted, is_permission, is_would_block,
};

/// The interface went away or went down.
pub fn is_interface_gone(err: &io::Error) -> bool {
    errno_is(err, &[libc::ENETDOWN, libc::ENXIO, libc::ENODEV])
}

/// The error `open` reports when creating the raw packet socket failed.
pub fn socket_open_error(err: &io::Error) -> OpenError {
    if is_permission(err) {
        OpenError::new(NET_BACKEND_ERR_PERMISSION, NEED_CAP_NET_RAW)
    } else if is_family_unsupported(err) {
        OpenError::new(
            NET_BACKEND_ERR_UNSUPPORTED,
            format!(
                "ipx: this kernel offers no raw packet sockets (AF_PACKET): {}",
                describe(err)
            ),
        )
    } else {
        OpenError::new(
            NET_BACKEND_ERR_IO,
            format!("ipx: cannot open a raw packet socket: {}", describe(err)),
        )
    }
}

/// The ABI code for a failed `send`.
pub fn send_error_code(err: &io::Error) -> i32 {
    if is_interface_gone(err) {
        NET_BACKEND_ERR_UNREACHABLE
    } else if is_permission(err) {
        NET_BACKEND_ERR_PERMISSION
    } else {
        NET_BACKEND_ERR_IO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_errors_map_to_codes_and_messages() {
        for errno in [libc::EPERM, libc::EACCES] {
            let e = socket_open_error(&io::Error::from_raw_os_error(errno));
            assert_eq!(e.code, NET_BACKEND_ERR_PERMISSION);
            assert_eq!(e.message, NEED_CAP_NET_RAW);
        }
        for errno in [libc::EAFNOSUPPORT, libc::EPROTONOSUPPORT] {
            let e = socket_open_error(&io::Error::from_raw_os_error(errno));
            assert_eq!(e.code, NET_BACKEND_ERR_UNSUPPORTED);
            assert!(e.message.contains("AF_PACKET"), "{}", e.message);
        }
        let e = socket_open_error(&io::Error::from_raw_os_error(libc::EMFILE));
        assert_eq!(e.code, NET_BACKEND_ERR_IO);
        assert!(e
            .message
            .starts_with("ipx: cannot open a raw packet socket: "));
        assert!(!e.message.contains("os error"));
    }

    #[test]
    fn send_error_classification() {
        let code = |errno| send_error_code(&io::Error::from_raw_os_error(errno));
        assert_eq!(code(libc::ENETDOWN), NET_BACKEND_ERR_UNREACHABLE);
        assert_eq!(code(libc::ENXIO), NET_BACKEND_ERR_UNREACHABLE);
        assert_eq!(code(libc::EPERM), NET_BACKEND_ERR_PERMISSION);
        assert_eq!(code(libc::EMSGSIZE), NET_BACKEND_ERR_IO);
        assert!(is_would_block(&io::Error::from_raw_os_error(libc::ENOBUFS)));
        assert!(!is_would_block(&io::Error::from_raw_os_error(libc::EBADF)));
    }
}
