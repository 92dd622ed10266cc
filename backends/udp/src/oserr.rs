//! Operating-system errors turned into one-line text and classified for the ABI result codes.
//! This module only describes and classifies; it must never perform I/O or decide whether an
//! operation is retried (that is the caller's policy).

use std::io;

/// The OS error as a short line without std's " (os error N)" suffix, e.g.
/// "Address already in use".
pub fn describe(err: &io::Error) -> String {
    let text = err.to_string();
    if err.raw_os_error().is_some() && text.ends_with(')') {
        if let Some(at) = text.rfind(" (os error ") {
            return text[..at].to_string();
        }
    }
    text
}

fn errno_is(err: &io::Error, codes: &[i32]) -> bool {
    err.raw_os_error().is_some_and(|code| codes.contains(&code))
}

/// The call was interrupted by a signal and can simply be repeated.
pub fn is_interrupted(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::Interrupted
}

/// Nothing can be done right now (no datagram waiting, or the send queue is full). ENOBUFS is
/// included: on Linux it means the interface queue is momentarily full, which is transient.
pub fn is_would_block(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::WouldBlock
        || errno_is(err, &[libc::EAGAIN, libc::EWOULDBLOCK, libc::ENOBUFS])
}

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

/// The address family (IPv6) is not available on this system.
pub fn is_family_unsupported(err: &io::Error) -> bool {
    errno_is(err, &[libc::EAFNOSUPPORT, libc::EPROTONOSUPPORT])
}

/// The local address/port is already taken.
pub fn is_address_in_use(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::AddrInUse || errno_is(err, &[libc::EADDRINUSE])
}

/// The process is not allowed to do this (privileged port, firewall, sandbox).
pub fn is_permission(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied || errno_is(err, &[libc::EACCES, libc::EPERM])
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
    fn describe_drops_the_os_error_number() {
        let err = io::Error::from_raw_os_error(libc::EADDRINUSE);
        let text = describe(&err);
        assert!(!text.contains("os error"), "{text}");
        assert!(!text.is_empty());
        let custom = io::Error::other("plain (text)");
        assert_eq!(describe(&custom), "plain (text)");
    }

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
