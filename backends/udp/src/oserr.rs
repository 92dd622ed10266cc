//! Operating-system errors turned into one-line text and classified for the ABI result codes:
//! the groups shared by every backend (`parsec_backend_abi::os_error`) and the UDP socket's own
//! (late ICMP reports, unreachable, missing system calls, bind hints). This module only
//! describes and classifies; it must never perform I/O or decide whether an operation is
//! retried (that is the caller's policy).

use std::io;

pub use parsec_backend_abi::os_error::{
    describe, errno_is, is_family_unsupported, is_interrupted, is_permission, is_would_block,
};

/// A late report of an ICMP "port unreachable" for an earlier datagram (Linux reports it as
/// ECONNREFUSED, Windows-like stacks as ECONNRESET). It says nothing about the current call.
pub fn is_stale_icmp(err: &io::Error) -> bool {
    errno_is(err, &[libc::ECONNREFUSED, libc::ECONNRESET])
}

/// The destination cannot be reached from this host (no route, network down).
pub fn is_unreachable(err: &io::Error) -> bool {
    errno_is(
        err,
        &[
            libc::ENETUNREACH,
            libc::EHOSTUNREACH,
            libc::ENETDOWN,
            libc::EHOSTDOWN,
            libc::EADDRNOTAVAIL,
        ],
    )
}

/// The system call does not exist on this kernel.
pub fn is_unsupported_call(err: &io::Error) -> bool {
    errno_is(err, &[libc::ENOSYS])
}

/// The local address/port is already taken.
pub fn is_address_in_use(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::AddrInUse || errno_is(err, &[libc::EADDRINUSE])
}

/// A hint appended to bind failures telling the user which setting to change.
pub fn bind_hint(err: &io::Error, address_option: &str) -> String {
    if is_address_in_use(err) {
        " (another program on this port? choose another with net.port)".to_string()
    } else if is_permission(err) {
        " (ports below 1024 need privileges; choose another with net.port)".to_string()
    } else if errno_is(err, &[libc::EADDRNOTAVAIL]) {
        format!(" (no interface has this address; check {address_option})")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert!(is_would_block(&io::Error::from_raw_os_error(libc::EAGAIN)));
        assert!(is_stale_icmp(&io::Error::from_raw_os_error(
            libc::ECONNREFUSED
        )));
        assert!(is_unreachable(&io::Error::from_raw_os_error(
            libc::ENETUNREACH
        )));
        assert!(is_unsupported_call(&io::Error::from_raw_os_error(
            libc::ENOSYS
        )));
        assert!(!is_would_block(&io::Error::from_raw_os_error(libc::EBADF)));
    }
}
