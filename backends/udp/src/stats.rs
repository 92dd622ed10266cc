//! Traffic counters of one UDP backend socket, readable from Rust only (the backend ABI has no
//! statistics call yet). This module only counts; it must never decide what to do with traffic.

use parsec_backend_abi::traffic::Traffic;

/// Counters of one socket since it was opened. All counts wrap only after 2^64 events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams and bytes sent and delivered.
    pub traffic: Traffic,
    /// Datagrams that arrived larger than the backend's maximum payload (dropped, never truncated).
    pub dropped_oversize: u64,
    /// Datagrams that arrived with no payload (dropped).
    pub dropped_zero_length: u64,
    /// Datagrams that did not fit the caller's receive buffer (dropped, `ERR_TOO_LARGE` returned).
    pub dropped_caller_too_small: u64,
    /// Datagrams whose sender address the backend could not represent (dropped).
    pub dropped_bad_source: u64,
    /// `send` calls answered with `NET_BACKEND_WOULD_BLOCK`.
    pub would_block: u64,
    /// Late ICMP errors (connection refused/reset) reported by the OS and skipped.
    pub icmp_errors_ignored: u64,
    /// Receive system calls made (`recvmmsg` batches or single `recvfrom` calls).
    pub receive_syscalls: u64,
}
