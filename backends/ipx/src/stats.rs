//! Traffic counters of one IPX backend socket, readable from Rust only (the backend ABI has no
//! statistics call yet), and their one-line summary. This module only counts; it must never
//! decide what to do with traffic.

use std::fmt::Write as _;

use parsec_backend_abi::traffic::Traffic;

use crate::filter::Rejection;
use crate::frame::Malformed;

/// Counters of one socket since it was opened. All counts wrap only after 2^64 events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams and bytes sent and delivered.
    pub traffic: Traffic,
    /// Frames read from the packet socket, delivered or not.
    pub frames_read: u64,
    /// Frames shorter than an Ethernet header.
    pub dropped_short_frame: u64,
    /// Frames of another EtherType (the kernel normally filters these out already).
    pub dropped_wrong_ethertype: u64,
    /// IPX frames too short to hold the 30-byte IPX header.
    pub dropped_truncated_header: u64,
    /// IPX frames whose length field is below 30 or larger than the frame.
    pub dropped_bad_length: u64,
    /// IPX frames for another IPX socket.
    pub dropped_other_socket: u64,
    /// IPX frames for another IPX network number.
    pub dropped_other_network: u64,
    /// IPX frames for another node (seen while the interface is promiscuous).
    pub dropped_other_node: u64,
    /// Frames this socket sent itself (outgoing copies or reflections).
    pub dropped_own: u64,
    /// Frames larger than the receive buffer, or IPX payloads above 546 bytes.
    pub dropped_oversize: u64,
    /// IPX packets without payload.
    pub dropped_empty: u64,
    /// Datagrams that did not fit the caller's receive buffer (dropped, `ERR_TOO_LARGE` returned).
    pub dropped_caller_too_small: u64,
    /// Frames for this socket the kernel dropped before they could be read, because the
    /// socket's receive queue was full (`PACKET_STATISTICS`; counted when the queue is found
    /// empty). Not part of [`Stats::dropped_total`], which counts frames read and then dropped.
    pub dropped_by_kernel: u64,
    /// `send` calls answered with `NET_BACKEND_WOULD_BLOCK`.
    pub would_block: u64,
}

impl Stats {
    /// Record a frame that is not well-formed IPX.
    pub fn count_malformed(&mut self, why: &Malformed) {
        let counter = match why {
            Malformed::ShortFrame { .. } => &mut self.dropped_short_frame,
            Malformed::WrongEtherType { .. } => &mut self.dropped_wrong_ethertype,
            Malformed::TruncatedHeader { .. } => &mut self.dropped_truncated_header,
            Malformed::BadLength { .. } => &mut self.dropped_bad_length,
        };
        *counter = counter.wrapping_add(1);
    }

    /// Record a well-formed IPX frame that is not for this socket.
    pub fn count_rejected(&mut self, why: Rejection) {
        let counter = match why {
            Rejection::OtherSocket => &mut self.dropped_other_socket,
            Rejection::OtherNetwork => &mut self.dropped_other_network,
            Rejection::OtherNode => &mut self.dropped_other_node,
            Rejection::Own => &mut self.dropped_own,
            Rejection::Oversize => &mut self.dropped_oversize,
            Rejection::Empty => &mut self.dropped_empty,
        };
        *counter = counter.wrapping_add(1);
    }

    /// The non-zero reasons frames read were dropped, `other socket 3, bad length 1` ("" when
    /// none was).
    pub fn drop_reasons(&self) -> String {
        let reasons = [
            ("short frame", self.dropped_short_frame),
            ("wrong EtherType", self.dropped_wrong_ethertype),
            ("truncated header", self.dropped_truncated_header),
            ("bad length", self.dropped_bad_length),
            ("other socket", self.dropped_other_socket),
            ("other network", self.dropped_other_network),
            ("other node", self.dropped_other_node),
            ("own", self.dropped_own),
            ("oversize", self.dropped_oversize),
            ("empty", self.dropped_empty),
            ("buffer too small", self.dropped_caller_too_small),
        ];
        let nonzero: Vec<String> = reasons
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        nonzero.join(", ")
    }

    /// What was dropped, for the socket's description (`status`'s `binding:` line): "" when
    /// nothing was, else `; ignored 4 frames (other socket 3, bad length 1); 90 frames lost:
    /// the receive queue was full`.
    pub fn drops_note(&self) -> String {
        let mut note = String::new();
        let ignored = self.dropped_total();
        if ignored > 0 {
            let plural = if ignored == 1 { "" } else { "s" };
            let _ = write!(
                note,
                "; ignored {ignored} frame{plural} ({})",
                self.drop_reasons()
            );
        }
        if self.dropped_by_kernel > 0 {
            let lost = self.dropped_by_kernel;
            let plural = if lost == 1 { "" } else { "s" };
            let _ = write!(
                note,
                "; {lost} frame{plural} lost: the receive queue was full"
            );
        }
        note
    }

    /// All frames and datagrams dropped, for any reason.
    pub fn dropped_total(&self) -> u64 {
        [
            self.dropped_short_frame,
            self.dropped_wrong_ethertype,
            self.dropped_truncated_header,
            self.dropped_bad_length,
            self.dropped_other_socket,
            self.dropped_other_network,
            self.dropped_other_node,
            self.dropped_own,
            self.dropped_oversize,
            self.dropped_empty,
            self.dropped_caller_too_small,
        ]
        .iter()
        .fold(0u64, |sum, n| sum.wrapping_add(*n))
    }

    /// One line for logs and status: totals, then only the non-zero drop reasons.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "ipx: sent {} ({} B), received {} ({} B), frames read {}, dropped {}",
            self.traffic.datagrams_sent,
            self.traffic.bytes_sent,
            self.traffic.datagrams_received,
            self.traffic.bytes_received,
            self.frames_read,
            self.dropped_total()
        );
        let reasons = self.drop_reasons();
        if !reasons.is_empty() {
            line.push_str(" (");
            line.push_str(&reasons);
            line.push(')');
        }
        if self.dropped_by_kernel > 0 {
            let _ = write!(
                line,
                ", lost {} (receive queue full)",
                self.dropped_by_kernel
            );
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_counter_and_is_summed() {
        let mut s = Stats::default();
        s.count_malformed(&Malformed::ShortFrame { len: 1 });
        s.count_malformed(&Malformed::WrongEtherType { ethertype: 1 });
        s.count_malformed(&Malformed::TruncatedHeader { available: 1 });
        s.count_malformed(&Malformed::BadLength {
            length: 1,
            available: 1,
        });
        for r in [
            Rejection::OtherSocket,
            Rejection::OtherNetwork,
            Rejection::OtherNode,
            Rejection::Own,
            Rejection::Oversize,
            Rejection::Empty,
        ] {
            s.count_rejected(r);
        }
        s.dropped_caller_too_small += 1;
        assert_eq!(s.dropped_total(), 11);
        assert_eq!(
            (s.dropped_short_frame, s.dropped_bad_length, s.dropped_empty),
            (1, 1, 1)
        );
        let line = s.summary();
        assert!(line.contains("dropped 11 (short frame 1,"), "{line}");
        assert!(line.ends_with("buffer too small 1)"), "{line}");
        assert!(Stats::default().summary().ends_with("dropped 0"));
        assert_eq!(Stats::default().drops_note(), "");
        let note = s.drops_note();
        assert!(
            note.starts_with("; ignored 11 frames (short frame 1, "),
            "{note}"
        );
        assert!(!note.contains("lost"), "{note}");
        s.dropped_by_kernel = 90;
        let note = s.drops_note();
        assert!(
            note.ends_with("buffer too small 1); 90 frames lost: the receive queue was full"),
            "{note}"
        );
        assert!(s.summary().ends_with(", lost 90 (receive queue full)"));
        let only_kernel = Stats {
            dropped_by_kernel: 1,
            ..Stats::default()
        };
        assert_eq!(
            only_kernel.drops_note(),
            "; 1 frame lost: the receive queue was full"
        );
    }
}
