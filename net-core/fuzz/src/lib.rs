//! The checks behind each fuzz target, shared by the libFuzzer binaries (`fuzz_targets/`, run by
//! `tools/fuzz.sh` on nightly) and by the stable regression test (`tests/regressions.rs`), which
//! replays every saved crash input and a seeded random corpus. Each check panics only when a
//! parser breaks its promise.

use std::ffi::{c_char, CString};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use net_core::console::{completions, find_command, split_command, validate_line};
use net_core::demo::{decode_demo, encode_item};
use net_core::master::list_line::ListedServer;
use net_core::master::protocol::{
    join_line, parse_request, players_line, validate_os, validate_url, JoinRequest, MasterRequest,
    ServerKind,
};
use net_core::packet_api::Conditions;
use net_core::protocol::server_client::{parse_accepted, parse_update, Accepted, Update};
use net_core::server::bans::{BanEntry, BanList};
use net_core::server::http::{head_end, respond, Pages};
use net_core::server::lines::{FramedLine, LineBuffer, LineFault, MAX_LINE_LEN};
use net_core::server::master_links::default_os;
use net_core::server::text_fields;
use net_core::server::text_protocol::{
    add_player, join_accepted, join_request, parse_client_line, remove_player, rename_player,
    ClientLine, PlayerExtension, ServerExtension,
};
use net_core::wire::{decode_packet, encode_packet};
use parsec_backend_abi::{NET_BackendVTable, NET_Node, NET_BACKEND_OK};

/// A fuzz target's check: panics when a parser breaks its promise.
pub type Check = fn(&[u8]);

mod relay_script;
pub use relay_script::relay_datagrams;

/// Every fuzz target by name, with its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("wire_decode", wire_decode),
    ("demo_decode", demo_decode),
    ("server_lines", server_lines),
    ("client_lines", client_lines),
    ("console_parse", console_parse),
    ("node_parse", node_parse),
    ("master_lines", master_lines),
    ("http_request", http_request),
    ("relay_datagrams", relay_datagrams),
    ("ban_file", ban_file),
];

/// Fields for the writer-to-reader checks, taken from the input: text parts separated by `|`,
/// the last part giving the numbers (slot, ports, token, address).
struct Fields<'a> {
    parts: Vec<&'a [u8]>,
}

impl<'a> Fields<'a> {
    fn new(data: &'a [u8]) -> Self {
        Fields {
            parts: data.split(|b| *b == b'|').collect(),
        }
    }

    /// Text part `i` (empty if missing or not UTF-8).
    fn text(&self, i: usize) -> &'a str {
        self.parts
            .get(i)
            .and_then(|p| std::str::from_utf8(p).ok())
            .unwrap_or("")
    }

    /// Byte `i` of the last part (0 if missing).
    fn byte(&self, i: usize) -> u8 {
        self.parts
            .last()
            .and_then(|p| p.get(i))
            .copied()
            .unwrap_or(0)
    }

    fn u16_at(&self, i: usize) -> u16 {
        u16::from_le_bytes([self.byte(i), self.byte(i + 1)])
    }

    fn u32_at(&self, i: usize) -> u32 {
        u32::from_le_bytes([
            self.byte(i),
            self.byte(i + 1),
            self.byte(i + 2),
            self.byte(i + 3),
        ])
    }

    /// An IPv4 or IPv6 address from the bytes from `i` on.
    fn ip_at(&self, i: usize) -> IpAddr {
        if self.byte(i) & 1 == 0 {
            IpAddr::V4(Ipv4Addr::from(self.u32_at(i + 1)))
        } else {
            let mut octets = [0u8; 16];
            for (k, o) in octets.iter_mut().enumerate() {
                *o = self.byte(i + 1 + k);
            }
            IpAddr::V6(Ipv6Addr::from(octets))
        }
    }
}

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
/// client lines. The framing gives exactly the lines of the whole stream however it is split
/// (SPEC 6: "\n" ends a line, "\r\n" is accepted, at most 255 bytes a line); a parsed line is
/// the protocol's exact words: written again by the client's writer it parses the same; and
/// every join the client can write (any name its own check allows) parses to what it wrote.
pub fn server_lines(data: &[u8]) {
    let mut lines = LineBuffer::new(MAX_LINE_LEN);
    let mut framed = Vec::new();
    for chunk in data.split(|b| *b == 0xFF) {
        framed.extend(lines.push(chunk));
    }
    // The stream ends: an unfinished last line is a line too, within the limit.
    framed.extend(lines.finish());
    assert_eq!(lines.finish(), None, "the last line is taken once");
    let stream: Vec<u8> = data.iter().copied().filter(|b| *b != 0xFF).collect();
    assert_eq!(
        framed,
        framed_whole(&stream),
        "framing depends on how the stream is split"
    );
    for line in framed.iter().flatten() {
        assert!(line.len() <= MAX_LINE_LEN);
        client_line_is_exact(line);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        client_line_is_exact(text);
    }
    // The writer side: the join line the client sends for its name.
    let fields = Fields::new(data);
    let name = fields.text(0);
    if text_fields::name(name).as_deref() == Some(name) {
        let (port, token) = (fields.u16_at(0).max(1), fields.u32_at(2).max(1));
        let line = join_request(name, &default_os(), Some(port), Some(token));
        assert_eq!(
            parse_client_line(&line),
            Ok(ClientLine::Join {
                version_major: 1,
                version_minor: 0,
                name: name.to_string(),
                os: default_os(),
                port: Some(port),
                token: Some(token),
            }),
            "the join line for name {name:?}: {line:?}"
        );
    }
}

/// What framing the whole stream at once gives: each "\n"-ended line (and the unfinished last
/// one), one trailing "\r" removed, over the limit -> `Overlong`, control bytes ->
/// `ControlBytes`, else its UTF-8 text.
fn framed_whole(stream: &[u8]) -> Vec<FramedLine> {
    let mut pieces: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    if pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    pieces
        .into_iter()
        .map(|piece| {
            let text = piece.strip_suffix(b"\r").unwrap_or(piece);
            if text.len() > MAX_LINE_LEN {
                Err(LineFault::Overlong)
            } else if text.iter().any(|&b| b < 0x20 || b == 0x7f) {
                Err(LineFault::ControlBytes)
            } else {
                String::from_utf8(text.to_vec()).map_err(|_| LineFault::NotUtf8)
            }
        })
        .collect()
}

/// A parsed client line is one of the protocol's lines: written again it parses the same.
fn client_line_is_exact(line: &str) {
    match parse_client_line(line) {
        Ok(ClientLine::RemoveMe) => assert_eq!(line.trim_matches(' '), "remove me"),
        Ok(ClientLine::NewName(name)) => {
            let again = parse_client_line(&format!("my new name: {name}"));
            assert_eq!(again, Ok(ClientLine::NewName(name)));
        }
        Ok(ClientLine::Join {
            version_major,
            version_minor: _,
            name,
            os,
            port,
            token,
        }) => {
            assert_eq!(version_major, 1);
            let again = parse_client_line(&join_request(&name, &os, port, token));
            assert_eq!(
                again,
                Ok(ClientLine::Join {
                    version_major,
                    version_minor: 0,
                    name,
                    os,
                    port,
                    token,
                }),
                "{line:?}"
            );
        }
        Err(_) => {}
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
    // The writer side: every join a server may write (fields its own checks allow) parses to
    // what it wrote, and so does the list line the masterserver writes for it.
    let fields = Fields::new(data);
    let (name, os, url) = (fields.text(0), fields.text(1), fields.text(2));
    let valid = text_fields::name(name).as_deref() == Some(name)
        && validate_os(os).as_deref() == Ok(os)
        && validate_url(url).is_ok();
    if !valid {
        return;
    }
    let kind = [
        ServerKind::Unknown,
        ServerKind::SlotServer,
        ServerKind::GameServer,
    ][usize::from(fields.byte(0) % 3)];
    let join = JoinRequest {
        version_major: 1,
        version_minor: u16::from(fields.byte(1) % 10),
        name: name.to_string(),
        os: os.to_string(),
        max_players: fields.u16_at(2).max(1),
        url: url.to_string(),
        kind,
        port: fields.u16_at(4),
        udp_port: fields.u16_at(6),
    };
    let line = join_line(&join);
    assert_eq!(
        parse_request(&line),
        Ok(MasterRequest::Join(join.clone())),
        "{line:?}"
    );
    let listed = ListedServer {
        name: join.name,
        os: join.os,
        url: join.url,
        ip: fields.ip_at(8),
        port: join.port,
        kind,
        udp_port: join.udp_port,
        players: fields.u16_at(2) / 2,
        max_players: join.max_players,
    };
    let line = listed.to_line();
    assert_eq!(ListedServer::parse_line(&line), Some(listed), "{line:?}");
}

/// The clients' parsers of server lines (join accepted, add/remove/name updates): any line
/// gives its fields or nothing, and every line a server writes (for any player and server
/// name its checks allow) gives back exactly the fields it was written with.
pub fn client_lines(data: &[u8]) {
    if let Ok(line) = std::str::from_utf8(data) {
        if let Some(accepted) = parse_accepted(line) {
            assert!(accepted.server_name.len() < line.len());
        }
        let _ = parse_update(line);
    }
    let fields = Fields::new(data);
    let (name, server_name) = (fields.text(0), fields.text(1));
    let valid = |text: &str| text_fields::name(text).as_deref() == Some(text);
    if !valid(name) || !valid(server_name) {
        return;
    }
    let slot = fields.byte(0);
    let (port, token) = (fields.u16_at(1), fields.u32_at(3));
    let ip = fields.ip_at(7);
    for ext in [false, true] {
        let server_ext = ext.then_some(ServerExtension {
            udp_port: port,
            token,
        });
        let line = join_accepted(name, slot, server_name, server_ext);
        let expected = Accepted {
            slot,
            server_name: server_name.to_string(),
            udp_port: ext.then_some(port),
            server_token: ext.then_some(token),
        };
        assert_eq!(parse_accepted(&line), Some(expected), "{line:?}");
    }
    // What our servers send our clients (who always join with the extension).
    let player_ext = PlayerExtension { port, token };
    let line = add_player(ip, name, slot, Some(player_ext));
    let add = Update::Add {
        ip: ip.to_string(),
        name: name.to_string(),
        slot,
        port: Some(port),
        token: Some(token),
    };
    assert_eq!(parse_update(&line), Some(add), "{line:?}");
    let line = rename_player(ip, name, Some(port));
    let renamed = Update::Name {
        ip: ip.to_string(),
        name: name.to_string(),
        port: Some(port),
    };
    assert_eq!(parse_update(&line), Some(renamed), "{line:?}");
    let line = remove_player(ip, Some(port));
    let removed = Update::Remove {
        ip: ip.to_string(),
        port: Some(port),
    };
    assert_eq!(parse_update(&line), Some(removed), "{line:?}");
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

/// The servers' HTTP endpoint (slot/gameserver and masterserver): any request head gets one
/// complete response: a known status, a `Content-Length` that is the body's length (no body
/// for HEAD), and a list page only for a GET or HEAD.
pub fn http_request(data: &[u8]) {
    if let Some(end) = head_end(data) {
        assert!(end <= data.len());
        assert!(data[..end].ends_with(b"\n\n") || data[..end].ends_with(b"\r\n\r\n"));
    }
    let pages = Pages {
        html: "<html>list</html>".into(),
        json: "{\"servers\":[]}".into(),
        stem: if data.first().is_some_and(|b| b & 1 == 1) {
            "servers"
        } else {
            "players"
        },
    };
    let (code, bytes) = respond(data, &pages);
    assert!(
        [200, 400, 404, 405].contains(&code),
        "unexpected status {code}"
    );
    let text = String::from_utf8(bytes).expect("responses are UTF-8");
    assert!(
        text.starts_with(&format!("HTTP/1.1 {code} ")),
        "status line: {text:?}"
    );
    let (head, body) = text.split_once("\r\n\r\n").expect("a response has a head");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("Content-Length")
        .parse()
        .expect("a number");
    let request = String::from_utf8_lossy(data);
    // A HEAD the server understood (a 400 cannot know it was one) gets the head alone.
    let head_only = request.starts_with("HEAD ") && matches!(code, 200 | 404);
    if head_only {
        assert_eq!(body, "", "no body for HEAD");
    } else {
        assert_eq!(body.len(), length, "Content-Length is the body's");
    }
    if code == 200 {
        assert!(head_only || request.starts_with("GET "));
        assert!(head_only || body == pages.html || body == pages.json);
    }
}

/// The servers' ban file (`--ban-file`, re-read when it changes): any text gives a list and a
/// message per skipped line, never a panic; every entry prints as a line that parses to the
/// same entry, bans its own network address, and a single address bans no neighbour.
pub fn ban_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (list, problems) = BanList::parse(text);
    assert!(problems.len() <= text.lines().count());
    for entry in list.entries() {
        let line = entry.to_string();
        assert_eq!(BanEntry::parse(&line).as_ref(), Ok(entry), "{line:?}");
        let (network, prefix) = match line.split_once('/') {
            Some((network, prefix)) => (network, Some(prefix)),
            None => (line.as_str(), None),
        };
        let network: IpAddr = network
            .parse()
            .expect("an entry prints its network address");
        assert!(entry.contains(network), "{line:?} bans its own address");
        if prefix.is_none() {
            let neighbour = match network {
                IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(u32::from(v4) ^ 1)),
                IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) ^ 1)),
            };
            assert!(!entry.contains(neighbour), "{line:?} bans {neighbour} too");
        }
    }
}
