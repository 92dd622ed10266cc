//! Operating-system errors as Rust backends need them: one line of text without std's
//! " (os error N)" suffix, and the errno groups every backend acts on (retry, nothing to do now,
//! no privilege, no such address family). Each backend adds the groups only it needs. Nothing
//! here performs I/O or decides what is retried: that is the backend's policy.

use std::io;

/// The OS error as a short line without std's " (os error N)" suffix, e.g.
/// "Address already in use". Other errors are shown as they are.
pub fn describe(err: &io::Error) -> String {
    let text = err.to_string();
    if err.raw_os_error().is_some() && text.ends_with(')') {
        if let Some(at) = text.rfind(" (os error ") {
            return text[..at].to_string();
        }
    }
    text
}

/// Whether `err` carries one of the OS error numbers `codes`.
pub fn errno_is(err: &io::Error, codes: &[i32]) -> bool {
    err.raw_os_error().is_some_and(|code| codes.contains(&code))
}

/// The call was interrupted by a signal and can simply be repeated.
pub fn is_interrupted(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::Interrupted
}

/// Nothing can be done right now (nothing waiting to be read, or the send queue is full).
/// ENOBUFS is included: on Linux it means the interface queue is momentarily full.
pub fn is_would_block(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::WouldBlock
        || errno_is(err, &[libc::EAGAIN, libc::EWOULDBLOCK, libc::ENOBUFS])
}

/// The process is not allowed to do this (a privileged port, raw sockets without
/// CAP_NET_RAW, a firewall or sandbox).
pub fn is_permission(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied || errno_is(err, &[libc::EACCES, libc::EPERM])
}

/// The address family or protocol is not available on this system (no IPv6, no packet
/// sockets).
pub fn is_family_unsupported(err: &io::Error) -> bool {
    errno_is(err, &[libc::EAFNOSUPPORT, libc::EPROTONOSUPPORT])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_drops_the_os_error_number() {
        let text = describe(&io::Error::from_raw_os_error(libc::EADDRINUSE));
        assert!(!text.contains("os error") && !text.is_empty(), "{text}");
        assert_eq!(describe(&io::Error::other("plain (text)")), "plain (text)");
    }

    #[test]
    fn the_shared_groups() {
        let os = io::Error::from_raw_os_error;
        for errno in [libc::EAGAIN, libc::EWOULDBLOCK, libc::ENOBUFS] {
            assert!(is_would_block(&os(errno)), "{errno}");
        }
        assert!(!is_would_block(&os(libc::EBADF)));
        assert!(is_interrupted(&os(libc::EINTR)));
        assert!(is_permission(&os(libc::EPERM)) && is_permission(&os(libc::EACCES)));
        assert!(!is_permission(&os(libc::ENOENT)));
        assert!(is_family_unsupported(&os(libc::EAFNOSUPPORT)));
        assert!(is_family_unsupported(&os(libc::EPROTONOSUPPORT)));
        assert!(errno_is(&os(libc::ENOSYS), &[libc::EPERM, libc::ENOSYS]));
        assert!(!errno_is(&io::Error::other("no errno"), &[0]));
    }
}
