//! The Wireshark dissector `tools/wireshark/parsec_net.lua`, run by tshark.
//!
//! `decodes_every_field_and_flags_malformed_packets` writes a capture file of game packets built
//! here byte by byte from docs/wire-format.md: every packet type, every remote event type with
//! distinct values in all its fields (and RE_RESUME; RE_RATE with a rate above i32::MAX and with
//! 0; RE_VACATED), the header flags and ack bits, empty strings, IPv4, IPv6 and non-UDP nodes, malformed
//! packets (header and body cut short, wrong body lengths, trailing bytes, an unsupported
//! version, unknown types, reserved bits, invalid values, non-finite floats, an unreliable
//! RE_RATE of the wrong length), and datagrams that are not game packets.
//! tshark reads it with the dissector: every field must show the value written, the Info column
//! its summary, every malformed packet exactly its expert infos, valid packets none, other
//! datagrams must be left alone, and there must be no Lua error. The heuristic can be switched
//! off and the ports set by preference.
//!
//! `decodes_a_live_peer_to_peer_session` captures real traffic on `lo` (needs root): two
//! `parsecnet console`s that connect, join and `say hello`, and at the same time two
//! `c/peer_game.c` games, which also send one remote event of every kind. The dissector must make
//! of it: CONNECTs, each side's connect request (in a CONNECT or SLOT_REQUEST) naming it at its
//! address, a CONNECT_REPLY listing both players at their addresses, JOINs, names, chat lines
//! with the Info column showing them, ship states (the games' states exactly, marker and all),
//! every event's values exactly as the games sent them, no expert info, game-link sequences that
//! count up by one per direction (the others at least count up) and acks only of sequences the
//! other side really sent. The capture starts and stops on probe datagrams tshark has shown, so
//! nothing sent in between is missed.
//!
//! Without tshark both tests install it (apt-get) when running as root, else they print SKIPPED
//! and pass; the live test also prints SKIPPED without root. The console session needs the
//! `parsecnet` program (`cargo build --workspace`); without it only the games are captured.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parsec_net_ffi_tests::paths;
use parsec_net_ffi_tests::peer::{
    check_all_met, custom_data, custom_type, free_loopback_ports, game_args, laser_id,
    laser_position, loopback_setup, run_together, GameRun, GAME_DURATION_MS, GAME_TIMEOUT,
};
use parsec_net_ffi_tests::process::{run, wait_with_deadline};
use parsec_net_ffi_tests::Build;

/// Longest a tshark run reading a file may take.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest each apt-get step of installing tshark may take, in seconds.
const INSTALL_TIMEOUT_S: u64 = 300;
/// Longest the capture may take to start or to catch up with what was sent.
const SYNC_TIMEOUT: Duration = Duration::from_secs(20);

/// Packet type names (docs/wire-format.md), index = value.
const PACKET_TYPES: [&str; 11] = [
    "",
    "CONNECT",
    "CONNECT_REPLY",
    "DISCONNECT",
    "SLOT_REQUEST",
    "SUBDUE_SLAVE",
    "JOIN",
    "UNJOIN",
    "GAME_STATE",
    "NODE_ALIVE",
    "CONNECT_REFUSED",
];

const CONNECT: u8 = 1;
const CONNECT_REPLY: u8 = 2;
const SLOT_REQUEST: u8 = 4;
const JOIN: u8 = 6;
const GAME_STATE: u8 = 8;
const NODE_ALIVE: u8 = 9;

const RE_CREATEOBJECT: u8 = 1;
const RE_CREATELASER: u8 = 2;
const RE_CREATEMISSILE: u8 = 3;
const RE_CREATEEXTRA: u8 = 4;
const RE_KILLOBJECT: u8 = 5;
const RE_SENDTEXT: u8 = 6;
const RE_PLAYERNAME: u8 = 7;
const RE_PARTICLEOBJECT: u8 = 8;
const RE_PLAYERLIST: u8 = 9;
const RE_CONNECTQUEUE: u8 = 10;
const RE_CUSTOM: u8 = 11;
const RE_PLAYERSTATUS: u8 = 12;
const RE_RESUME: u8 = 13;
const RE_RATE: u8 = 14;
const RE_VACATED: u8 = 15;

const FLAG_STATE: u8 = 1;
const FLAG_JOINED: u8 = 2;
const FLAG_ACK: u8 = 4;

// ------------------------------------------------------------------------------------------
// tshark
// ------------------------------------------------------------------------------------------

fn lua_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/wireshark/parsec_net.lua")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `tshark --version`, if tshark runs.
fn tshark_version() -> Option<String> {
    let out = Command::new("tshark")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run `apt-get ARGS` non-interactively under `timeout`.
fn apt_get(args: &[&str]) -> Result<(), String> {
    let mut command = Command::new("timeout");
    command
        .arg(INSTALL_TIMEOUT_S.to_string())
        .arg("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive");
    let out = run(command, Duration::from_secs(INSTALL_TIMEOUT_S + 30));
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "apt-get {} failed ({}): {}",
            args.join(" "),
            out.status,
            out.stderr.lines().last().unwrap_or("")
        ))
    }
}

fn install_tshark() -> Result<(), String> {
    if Command::new("apt-get").arg("--version").output().is_err() {
        return Err("tshark is not installed and there is no apt-get to install it".into());
    }
    let install = || apt_get(&["install", "-y", "-q", "tshark"]);
    if install().is_ok() {
        return Ok(());
    }
    apt_get(&["update", "-q"])?;
    install()
}

fn find_tshark() -> Result<String, String> {
    let version = match tshark_version() {
        Some(version) => version,
        None if is_root() => {
            install_tshark()?;
            tshark_version().ok_or("tshark does not run after installing it")?
        }
        None => return Err("tshark is not installed (installing it needs root)".into()),
    };
    let first_line = version
        .lines()
        .next()
        .unwrap_or("tshark")
        .trim()
        .to_string();
    if !version.contains("with Lua") {
        return Err(format!("{first_line} has no Lua support"));
    }
    Ok(first_line)
}

/// tshark's version line, or why it cannot be used; installed once per test process when
/// missing and running as root.
fn tshark() -> Result<String, String> {
    static FOUND: OnceLock<Result<String, String>> = OnceLock::new();
    FOUND.get_or_init(find_tshark).clone()
}

/// Whether the test can go on: prints the tshark version, or SKIPPED and why not.
fn tshark_or_skip() -> bool {
    match tshark() {
        Ok(version) => {
            println!("using {version}");
            true
        }
        Err(why) => {
            println!("SKIPPED: {why}");
            false
        }
    }
}

/// tshark reading `file` with the dissector and `args`; fails on a non-zero exit or any Lua
/// complaint.
fn tshark_read(file: &Path, args: &[&str]) -> String {
    let mut command = Command::new("tshark");
    command
        .arg("-r")
        .arg(file)
        .arg("-X")
        .arg(format!("lua_script:{}", lua_script().display()))
        .args(args);
    let out = run(command, READ_TIMEOUT);
    out.assert_success("tshark");
    assert!(
        !out.stderr.to_lowercase().contains("lua"),
        "tshark complained about the Lua script\n{}",
        out.transcript()
    );
    assert!(
        !out.stdout.contains("Lua Error"),
        "the dissector raised a Lua error:\n{}",
        out.stdout
    );
    out.stdout
}

// ------------------------------------------------------------------------------------------
// What tshark made of a capture: PDML trees plus the Info column
// ------------------------------------------------------------------------------------------

/// One PDML element (a protocol or a field): its name, `show` and `value`, and what is inside.
#[derive(Debug, Default)]
struct Node {
    name: String,
    show: String,
    value: String,
    children: Vec<Node>,
}

impl Node {
    /// The first direct child named `name`.
    fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The direct children named `name`.
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The first node named `name` in this subtree (depth first), this one excluded.
    fn find(&self, name: &str) -> Option<&Node> {
        self.children.iter().find_map(|c| {
            if c.name == name {
                Some(c)
            } else {
                c.find(name)
            }
        })
    }

    /// Every node named `name` in this subtree, in order.
    fn find_all<'a>(&'a self, name: &str, out: &mut Vec<&'a Node>) {
        for c in &self.children {
            if c.name == name {
                out.push(c);
            }
            c.find_all(name, out);
        }
    }

    fn field(&self, name: &str) -> &Node {
        self.find(name)
            .unwrap_or_else(|| panic!("no field {name} in\n{}", self.dump(0)))
    }

    fn text(&self, name: &str) -> &str {
        &self.field(name).show
    }

    fn has(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// An unsigned field, decimal or 0x-hex.
    fn uint(&self, name: &str) -> u64 {
        parse_uint(self.text(name))
    }

    /// Every value of the fields named `name` in this subtree.
    fn uints(&self, name: &str) -> Vec<u64> {
        let mut nodes = Vec::new();
        self.find_all(name, &mut nodes);
        nodes.iter().map(|n| parse_uint(&n.show)).collect()
    }

    /// A vector field's components (its children `name.x`, `name.y`, ...).
    fn vector(&self, name: &str) -> Vec<f32> {
        let prefix = format!("{name}.");
        self.field(name)
            .children
            .iter()
            .filter(|c| c.name.starts_with(&prefix))
            .map(|c| parse_float(&c.show))
            .collect()
    }

    /// A bytes field's bytes.
    fn bytes(&self, name: &str) -> Vec<u8> {
        let hex = &self.field(name).value;
        (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex bytes"))
            .collect()
    }

    /// The expert infos in this subtree as `(field name, message)`: `parsecnet.expert.KIND`
    /// for the dissector's own, others for Wireshark's (e.g. about string encodings).
    fn experts(&self) -> Vec<(String, String)> {
        let mut items = Vec::new();
        self.find_all("_ws.expert", &mut items);
        items
            .iter()
            .map(|e| {
                let kind = e
                    .children
                    .iter()
                    .find(|c| !c.name.starts_with("_ws.expert"))
                    .map_or("?", |c| c.name.as_str());
                let message = e
                    .child("_ws.expert.message")
                    .map_or("", |m| m.show.as_str());
                (kind.to_string(), message.to_string())
            })
            .collect()
    }

    fn dump(&self, depth: usize) -> String {
        let mut out = format!(
            "{:indent$}{} show={:?} value={:?}\n",
            "",
            self.name,
            self.show,
            self.value,
            indent = depth * 2
        );
        for c in &self.children {
            out.push_str(&c.dump(depth + 1));
        }
        out
    }
}

fn parse_uint(text: &str) -> u64 {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.unwrap_or_else(|_| panic!("{text:?} is not an unsigned number"))
}

fn parse_float(text: &str) -> f32 {
    match text.to_ascii_lowercase().as_str() {
        "nan" | "-nan" => f32::NAN,
        "inf" | "infinity" => f32::INFINITY,
        "-inf" | "-infinity" => f32::NEG_INFINITY,
        other => other
            .parse()
            .unwrap_or_else(|_| panic!("{text:?} is not a float")),
    }
}

/// The value of attribute `key` of a PDML line, XML escapes undone ("" if absent).
fn attribute(line: &str, key: &str) -> String {
    let start = format!(" {key}=\"");
    let Some(at) = line.find(&start) else {
        return String::new();
    };
    let rest = &line[at + start.len()..];
    let raw = &rest[..rest.find('"').unwrap_or(rest.len())];
    let mut out = String::new();
    let mut parts = raw.split('&');
    out.push_str(parts.next().unwrap_or(""));
    for part in parts {
        let (entity, tail) = part.split_once(';').unwrap_or((part, ""));
        let decoded = match entity {
            "quot" => Some('"'),
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => out.push(c),
            None => {
                out.push('&');
                out.push_str(entity);
                out.push(';');
            }
        }
        out.push_str(tail);
    }
    out
}

/// The packets of a PDML document (tshark writes one element per line).
fn parse_pdml(pdml: &str) -> Vec<Node> {
    let mut packets = Vec::new();
    let mut stack: Vec<Node> = Vec::new();
    for line in pdml.lines().map(str::trim) {
        if line.starts_with("<packet") {
            stack.push(Node {
                name: "packet".into(),
                ..Node::default()
            });
        } else if line.starts_with("</packet") {
            packets.push(stack.pop().expect("PDML: </packet> without <packet>"));
            assert!(stack.is_empty(), "PDML: unclosed elements in a packet");
        } else if line.starts_with("<proto") || line.starts_with("<field") {
            let node = Node {
                name: attribute(line, "name"),
                show: attribute(line, "show"),
                value: attribute(line, "value"),
                children: Vec::new(),
            };
            if line.ends_with("/>") {
                stack
                    .last_mut()
                    .expect("PDML: an element outside a packet")
                    .children
                    .push(node);
            } else {
                stack.push(node);
            }
        } else if line.starts_with("</proto") || line.starts_with("</field") {
            let node = stack.pop().expect("PDML: unbalanced closing tag");
            stack
                .last_mut()
                .expect("PDML: an element outside a packet")
                .children
                .push(node);
        }
    }
    packets
}

/// One captured datagram as tshark showed it.
#[derive(Debug)]
struct Frame {
    number: u32,
    src: u16,
    dst: u16,
    info: String,
    packet: Node,
}

impl Frame {
    /// The game packet, if the dissector took this datagram.
    fn game_packet(&self) -> Option<&Node> {
        self.packet.child("parsecnet")
    }

    fn game(&self) -> &Node {
        self.game_packet().unwrap_or_else(|| {
            panic!(
                "frame {} is not decoded as a game packet:\n{}",
                self.number,
                self.packet.dump(0)
            )
        })
    }

    fn kind(&self) -> u8 {
        self.game().uint("parsecnet.type") as u8
    }

    fn events(&self) -> Vec<&Node> {
        self.game().all("parsecnet.event").collect()
    }

    fn events_of(&self, ty: u8) -> Vec<&Node> {
        self.events()
            .into_iter()
            .filter(|e| e.uint("parsecnet.event.type") == u64::from(ty))
            .collect()
    }

    /// The kinds of the dissector's expert infos in the game packet (`parsecnet.expert.KIND`),
    /// sorted.
    fn expert_kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self
            .game_packet()
            .map(|g| {
                g.experts()
                    .into_iter()
                    .filter_map(|(name, _)| {
                        name.strip_prefix("parsecnet.expert.").map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        kinds.sort();
        kinds
    }

    fn expert_messages(&self) -> Vec<String> {
        self.game_packet()
            .map(|g| g.experts().into_iter().map(|(_, m)| m).collect())
            .unwrap_or_default()
    }

    fn dump(&self) -> String {
        format!(
            "frame {} ({} -> {}), info {:?}:\n{}",
            self.number,
            self.src,
            self.dst,
            self.info,
            self.game_packet()
                .map_or("(not a game packet)".into(), |g| g.dump(1))
        )
    }
}

/// Read `file` with the dissector (and `args`): the PDML tree of UDP and the game protocol of
/// every frame, and its Info column.
fn dissect(file: &Path, args: &[&str]) -> Vec<Frame> {
    let mut pdml_args = args.to_vec();
    pdml_args.extend(["-T", "pdml", "-J", "udp parsecnet"]);
    let packets = parse_pdml(&tshark_read(file, &pdml_args));
    let mut info_args = args.to_vec();
    info_args.extend(["-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info"]);
    let infos: BTreeMap<u32, String> = tshark_read(file, &info_args)
        .lines()
        .filter_map(|line| {
            let (number, info) = line.split_once('\t')?;
            Some((number.parse().ok()?, info.to_string()))
        })
        .collect();
    packets
        .into_iter()
        .map(|packet| {
            let number = packet
                .child("geninfo")
                .and_then(|g| g.child("num"))
                .map(|n| parse_uint(&n.show) as u32)
                .expect("PDML packet without a number");
            let port = |name: &str| {
                packet
                    .child("udp")
                    .and_then(|udp| udp.child(name))
                    .map_or(0, |p| parse_uint(&p.show) as u16)
            };
            Frame {
                number,
                src: port("udp.srcport"),
                dst: port("udp.dstport"),
                info: infos.get(&number).cloned().unwrap_or_default(),
                packet,
            }
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Scratch files
// ------------------------------------------------------------------------------------------

/// A fresh directory for one test's capture files, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(what: &str) -> ScratchDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = paths().out_subdir("dissector").join(format!(
            "{what}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ------------------------------------------------------------------------------------------
// Game packets built byte by byte, and a capture file of them
// ------------------------------------------------------------------------------------------

/// Bytes written field by field, big-endian.
#[derive(Clone, Debug, Default)]
struct Wire(Vec<u8>);

impl Wire {
    fn u8(mut self, v: u8) -> Wire {
        self.0.push(v);
        self
    }

    fn u16(mut self, v: u16) -> Wire {
        self.0.extend(v.to_be_bytes());
        self
    }

    fn u32(mut self, v: u32) -> Wire {
        self.0.extend(v.to_be_bytes());
        self
    }

    fn floats(mut self, values: &[f32]) -> Wire {
        for v in values {
            self.0.extend(v.to_bits().to_be_bytes());
        }
        self
    }

    fn raw(mut self, bytes: &[u8]) -> Wire {
        self.0.extend_from_slice(bytes);
        self
    }

    fn append(self, other: Wire) -> Wire {
        self.raw(&other.0)
    }

    /// A string: 1-byte length, then the bytes.
    fn text(self, s: &str) -> Wire {
        self.u8(s.len() as u8).raw(s.as_bytes())
    }

    /// A UDP backend node holding an IPv4 address.
    fn node_v4(self, ip: [u8; 4], port: u16) -> Wire {
        let mut node = [0u8; 32];
        node[0] = 4;
        node[1..3].copy_from_slice(&port.to_be_bytes());
        node[3..7].copy_from_slice(&ip);
        self.raw(&node)
    }

    /// A UDP backend node holding an IPv6 address and scope.
    fn node_v6(self, ip: [u16; 8], port: u16, scope: u32) -> Wire {
        let mut node = [0u8; 32];
        node[0] = 6;
        node[1..3].copy_from_slice(&port.to_be_bytes());
        for (i, group) in ip.iter().enumerate() {
            node[3 + 2 * i..5 + 2 * i].copy_from_slice(&group.to_be_bytes());
        }
        node[19..23].copy_from_slice(&scope.to_be_bytes());
        self.raw(&node)
    }

    /// Another backend's node (the IPX layout: network, MAC, socket).
    fn node_ipx(self) -> Wire {
        let mut node = [0u8; 32];
        node[..12].copy_from_slice(&[0, 0, 0xab, 0xcd, 2, 0, 0x5e, 0x10, 0x20, 0xff, 0x86, 0x9c]);
        self.raw(&node)
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// The 24-byte packet header's fields.
#[derive(Clone, Copy, Debug)]
struct Header {
    kind: u8,
    slot: u8,
    flags: u8,
    count: u8,
    seq: u32,
    ack: u32,
    bits: u32,
    token: u32,
}

impl Header {
    fn new(kind: u8, slot: u8, count: u8) -> Header {
        Header {
            kind,
            slot,
            flags: 0,
            count,
            seq: 1,
            ack: 0,
            bits: 0,
            token: 0x0BAD_CAFE,
        }
    }

    fn wire(&self) -> Wire {
        Wire::default()
            .raw(b"PSN")
            .u8(1)
            .u8(self.kind)
            .u8(self.slot)
            .u8(self.flags)
            .u8(self.count)
            .u32(self.seq)
            .u32(self.ack)
            .u32(self.bits)
            .u32(self.token)
    }
}

/// A remote event with whatever header fields are given.
fn raw_event(ty: u8, flags: u8, len: u16, id: Option<u32>, body: Wire) -> Wire {
    let mut w = Wire::default().u8(ty).u8(flags).u16(len);
    if let Some(id) = id {
        w = w.u32(id);
    }
    w.append(body)
}

/// A well-formed remote event: reliable with `id` if given, body length from the body.
fn event(ty: u8, id: Option<u32>, body: Wire) -> Wire {
    let len = body.len() as u16;
    raw_event(ty, u8::from(id.is_some()), len, id, body)
}

/// A ship state.
fn ship_state(pos: [f32; 3], orient: [f32; 4], vel: [f32; 3], game: &[u8; 32]) -> Wire {
    Wire::default()
        .floats(&pos)
        .floats(&orient)
        .floats(&vel)
        .raw(game)
}

/// One datagram of the capture file, 127.0.0.1 to itself.
struct Datagram {
    what: &'static str,
    src: u16,
    dst: u16,
    payload: Vec<u8>,
}

/// Write a classic pcap file of raw IPv4 packets (LINKTYPE_IPV4), one datagram each, one second
/// apart.
fn write_pcap(path: &Path, datagrams: &[Datagram]) {
    let mut out = Vec::new();
    out.extend(0xa1b2_c3d4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend(0i32.to_le_bytes()); // thiszone
    out.extend(0u32.to_le_bytes()); // sigfigs
    out.extend(65_535u32.to_le_bytes()); // snaplen
    out.extend(228u32.to_le_bytes()); // LINKTYPE_IPV4
    for (i, d) in datagrams.iter().enumerate() {
        let udp_len = 8 + d.payload.len();
        let total = 20 + udp_len;
        let mut ip = vec![0x45, 0];
        ip.extend((total as u16).to_be_bytes());
        ip.extend([0, 0, 0x40, 0, 64, 17, 0, 0]); // id, don't fragment, ttl, UDP, checksum
        ip.extend([127, 0, 0, 1, 127, 0, 0, 1]);
        let sum = ip
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum::<u32>();
        let sum = (sum & 0xffff) + (sum >> 16);
        let checksum = !(((sum & 0xffff) + (sum >> 16)) as u16);
        ip[10..12].copy_from_slice(&checksum.to_be_bytes());
        ip.extend(d.src.to_be_bytes());
        ip.extend(d.dst.to_be_bytes());
        ip.extend((udp_len as u16).to_be_bytes());
        ip.extend([0, 0]); // no UDP checksum
        ip.extend(&d.payload);
        out.extend((i as u32 + 1).to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend((ip.len() as u32).to_le_bytes());
        out.extend((ip.len() as u32).to_le_bytes());
        out.extend(ip);
    }
    std::fs::write(path, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// Ports Wireshark has no dissector for, so only the heuristic can take these datagrams.
const HEUR_SRC: u16 = 47_101;
const HEUR_DST: u16 = 47_102;

/// The datagrams of the capture file; `add` returns the frame number of the one added.
#[derive(Default)]
struct Datagrams(Vec<Datagram>);

impl Datagrams {
    fn add_on(&mut self, what: &'static str, src: u16, dst: u16, payload: Wire) -> usize {
        self.0.push(Datagram {
            what,
            src,
            dst,
            payload: payload.0,
        });
        self.0.len()
    }

    fn add(&mut self, what: &'static str, payload: Wire) -> usize {
        self.add_on(what, HEUR_SRC, HEUR_DST, payload)
    }
}

/// 32 distinct bytes for a game area.
fn game_area() -> [u8; 32] {
    std::array::from_fn(|i| (i as u8).wrapping_mul(9).wrapping_add(1))
}

/// The 40 bytes of the custom event of the every-event packet.
fn custom_bytes() -> Vec<u8> {
    (0..40u8)
        .map(|i| i.wrapping_mul(7).wrapping_add(3))
        .collect()
}

/// A packet with one event of every type (and two RE_CUSTOMs), a ship state, all header flags
/// and all 32 ack bits.
fn every_event_packet() -> Wire {
    let header = Header {
        flags: FLAG_STATE | FLAG_JOINED | FLAG_ACK,
        seq: 1000,
        ack: 999,
        bits: 0xFFFF_FFFF,
        token: 0x0102_0304,
        ..Header::new(GAME_STATE, 3, 16)
    };
    let state = ship_state(
        [1.5, -2.25, 300.0],
        [0.0, 0.6, 0.0, 0.8],
        [0.25, 7.0, -1.0],
        &game_area(),
    );
    let w = Wire::default;
    let events = [
        event(
            RE_CREATEOBJECT,
            Some(1),
            w().u32(2001)
                .u16(11)
                .floats(&[3.0, 10.0, 20.0])
                .floats(&[0.0, 0.6, 0.0, 0.8])
                .u32(0xA500_0003),
        ),
        event(
            RE_CREATELASER,
            Some(2),
            w().u32(1003)
                .u16(7)
                .floats(&[301.0, 2.0, 3.0])
                .floats(&[0.0, 0.0, 1.0]),
        ),
        event(
            RE_CREATEMISSILE,
            Some(3),
            w().u32(3003)
                .u16(12)
                .floats(&[3.0, 11.0, 21.0])
                .floats(&[1.0, 0.0, 0.0])
                .u32(0),
        ),
        event(
            RE_CREATEEXTRA,
            Some(4),
            w().u32(4003).u16(16).floats(&[3.0, 12.0, 22.0]),
        ),
        event(RE_KILLOBJECT, Some(5), w().u32(2003).u8(9)),
        event(RE_SENDTEXT, Some(6), w().text("hi, there")),
        event(RE_PLAYERNAME, Some(7), w().text("carol")),
        event(
            RE_PARTICLEOBJECT,
            Some(8),
            w().u16(17).floats(&[3.0, 13.0, 23.0]),
        ),
        event(
            RE_PLAYERLIST,
            Some(9),
            w().u8(2)
                .u8(3)
                .u8(1)
                .u32(0x1111_1111)
                .node_v4([127, 0, 0, 1], 6526)
                .text("carol")
                .u8(0)
                .u8(0)
                .u32(0x2222_2222)
                .node_v6([0xfe80, 0, 0, 0, 0, 0, 0, 1], 7000, 2)
                .text("dave"),
        ),
        event(
            RE_CONNECTQUEUE,
            Some(10),
            w().u8(1).u32(0x3333_3333).node_ipx().text("erin"),
        ),
        event(RE_CUSTOM, None, w().u16(303).u16(40).raw(&custom_bytes())),
        event(RE_PLAYERSTATUS, Some(11), w().u8(0).u8(7)),
        event(RE_CUSTOM, Some(12), w().u16(304).u16(0)),
        // Above i32::MAX: read as an unsigned 32-bit number.
        event(RE_RATE, Some(13), w().u32(3_000_000_000)),
        event(RE_RATE, Some(14), w().u32(0)),
        event(RE_VACATED, Some(15), w().u32(0xdead_beef)),
    ];
    events
        .into_iter()
        .fold(header.wire().append(state), Wire::append)
}

fn check_every_event_packet(f: &Frame) {
    let g = f.game();
    assert_eq!(g.uint("parsecnet.type"), u64::from(GAME_STATE));
    assert_eq!(g.uint("parsecnet.slot"), 3);
    for flag in ["state", "joined", "ack"] {
        assert_eq!(g.uint(&format!("parsecnet.flags.{flag}")), 1, "flag {flag}");
    }
    assert_eq!(g.uint("parsecnet.flags.reserved"), 0);
    assert_eq!(g.uint("parsecnet.count"), 16);
    assert_eq!(g.uint("parsecnet.seq"), 1000);
    assert_eq!(g.uint("parsecnet.ack"), 999);
    assert_eq!(g.uint("parsecnet.ack_bits"), 0xFFFF_FFFF);
    // 999 itself, then 999 - 1 - i for every bit i
    assert_eq!(
        g.uints("parsecnet.acked"),
        (967..=999).rev().collect::<Vec<u64>>()
    );
    assert_eq!(g.uint("parsecnet.token"), 0x0102_0304);

    let state = g.field("parsecnet.state");
    assert_eq!(state.vector("parsecnet.state.pos"), [1.5, -2.25, 300.0]);
    assert_eq!(state.text("parsecnet.state.pos"), "(1.5, -2.25, 300)");
    assert_eq!(state.vector("parsecnet.state.orient"), [0.0, 0.6, 0.0, 0.8]);
    assert_eq!(state.vector("parsecnet.state.vel"), [0.25, 7.0, -1.0]);
    assert_eq!(state.bytes("parsecnet.state.game"), game_area());

    let events = f.events();
    assert_eq!(events.len(), 16, "{}", f.dump());
    let types: Vec<u64> = events
        .iter()
        .map(|e| e.uint("parsecnet.event.type"))
        .collect();
    assert_eq!(
        types,
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 11, 14, 14, 15]
    );
    let reliable: Vec<u64> = events
        .iter()
        .map(|e| e.uint("parsecnet.event.reliable"))
        .collect();
    assert_eq!(reliable, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1]);
    let ids: Vec<u64> = events
        .iter()
        .filter(|e| e.has("parsecnet.event.id"))
        .map(|e| e.uint("parsecnet.event.id"))
        .collect();
    assert_eq!(ids, (1..=15).collect::<Vec<u64>>());
    let lengths: Vec<u64> = events
        .iter()
        .map(|e| e.uint("parsecnet.event.length"))
        .collect();
    assert_eq!(
        lengths,
        [38, 30, 34, 18, 5, 10, 6, 14, 88, 42, 44, 2, 4, 4, 4, 4]
    );

    let e = events[0];
    assert_eq!(e.uint("parsecnet.event.object_id"), 2001);
    assert_eq!(e.uint("parsecnet.event.class"), 11);
    assert_eq!(e.vector("parsecnet.event.pos"), [3.0, 10.0, 20.0]);
    assert_eq!(e.vector("parsecnet.event.orient"), [0.0, 0.6, 0.0, 0.8]);
    assert_eq!(e.uint("parsecnet.event.object_flags"), 0xA500_0003);
    let e = events[1];
    assert_eq!(e.uint("parsecnet.event.object_id"), 1003);
    assert_eq!(e.uint("parsecnet.event.class"), 7);
    assert_eq!(e.vector("parsecnet.event.pos"), [301.0, 2.0, 3.0]);
    assert_eq!(e.vector("parsecnet.event.dir"), [0.0, 0.0, 1.0]);
    let e = events[2];
    assert_eq!(e.uint("parsecnet.event.object_id"), 3003);
    assert_eq!(e.uint("parsecnet.event.class"), 12);
    assert_eq!(e.vector("parsecnet.event.pos"), [3.0, 11.0, 21.0]);
    assert_eq!(e.vector("parsecnet.event.dir"), [1.0, 0.0, 0.0]);
    assert_eq!(e.uint("parsecnet.event.target_id"), 0);
    let e = events[3];
    assert_eq!(e.uint("parsecnet.event.object_id"), 4003);
    assert_eq!(e.uint("parsecnet.event.extra_index"), 16);
    assert_eq!(e.vector("parsecnet.event.pos"), [3.0, 12.0, 22.0]);
    let e = events[4];
    assert_eq!(e.uint("parsecnet.event.object_id"), 2003);
    assert_eq!(e.uint("parsecnet.event.list_id"), 9);
    assert_eq!(events[5].text("parsecnet.event.text"), "hi, there");
    assert_eq!(events[5].uint("parsecnet.event.string_length"), 9);
    assert_eq!(events[6].text("parsecnet.event.name"), "carol");
    let e = events[7];
    assert_eq!(e.uint("parsecnet.event.particle_type"), 17);
    assert_eq!(e.vector("parsecnet.event.origin"), [3.0, 13.0, 23.0]);

    let e = events[8];
    assert_eq!(e.uint("parsecnet.event.entry_count"), 2);
    let players: Vec<&Node> = e.all("parsecnet.player").collect();
    assert_eq!(players.len(), 2);
    let p = players[0];
    assert_eq!(p.uint("parsecnet.player.slot"), 3);
    assert_eq!(p.uint("parsecnet.player.joined"), 1);
    assert_eq!(p.uint("parsecnet.player.token"), 0x1111_1111);
    assert_eq!(p.text("parsecnet.player.address"), "127.0.0.1:6526");
    assert_eq!(p.bytes("parsecnet.player.node").len(), 32);
    assert_eq!(p.text("parsecnet.player.name"), "carol");
    let p = players[1];
    assert_eq!(p.uint("parsecnet.player.slot"), 0);
    assert_eq!(p.uint("parsecnet.player.joined"), 0);
    assert_eq!(p.uint("parsecnet.player.token"), 0x2222_2222);
    assert_eq!(p.text("parsecnet.player.address"), "[fe80::1%2]:7000");
    assert_eq!(p.text("parsecnet.player.name"), "dave");

    let e = events[9];
    assert_eq!(e.uint("parsecnet.event.entry_count"), 1);
    let request = e.field("parsecnet.request");
    assert_eq!(request.uint("parsecnet.request.token"), 0x3333_3333);
    assert!(
        !request.has("parsecnet.request.address"),
        "an IPX node is not read as a UDP address"
    );
    assert_eq!(
        request.bytes("parsecnet.request.node")[..4],
        [0, 0, 0xab, 0xcd]
    );
    assert_eq!(request.text("parsecnet.request.name"), "erin");

    let e = events[10];
    assert_eq!(e.uint("parsecnet.event.custom_type"), 303);
    assert_eq!(e.uint("parsecnet.event.data_length"), 40);
    assert_eq!(e.bytes("parsecnet.event.data"), custom_bytes());
    let e = events[11];
    assert_eq!(e.uint("parsecnet.event.joined"), 0);
    assert_eq!(e.uint("parsecnet.event.unjoin_flag"), 7);
    let e = events[12];
    assert_eq!(e.uint("parsecnet.event.custom_type"), 304);
    assert_eq!(e.uint("parsecnet.event.data_length"), 0);
    assert!(!e.has("parsecnet.event.data"));
    assert_eq!(events[13].uint("parsecnet.event.rate"), 3_000_000_000);
    assert_eq!(events[14].uint("parsecnet.event.rate"), 0);
    assert_eq!(events[15].uint("parsecnet.event.told_id"), 0xdead_beef);

    assert_eq!(
        f.info,
        "GAME_STATE slot 3 seq 1000 ack 999: state (1.5, -2.25, 300), \
         RE_CREATEOBJECT object 2001, RE_CREATELASER object 1003, \
         RE_CREATEMISSILE object 3003 target 0, RE_CREATEEXTRA object 4003, \
         RE_KILLOBJECT object 2003, RE_SENDTEXT \"hi, there\", RE_PLAYERNAME \"carol\", \
         RE_PARTICLEOBJECT type 17, RE_PLAYERLIST [3 carol, 0 dave], RE_CONNECTQUEUE [erin], \
         RE_CUSTOM type 303 (40 bytes), RE_PLAYERSTATUS unjoined (flag 7), \
         RE_CUSTOM type 304 (0 bytes), RE_RATE rate 3000000000 bytes/s, RE_RATE rate unlimited, \
         RE_VACATED player 0xdeadbeef left"
    );
}

/// A malformed packet of the capture file and the expert infos it must get.
struct Malformed {
    frame: usize,
    /// The kinds (`parsecnet.expert.KIND`), sorted.
    kinds: &'static [&'static str],
    /// Text one of the expert messages contains.
    message: &'static str,
}

#[test]
fn decodes_every_field_and_flags_malformed_packets() {
    if !tshark_or_skip() {
        return;
    }
    let w = Wire::default;
    let mut d = Datagrams::default();

    // Valid packets.
    let chat = d.add(
        "a chat line",
        Header {
            flags: FLAG_JOINED | FLAG_ACK,
            seq: 42,
            ack: 40,
            bits: 0b101,
            token: 0xDEAD_BEEF,
            ..Header::new(GAME_STATE, 1, 1)
        }
        .wire()
        .append(event(RE_SENDTEXT, Some(5), w().text("hello"))),
    );
    let everything = d.add("every event type", every_event_packet());
    let small_ack = d.add(
        "ack bits below sequence 1",
        Header {
            flags: FLAG_ACK,
            seq: 3,
            ack: 2,
            bits: 0xFFFF_FFFF,
            ..Header::new(NODE_ALIVE, 0, 0)
        }
        .wire(),
    );
    let empty_strings = d.add(
        "empty strings",
        Header::new(GAME_STATE, 2, 2)
            .wire()
            .append(event(RE_SENDTEXT, Some(1), w().text("")))
            .append(event(RE_PLAYERNAME, Some(2), w().text(""))),
    );
    let resume = d.add(
        "session resume",
        Header::new(NODE_ALIVE, 1, 3)
            .wire()
            .append(event(
                RE_RESUME,
                Some(1),
                w().u8(1).u8(2).u32(0xAABB_CCDD).u32(0x11),
            ))
            .append(event(
                RE_RESUME,
                Some(2),
                w().u8(2).u32(0x1234_5678).u32(0x9ABC_DEF0).u32(7),
            ))
            .append(event(RE_RESUME, Some(3), w().u8(3))),
    );
    let mut kinds = Vec::new();
    for kind in 1..=10u8 {
        let slot = if kind == CONNECT { 255 } else { kind - 1 };
        let header = Header {
            seq: u32::from(kind),
            ..Header::new(kind, slot, 0)
        };
        // Two of them on the registered ports (the others go to the heuristic).
        let frame = match kind {
            NODE_ALIVE => d.add_on("NODE_ALIVE to 6526", HEUR_SRC, 6526, header.wire()),
            10 => d.add_on("CONNECT_REFUSED from 6522", 6522, HEUR_DST, header.wire()),
            _ => d.add("a packet type", header.wire()),
        };
        kinds.push((kind, slot, frame));
    }

    // Malformed packets.
    let mut malformed = Vec::new();
    let full = Header::new(GAME_STATE, 1, 0).wire();
    let frame = d.add("header cut short", w().raw(&full.0[..10]));
    malformed.push(Malformed {
        frame,
        kinds: &["truncated"],
        message: "Truncated: sequence needs 4 bytes, only 2 left",
    });
    let body_past_end = d.add(
        "event body past the end",
        Header::new(GAME_STATE, 1, 1).wire().append(raw_event(
            RE_SENDTEXT,
            1,
            20,
            Some(1),
            w().text("hello"),
        )),
    );
    malformed.push(Malformed {
        frame: body_past_end,
        kinds: &["truncated"],
        message: "the 20-byte body runs past the end of the datagram (6 bytes left)",
    });
    let fixed_len = d.add(
        "fixed body length wrong",
        Header::new(GAME_STATE, 1, 1).wire().append(raw_event(
            RE_KILLOBJECT,
            1,
            6,
            Some(1),
            w().u32(77).u8(3).u8(0xEE),
        )),
    );
    malformed.push(Malformed {
        frame: fixed_len,
        kinds: &["length_mismatch", "length_mismatch"],
        message: "RE_KILLOBJECT bodies are 5 bytes, not 6",
    });
    let short_body = d.add(
        "body shorter than its fields",
        Header::new(GAME_STATE, 1, 2)
            .wire()
            .append(raw_event(RE_SENDTEXT, 1, 3, Some(1), w().u8(5).raw(b"he")))
            .append(event(RE_PLAYERNAME, Some(2), w().text("zed"))),
    );
    malformed.push(Malformed {
        frame: short_body,
        kinds: &["length_mismatch"],
        message: "text needs 5 bytes, only 2 left",
    });
    let trailing = d.add(
        "trailing bytes",
        Header::new(NODE_ALIVE, 2, 0).wire().raw(&[1, 2, 3]),
    );
    malformed.push(Malformed {
        frame: trailing,
        kinds: &["trailing"],
        message: "3 bytes follow the last event",
    });
    let mut v2 = Header::new(GAME_STATE, 1, 0).wire();
    v2.0[3] = 2;
    let version = d.add_on("version 2 on port 6526", HEUR_SRC, 6526, v2.clone());
    malformed.push(Malformed {
        frame: version,
        kinds: &["version"],
        message: "protocol version 2 is not supported",
    });
    let unknown = d.add(
        "unknown packet and event types",
        Header::new(200, 1, 2)
            .wire()
            .append(raw_event(200, 1, 2, Some(1), w().raw(&[0xAA, 0xBB])))
            .append(event(RE_PLAYERNAME, Some(2), w().text("after"))),
    );
    malformed.push(Malformed {
        frame: unknown,
        kinds: &["unknown_type", "unknown_type"],
        message: "unknown event type 200",
    });
    let frame = d.add(
        "reserved bits",
        Header {
            flags: 0x08 | FLAG_JOINED,
            ..Header::new(JOIN, 1, 1)
        }
        .wire()
        .append(raw_event(RE_PLAYERSTATUS, 3, 2, Some(1), w().u8(1).u8(0))),
    );
    malformed.push(Malformed {
        frame,
        kinds: &["reserved", "reserved"],
        message: "reserved event flag bits are set",
    });
    let frame = d.add(
        "invalid header values",
        Header {
            seq: 0,
            ack: 5,
            token: 0,
            ..Header::new(GAME_STATE, 16, 0)
        }
        .wire(),
    );
    malformed.push(Malformed {
        frame,
        kinds: &["invalid", "invalid", "invalid", "invalid"],
        message: "ack is not 0 although the ack flag is clear",
    });
    let non_finite = d.add(
        "non-finite floats",
        Header {
            flags: FLAG_STATE,
            ..Header::new(GAME_STATE, 1, 1)
        }
        .wire()
        .append(ship_state(
            [0.0, f32::NAN, 0.0],
            [0.0, 0.0, 0.0, 1.0],
            [0.0; 3],
            &[0; 32],
        ))
        .append(event(
            RE_CREATELASER,
            Some(1),
            w().u32(5)
                .u16(1)
                .floats(&[f32::INFINITY, 0.0, 0.0])
                .floats(&[0.0, 0.0, 1.0]),
        )),
    );
    malformed.push(Malformed {
        frame: non_finite,
        kinds: &["non_finite", "non_finite"],
        message: "position y is not finite",
    });
    let frame = d.add(
        "bad player list",
        Header::new(CONNECT_REPLY, 4, 1).wire().append(event(
            RE_PLAYERLIST,
            Some(1),
            w().u8(2)
                .u8(4)
                .u8(0)
                .u32(1)
                .node_v4([10, 0, 0, 1], 6526)
                .text("a\0b")
                .u8(4)
                .u8(2)
                .u32(0)
                .node_v4([10, 0, 0, 2], 6526)
                .text("b"),
        )),
    );
    malformed.push(Malformed {
        frame,
        kinds: &["invalid", "invalid", "invalid", "reserved"],
        message: "slot 4 appears twice",
    });
    let frame = d.add(
        "unreliable chat line",
        Header::new(GAME_STATE, 1, 1)
            .wire()
            .append(event(RE_SENDTEXT, None, w().text("hi"))),
    );
    malformed.push(Malformed {
        frame,
        kinds: &["invalid"],
        message: "RE_SENDTEXT must be sent reliable",
    });
    let missing = d.add(
        "events missing",
        Header::new(GAME_STATE, 1, 3)
            .wire()
            .append(event(RE_PLAYERNAME, Some(1), w().text("x"))),
    );
    malformed.push(Malformed {
        frame: missing,
        kinds: &["truncated"],
        message: "event 2 needs a 4-byte header, only 0 bytes left (2 of the 3 events are missing)",
    });
    let frame = d.add(
        "invalid event values",
        Header::new(GAME_STATE, 1, 5)
            .wire()
            .append(event(RE_KILLOBJECT, Some(0), w().u32(0).u8(16)))
            .append(event(RE_PLAYERSTATUS, Some(1), w().u8(2).u8(0)))
            .append(event(RE_CUSTOM, None, w().u16(1).u16(300).raw(&[0; 300])))
            .append(event(RE_CONNECTQUEUE, Some(2), w().u8(0)))
            .append(event(RE_PLAYERNAME, Some(3), w().text(&"n".repeat(32)))),
    );
    malformed.push(Malformed {
        frame,
        kinds: &["invalid"; 7],
        message: "custom data of 300 bytes is longer than 256",
    });
    let frame = d.add(
        "bad resume steps",
        Header::new(NODE_ALIVE, 1, 2)
            .wire()
            .append(event(RE_RESUME, Some(1), w().u8(4)))
            .append(event(
                RE_RESUME,
                Some(2),
                w().u8(1).u8(5).u32(1).u32(2).u32(0).u32(4).u32(5),
            )),
    );
    malformed.push(Malformed {
        frame,
        kinds: &["invalid"; 3],
        message: "token count 5 is above 4",
    });

    let bad_rate = d.add(
        "unreliable RE_RATE with a 5-byte body",
        Header::new(NODE_ALIVE, 1, 1).wire().append(raw_event(
            RE_RATE,
            0,
            5,
            None,
            w().u32(9600).u8(0xEE),
        )),
    );
    malformed.push(Malformed {
        frame: bad_rate,
        kinds: &["invalid", "length_mismatch", "length_mismatch"],
        message: "RE_RATE bodies are 4 bytes, not 5",
    });

    // Datagrams that are not game packets.
    let raw_on_game_port = d.add_on("raw datagram on 6526", HEUR_SRC, 6526, w().raw(b"hello"));
    let v2_elsewhere = d.add("version 2 elsewhere", v2);
    let too_short = d.add_on("only the signature", 6522, HEUR_DST, w().raw(b"PSN"));

    let dir = ScratchDir::new("built");
    let file = dir.0.join("packets.pcap");
    write_pcap(&file, &d.0);
    let frames = dissect(&file, &[]);
    assert_eq!(frames.len(), d.0.len(), "tshark shows every datagram");
    let frame = |n: usize| {
        let f = &frames[n - 1];
        assert_eq!(f.number as usize, n);
        f
    };

    // Valid packets: every field, and no expert info.
    let f = frame(chat);
    let g = f.game();
    assert_eq!(g.text("parsecnet.signature"), "PSN");
    assert_eq!(g.uint("parsecnet.version"), 1);
    assert_eq!(g.uint("parsecnet.type"), u64::from(GAME_STATE));
    assert_eq!(g.uint("parsecnet.slot"), 1);
    assert_eq!(g.uint("parsecnet.flags"), 0x06);
    assert_eq!(g.uint("parsecnet.flags.state"), 0);
    assert_eq!(g.uint("parsecnet.flags.joined"), 1);
    assert_eq!(g.uint("parsecnet.flags.ack"), 1);
    assert_eq!(g.uint("parsecnet.count"), 1);
    assert_eq!(g.uint("parsecnet.seq"), 42);
    assert_eq!(g.uint("parsecnet.ack"), 40);
    assert_eq!(g.uint("parsecnet.ack_bits"), 0b101);
    assert_eq!(g.uints("parsecnet.acked"), [40, 39, 37]);
    assert_eq!(g.uint("parsecnet.token"), 0xDEAD_BEEF);
    assert!(!g.has("parsecnet.state"));
    let e = f.events()[0];
    assert_eq!(e.uint("parsecnet.event.type"), u64::from(RE_SENDTEXT));
    assert_eq!(e.uint("parsecnet.event.reliable"), 1);
    assert_eq!(e.uint("parsecnet.event.id"), 5);
    assert_eq!(e.uint("parsecnet.event.length"), 6);
    assert_eq!(e.text("parsecnet.event.text"), "hello");
    assert_eq!(
        f.info,
        "GAME_STATE slot 1 seq 42 ack 40: RE_SENDTEXT \"hello\""
    );
    check_every_event_packet(frame(everything));
    assert_eq!(frame(small_ack).game().uints("parsecnet.acked"), [2, 1]);
    let f = frame(resume);
    let events = f.events();
    assert_eq!(events[0].uint("parsecnet.event.resume_step"), 1);
    assert_eq!(events[0].uint("parsecnet.event.token_count"), 2);
    assert_eq!(
        events[0].uints("parsecnet.event.earlier_token"),
        [0xAABB_CCDD, 0x11]
    );
    assert_eq!(events[1].uint("parsecnet.event.resume_step"), 2);
    assert_eq!(events[1].uint("parsecnet.event.your_token"), 0x1234_5678);
    assert_eq!(events[1].uint("parsecnet.event.my_token"), 0x9ABC_DEF0);
    assert_eq!(events[1].uint("parsecnet.event.delivered_id"), 7);
    assert_eq!(events[2].uint("parsecnet.event.resume_step"), 3);
    assert_eq!(
        f.info,
        "NODE_ALIVE slot 1 seq 1: RE_RESUME hello [0xaabbccdd, 0x00000011], \
         RE_RESUME answer 0x12345678/0x9abcdef0 delivered 7, RE_RESUME done"
    );
    let f = frame(empty_strings);
    assert_eq!(f.events()[0].text("parsecnet.event.text"), "");
    assert_eq!(f.events()[1].text("parsecnet.event.name"), "");
    assert_eq!(
        f.info,
        "GAME_STATE slot 2 seq 1: RE_SENDTEXT \"\", RE_PLAYERNAME \"\""
    );
    for (kind, slot, n) in kinds {
        let f = frame(n);
        assert_eq!(f.kind(), kind, "{}", f.dump());
        let who = if slot == 255 {
            "no slot".to_string()
        } else {
            format!("slot {slot}")
        };
        let name = PACKET_TYPES[usize::from(kind)];
        assert_eq!(f.info, format!("{name} {who} seq {kind}"));
    }
    for n in [chat, everything, small_ack, resume, empty_strings] {
        assert_eq!(
            frame(n).expert_kinds(),
            Vec::<String>::new(),
            "{}",
            frame(n).dump()
        );
    }

    // Malformed packets: their expert infos, and what is still decoded.
    for m in &malformed {
        let f = frame(m.frame);
        let what = d.0[m.frame - 1].what;
        assert!(
            f.game_packet().is_some(),
            "{what}: not decoded\n{}",
            f.dump()
        );
        assert_eq!(f.expert_kinds(), m.kinds, "{what}\n{}", f.dump());
        assert!(
            f.expert_messages()
                .iter()
                .any(|msg| msg.contains(m.message)),
            "{what}: no expert message with {:?}\n{}",
            m.message,
            f.dump()
        );
        assert!(
            f.info.contains(" ["),
            "{what}: the Info column does not show the problem: {:?}",
            f.info
        );
    }
    assert_eq!(
        frame(body_past_end).game().text("parsecnet.event.text"),
        "hello"
    );
    let f = frame(bad_rate);
    assert_eq!(f.game().uint("parsecnet.event.rate"), 9600);
    assert_eq!(f.game().bytes("parsecnet.event.extra_bytes"), [0xEE]);
    let f = frame(fixed_len);
    assert_eq!(f.game().uint("parsecnet.event.object_id"), 77);
    assert_eq!(f.game().uint("parsecnet.event.list_id"), 3);
    assert_eq!(f.game().bytes("parsecnet.event.extra_bytes"), [0xEE]);
    assert_eq!(
        frame(short_body).events()[1].text("parsecnet.event.name"),
        "zed",
        "the event after a bad body length is still found"
    );
    assert_eq!(
        frame(trailing).game().bytes("parsecnet.trailing"),
        [1, 2, 3]
    );
    let f = frame(version);
    assert_eq!(f.game().uint("parsecnet.version"), 2);
    assert_eq!(f.game().bytes("parsecnet.undecoded").len(), 20);
    let f = frame(unknown);
    assert_eq!(f.game().bytes("parsecnet.event.body"), [0xAA, 0xBB]);
    assert_eq!(f.events()[1].text("parsecnet.event.name"), "after");
    let f = frame(non_finite);
    assert!(f.game().vector("parsecnet.state.pos")[1].is_nan());
    assert_eq!(
        f.game().vector("parsecnet.event.pos")[0],
        f32::INFINITY,
        "{}",
        f.dump()
    );
    assert_eq!(frame(missing).events().len(), 1);

    // Not game packets: left to other dissectors.
    for n in [raw_on_game_port, v2_elsewhere, too_short] {
        let f = frame(n);
        assert!(
            f.game_packet().is_none(),
            "{} was taken as a game packet\n{}",
            d.0[n - 1].what,
            f.dump()
        );
    }
    // Nothing went wrong inside the dissector.
    for f in &frames {
        assert!(
            !f.expert_kinds().iter().any(|k| k == "internal"),
            "{}",
            f.dump()
        );
    }

    // The heuristic can be switched off (then only the registered ports are decoded), and the
    // ports are a preference.
    let decoded = |args: &[&str]| -> BTreeSet<usize> {
        let mut all = args.to_vec();
        all.extend(["-Y", "parsecnet", "-T", "fields", "-e", "frame.number"]);
        tshark_read(&file, &all)
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect()
    };
    let on_ports: BTreeSet<usize> =
        d.0.iter()
            .enumerate()
            .filter(|(_, dg)| [6522, 6526].contains(&dg.src) || [6522, 6526].contains(&dg.dst))
            .map(|(i, _)| i + 1)
            .filter(|n| frame(*n).game_packet().is_some())
            .collect();
    assert_eq!(
        on_ports.len(),
        3,
        "NODE_ALIVE, CONNECT_REFUSED and the version 2 packet"
    );
    let without_heuristic = ["--disable-heuristic", "parsecnet_udp"];
    assert_eq!(decoded(&without_heuristic), on_ports);
    // Port 47102 instead: every datagram to or from it with the signature, whatever version.
    let mut own_port = without_heuristic.to_vec();
    own_port.extend(["-o", "parsecnet.udp_ports:47102"]);
    let with_signature_on_47102: BTreeSet<usize> =
        d.0.iter()
            .enumerate()
            .filter(|(_, dg)| dg.src == HEUR_DST || dg.dst == HEUR_DST)
            .filter(|(_, dg)| dg.payload.len() >= 4 && dg.payload.starts_with(b"PSN"))
            .map(|(i, _)| i + 1)
            .collect();
    assert!(with_signature_on_47102.contains(&v2_elsewhere));
    assert_eq!(decoded(&own_port), with_signature_on_47102);
    println!("{} datagrams decoded as expected", frames.len());
}

// ------------------------------------------------------------------------------------------
// Live capture
// ------------------------------------------------------------------------------------------

/// tshark capturing UDP on `lo` into a file; killed when dropped if still running.
struct Capture {
    child: Child,
    /// tshark's packet summary lines (`-P`), as they come.
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
    /// A socket the capture filter includes: its datagrams to itself show when the capture
    /// has caught up.
    probe: UdpSocket,
    probe_port: u16,
}

impl Capture {
    /// Start capturing the UDP datagrams from or to `ports` and `probe_port` into `file`, and
    /// wait until the capture really runs.
    fn start(file: &Path, ports: &[u16], probe_port: u16) -> Capture {
        let filter = ports
            .iter()
            .chain([&probe_port])
            .map(|p| format!("udp port {p}"))
            .collect::<Vec<_>>()
            .join(" or ");
        let mut child = Command::new("tshark")
            .args(["-i", "lo", "-f", &filter, "-w"])
            .arg(file)
            .args(["-P", "-l"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start tshark: {e}"));
        let (sender, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text);
            text
        });
        let probe = UdpSocket::bind(("127.0.0.1", probe_port))
            .unwrap_or_else(|e| panic!("cannot bind the probe port {probe_port}: {e}"));
        let capture = Capture {
            child,
            lines,
            stderr: Some(stderr),
            probe,
            probe_port,
        };
        capture.sync("start");
        capture
    }

    /// Send datagrams from the probe socket to itself until tshark shows one: from then on the
    /// capture runs, and everything sent before it is in the file.
    fn sync(&self, what: &str) {
        while self.lines.try_recv().is_ok() {}
        let port = self.probe_port.to_string();
        let is_probe = |line: &str| line.split_whitespace().filter(|w| *w == port).count() >= 2;
        let deadline = Instant::now() + SYNC_TIMEOUT;
        while Instant::now() < deadline {
            let _ = self.probe.send_to(
                b"parsec-net dissector test: capture probe",
                ("127.0.0.1", self.probe_port),
            );
            let wait_until = Instant::now() + Duration::from_millis(200);
            while let Some(left) = wait_until.checked_duration_since(Instant::now()) {
                match self.lines.recv_timeout(left) {
                    Ok(line) if is_probe(&line) => return,
                    Ok(_) => {}
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => {
                        panic!("tshark stopped capturing ({what})")
                    }
                }
            }
        }
        panic!("the capture did not show a probe within {SYNC_TIMEOUT:?} ({what})");
    }

    /// Wait until everything sent so far is captured, then stop tshark (SIGINT, so the file is
    /// complete); returns what it printed on stderr.
    fn stop(mut self) -> String {
        self.sync("end");
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let status = wait_with_deadline(&mut self.child, Instant::now() + SYNC_TIMEOUT);
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        assert!(
            status.is_some(),
            "tshark did not stop after SIGINT\n{stderr}"
        );
        stderr
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One player of a captured session: who, on which port, and the chat line it sends.
struct Side {
    name: &'static str,
    port: u16,
    text: String,
}

/// The game packets between the two sides' ports, in capture order.
fn session<'a>(frames: &'a [Frame], sides: &[Side; 2]) -> Vec<&'a Frame> {
    let ports = [sides[0].port, sides[1].port];
    frames
        .iter()
        .filter(|f| ports.contains(&f.src) && ports.contains(&f.dst) && f.src != f.dst)
        .filter(|f| f.game_packet().is_some())
        .collect()
}

/// Types of the packets that travel on a player's game link (sequence counts up by one).
fn on_game_link(kind: u8) -> bool {
    (JOIN..=NODE_ALIVE).contains(&kind)
}

/// One line per packet: source port and Info column (for failure messages).
fn listing(frames: &[&Frame]) -> String {
    frames
        .iter()
        .map(|f| format!("  {} from {}: {}\n", f.number, f.src, f.info))
        .collect()
}

/// The checks every captured session must pass; returns the slot of each side.
fn check_session(what: &str, frames: &[&Frame], sides: &[Side; 2]) -> [u64; 2] {
    assert!(!frames.is_empty(), "{what}: no game packet captured");
    for f in frames {
        let g = f.game();
        assert!(
            g.experts().is_empty(),
            "{what}: expert info in {}",
            f.dump()
        );
        let has_state = g.uint("parsecnet.flags.state") == 1;
        assert_eq!(has_state, g.has("parsecnet.state"), "{what}: {}", f.dump());
        if has_state {
            for name in ["pos", "orient", "vel"] {
                let v = g.vector(&format!("parsecnet.state.{name}"));
                assert!(v.iter().all(|x| x.is_finite()), "{what}: {}", f.dump());
            }
            assert_eq!(g.bytes("parsecnet.state.game").len(), 32);
        }
    }
    let from = |side: &Side| -> Vec<&Frame> {
        frames
            .iter()
            .copied()
            .filter(|f| f.src == side.port)
            .collect()
    };

    // Connecting: CONNECT requests, and each side asks with a connect request naming it at its
    // address (in a CONNECT, or in a SLOT_REQUEST when the other's CONNECT came first and made
    // it the slave).
    assert!(
        frames.iter().any(|f| f.kind() == CONNECT),
        "{what}: no CONNECT\n{}",
        listing(frames)
    );
    for side in sides {
        let requests: Vec<&Frame> = from(side)
            .into_iter()
            .filter(|f| [CONNECT, SLOT_REQUEST].contains(&f.kind()))
            .collect();
        assert!(
            !requests.is_empty(),
            "{what}: {} never asked to connect\n{}",
            side.name,
            listing(frames)
        );
        for f in requests {
            assert_eq!(f.game().uint("parsecnet.slot"), 255, "{}", f.dump());
            let queue = f.events_of(RE_CONNECTQUEUE);
            assert_eq!(queue.len(), 1, "{what}: {}", f.dump());
            let request = queue[0].field("parsecnet.request");
            assert_eq!(request.text("parsecnet.request.name"), side.name);
            assert_eq!(
                request.text("parsecnet.request.address"),
                format!("127.0.0.1:{}", side.port)
            );
        }
    }

    // A CONNECT_REPLY lists both players, each at its address, in slots of their own.
    let reply = frames
        .iter()
        .find(|f| f.kind() == CONNECT_REPLY)
        .unwrap_or_else(|| panic!("{what}: no CONNECT_REPLY"));
    let list = reply.events_of(RE_PLAYERLIST);
    assert_eq!(list.len(), 1, "{what}: {}", reply.dump());
    let players: Vec<(String, u64, String)> = list[0]
        .all("parsecnet.player")
        .map(|p| {
            (
                p.text("parsecnet.player.name").to_string(),
                p.uint("parsecnet.player.slot"),
                p.text("parsecnet.player.address").to_string(),
            )
        })
        .collect();
    assert_eq!(players.len(), 2, "{what}: {}", reply.dump());
    let slot_of = |side: &Side| -> u64 {
        let (_, slot, address) = players
            .iter()
            .find(|(name, _, _)| name == side.name)
            .unwrap_or_else(|| panic!("{what}: {} is not in {players:?}", side.name));
        assert_eq!(*address, format!("127.0.0.1:{}", side.port), "{what}");
        *slot
    };
    let slots = [slot_of(&sides[0]), slot_of(&sides[1])];
    assert_ne!(slots[0], slots[1], "{what}: {players:?}");
    let replier = sides
        .iter()
        .position(|s| s.port == reply.src)
        .expect("a side");
    assert_eq!(reply.game().uint("parsecnet.slot"), slots[replier]);

    for (side, &slot) in sides.iter().zip(&slots) {
        let mine = from(side);
        for f in mine.iter().filter(|f| on_game_link(f.kind())) {
            assert_eq!(
                f.game().uint("parsecnet.slot"),
                slot,
                "{what}: {}",
                f.dump()
            );
        }
        // It joins: a JOIN packet, and RE_PLAYERSTATUS joined.
        assert!(
            mine.iter().any(|f| f.kind() == JOIN),
            "{what}: no JOIN from {}",
            side.name
        );
        let statuses: Vec<u64> = mine
            .iter()
            .flat_map(|f| f.events_of(RE_PLAYERSTATUS))
            .map(|e| e.uint("parsecnet.event.joined"))
            .collect();
        assert!(statuses.contains(&1), "{what}: {} never joined", side.name);
        // Its name.
        let names: Vec<&str> = mine
            .iter()
            .flat_map(|f| f.events_of(RE_PLAYERNAME))
            .map(|e| e.text("parsecnet.event.name"))
            .collect();
        assert!(
            !names.is_empty(),
            "{what}: no RE_PLAYERNAME from {}",
            side.name
        );
        assert!(names.iter().all(|n| *n == side.name), "{what}: {names:?}");
        // Its chat line, and the Info column of the packet carrying it.
        let chat = mine
            .iter()
            .find(|f| !f.events_of(RE_SENDTEXT).is_empty())
            .unwrap_or_else(|| panic!("{what}: no RE_SENDTEXT from {}", side.name));
        assert_eq!(
            chat.events_of(RE_SENDTEXT)[0].text("parsecnet.event.text"),
            side.text
        );
        let g = chat.game();
        let mut head = format!(
            "{} slot {slot} seq {}",
            PACKET_TYPES[usize::from(chat.kind())],
            g.uint("parsecnet.seq")
        );
        if g.uint("parsecnet.flags.ack") == 1 {
            head.push_str(&format!(" ack {}", g.uint("parsecnet.ack")));
        }
        assert!(
            chat.info.starts_with(&format!("{head}: "))
                && chat
                    .info
                    .contains(&format!("RE_SENDTEXT \"{}\"", side.text)),
            "{what}: Info {:?}",
            chat.info
        );
        // Ship states.
        assert!(
            mine.iter()
                .any(|f| f.kind() == GAME_STATE && f.game().has("parsecnet.state")),
            "{what}: no GAME_STATE with a ship state from {}",
            side.name
        );
    }

    check_sequences(what, frames, sides);
    slots
}

/// Per direction: game-link packets count up by one (from where the sender started), the others (connecting,
/// disconnecting) count up; every sequence a game-link packet acknowledges was sent before by
/// the other side.
fn check_sequences(what: &str, frames: &[&Frame], sides: &[Side; 2]) {
    let mut last_game: BTreeMap<u16, u64> = BTreeMap::new();
    let mut last_other: BTreeMap<u16, u64> = BTreeMap::new();
    let mut sent: BTreeMap<u16, BTreeSet<u64>> = BTreeMap::new();
    let mut counted = 0;
    for f in frames {
        let g = f.game();
        let seq = g.uint("parsecnet.seq");
        let other = if f.src == sides[0].port {
            sides[1].port
        } else {
            sides[0].port
        };
        if on_game_link(f.kind()) {
            // A peer-to-peer player starts each link at a point its token picks
            // (docs/wire-format.md), and counts up by one from there (0 skipped).
            if let Some(last) = last_game.get(&f.src) {
                let next = (*last + 1) % (1 << 32);
                assert_eq!(
                    seq,
                    next.max(1),
                    "{what}: sequence out of step in {}",
                    f.dump()
                );
            }
            last_game.insert(f.src, seq);
            if g.uint("parsecnet.flags.ack") == 1 {
                let theirs = sent.get(&other).cloned().unwrap_or_default();
                for acked in g.uints("parsecnet.acked") {
                    assert!(
                        theirs.contains(&acked),
                        "{what}: acknowledges {acked}, which {other} did not send: {}",
                        f.dump()
                    );
                }
            }
            sent.entry(f.src).or_default().insert(seq);
            counted += 1;
        } else {
            let last = last_other.entry(f.src).or_insert(0);
            assert!(seq > *last, "{what}: sequence went back in {}", f.dump());
            *last = seq;
        }
    }
    assert!(counted > 0, "{what}: no game-link packets");
}

/// The remote events a `c/peer_game.c` game sends, with the values it gives them, and its ship
/// states (see the header comment of peer_game.c).
fn check_game_events(frames: &[&Frame], side: &Side, slot: u64) {
    let mine: Vec<&Frame> = frames
        .iter()
        .copied()
        .filter(|f| f.src == side.port)
        .collect();
    let first = |ty: u8| -> &Node {
        mine.iter()
            .flat_map(|f| f.events_of(ty))
            .next()
            .unwrap_or_else(|| panic!("{}: no event of type {ty}", side.name))
    };
    let s = slot as f32;
    let id = |base: u64| base + slot;
    let who = side.name;

    let e = first(RE_CREATEOBJECT);
    assert_eq!(e.uint("parsecnet.event.object_id"), id(2000), "{who}");
    assert_eq!(e.uint("parsecnet.event.class"), 11);
    assert_eq!(e.vector("parsecnet.event.pos"), [s, 10.0, 20.0]);
    assert_eq!(e.vector("parsecnet.event.orient"), [0.0, 0.6, 0.0, 0.8]);
    assert_eq!(e.uint("parsecnet.event.object_flags"), 0xA500_0000 + slot);
    let e = first(RE_CREATEMISSILE);
    assert_eq!(e.uint("parsecnet.event.object_id"), id(3000), "{who}");
    assert_eq!(e.uint("parsecnet.event.class"), 12);
    assert_eq!(e.vector("parsecnet.event.pos"), [s, 11.0, 21.0]);
    assert_eq!(e.vector("parsecnet.event.dir"), [1.0, 0.0, 0.0]);
    assert_eq!(
        e.uint("parsecnet.event.target_id"),
        u64::from(laser_id(slot as i32))
    );
    let e = first(RE_CREATEEXTRA);
    assert_eq!(e.uint("parsecnet.event.object_id"), id(4000), "{who}");
    assert_eq!(e.uint("parsecnet.event.extra_index"), 13 + slot);
    assert_eq!(e.vector("parsecnet.event.pos"), [s, 12.0, 22.0]);
    let e = first(RE_PARTICLEOBJECT);
    assert_eq!(e.uint("parsecnet.event.particle_type"), 14 + slot, "{who}");
    assert_eq!(e.vector("parsecnet.event.origin"), [s, 13.0, 23.0]);
    let e = first(RE_KILLOBJECT);
    assert_eq!(e.uint("parsecnet.event.object_id"), id(2000), "{who}");
    assert_eq!(e.uint("parsecnet.event.list_id"), 9);
    let e = first(RE_CREATELASER);
    assert_eq!(
        e.uint("parsecnet.event.object_id"),
        u64::from(laser_id(slot as i32)),
        "{who}"
    );
    assert_eq!(e.uint("parsecnet.event.class"), 7);
    assert_eq!(
        e.vector("parsecnet.event.pos"),
        laser_position(slot as i32),
        "{who}: the laser carries the position the callback reported"
    );
    assert_eq!(e.vector("parsecnet.event.dir"), [0.0, 0.0, 1.0]);

    // The two custom events: the reliable one must be there, the unreliable one may be lost.
    let customs: Vec<&Node> = mine.iter().flat_map(|f| f.events_of(RE_CUSTOM)).collect();
    let reliable = customs
        .iter()
        .find(|e| e.uint("parsecnet.event.custom_type") == u64::from(custom_type(slot as i32)))
        .unwrap_or_else(|| panic!("{who}: no reliable custom event"));
    assert_eq!(reliable.uint("parsecnet.event.reliable"), 1);
    assert_eq!(
        reliable.bytes("parsecnet.event.data"),
        custom_data(slot as i32)
    );
    for e in customs
        .iter()
        .filter(|e| e.uint("parsecnet.event.custom_type") == 500 + slot)
    {
        assert_eq!(e.uint("parsecnet.event.reliable"), 0);
        assert_eq!(
            e.bytes("parsecnet.event.data"),
            format!("unreliable from {who}").into_bytes()
        );
    }

    // Every ship state: marker "PSEC", slot, frame F, name; position from F.
    let states: Vec<&Node> = mine
        .iter()
        .filter_map(|f| f.game().child("parsecnet.state"))
        .collect();
    assert!(!states.is_empty(), "{who}: no ship state");
    for state in states {
        let game = state.bytes("parsecnet.state.game");
        assert_eq!(&game[..4], b"PSEC", "{who}: {}", state.dump(0));
        assert_eq!(u64::from(game[4]), slot);
        let frame = u32::from_le_bytes([game[5], game[6], game[7], game[8]]);
        assert_eq!(&game[10..10 + usize::from(game[9])], who.as_bytes());
        let pos = [
            s * 100.0 + (frame % 1000) as f32 * 0.25,
            2.0 * s,
            -((frame % 500) as f32),
        ];
        assert_eq!(
            state.vector("parsecnet.state.pos"),
            pos,
            "{who}: frame {frame}"
        );
        assert_eq!(state.vector("parsecnet.state.orient"), [0.0, 0.0, 0.0, 1.0]);
        assert_eq!(state.vector("parsecnet.state.vel"), [0.25, s, 0.0]);
    }
}

/// A `parsecnet console` playing `name` on `port`, connecting to `peer`: joins, says hello.
fn console(program: &Path, name: &str, port: u16, peer: u16) -> Command {
    let script = format!(
        "net.udp.bind 127.0.0.1; net.udp.ipv6 0; net.port {port}; \
         net.peer.connect_interval 50; name {name}; connect 127.0.0.1:{peer}; wait 1500; \
         join; say hello; wait 1500"
    );
    let mut command = Command::new(program);
    command.args(["console", "--exec", &script]);
    command
}

/// A `c/peer_game.c` game playing `name` on `port`, connecting to `peer`.
fn peer_game(program: &Path, name: &str, port: u16, peer: u16, linger_ms: u64) -> Command {
    let mut command = Command::new(program);
    command.args(game_args(
        name,
        &loopback_setup(port),
        Some(&format!("127.0.0.1:{peer}")),
        1,
        GAME_DURATION_MS,
        linger_ms,
    ));
    command
}

#[test]
fn decodes_a_live_peer_to_peer_session() {
    if !tshark_or_skip() {
        return;
    }
    if !is_root() {
        println!("SKIPPED: capturing on lo needs root");
        return;
    }
    let started = Instant::now();
    let have_console = paths().profile_dir.join("parsecnet").exists();
    let parsecnet = if have_console {
        parsec_net_ffi_tests::server::parsecnet()
    } else {
        PathBuf::new()
    };
    let game = Build::c("c/peer_game.c").build();
    let ports = free_loopback_ports(5);
    let console_sides = [
        Side {
            name: "alice",
            port: ports[0],
            text: "hello".into(),
        },
        Side {
            name: "bob",
            port: ports[1],
            text: "hello".into(),
        },
    ];
    let game_sides = [
        Side {
            name: "alice",
            port: ports[2],
            text: "hello from alice".into(),
        },
        Side {
            name: "bob",
            port: ports[3],
            text: "hello from bob".into(),
        },
    ];

    let dir = ScratchDir::new("live");
    let file = dir.0.join("session.pcapng");
    let capture = Capture::start(&file, &ports[..4], ports[4]);
    // The games are named by their player names: check_all_met expects that.
    let mut runs_of = vec![
        (
            "alice".to_string(),
            peer_game(&game, "alice", ports[2], ports[3], 1500),
        ),
        (
            "bob".to_string(),
            peer_game(&game, "bob", ports[3], ports[2], 500),
        ),
    ];
    if have_console {
        runs_of.push((
            "console alice".into(),
            console(&parsecnet, "alice", ports[0], ports[1]),
        ));
        runs_of.push((
            "console bob".into(),
            console(&parsecnet, "bob", ports[1], ports[0]),
        ));
    } else {
        println!(
            "note: {} is not built (cargo build --workspace): the console session is left out",
            parsecnet.display()
        );
    }
    let runs: Vec<GameRun> = run_together(runs_of, GAME_TIMEOUT, false);
    let capture_log = capture.stop();

    // The sessions themselves worked.
    let game_slots = check_all_met(&runs[..2]);
    for (run, other) in runs[2..].iter().zip(["bob", "alice"]) {
        run.output.assert_success(&run.name);
        assert!(
            run.output.stdout.contains(&format!("<{other}> hello")),
            "{} did not hear {other}\n{}",
            run.name,
            run.output.transcript()
        );
    }

    let frames = dissect(&file, &["-o", "udp.try_heuristic_first:TRUE"]);
    let games = session(&frames, &game_sides);
    let slots = check_session("games", &games, &game_sides);
    assert_eq!(
        slots,
        [game_slots[0] as u64, game_slots[1] as u64],
        "the dissector's slots are the ones the games got"
    );
    let seen: BTreeSet<u64> = games
        .iter()
        .flat_map(|f| f.events())
        .map(|e| e.uint("parsecnet.event.type"))
        .collect();
    assert!(
        seen.is_superset(&(1..=12).collect()),
        "every event type of the game is in the games' traffic: {seen:?}"
    );
    for (side, slot) in game_sides.iter().zip(slots) {
        check_game_events(&games, side, slot);
    }
    let mut summary = format!("games: {} packets", games.len());
    if have_console {
        let consoles = session(&frames, &console_sides);
        check_session("consoles", &consoles, &console_sides);
        summary.push_str(&format!(", consoles: {} packets", consoles.len()));
    }
    println!(
        "{summary}; {} frames captured, {:?} in all",
        frames.len(),
        started.elapsed()
    );
    if frames.is_empty() {
        panic!("nothing captured\n{capture_log}");
    }
}
