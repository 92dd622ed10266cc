//! Property tests of the servers' line framing and text-protocol parser: framing does not
//! depend on how the bytes were split into reads, never keeps more than one line's worth of an
//! unfinished line, and no input makes the parser or the core panic.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use net_core::server::lines::{LineBuffer, MAX_LINE_LEN};
use net_core::server::text_fields;
use net_core::server::text_protocol::{parse_client_line, ClientLine};
use net_core::server::{BanList, SlotServerConfig, SlotServerCore};
use proptest::prelude::*;

/// Bytes biased towards line structure: newlines, CRs, printable text and some binary.
fn stream(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u16>(), 0..max).prop_map(|raw| {
        raw.into_iter()
            .map(|r| match r % 32 {
                0..=3 => b'\n',
                4 => b'\r',
                5 | 6 => (r >> 8) as u8,
                _ => 0x20 + (r >> 8) as u8 % 0x5f,
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn framing_is_independent_of_read_boundaries(bytes in stream(1200), cuts in proptest::collection::vec(0usize..1200, 0..20)) {
        let mut whole = LineBuffer::new(MAX_LINE_LEN);
        let expected = whole.push(&bytes);
        let mut pieces = LineBuffer::new(MAX_LINE_LEN);
        let mut got = Vec::new();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
        cuts.sort_unstable();
        let mut start = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            got.extend(pieces.push(&bytes[start..cut]));
            start = cut;
        }
        prop_assert_eq!(got, expected);
        for line in whole.push(b"\n").into_iter().flatten() {
            prop_assert!(line.len() <= MAX_LINE_LEN);
        }
    }

    #[test]
    fn parser_never_panics(text in "\\PC{0,300}") {
        let _ = parse_client_line(&text);
    }

    #[test]
    fn valid_joins_parse_back(name in "[!-~]([ -~]{0,29}[!-~])?", os in "[!-~]{1,31}", port in 1u16.., token in 1u32..) {
        // Every name the servers' own check allows (not a hand-written guess of it: names such
        // as "x os:" passed a guess and were read back as "x").
        prop_assume!(text_fields::name(&name).as_deref() == Some(name.as_str()));
        prop_assume!(!os.contains(" port: ") && !os.contains(" token: "));
        let line = format!("version: 1.0 join me: {name} os: {os} port: {port} token: {token}");
        let parsed = parse_client_line(&line);
        prop_assert_eq!(parsed, Ok(ClientLine::Join {
            version_major: 1,
            version_minor: 0,
            name,
            os,
            port: Some(port),
            token: Some(token),
        }));
    }

    #[test]
    fn core_survives_any_bytes_from_many_connections(chunks in proptest::collection::vec((0u64..4, stream(400)), 1..12)) {
        let now = Instant::now();
        let mut core = SlotServerCore::new(SlotServerConfig::default(), BanList::empty());
        for conn in 0..4u64 {
            let peer: SocketAddr = format!("10.0.0.{}:5000", conn + 1).parse().unwrap();
            core.accept(now, conn, peer).unwrap();
        }
        for (conn, bytes) in chunks {
            core.receive(now, conn, &bytes);
            while core.poll_action().is_some() {}
        }
        core.handle_timeout(now + Duration::from_secs(3600));
        while core.poll_action().is_some() {}
        // Only joined players (with no unfinished line) outlive the handshake timeout.
        prop_assert_eq!(core.connection_count(), core.players().count());
    }
}
