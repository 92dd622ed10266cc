//! [`Traffic`]: the datagram and byte counts every Rust backend keeps per socket (sent and
//! received), beside its own drop reasons. Readable from Rust only; the ABI has no statistics
//! call.

/// Datagrams and payload bytes through one socket since it was opened. Counts wrap only after
/// 2^64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Datagrams `send` handed on (to the kernel, or to an inner backend) successfully.
    pub datagrams_sent: u64,
    /// Payload bytes of `datagrams_sent` (headers and padding not counted).
    pub bytes_sent: u64,
    /// Datagrams `receive` delivered to the caller.
    pub datagrams_received: u64,
    /// Payload bytes of `datagrams_received`.
    pub bytes_received: u64,
}

impl Traffic {
    /// Count one datagram of `len` payload bytes sent.
    pub fn count_sent(&mut self, len: usize) {
        self.datagrams_sent = self.datagrams_sent.wrapping_add(1);
        self.bytes_sent = self.bytes_sent.wrapping_add(len as u64);
    }

    /// Count one datagram of `len` payload bytes delivered to the caller.
    pub fn count_received(&mut self, len: usize) {
        self.datagrams_received = self.datagrams_received.wrapping_add(1);
        self.bytes_received = self.bytes_received.wrapping_add(len as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_datagrams_and_bytes_and_wraps() {
        let mut t = Traffic::default();
        t.count_sent(5);
        t.count_sent(7);
        t.count_received(1400);
        assert_eq!(
            t,
            Traffic {
                datagrams_sent: 2,
                bytes_sent: 12,
                datagrams_received: 1,
                bytes_received: 1400
            }
        );
        t.bytes_received = u64::MAX;
        t.count_received(2);
        assert_eq!(t.bytes_received, 1, "wraps instead of panicking");
    }
}
