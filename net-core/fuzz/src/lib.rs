//! The checks behind each fuzz target, shared by the libFuzzer binaries (`fuzz_targets/`, run by
//! `tools/fuzz.sh` on nightly) and by the stable regression test (`tests/regressions.rs`), which
//! replays every saved crash input and a seeded random corpus. Each check panics only when a
//! parser breaks its promise.

use std::ffi::{c_char, CString};

use net_core::console::{completions, find_command, split_command, validate_line};
use net_core::demo::{decode_demo, encode_item};
use net_core::master::list_line::ListedServer;
use net_core::master::protocol::{join_line, parse_request, players_line, MasterRequest};
use net_core::packet_api::Conditions;
use net_core::protocol::server_client::{parse_accepted, parse_update};
use net_core::server::lines::{LineBuffer, MAX_LINE_LEN};
use net_core::server::text_protocol::parse_client_line;
use net_core::wire::{decode_packet, encode_packet};
use parsec_backend_abi::{NET_BackendVTable, NET_Node, NET_BACKEND_OK};

/// A fuzz target's check: panics when a parser breaks its promise.
pub type Check = fn(&[u8]);

/// Every fuzz target by name, with its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("wire_decode", wire_decode),
    ("demo_decode", demo_decode),
    ("server_lines", server_lines),
    ("client_lines", client_lines),
    ("console_parse", console_parse),
    ("node_parse", node_parse),
    ("master_lines", master_lines),
];

/// The game packet decoder: any bytes give a packet or an error, and an accepted packet
/// re-encodes to exactly the same bytes.
pub fn wire_decode(data: &[u8]) {
    let mut events = Vec::new();
    if let Ok(packet) = decode_packet(data, &mut events) {
        let mut buf = vec![0u8; data.len()];
        let len = encode_packet(&mut buf, &packet.header, packet.state.as_ref(), &events)
            .expect("an accepted packet can be encoded again");
        assert_eq!(&buf[..len], data, "decoding is canonical");
    }
}

/// The demo file reader: contents (possibly broken at an offset inside the input) or a header
/// error; what was read encodes again.
pub fn demo_decode(data: &[u8]) {
    if let Ok(contents) = decode_demo(data) {
        let mut out = Vec::new();
        for (time, item) in &contents.items {
            encode_item(*time, item, &mut out).expect("a decoded item encodes again");
        }
        if let Some(broken) = &contents.broken {
            assert!(broken.offset as usize <= data.len());
        }
    }
}

/// The servers' line framing over arbitrary chunks (split at 0xFF bytes) and their parser of
/// client lines; framing never yields a line over the limit.
pub fn server_lines(data: &[u8]) {
    let mut lines = LineBuffer::new(MAX_LINE_LEN);
    for chunk in data.split(|b| *b == 0xFF) {
        for line in lines.push(chunk).into_iter().flatten() {
            assert!(line.len() <= MAX_LINE_LEN);
            let _ = parse_client_line(&line);
        }
    }
    // The stream ends: an unfinished last line is a line too, within the limit.
    if let Some(Ok(line)) = lines.finish() {
        assert!(line.len() <= MAX_LINE_LEN);
        let _ = parse_client_line(&line);
    }
    assert_eq!(lines.finish(), None, "the last line is taken once");
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_client_line(text);
    }
}

/// The masterserver's parser of request lines and the clients' parser of its list lines: what
/// parses is written back to a line that parses to the same thing.
pub fn master_lines(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    match parse_request(line) {
        Ok(MasterRequest::Join(join)) => {
            let again = parse_request(&join_line(&join)).expect("a written join parses");
            assert_eq!(again, MasterRequest::Join(join));
        }
        Ok(MasterRequest::Players { players, max }) => {
            let again = parse_request(&players_line(players, max)).expect("players parses");
            assert_eq!(again, MasterRequest::Players { players, max });
        }
        Ok(_) | Err(_) => {}
    }
    if let Some(server) = ListedServer::parse_line(line) {
        assert_eq!(ListedServer::parse_line(&server.to_line()), Some(server));
    }
}

/// The clients' parsers of server lines (join accepted, add/remove/name updates).
pub fn client_lines(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(accepted) = parse_accepted(line) {
        assert!(accepted.server_name.len() < line.len());
    }
    let _ = parse_update(line);
}

/// The console: line validation, command splitting, completion and the link-condition
/// argument parser; no overlong line is accepted.
pub fn console_parse(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if validate_line(line).is_ok() {
        assert!(line.len() <= net_core::console::MAX_LINE_LEN);
        let (word, args) = split_command(line);
        let _ = find_command(word);
        let _ = Conditions::parse(args);
    }
    let _ = completions(line);
}

/// Node parsing of the UDP and IPX backends through their vtables, as the core calls them: a
/// parsed node prints and parses back to the same node.
pub fn node_parse(data: &[u8]) {
    if data.len() > 300 || data.contains(&0) {
        return;
    }
    let text = CString::new(data).expect("no NUL");
    // Host names would make the UDP backend ask the resolver (slow, and not what is fuzzed):
    // only text that cannot be a host name goes there (no letters, '-' or '_' outside brackets).
    let literal = data.first() == Some(&b'[')
        || !data
            .iter()
            .any(|b| b.is_ascii_alphabetic() || *b == b'-' || *b == b'_');
    if literal {
        node_round_trip(parsec_backend_udp::vtable(), &text);
    }
    node_round_trip(parsec_backend_ipx::vtable(), &text);
}

fn node_round_trip(table: &NET_BackendVTable, text: &CString) {
    let parse = table.node_parse.expect("parse");
    let print = table.node_print.expect("print");
    let mut node = NET_Node::default();
    // SAFETY: valid pointers, as the core passes them.
    if unsafe { parse(text.as_ptr(), 6526, &mut node) } != NET_BACKEND_OK {
        return;
    }
    let mut buf = [0 as c_char; 128];
    // SAFETY: valid pointer and length.
    let n = unsafe { print(&node, buf.as_mut_ptr(), buf.len()) };
    assert!(n > 0, "a parsed node prints");
    let mut again = NET_Node::default();
    // SAFETY: buf is NUL-terminated by print.
    let status = unsafe { parse(buf.as_ptr(), 6526, &mut again) };
    assert_eq!(status, NET_BACKEND_OK, "printed text parses");
    assert_eq!(node, again, "print/parse round trip");
}
