//! Seeded random clients against the three real servers (SPEC section 6): per seed one
//! `parsecnet slotserver`, one `gameserver` and one `masterserver` on 127.0.0.1, each driven by
//! 8-24 raw TCP clients (from 127.0.0.10, .11, ...) doing random things in a random order:
//! joins (valid, a name another player holds, 31- and 32-byte names, another major version,
//! garbage, empty lines, a second join), `my new name:` (free, taken, its own, too long, not
//! joined), `remove me` (joined or not), lines of 255 bytes (refused, the connection stays) and of
//! 256 and more (refused and closed), LF or CR LF, a line split over several writes, several
//! lines in one write, an abrupt close, a half-close (with an unterminated last line),
//! reconnects; on the masterserver also `players: P max: M` (valid, P > M, M = 0, negative,
//! over 65535, garbage), `list servers` and a second join.
//!
//! The test keeps a model of each server and runs the clients one step at a time (a step's
//! replies are read before the next step is sent, so the server's order is the model's). After
//! every step the acting client reads exactly the lines the model predicts: its reply (the
//! accept line, the four message lines and one `add ip:` per player there, in slot order) after
//! every update (`add ip:`, `remove ip:`, `name ip:`, with the extension's fields for clients that
//! joined with a token) that the model queued for it since its last read. Clients that are not
//! acting check their queue at random moments with a request that changes nothing (a joined
//! player renames itself to its own name, which nobody is told; another sends `remove me`): the
//! reply must come right after the predicted lines, so a missing, extra or reordered line fails.
//! After closes, and at the end, the published lists must match the model (JSON over HTTP, the
//! `--html` file; the masterserver's JSON and `list servers`). At the end every client is checked
//! once more, the servers are stopped with SIGTERM and their counters (joins, refusals,
//! renames, ...) and `joined` / `refused` log lines must match what the model counted.
//!
//! `SERVER_CHAOS_SEED=S` replays one seed, `SERVER_CHAOS_FIRST=F SERVER_CHAOS_RUNS=R` runs seeds
//! F..F+R, `SERVER_CHAOS_STEPS=N` sets the steps per server (see docs/fuzzing.md). A failure names
//! its seed, server and step and shows the steps before it.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

mod support;

/// A read that waits longer than this is a missing line.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// The published lists must match the model within this time after a change.
const SETTLE: Duration = Duration::from_secs(5);

const DEFAULT_SEEDS: &[u64] = &[1, 2, 3];
const DEFAULT_STEPS: usize = 150;

const MESSAGES: [&str; 4] = ["Welcome to Chaos", "Rule one: fly", "", "Rule three: 255"];

// ----- seeded randomness -----

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn seeds() -> Vec<u64> {
    if let Some(seed) = env_u64("SERVER_CHAOS_SEED") {
        return vec![seed];
    }
    if let Some(runs) = env_u64("SERVER_CHAOS_RUNS") {
        let first = env_u64("SERVER_CHAOS_FIRST").unwrap_or(1000);
        return (first..first + runs).collect();
    }
    DEFAULT_SEEDS.to_vec()
}

fn steps() -> usize {
    env_u64("SERVER_CHAOS_STEPS").map_or(DEFAULT_STEPS, |s| s as usize)
}

// ----- the server process -----

struct Server {
    child: Child,
    stdout: BufReader<ChildStdout>,
    tcp: SocketAddr,
    http: SocketAddr,
    /// A gameserver's UDP port.
    udp: Option<u16>,
    log: PathBuf,
}

impl Server {
    fn start(kind: &str, args: &[&str], dir: &Path) -> Server {
        let log = dir.join(format!("{kind}.log"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_parsecnet"))
            .arg(kind)
            .args(["--bind", "127.0.0.1", "--port", "0", "--http-port", "0"])
            .args(args)
            .env("PARSEC_NET_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("parsecnet runs");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let address_after = |marker: &str| -> SocketAddr {
            let text = line.split(marker).nth(1).expect(marker);
            let text = text.split([',', ' ', '/']).next().unwrap();
            let port: u16 = text.rsplit_once(':').unwrap().1.parse().unwrap();
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        };
        let (tcp, http) = (address_after("on TCP "), address_after("http://"));
        let udp = line.contains("UDP ").then(|| address_after("UDP ").port());
        Server {
            child,
            stdout,
            tcp,
            http,
            udp,
            log,
        }
    }

    fn get(&self, path: &str) -> String {
        let mut stream = TcpStream::connect(self.http).unwrap();
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
        assert!(
            head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
            "{head}"
        );
        body.to_string()
    }

    /// SIGTERM; the `stopped; NAME=N ...` line it printed and its log.
    fn stop(mut self) -> (String, String) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let mut rest = String::new();
        let _ = self.stdout.read_to_string(&mut rest);
        let _ = self.child.wait();
        let stopped = rest
            .lines()
            .find(|l| l.contains(" stopped"))
            .unwrap_or_default()
            .to_string();
        (
            stopped,
            std::fs::read_to_string(&self.log).unwrap_or_default(),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn counter(stopped: &str, name: &str) -> u64 {
    stopped
        .split_whitespace()
        .find_map(|w| w.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
        .map_or(0, |v| v.parse().unwrap())
}

// ----- a raw TCP connection -----

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Its sending side is shut (half-close).
    write_shut: bool,
}

impl Conn {
    fn open(server: SocketAddr, ip: Ipv4Addr) -> Conn {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket
            .bind(&SocketAddr::new(IpAddr::V4(ip), 0).into())
            .unwrap();
        socket.connect(&server.into()).unwrap();
        let stream: TcpStream = socket.into();
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        Conn {
            stream,
            buf: Vec::new(),
            write_shut: false,
        }
    }

    /// The next line (without its `\n`); `Err` says what came instead.
    fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                return Ok(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(format!("end of stream after {:?}", self.partial())),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("{e} after {:?}", self.partial())),
            }
        }
    }

    fn partial(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
    }

    /// The server closed it: end of stream (or a reset) and nothing more.
    fn closed(&mut self) -> Result<(), String> {
        if !self.buf.is_empty() {
            return Err(format!("more bytes: {:?}", self.partial()));
        }
        let mut byte = [0u8; 64];
        match self.stream.read(&mut byte) {
            Ok(0) => Ok(()),
            Ok(n) => Err(format!(
                "more bytes: {:?}",
                String::from_utf8_lossy(&byte[..n])
            )),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(()),
            Err(e) => Err(format!("not closed: {e}")),
        }
    }

    /// Write `bytes` at once or split in 2-4 writes with short pauses.
    fn send(&mut self, rng: &mut Rng, bytes: &[u8]) {
        if bytes.len() < 2 || rng.chance(60) {
            let _ = self.stream.write_all(bytes);
            return;
        }
        let mut cuts: Vec<usize> = (0..1 + rng.below(3))
            .map(|_| 1 + rng.below(bytes.len() - 1))
            .collect();
        cuts.push(0);
        cuts.push(bytes.len());
        cuts.sort_unstable();
        cuts.dedup();
        for pair in cuts.windows(2) {
            let _ = self.stream.write_all(&bytes[pair[0]..pair[1]]);
            let _ = self.stream.flush();
            std::thread::sleep(Duration::from_micros(rng.below(1500) as u64));
        }
    }
}

// ----- what failed -----

struct Trace {
    seed: u64,
    server: &'static str,
    step: usize,
    lines: VecDeque<String>,
}

impl Trace {
    fn note(&mut self, text: String) {
        if self.lines.len() == 40 {
            self.lines.pop_front();
        }
        self.lines.push_back(format!("step {}: {text}", self.step));
    }

    #[track_caller]
    fn fail(&self, what: String) -> ! {
        panic!(
            "server_chaos seed {} ({} step {}): {what}\nthe steps before:\n{}\nreplay with \
             SERVER_CHAOS_SEED={} (SERVER_CHAOS_STEPS={})",
            self.seed,
            self.server,
            self.step,
            self.lines.iter().cloned().collect::<Vec<_>>().join("\n"),
            self.seed,
            steps()
        )
    }
}

fn terminate(rng: &mut Rng, line: &str) -> String {
    if rng.chance(30) {
        format!("{line}\r\n")
    } else {
        format!("{line}\n")
    }
}

// ----- slotserver and gameserver -----

struct Player {
    name: String,
    /// Joined with ` port: P token: T`.
    extended: bool,
}

struct SlotClient {
    ip: Ipv4Addr,
    game_port: u16,
    token: u32,
    conn: Option<Conn>,
    /// The slot it holds.
    slot: Option<u8>,
    player: Option<Player>,
    /// Lines the model says reach it before the reply to its next request.
    pending: VecDeque<String>,
    /// Its joins so far: a gameserver tells the others a new id for each.
    joins: u32,
}

#[derive(Default)]
struct SlotCounts {
    joins: u64,
    full: u64,
    taken: u64,
    version: u64,
    invalid: u64,
    removes: u64,
    renames: u64,
    renames_refused: u64,
}

/// One request as the model sees it.
#[derive(Clone, Debug)]
enum SlotRequest {
    Join {
        name: String,
        extended: bool,
    },
    Rename(String),
    Remove,
    /// Another major version: `server version incompatible` whatever else.
    Incompatible,
    /// Anything the server cannot parse (and a 255-byte line).
    Invalid,
}

struct SlotWorld<'a> {
    kind: &'static str,
    server: Server,
    html: PathBuf,
    server_name: String,
    max: usize,
    clients: Vec<SlotClient>,
    counts: SlotCounts,
    rng: &'a mut Rng,
    trace: Trace,
    udp_port: u16,
    server_token: Option<String>,
    /// What a gameserver told the others for (client, join) in the token's place: a random id,
    /// learnt from the first line that names it, and never the client's token.
    told: HashMap<(usize, u32), u32>,
}

const NAMES: &[&str] = &[
    "alice",
    "bob",
    "carol",
    "dave",
    "eve",
    "mallory",
    "a b",
    "Bob",
    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", // 31 bytes
    "x",
];

impl SlotWorld<'_> {
    fn name_holder(&self, name: &str) -> Option<usize> {
        self.clients
            .iter()
            .position(|c| c.player.as_ref().is_some_and(|p| p.name == name))
    }

    fn free_slot(&self) -> Option<u8> {
        (0..self.max as u8).find(|s| !self.clients.iter().any(|c| c.slot == Some(*s)))
    }

    fn add_line(&self, about: usize, receiver_extended: bool) -> String {
        let c = &self.clients[about];
        let p = c.player.as_ref().unwrap();
        let mut line = format!("add ip: {} name: {} in {}", c.ip, p.name, c.slot.unwrap());
        if receiver_extended {
            let port = if p.extended { c.game_port } else { 6526 };
            let _ = write!(line, " port: {port} token: ");
            if self.kind == "gameserver" {
                let _ = write!(line, "?{about}/{}", c.joins);
            } else {
                let _ = write!(line, "{}", if p.extended { c.token } else { 0 });
            }
        }
        line
    }

    /// Queue `line(receiver_extended)` for every joined client but `except`.
    fn tell_others(&mut self, except: usize, line: impl Fn(bool) -> String) {
        for i in 0..self.clients.len() {
            if i == except {
                continue;
            }
            if let Some(p) = &self.clients[i].player {
                let text = line(p.extended);
                self.clients[i].pending.push_back(text);
            }
        }
    }

    fn leave(&mut self, who: usize) {
        let c = &self.clients[who];
        let ip = c.ip;
        let port = if c.player.as_ref().unwrap().extended {
            c.game_port
        } else {
            6526
        };
        self.clients[who].player = None;
        self.clients[who].slot = None;
        self.tell_others(who, |ext| {
            if ext {
                format!("remove ip: {ip} port: {port}")
            } else {
                format!("remove ip: {ip}")
            }
        });
    }

    /// The model's replies to `req` from `who` (and the updates queued for the others).
    fn apply(&mut self, who: usize, req: &SlotRequest) -> Vec<String> {
        match req {
            SlotRequest::Invalid => {
                self.counts.invalid += 1;
                vec!["you sent an invalid request".into()]
            }
            SlotRequest::Incompatible => {
                self.counts.version += 1;
                vec!["server version incompatible".into()]
            }
            SlotRequest::Join { name, extended } => {
                if self.clients[who].player.is_some() {
                    self.counts.invalid += 1;
                    return vec!["you sent an invalid request".into()];
                }
                let Some(slot) = self.free_slot() else {
                    self.counts.full += 1;
                    return vec!["server full".into()];
                };
                if self.name_holder(name).is_some() {
                    self.counts.taken += 1;
                    return vec!["name already taken".into()];
                }
                self.counts.joins += 1;
                let mut accepted = format!(
                    "join from {name} accepted, slot: {slot}, server name: {}",
                    self.server_name
                );
                if *extended {
                    let _ = write!(accepted, " udp: {} token: ", self.udp_port);
                    accepted.push_str(self.server_token.as_deref().unwrap_or("?"));
                }
                let mut lines = vec![accepted];
                lines.extend(MESSAGES.map(String::from));
                let mut others: Vec<usize> = (0..self.clients.len())
                    .filter(|&i| self.clients[i].slot.is_some())
                    .collect();
                others.sort_by_key(|&i| self.clients[i].slot);
                for i in others {
                    lines.push(self.add_line(i, *extended));
                }
                self.clients[who].slot = Some(slot);
                self.clients[who].joins += 1;
                self.clients[who].player = Some(Player {
                    name: name.clone(),
                    extended: *extended,
                });
                let lines_for: Vec<(bool, String)> = [false, true]
                    .iter()
                    .map(|&e| (e, self.add_line(who, e)))
                    .collect();
                self.tell_others(who, |ext| lines_for[usize::from(ext)].1.clone());
                lines
            }
            SlotRequest::Rename(name) => {
                let Some(player) = &self.clients[who].player else {
                    self.counts.renames_refused += 1;
                    return vec!["you're not even joined".into()];
                };
                if player.name == *name {
                    return vec!["new name accepted".into()];
                }
                if self.name_holder(name).is_some() {
                    self.counts.renames_refused += 1;
                    return vec!["name already taken".into()];
                }
                self.counts.renames += 1;
                let c = &self.clients[who];
                let (ip, port) = (c.ip, if player.extended { c.game_port } else { 6526 });
                self.clients[who].player.as_mut().unwrap().name = name.clone();
                let name = name.clone();
                self.tell_others(who, |ext| {
                    if ext {
                        format!("name ip: {ip} name: {name} port: {port}")
                    } else {
                        format!("name ip: {ip} name: {name}")
                    }
                });
                vec!["new name accepted".into()]
            }
            SlotRequest::Remove => {
                if self.clients[who].player.is_none() {
                    return vec!["you're not even joined".into()];
                }
                self.counts.removes += 1;
                self.leave(who);
                vec!["removing you".into()]
            }
        }
    }

    /// A random request line and what the model makes of it.
    fn random_request(&mut self, who: usize) -> (String, SlotRequest) {
        let rng = &mut *self.rng;
        let c = &self.clients[who];
        match rng.below(100) {
            0..=34 => {
                let name = if rng.chance(15) {
                    format!("p{}", rng.below(1000))
                } else {
                    rng.pick(NAMES).to_string()
                };
                let extended = rng.chance(35);
                let version = *rng.pick(&["1.0", "1.0", "1.0", "1.7", "1.12"]);
                let mut line = format!("version: {version} join me: {name} os: chaos-os");
                if extended {
                    let _ = write!(line, " port: {} token: {}", c.game_port, c.token);
                }
                (line, SlotRequest::Join { name, extended })
            }
            35..=44 => {
                let (line, req) = match rng.below(8) {
                    0 => (
                        format!("version: 1.0 join me: {} os: x", "n".repeat(32)),
                        SlotRequest::Invalid,
                    ),
                    1 => (
                        "version: 2.0 join me: bob os: x".to_string(),
                        SlotRequest::Incompatible,
                    ),
                    2 => (
                        "version: 0.9 join me: bob os: x".to_string(),
                        SlotRequest::Incompatible,
                    ),
                    3 => ("version: x.y join me".to_string(), SlotRequest::Invalid),
                    4 => (String::new(), SlotRequest::Invalid),
                    5 => ("hello".to_string(), SlotRequest::Invalid),
                    6 => (
                        "version: 1.0 join me: bob os: x token: 0".to_string(),
                        SlotRequest::Invalid,
                    ),
                    _ => ("remove me please".to_string(), SlotRequest::Invalid),
                };
                (line, req)
            }
            45..=69 => {
                let name = match rng.below(10) {
                    0..=1 => c.player.as_ref().map_or("bob".into(), |p| p.name.clone()),
                    2 => {
                        return (
                            format!("my new name: {}", "m".repeat(32)),
                            SlotRequest::Invalid,
                        )
                    }
                    3 => format!("r{}", rng.below(1000)),
                    _ => rng.pick(NAMES).to_string(),
                };
                (format!("my new name: {name}"), SlotRequest::Rename(name))
            }
            70..=84 => ("remove me".to_string(), SlotRequest::Remove),
            _ => {
                // A line of exactly 255 bytes: nothing it says, but not too long.
                let mut line = String::from("my new name is far too long: ");
                while line.len() < 255 {
                    line.push('z');
                }
                (line, SlotRequest::Invalid)
            }
        }
    }

    fn connect(&mut self, who: usize) {
        let conn = Conn::open(self.server.tcp, self.clients[who].ip);
        self.clients[who].conn = Some(conn);
        self.trace.note(format!("client {who} connects"));
    }

    /// Read the lines queued for `who` and then `replies`, exactly.
    fn expect(&mut self, who: usize, replies: Vec<String>) {
        let tokens: Vec<u32> = self.clients.iter().map(|c| c.token).collect();
        let c = &mut self.clients[who];
        let mut wanted: Vec<String> = c.pending.drain(..).collect();
        wanted.extend(replies);
        let conn = c.conn.as_mut().expect("connected");
        for (i, want) in wanted.iter().enumerate() {
            match conn.line() {
                Ok(got) if got == *want => {}
                Ok(got) => {
                    if let Some(token) = learn_token(want, &got) {
                        self.server_token = Some(token);
                        continue;
                    }
                    if told_id_matches(&mut self.told, &tokens, want, &got) {
                        continue;
                    }
                    self.trace.fail(format!(
                        "client {who} expected {:?}, got {got:?} (line {i} of {wanted:?})",
                        want
                    ))
                }
                Err(e) => self.trace.fail(format!(
                    "client {who} expected {want:?} (line {i} of {wanted:?}), got {e}"
                )),
            }
        }
    }

    /// A request that changes nothing, to check that nothing but the queued lines came.
    fn sync(&mut self, who: usize) {
        let c = &self.clients[who];
        let Some(conn) = &c.conn else { return };
        if conn.write_shut {
            return;
        }
        let (line, reply) = match &c.player {
            Some(p) => (format!("my new name: {}", p.name), "new name accepted"),
            None => ("remove me".to_string(), "you're not even joined"),
        };
        let bytes = terminate(self.rng, &line);
        self.trace
            .note(format!("client {who} checks with {line:?}"));
        self.clients[who]
            .conn
            .as_mut()
            .unwrap()
            .send(self.rng, bytes.as_bytes());
        self.expect(who, vec![reply.to_string()]);
    }

    /// Close `who`'s connection on our side (abruptly).
    fn drop_conn(&mut self, who: usize) {
        self.clients[who].conn = None;
        self.clients[who].pending.clear();
        if self.clients[who].player.is_some() {
            self.leave(who);
            self.settle();
        }
    }

    /// Wait until the published JSON list is the model's.
    fn settle(&mut self) {
        let want = self.model_roster();
        let deadline = Instant::now() + SETTLE;
        loop {
            let got = roster_of_json(&self.server.get("/players.json"));
            if got == want {
                return;
            }
            if Instant::now() > deadline {
                self.trace.fail(format!(
                    "the JSON player list is {got:?}, the model's {want:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn model_roster(&self) -> Vec<(u8, String, String)> {
        let mut want: Vec<(u8, String, String)> = self
            .clients
            .iter()
            .filter_map(|c| {
                let p = c.player.as_ref()?;
                Some((c.slot.unwrap(), p.name.clone(), c.ip.to_string()))
            })
            .collect();
        want.sort();
        want
    }

    fn check_html(&mut self) {
        let want = self.model_roster();
        let deadline = Instant::now() + SETTLE;
        loop {
            let html = std::fs::read_to_string(&self.html).unwrap_or_default();
            let got = roster_of_html(&html);
            if got == want {
                return;
            }
            if Instant::now() > deadline {
                self.trace.fail(format!(
                    "the --html player list is {got:?}, the model's {want:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn step(&mut self) {
        let who = self.rng.below(self.clients.len());
        if self.clients[who].conn.is_none() {
            self.connect(who);
            if self.rng.chance(50) {
                return;
            }
        }
        match self.rng.below(100) {
            0..=59 => {
                let (line, req) = self.random_request(who);
                self.trace
                    .note(format!("client {who} sends {line:?} ({req:?})"));
                let bytes = terminate(self.rng, &line);
                self.clients[who]
                    .conn
                    .as_mut()
                    .unwrap()
                    .send(self.rng, bytes.as_bytes());
                let replies = self.apply(who, &req);
                self.expect(who, replies);
            }
            60..=69 => {
                // Several lines in one write (or split anywhere).
                let mut bytes = String::new();
                let mut replies = Vec::new();
                for _ in 0..2 + self.rng.below(3) {
                    let (line, req) = self.random_request(who);
                    self.trace
                        .note(format!("client {who} sends {line:?} ({req:?}) in a batch"));
                    bytes.push_str(&terminate(self.rng, &line));
                    replies.extend(self.apply(who, &req));
                }
                self.clients[who]
                    .conn
                    .as_mut()
                    .unwrap()
                    .send(self.rng, bytes.as_bytes());
                self.expect(who, replies);
            }
            70..=73 => {
                let len = 256 + self.rng.below(300);
                self.trace
                    .note(format!("client {who} sends a {len}-byte line"));
                let mut bytes = "version: 1.0 join me: ".to_string();
                while bytes.len() < len {
                    bytes.push('o');
                }
                let bytes = terminate(self.rng, &bytes);
                self.clients[who]
                    .conn
                    .as_mut()
                    .unwrap()
                    .send(self.rng, bytes.as_bytes());
                self.counts.invalid += 1;
                self.expect(who, vec!["you sent an invalid request".into()]);
                if let Err(e) = self.clients[who].conn.as_mut().unwrap().closed() {
                    self.trace
                        .fail(format!("client {who}: after an overlong line: {e}"));
                }
                self.drop_conn(who);
            }
            74..=79 => {
                self.trace.note(format!("client {who} closes abruptly"));
                self.drop_conn(who);
            }
            80..=84 => {
                // Half-close, perhaps after an unterminated last line.
                let mut replies = Vec::new();
                let mut bytes = String::new();
                if self.rng.chance(60) {
                    let (line, req) = self.random_request(who);
                    // No byte is no line (an empty one ends the stream without one).
                    if !line.is_empty() {
                        self.trace.note(format!(
                            "client {who} sends {line:?} ({req:?}) without a newline"
                        ));
                        replies = self.apply(who, &req);
                        bytes = line;
                    }
                }
                self.trace.note(format!("client {who} half-closes"));
                let conn = self.clients[who].conn.as_mut().unwrap();
                conn.send(self.rng, bytes.as_bytes());
                let _ = conn.stream.shutdown(Shutdown::Write);
                conn.write_shut = true;
                self.expect(who, replies);
                if let Err(e) = self.clients[who].conn.as_mut().unwrap().closed() {
                    self.trace
                        .fail(format!("client {who}: after its half-close: {e}"));
                }
                self.drop_conn(who);
            }
            85..=87 => {
                self.trace.note(format!("client {who} reconnects"));
                self.drop_conn(who);
                self.connect(who);
            }
            88..=96 => {
                for _ in 0..1 + self.rng.below(4) {
                    let other = self.rng.below(self.clients.len());
                    self.sync(other);
                }
            }
            _ => {
                self.trace.note("the lists are checked".into());
                self.settle();
            }
        }
    }

    fn finish(mut self) {
        for who in 0..self.clients.len() {
            self.sync(who);
        }
        self.settle();
        self.check_html();
        let SlotWorld {
            server,
            counts,
            trace,
            ..
        } = self;
        let (stopped, log) = server.stop();
        let checks = [
            ("joins", counts.joins),
            ("joins_refused_full", counts.full),
            ("joins_refused_name_taken", counts.taken),
            ("joins_refused_version", counts.version),
            ("invalid_requests", counts.invalid),
            ("removes", counts.removes),
            ("renames", counts.renames),
            ("renames_refused", counts.renames_refused),
        ];
        check_counters(&trace, "server", &stopped, &checks);
        let joined = log_lines(&log, "' joined from ");
        if joined != counts.joins {
            trace.fail(format!(
                "the log has {joined} 'joined' lines, the model {} joins",
                counts.joins
            ));
        }
        check_refusal_lines(
            &trace,
            &log,
            &[
                ("refused: server full", counts.full),
                ("refused: name already taken", counts.taken),
                ("refused: server version incompatible", counts.version),
            ],
        );
    }
}

/// Each counter in the stopped server's summary against the model's count.
fn check_counters(trace: &Trace, server: &str, stopped: &str, checks: &[(&str, u64)]) {
    for &(name, want) in checks {
        let got = counter(stopped, name);
        if got != want {
            trace.fail(format!(
                "the {server} counted {name}={got}, the model {want}: {stopped}"
            ));
        }
    }
}

/// How many lines of `log` contain `text`.
fn log_lines(log: &str, text: &str) -> u64 {
    log.lines().filter(|l| l.contains(text)).count() as u64
}

/// The refusal lines of each kind (`(text, refusals the model counted)`) in a stopped server's
/// log. Refusal lines are rate-limited (at most 5 per address and 50 over all in 10 s: a
/// client sharing its address with others, or a busy run, may have none of a kind logged), and
/// every refusal not logged is counted in a summary line (`... N more refusals ... not
/// logged`, at the latest when the server stops: docs/server-admin.md). So each kind has at
/// most as many lines as refusals, and the lines and the summaries' numbers together cover
/// every refusal (they may cover more: other refusals, such as connection limits, share the
/// limit).
fn check_refusal_lines(trace: &Trace, log: &str, kinds: &[(&str, u64)]) {
    let mut logged = 0;
    for &(text, want) in kinds {
        let got = log_lines(log, text);
        if got > want {
            trace.fail(format!(
                "the log has {got} '{text}' lines, the model {want} refusals"
            ));
        }
        logged += got;
    }
    let not_logged: u64 = log
        .lines()
        .filter(|l| l.contains(" more refusals ") && l.contains(" not logged"))
        .map(|l| {
            let count = l.split("... ").nth(1).and_then(|r| r.split(' ').next());
            count
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| {
                    trace.fail(format!("a summary line without a number: {l}"));
                })
        })
        .sum();
    let refused: u64 = kinds.iter().map(|&(_, want)| want).sum();
    if logged + not_logged < refused {
        trace.fail(format!(
            "the log has {logged} refusal lines and {not_logged} refusals not logged, the \
             model {refused} refusals"
        ));
    }
}

/// The token in an extended accept line the model wrote with `?`.
/// `got` is `want` whose token is a gameserver's id for a player (`?CLIENT/JOIN`): an id
/// that is not the client's token and is the same in every line about that join.
fn told_id_matches(
    told: &mut HashMap<(usize, u32), u32>,
    tokens: &[u32],
    want: &str,
    got: &str,
) -> bool {
    let Some((prefix, marker)) = want.rsplit_once("token: ?") else {
        return false;
    };
    let Some((who, join)) = marker.split_once('/') else {
        return false;
    };
    let (Ok(who), Ok(join)) = (who.parse::<usize>(), join.parse::<u32>()) else {
        return false;
    };
    let Some(id) = got
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix("token: "))
        .and_then(|id| id.parse::<u32>().ok())
    else {
        return false;
    };
    if id == 0 || id == tokens[who] {
        return false;
    }
    *told.entry((who, join)).or_insert(id) == id
}

fn learn_token(want: &str, got: &str) -> Option<String> {
    let prefix = want.strip_suffix("token: ?")?;
    let token = got.strip_prefix(prefix)?.strip_prefix("token: ")?;
    (token.parse::<u32>().is_ok_and(|t| t != 0)).then(|| token.to_string())
}

/// (slot, name, address) of every player in a `/players.json` document, sorted.
fn roster_of_json(json: &str) -> Vec<(u8, String, String)> {
    let mut out = Vec::new();
    for part in json.split("{\"slot\": ").skip(1) {
        let (slot, rest) = part.split_once(", \"name\": \"").unwrap();
        let (name, rest) = rest.split_once("\", \"address\": \"").unwrap();
        let (address, _) = rest.split_once('"').unwrap();
        out.push((slot.parse().unwrap(), name.to_string(), address.to_string()));
    }
    out.sort();
    out
}

/// (slot, name, address) of every player row of the HTML list, sorted.
fn roster_of_html(html: &str) -> Vec<(u8, String, String)> {
    let mut out = Vec::new();
    for row in html.split("<tr><td>").skip(1) {
        let cells: Vec<&str> = row.split("</td><td>").collect();
        if cells.len() < 3 {
            continue;
        }
        let Ok(slot) = cells[0].parse() else { continue };
        out.push((slot, cells[1].to_string(), cells[2].to_string()));
    }
    out.sort();
    out
}

fn slot_chaos(kind: &'static str, seed: u64, rng: &mut Rng, dir: &Path) {
    let max = 1 + rng.below(8);
    let count = 8 + rng.below(17);
    let server_name = format!("Chaos {seed}");
    let messages = dir.join("motd.txt");
    std::fs::write(&messages, MESSAGES.join("\n") + "\n").unwrap();
    let html = dir.join(format!("{kind}.html"));
    let max_text = max.to_string();
    let mut args = vec![
        "--name",
        &server_name,
        "--max-players",
        &max_text,
        "--messages",
        messages.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--max-per-address",
        "64",
    ];
    if kind == "gameserver" {
        // Raw TCP clients send no UDP: keep them seated.
        args.extend(["--udp-port", "0", "--alive-timeout", "3600"]);
    }
    let server = Server::start(kind, &args, dir);
    let mut world = SlotWorld {
        kind,
        server,
        html,
        server_name,
        max,
        clients: (0..count)
            .map(|i| SlotClient {
                // Some clients share an address, as players behind one NAT do.
                ip: Ipv4Addr::new(127, 0, 0, 10 + (i % (count - count / 4)) as u8),
                game_port: 20000 + i as u16,
                token: 1000 + i as u32,
                conn: None,
                slot: None,
                player: None,
                pending: VecDeque::new(),
                joins: 0,
            })
            .collect(),
        counts: SlotCounts::default(),
        rng,
        trace: Trace {
            seed,
            server: kind,
            step: 0,
            lines: VecDeque::new(),
        },
        udp_port: 0,
        server_token: None,
        told: HashMap::new(),
    };
    world.udp_port = world.server.udp.unwrap_or(0);
    let _ = world.kind;
    for step in 0..steps() {
        world.trace.step = step;
        world.step();
    }
    world.finish();
}

#[test]
fn random_clients_keep_the_slot_protocol() {
    for seed in seeds() {
        for (i, kind) in ["slotserver", "gameserver"].into_iter().enumerate() {
            let dir = std::env::temp_dir().join(format!(
                "servers-chaos-{kind}-{}-{seed}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let mut rng = Rng(seed.wrapping_mul(3).wrapping_add(i as u64));
            slot_chaos(kind, seed, &mut rng, &dir);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

// ----- masterserver -----

#[derive(Clone)]
struct Listing {
    name: String,
    os: String,
    url: String,
    kind: &'static str,
    port: u16,
    udp: u16,
    players: u32,
    max: u32,
    /// When it joined (the list's order).
    order: u64,
}

struct MasterClient {
    ip: Ipv4Addr,
    conn: Option<Conn>,
    listed: Option<Listing>,
}

#[derive(Default)]
struct MasterCounts {
    joins: u64,
    full: u64,
    version: u64,
    illegal: u64,
    removes: u64,
    player_updates: u64,
    list_requests: u64,
}

#[derive(Debug)]
enum MasterRequest {
    /// A valid join line for this listing.
    Join(usize),
    Players(u32, u32),
    Remove,
    List,
    Incompatible,
    Illegal,
}

struct MasterWorld<'a> {
    server: Server,
    max: usize,
    clients: Vec<MasterClient>,
    counts: MasterCounts,
    rng: &'a mut Rng,
    trace: Trace,
    joined: u64,
    /// The listings of the join lines sent (MasterRequest::Join indexes it).
    offered: Vec<Listing>,
}

const SERVER_NAMES: &[&str] = &[
    "Gamma Quadrant",
    "alpha",
    "a",
    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
    "Tom's <b>server</b> & co",
];

impl MasterWorld<'_> {
    fn listed(&self) -> Vec<&MasterClient> {
        let mut listed: Vec<&MasterClient> =
            self.clients.iter().filter(|c| c.listed.is_some()).collect();
        listed.sort_by_key(|c| c.listed.as_ref().unwrap().order);
        listed
    }

    fn list_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .listed()
            .iter()
            .map(|c| {
                let l = c.listed.as_ref().unwrap();
                format!(
                    "server: ip: {} port: {} kind: {} udp: {} players: {} max: {} os: {} url: {} \
                     name: {}",
                    c.ip, l.port, l.kind, l.udp, l.players, l.max, l.os, l.url, l.name
                )
            })
            .collect();
        lines.push("end of list".into());
        lines
    }

    fn random_request(&mut self) -> (String, MasterRequest) {
        let rng = &mut *self.rng;
        match rng.below(100) {
            0..=29 => {
                let kind = *rng.pick(&["unknown", "slotserver", "gameserver"]);
                let listing = Listing {
                    name: rng.pick(SERVER_NAMES).to_string(),
                    os: rng.pick(&["linux", "i586 pc", "x"]).to_string(),
                    url: rng
                        .pick(&["-", "http://gamma.example/", "www.example.org"])
                        .to_string(),
                    kind,
                    port: if kind == "unknown" {
                        0
                    } else {
                        1 + rng.below(65535) as u16
                    },
                    udp: if kind == "gameserver" {
                        1 + rng.below(65535) as u16
                    } else {
                        0
                    },
                    players: 0,
                    max: *rng.pick(&[1, 16, 65535]),
                    order: 0,
                };
                let version = *rng.pick(&["1.0", "1.0", "1.3"]);
                let mut line = format!(
                    "version: {version} join me: {} os: {} maxplayers: {} url: {}",
                    listing.name, listing.os, listing.max, listing.url
                );
                if kind != "unknown" {
                    let _ = write!(line, " kind: {kind} port: {}", listing.port);
                }
                if listing.udp != 0 {
                    let _ = write!(line, " udp: {}", listing.udp);
                }
                self.offered.push(listing);
                (line, MasterRequest::Join(self.offered.len() - 1))
            }
            30..=54 => {
                let (p, m) = match rng.below(6) {
                    0..=2 => {
                        let m = 1 + rng.below(65535) as u32;
                        (rng.below(m as usize + 1) as u32, m)
                    }
                    3 => (5, 4),
                    4 => (0, 0),
                    _ => (3, 65536),
                };
                (
                    format!("players: {p} max: {m}"),
                    MasterRequest::Players(p, m),
                )
            }
            55..=64 => ("remove me".into(), MasterRequest::Remove),
            65..=74 => ("list servers".into(), MasterRequest::List),
            75..=79 => (
                "version: 2.0 join me: a os: b maxplayers: 4 url: -".into(),
                MasterRequest::Incompatible,
            ),
            _ => {
                let line = match rng.below(7) {
                    0 => "players: -1 max: 4".to_string(),
                    1 => "players: many max: 4".to_string(),
                    2 => "version: 1.0 join me: a os: b maxplayers: 0 url: -".to_string(),
                    3 => format!(
                        "version: 1.0 join me: {} os: b maxplayers: 4 url: -",
                        "n".repeat(32)
                    ),
                    4 => String::new(),
                    5 => "version: 1.0 join me: a os: b maxplayers: 4 url: - kind: x".into(),
                    _ => {
                        let mut line = String::from("list servers ");
                        while line.len() < 511 {
                            line.push('s');
                        }
                        line
                    }
                };
                (line, MasterRequest::Illegal)
            }
        }
    }

    fn apply(&mut self, who: usize, req: &MasterRequest) -> Vec<String> {
        let illegal = || vec!["illegal request not processed".to_string()];
        match *req {
            MasterRequest::Illegal => {
                self.counts.illegal += 1;
                illegal()
            }
            MasterRequest::Incompatible => {
                self.counts.version += 1;
                vec!["masterserver version incompatible".into()]
            }
            MasterRequest::Join(offer) => {
                if self.clients[who].listed.is_some() {
                    self.counts.illegal += 1;
                    return illegal();
                }
                if self.listed().len() >= self.max {
                    self.counts.full += 1;
                    return vec!["masterserver full".into()];
                }
                self.counts.joins += 1;
                self.joined += 1;
                let mut listing = self.offered[offer].clone();
                listing.order = self.joined;
                self.clients[who].listed = Some(listing);
                vec!["join accepted".into()]
            }
            MasterRequest::Players(p, m) => {
                let Some(listing) = self.clients[who].listed.as_mut() else {
                    self.counts.illegal += 1;
                    return illegal();
                };
                if p > m || m == 0 || m > 65535 {
                    self.counts.illegal += 1;
                    return illegal();
                }
                self.counts.player_updates += 1;
                (listing.players, listing.max) = (p, m);
                vec!["players acknowledged.".into()]
            }
            MasterRequest::Remove => {
                if self.clients[who].listed.take().is_none() {
                    return vec!["you're not even joined".into()];
                }
                self.counts.removes += 1;
                vec!["removing you".into()]
            }
            MasterRequest::List => {
                self.counts.list_requests += 1;
                self.list_lines()
            }
        }
    }

    fn expect(&mut self, who: usize, wanted: Vec<String>) {
        let conn = self.clients[who].conn.as_mut().expect("connected");
        for (i, want) in wanted.iter().enumerate() {
            match conn.line() {
                Ok(got) if got == *want => {}
                Ok(got) => {
                    let model: Vec<String> = self
                        .clients
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.listed.is_some())
                        .map(|(i, c)| format!("client {i} at {}", c.ip))
                        .collect();
                    self.trace.fail(format!(
                        "client {who} expected {want:?}, got {got:?} (line {i} of {wanted:?}); \
                         listed: {model:?}; JSON {}",
                        self.server.get("/servers.json")
                    ))
                }
                Err(e) => self.trace.fail(format!(
                    "client {who} expected {want:?} (line {i} of {wanted:?}), got {e}"
                )),
            }
        }
    }

    fn send(&mut self, who: usize, bytes: &[u8]) {
        self.clients[who]
            .conn
            .as_mut()
            .unwrap()
            .send(self.rng, bytes);
    }

    fn drop_conn(&mut self, who: usize) {
        self.clients[who].conn = None;
        if self.clients[who].listed.take().is_some() {
            self.settle();
        }
    }

    /// (name, players, max, address, kind, udp) of every listed server, in list order.
    fn model_json(&self) -> Vec<(String, u32, u32, String, String, u16)> {
        self.listed()
            .iter()
            .map(|c| {
                let l = c.listed.as_ref().unwrap();
                let address = if l.port == 0 {
                    c.ip.to_string()
                } else {
                    format!("{}:{}", c.ip, l.port)
                };
                let name = l
                    .name
                    .replace('"', "\\\"")
                    .replace('<', "\\u003c")
                    .replace('>', "\\u003e")
                    .replace('&', "\\u0026");
                (name, l.players, l.max, address, l.kind.to_string(), l.udp)
            })
            .collect()
    }

    fn settle(&mut self) {
        let want = self.model_json();
        let deadline = Instant::now() + SETTLE;
        loop {
            let got = servers_of_json(&self.server.get("/servers.json"));
            if got == want {
                return;
            }
            if Instant::now() > deadline {
                self.trace.fail(format!(
                    "the JSON server list is {got:?}, the model's {want:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn step(&mut self) {
        let who = self.rng.below(self.clients.len());
        if self.clients[who].conn.is_none() {
            let conn = Conn::open(self.server.tcp, self.clients[who].ip);
            self.clients[who].conn = Some(conn);
            self.trace.note(format!("client {who} connects"));
            if self.rng.chance(50) {
                return;
            }
        }
        match self.rng.below(100) {
            0..=69 => {
                let mut bytes = String::new();
                let mut replies = Vec::new();
                let lines = if self.rng.chance(20) {
                    2 + self.rng.below(3)
                } else {
                    1
                };
                for _ in 0..lines {
                    let (line, req) = self.random_request();
                    self.trace
                        .note(format!("client {who} sends {line:?} ({req:?})"));
                    bytes.push_str(&terminate(self.rng, &line));
                    replies.extend(self.apply(who, &req));
                }
                self.send(who, bytes.as_bytes());
                self.expect(who, replies);
            }
            70..=74 => {
                let len = 512 + self.rng.below(300);
                self.trace
                    .note(format!("client {who} sends a {len}-byte line"));
                let mut line = "players: 1 max: 2".to_string();
                while line.len() < len {
                    line.push('0');
                }
                let bytes = terminate(self.rng, &line);
                self.send(who, bytes.as_bytes());
                self.counts.illegal += 1;
                self.expect(who, vec!["illegal request not processed".into()]);
                if let Err(e) = self.clients[who].conn.as_mut().unwrap().closed() {
                    self.trace
                        .fail(format!("client {who}: after an overlong line: {e}"));
                }
                self.drop_conn(who);
            }
            75..=82 => {
                self.trace.note(format!("client {who} closes abruptly"));
                self.drop_conn(who);
            }
            83..=89 => {
                let mut replies = Vec::new();
                let mut bytes = String::new();
                if self.rng.chance(60) {
                    let (line, req) = self.random_request();
                    if !line.is_empty() {
                        self.trace.note(format!(
                            "client {who} sends {line:?} ({req:?}) without a newline"
                        ));
                        replies = self.apply(who, &req);
                        bytes = line;
                    }
                }
                self.trace.note(format!("client {who} half-closes"));
                self.send(who, bytes.as_bytes());
                let conn = self.clients[who].conn.as_mut().unwrap();
                let _ = conn.stream.shutdown(Shutdown::Write);
                self.expect(who, replies);
                if let Err(e) = self.clients[who].conn.as_mut().unwrap().closed() {
                    self.trace
                        .fail(format!("client {who}: after its half-close: {e}"));
                }
                self.drop_conn(who);
            }
            _ => {
                self.trace.note("the lists are checked".into());
                self.settle();
            }
        }
    }

    fn finish(mut self) {
        self.settle();
        let MasterWorld {
            server,
            counts,
            trace,
            ..
        } = self;
        let (stopped, log) = server.stop();
        let checks = [
            ("joins", counts.joins),
            ("joins_refused_full", counts.full),
            ("joins_refused_version", counts.version),
            ("illegal_requests", counts.illegal),
            ("removes", counts.removes),
            ("player_updates", counts.player_updates),
            ("list_requests", counts.list_requests),
        ];
        check_counters(&trace, "masterserver", &stopped, &checks);
        let listed = log_lines(&log, " INFO  listed '");
        if listed != counts.joins {
            trace.fail(format!(
                "the log has {listed} 'listed' lines, the model {} joins",
                counts.joins
            ));
        }
        check_refusal_lines(
            &trace,
            &log,
            &[
                ("refused: masterserver full", counts.full),
                ("refused: masterserver version incompatible", counts.version),
            ],
        );
    }
}

/// (name, players, max, address, kind, udp) of every server in a `/servers.json` document.
fn servers_of_json(json: &str) -> Vec<(String, u32, u32, String, String, u16)> {
    let field = |part: &str, key: &str| -> String {
        let rest = part.split(&format!("\"{key}\": ")).nth(1).unwrap();
        let end = if let Some(quoted) = rest.strip_prefix('"') {
            let mut end = 0;
            let bytes = quoted.as_bytes();
            while bytes[end] != b'"' || (end > 0 && bytes[end - 1] == b'\\') {
                end += 1;
            }
            return quoted[..end].to_string();
        } else {
            rest.find([',', '}']).unwrap()
        };
        rest[..end].to_string()
    };
    json.split("\n    {")
        .skip(1)
        .map(|part| {
            (
                field(part, "name"),
                field(part, "players").parse().unwrap(),
                field(part, "max_players").parse().unwrap(),
                field(part, "address"),
                field(part, "kind"),
                field(part, "udp_port").parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn random_servers_keep_the_masterserver_protocol() {
    for seed in seeds() {
        let dir = std::env::temp_dir().join(format!(
            "servers-chaos-master-{}-{seed}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rng = Rng(seed.wrapping_mul(3).wrapping_add(2));
        let max = 1 + rng.below(8);
        let count = 8 + rng.below(17);
        let max_text = max.to_string();
        let server = Server::start("masterserver", &["--max-servers", &max_text], &dir);
        let mut world = MasterWorld {
            server,
            max,
            clients: (0..count)
                .map(|i| MasterClient {
                    ip: Ipv4Addr::new(127, 0, 1, 10 + (i % (count - count / 4)) as u8),
                    conn: None,
                    listed: None,
                })
                .collect(),
            counts: MasterCounts::default(),
            rng: &mut rng,
            trace: Trace {
                seed,
                server: "masterserver",
                step: 0,
                lines: VecDeque::new(),
            },
            joined: 0,
            offered: Vec::new(),
        };
        for step in 0..steps() {
            world.trace.step = step;
            world.step();
        }
        world.finish();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
