//! Seeded random peer-to-peer games across real processes, checking that the players of one game
//! agree (SPEC 6 "Peer-to-peer", SPEC 8 reliability): the script and checker of the
//! `peer_chaos` and `peer_chaos_ipx` tests, generic over where the games run and how they find
//! each other ([`Network`]: [`Loopback`], UDP on 127.0.0.1 by address; [`IpxLan`], a network
//! namespace per game on a private bridged LAN, IPX by broadcast).
//!
//! 2-4 `c/peer_game.c --control` games (`net.timeout 2`, fast `net.peer.*`) are driven by a
//! seeded script of random steps with random pauses: connect (to a random earlier player's
//! address, or by broadcast; one player or several at once), disconnect, kill -9 and restart (a
//! new incarnation with a new name, on the same port or host), SIGSTOP for shorter and longer
//! than the timeout, rename, unjoin/join, `net.api` switches (the network's: `udp` on loopback,
//! `ipx` or `udp` on the LAN), and bursts of numbered reliable custom events (`@burst K`: the
//! series, type 600; then `@unreliable K`, as many unreliable type 601). Every few steps, and at
//! the end, the script settles: stopped players continue, players on another backend than the
//! network's home one switch back to it, players out of a game connect to one in a game
//! (players of a smaller game leave it and join the largest), and within a deadline:
//! - every player in a game agrees with every player it sees on the player table (own slot and
//!   name, every other slot and its current name: `@summary`);
//! - every series number a sender queued (rc 0) during the part of the script since the last
//!   settle arrived exactly once at every receiver that was in its game at that settle and that
//!   the sender saw seated when it queued it, when neither was disturbed in between: no kill,
//!   stop longer than 1 s, disconnect, connect, or connect/disconnect event of its own; a
//!   sender's `net.api` switch does not disturb it as a sender (docs/decisions.md: what it queued
//!   before the switch arrives once, in order, when it meets the receiver again, also after a
//!   detour through another backend), a receiver's does (what the others queue while it is away
//!   is not delivered to it). A stop shorter than half the timeout disturbs nobody: the link
//!   lives on and retransmits.
//!
//! After each step, from a second random stream of the seed (the main script of a seed is the
//! one it had before), a game now and then gets a worse network (`net.sim`: loss, duplicates,
//! reordering, lag and jitter on both its paths) or its plain one back. That disturbs nobody:
//! everything above is still owed. The settle clears impairments whose delays reach the test's
//! connect timing, and about half the others.
//!
//! Checked over every game's whole output:
//! - per receiver and sender incarnation, the series numbers arrive strictly increasing (in
//!   order, no duplicates);
//! - every event with a player id names a slot whose PLAYER_CONNECTED the receiver polled with
//!   no PLAYER_DISCONNECTED since, never its own; a PLAYER_CONNECTED comes for a free slot only;
//!   the series and renames from one seat are all of the incarnation whose name it was seated
//!   with (a slot's player never changes without the game being told);
//! - no game prints a failed poll, exits other than 0 at its end, or an AddressSanitizer report;
//!   a control line is answered within 10 s (no hang).
//!
//! `PREFIX_SEED=S` replays seed S, `PREFIX_FIRST=F PREFIX_RUNS=R` runs seeds F..F+R,
//! `PREFIX_STEPS=N` sets the steps (default 14), `PREFIX_ASAN=1` builds the games with
//! AddressSanitizer, where PREFIX is the network's ([`Network::prefix`]; see docs/fuzzing.md).
//! The script of a seed is replayed exactly; what the network and the scheduler do meanwhile
//! still varies.

// The script's steps read best as one `match` of guarded blocks, and players by index.
#![allow(clippy::collapsible_match, clippy::needless_range_loop)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::chaos::{self, Rng};
use crate::live::LiveGame;
use crate::netns::Lan;
use crate::peer::{fields, free_loopback_ports, parse};

const DEFAULT_STEPS: u64 = 14;
/// `net.timeout` of every game, in seconds.
const TIMEOUT_S: u64 = 2;
/// How long a settle may take (a killed player's seat lasts the timeout, a slave waits for its
/// slot, a long-stopped player is dropped and comes back).
const SETTLE_DEADLINE: Duration = Duration::from_secs(25);
/// The same while a game keeps an impaired network (`net.sim`) through the settle.
const SETTLE_DEADLINE_IMPAIRED: Duration = Duration::from_secs(40);

/// Where the games run and how they find each other: on loopback UDP by address
/// ([`Loopback`]), or each in its own namespace of a private LAN, by broadcast ([`IpxLan`]).
pub trait Network {
    /// The prefix of the environment variables (`PEER_CHAOS`): `PREFIX_SEED`, `PREFIX_STEPS`...
    fn prefix(&self) -> &str;
    /// The command that starts `program` as host `host`'s game (host 4 is the refused fifth).
    fn command(&self, host: usize, program: &Path) -> Command;
    /// The console lines host `host`'s game runs before it connects, besides the common ones.
    fn setup(&self, host: usize) -> Vec<String>;
    /// The `--peer` of a game that starts connecting to host `to` (`None`: the first game,
    /// which finds nobody); `None` to connect with `NETs_Connect()` (broadcast).
    fn peer(&self, to: Option<usize>) -> Option<String>;
    /// How host `host` is shown in failure messages.
    fn describe(&self, host: usize) -> String;
    /// The backend every game starts on and is brought back to when the script settles.
    fn home_api(&self) -> &str;
    /// The `net.api` a switch step types.
    fn switch_api(&self, rng: &mut Rng) -> String;

    /// The console line that connects a game to host `to`'s game.
    fn connect_line(&self, to: usize) -> String {
        match self.peer(Some(to)) {
            Some(peer) => format!("connect {peer}"),
            None => "connect".into(),
        }
    }
}

/// Every game on 127.0.0.1 with a port of its own; connects name the address; switches are
/// `net.api udp` (to the same backend: a leave and a reconnect).
pub struct Loopback {
    /// Host `i`'s port, and a port nobody listens on.
    ports: Vec<u16>,
    nobody: u16,
}

impl Loopback {
    pub const PREFIX: &'static str = "PEER_CHAOS";

    pub fn new() -> Loopback {
        let ports = free_loopback_ports(6);
        Loopback {
            nobody: ports[5],
            ports: ports[..5].to_vec(),
        }
    }
}

impl Default for Loopback {
    fn default() -> Loopback {
        Loopback::new()
    }
}

impl Network for Loopback {
    fn prefix(&self) -> &str {
        Loopback::PREFIX
    }

    fn command(&self, _host: usize, program: &Path) -> Command {
        Command::new(program)
    }

    fn setup(&self, host: usize) -> Vec<String> {
        vec![
            "net.udp.bind 127.0.0.1".into(),
            "net.udp.ipv6 0".into(),
            format!("net.port {}", self.ports[host]),
        ]
    }

    fn peer(&self, to: Option<usize>) -> Option<String> {
        let port = to.map_or(self.nobody, |to| self.ports[to]);
        Some(format!("127.0.0.1:{port}"))
    }

    fn describe(&self, host: usize) -> String {
        format!("port {}", self.ports[host])
    }

    fn home_api(&self) -> &str {
        "udp"
    }

    fn switch_api(&self, _rng: &mut Rng) -> String {
        "udp".into()
    }
}

/// Every game in a network namespace of its own on a private bridged LAN, starting on
/// `net.api ipx` (raw IPX frames on the namespace's `eth0`) and connecting by broadcast with no
/// address; switches go to `ipx` or `udp` (UDP broadcasts on the LAN). Needs root.
pub struct IpxLan {
    lan: Lan,
    backends: PathBuf,
}

impl IpxLan {
    pub const PREFIX: &'static str = "PEER_CHAOS_IPX";

    /// A LAN of five hosts (up to four players and the refused fifth); `backends` holds the
    /// IPX backend.
    pub fn new(backends: PathBuf) -> IpxLan {
        IpxLan {
            lan: Lan::create(5),
            backends,
        }
    }
}

impl Network for IpxLan {
    fn prefix(&self) -> &str {
        IpxLan::PREFIX
    }

    fn command(&self, host: usize, program: &Path) -> Command {
        let mut command = self.lan.command(host, program);
        command.env("PARSEC_NET_BACKEND_PATH", &self.backends);
        command
    }

    fn setup(&self, _host: usize) -> Vec<String> {
        vec![
            format!("net.udp.broadcast {}", self.lan.broadcast()),
            "net.ipx.interface eth0".into(),
            "net.api ipx".into(),
        ]
    }

    fn peer(&self, _to: Option<usize>) -> Option<String> {
        None
    }

    fn describe(&self, host: usize) -> String {
        format!(
            "namespace {}, {}",
            self.lan.namespace(host),
            self.lan.address(host)
        )
    }

    fn home_api(&self) -> &str {
        "ipx"
    }

    fn switch_api(&self, rng: &mut Rng) -> String {
        if rng.chance(50) { "ipx" } else { "udp" }.into()
    }
}

/// One game process (one incarnation of a player).
struct Player {
    incarnation: u32,
    /// The backend it was last told to use (`net.api`).
    api: String,
    /// The name it started with: its identity, carried in its series events.
    name: String,
    /// Its name now (after renames the game accepted).
    current: String,
    renames: u32,
    game: LiveGame,
    /// When a stopped game is to continue.
    stopped_until: Option<Instant>,
    /// Output line (of this incarnation) at the start of the phase.
    phase_start: usize,
    /// Disturbed as a receiver / as a sender in this phase.
    disturbed_rx: bool,
    disturbed_tx: bool,
    /// Stdout line index at the last connect or `net.api` the script sent.
    last_connect_line: Option<usize>,
    /// In this incarnation the script disconnected it and has not connected it since.
    left_on_purpose: bool,
    /// The `net.sim` line in force in this incarnation, and its lag + jitter in ms (None: off).
    impaired: Option<(String, u64)>,
}

/// What the harness knows about every incarnation: name -> identity (original name).
#[derive(Default)]
struct Names {
    identity: HashMap<String, String>,
}

struct Chaos<'a> {
    net: &'a dyn Network,
    seed: u64,
    rng: Rng,
    /// A second stream of the seed for the steps added later (`net.sim`), so the main stream
    /// still makes the script it made before.
    extra: Rng,
    program: PathBuf,
    asan: bool,
    players: Vec<Player>,
    names: Names,
    /// What the script did, for failure messages.
    log: Vec<String>,
    started: Instant,
    /// Finished (killed) incarnations' outputs, checked at the end.
    finished: Vec<(String, String, String)>,
    /// The game groups found at the last settle: sets of player indexes.
    groups: Vec<BTreeSet<usize>>,
    /// Series numbers checked to have arrived exactly once.
    owed_checked: usize,
}

/// The console lines every game runs after the network's own.
fn common_setup() -> Vec<String> {
    vec![
        format!("net.timeout {TIMEOUT_S}"),
        "net.peer.connect_tries 4".into(),
        "net.peer.connect_interval 50".into(),
        "net.peer.slot_tries 20".into(),
        "net.peer.slot_interval 80".into(),
        "net.peer.reply_wait 30".into(),
    ]
}

/// Lifecycle of a game from its output: connected now, and the index of the last lifecycle line
/// and its kind/text.
struct Life {
    connected: bool,
    last: Option<(usize, String, String)>,
}

fn life(lines: &[String]) -> Life {
    let mut connected = false;
    let mut last = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("EVENT ") {
            let f = fields(rest);
            let kind = get(&f, "type");
            match kind {
                "CONNECTED" => connected = true,
                "DISCONNECTED" => connected = false,
                "ERROR" => {}
                _ => continue,
            }
            last = Some((i, kind.to_string(), get(&f, "text").to_string()));
        }
    }
    Life { connected, last }
}

fn get<'a>(f: &'a [(String, String)], key: &str) -> &'a str {
    f.iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

/// A series or unreliable event's (number, sender name).
fn series_of(data: &[u8]) -> Option<(u32, String)> {
    if data.len() < 5 {
        return None;
    }
    let n = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
    let name: Vec<u8> = data[4..].iter().copied().take_while(|&b| b != 0).collect();
    Some((n, String::from_utf8_lossy(&name).into_owned()))
}

impl Chaos<'_> {
    fn fail(&self, message: &str) -> ! {
        let prefix = self.net.prefix();
        let mut text = format!(
            "{} seed {} failed: {message}\nreplay with {prefix}_SEED={} {prefix}_STEPS={}{}\n--- script ---\n",
            prefix.to_lowercase(),
            self.seed,
            self.seed,
            steps(self.net),
            if self.asan { format!(" {prefix}_ASAN=1") } else { String::new() }
        );
        for line in &self.log {
            text.push_str(line);
            text.push('\n');
        }
        for (i, p) in self.players.iter().enumerate() {
            text.push_str(&format!(
                "--- {} ({}) ---\n{}",
                p.name,
                self.net.describe(i),
                p.game.process.transcript()
            ));
        }
        for (name, out, err) in &self.finished {
            text.push_str(&format!(
                "--- {name} (killed) ---\n{out}--- stderr ---\n{err}"
            ));
        }
        panic!("{text}");
    }

    fn note(&mut self, what: String) {
        let at = self.started.elapsed().as_millis();
        self.log.push(format!("{at:>6} ms {what}"));
    }

    /// Start incarnation `incarnation` of player `index` (on host `index`), connecting to host
    /// `to` (`None`: to nobody).
    fn spawn(&mut self, index: usize, incarnation: u32, to: Option<usize>) -> Player {
        let name = format!("p{index}i{incarnation}");
        let mut command = self.net.command(index, &self.program);
        command.args(["--name", &name]);
        for line in self.net.setup(index).into_iter().chain(common_setup()) {
            command.args(["--exec", &line]);
        }
        if let Some(peer) = self.net.peer(to) {
            command.args(["--peer", &peer]);
        }
        command.args([
            "--expect",
            "0",
            "--duration",
            "600000",
            "--connect-tries",
            "1",
        ]);
        command.args(["--control", "--series-ms", "1000000"]);
        let game = LiveGame::spawn(&name, command, self.asan);
        self.names.identity.insert(name.clone(), name.clone());
        Player {
            incarnation,
            api: self.net.home_api().to_string(),
            current: name.clone(),
            name,
            renames: 0,
            game,
            stopped_until: None,
            phase_start: 0,
            disturbed_rx: true,
            disturbed_tx: true,
            last_connect_line: Some(0),
            left_on_purpose: false,
            impaired: None,
        }
    }

    fn sleep(&mut self, ms: u64) {
        let until = Instant::now() + Duration::from_millis(ms);
        loop {
            self.continue_due();
            let now = Instant::now();
            if now >= until {
                return;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    }

    /// SIGCONT every stopped game whose time has come.
    fn continue_due(&mut self) {
        let now = Instant::now();
        let mut done = Vec::new();
        for p in &mut self.players {
            if p.stopped_until.is_some_and(|t| t <= now) {
                p.game.process.signal("CONT");
                p.stopped_until = None;
                done.push(p.name.clone());
            }
        }
        for name in done {
            self.note(format!("SIGCONT {name}"));
        }
    }

    fn send(&mut self, i: usize, line: &str) {
        let name = self.players[i].name.clone();
        self.note(format!("{name}: {line}"));
        if !self.players[i].game.process.send(line) {
            self.fail(&format!("{name} cannot take {line:?}: it is gone"));
        }
    }

    fn connect(&mut self, i: usize, to: usize) {
        let line = self.net.connect_line(to);
        let at = self.players[i].game.process.line_count();
        self.players[i].last_connect_line = Some(at);
        self.players[i].left_on_purpose = false;
        self.players[i].disturbed_rx = true;
        self.players[i].disturbed_tx = true;
        self.send(i, &line);
    }

    /// How a game started to connect to player `to`'s host connects, for the script's log.
    fn how_connecting(&self, to: usize) -> String {
        match self.net.peer(Some(to)) {
            Some(_) => format!("connecting to {}", self.players[to].name),
            None => "connecting by broadcast".into(),
        }
    }

    /// Whether game `i` (whose lifecycle is `life`) ended its last connect (an error, or a
    /// disconnect that does not reconnect) and will not connect unless told.
    fn idle(&self, i: usize, life: &Life) -> bool {
        match (&life.last, self.players[i].last_connect_line) {
            (None, _) => false,
            (Some((at, kind, text)), connect) => {
                let after_connect = connect.is_none_or(|c| *at >= c);
                after_connect
                    && (kind == "ERROR"
                        || (kind == "DISCONNECTED" && !text.contains("reconnecting")))
            }
        }
    }

    /// `net.api API`: a switch (the others owe it nothing queued meanwhile; what it queued
    /// before is still owed: resumption).
    fn switch(&mut self, i: usize, api: &str) {
        self.players[i].disturbed_rx = true;
        let at = self.players[i].game.process.line_count();
        self.players[i].last_connect_line = Some(at);
        self.players[i].api = api.to_string();
        self.send(i, &format!("net.api {api}"));
    }

    fn step(&mut self) {
        let n = self.players.len();
        let i = self.rng.index(n);
        let roll = self.rng.index(100);
        let stopped = self.players[i].stopped_until.is_some();
        match roll {
            0..=27 => {
                if !stopped {
                    let k = 1 + self.rng.index(20);
                    self.send(i, &format!("@burst {k}"));
                    self.send(i, &format!("@unreliable {k}"));
                }
            }
            28..=35 => {
                if !stopped {
                    let p = &mut self.players[i];
                    p.renames += 1;
                    let new = format!("{}r{}", p.name, p.renames);
                    self.names
                        .identity
                        .insert(new.clone(), self.players[i].name.clone());
                    self.send(i, &format!("name {new}"));
                    // The reply is checked when the table is compared.
                    self.players[i].current = new;
                }
            }
            36..=43 => {
                if !stopped {
                    let line = if self.rng.chance(50) {
                        "unjoin"
                    } else {
                        "join"
                    };
                    self.send(i, line);
                }
            }
            44..=51 => {
                if !stopped {
                    self.players[i].disturbed_rx = true;
                    self.players[i].disturbed_tx = true;
                    self.players[i].left_on_purpose = true;
                    self.send(i, "disconnect");
                }
            }
            52..=61 => {
                // Connect players that are out of a game: one, or several at once.
                let out: Vec<usize> = (0..n)
                    .filter(|&j| {
                        let p = &self.players[j];
                        p.stopped_until.is_none() && p.left_on_purpose
                    })
                    .collect();
                let several = self.rng.chance(40);
                for (k, &j) in out.iter().enumerate() {
                    if k > 0 && !several {
                        break;
                    }
                    let earlier: Vec<usize> = (0..j).collect();
                    let to = if earlier.is_empty() || self.rng.chance(20) {
                        (j + 1 + self.rng.index(n - 1)) % n
                    } else {
                        earlier[self.rng.index(earlier.len())]
                    };
                    self.connect(j, to);
                }
            }
            62..=67 => {
                // kill -9 and start again (a new incarnation) connecting to someone else.
                let old_name = self.players[i].name.clone();
                self.note(format!("kill -9 {old_name}"));
                self.players[i].game.process.kill();
                // A stopped game killed: nothing to continue (the pause below continues the due).
                self.players[i].stopped_until = None;
                let others: Vec<usize> = (0..n).filter(|&j| j != i).collect();
                let to = others[self.rng.index(others.len())];
                let incarnation = self.players[i].incarnation + 1;
                let pause = self.rng.index(200) as u64;
                self.sleep(pause);
                let new = self.spawn(i, incarnation, Some(to));
                let old = std::mem::replace(&mut self.players[i], new);
                let output = old.game.finish(Duration::from_secs(10)).output;
                self.finished.push((old_name, output.stdout, output.stderr));
                let how = self.how_connecting(to);
                self.note(format!("started {} {how}", self.players[i].name));
            }
            68..=77 => {
                if !stopped {
                    let long = self.rng.chance(35);
                    let ms = if long {
                        TIMEOUT_S * 1000 + 300 + self.rng.index(1200) as u64
                    } else {
                        50 + self.rng.index(800) as u64
                    };
                    if long || ms > TIMEOUT_S * 1000 / 2 {
                        self.players[i].disturbed_rx = true;
                        self.players[i].disturbed_tx = true;
                    }
                    let name = self.players[i].name.clone();
                    self.note(format!("SIGSTOP {name} for {ms} ms"));
                    self.players[i].game.process.signal("STOP");
                    self.players[i].stopped_until =
                        Some(Instant::now() + Duration::from_millis(ms));
                }
            }
            78..=85 => {
                if !stopped {
                    // A switch: the others owe it nothing queued meanwhile; what it queued
                    // before is still owed (resumption).
                    let api = self.net.switch_api(&mut self.rng);
                    self.switch(i, &api);
                }
            }
            _ => {}
        }
        let pause = match self.rng.index(4) {
            0 => 0,
            1 => self.rng.index(50),
            2 => self.rng.index(300),
            _ => 300 + self.rng.index(700),
        } as u64;
        self.sleep(pause);
    }

    /// A step of the second stream: now and then a game gets a worse network (`net.sim`: loss
    /// up to 20%, duplicates up to 5%, reordering, lag and jitter up to 100 ms on both its
    /// paths), or an impaired game gets its plain network back. Nobody is disturbed by it: the
    /// links live on and reliable events are still owed once, in order.
    fn impair(&mut self) {
        if !self.extra.chance(20) {
            return;
        }
        let i = self.extra.index(self.players.len());
        if self.players[i].impaired.is_some() && self.extra.chance(40) {
            self.send(i, "net.sim off");
            self.players[i].impaired = None;
            return;
        }
        let mut parts = Vec::new();
        let mut delay = 0;
        if self.extra.chance(70) {
            parts.push(format!("loss {}", 1 + self.extra.index(20)));
        }
        if self.extra.chance(40) {
            parts.push(format!("dup {}", 1 + self.extra.index(5)));
        }
        if self.extra.chance(40) {
            parts.push(format!("reorder {}", 1 + self.extra.index(30)));
        }
        if self.extra.chance(50) {
            let lag = self.extra.index(81) as u64;
            delay += lag;
            parts.push(format!("lag {lag}"));
        }
        if self.extra.chance(40) {
            let jitter = 1 + self.extra.index(40) as u64;
            delay += jitter;
            parts.push(format!("jitter {jitter}"));
        }
        if parts.is_empty() {
            parts.push(format!("loss {}", 1 + self.extra.index(20)));
        }
        let line = format!("net.sim {}", parts.join(" "));
        self.send(i, &line);
        self.players[i].impaired = Some((line, delay));
    }

    /// The summary of game `i` now (own slot, slot -> name of the others).
    fn view(&mut self, i: usize) -> (i32, BTreeMap<i32, String>) {
        let summary = self.players[i].game.summary_now();
        let mut table: BTreeMap<i32, String> = summary
            .players
            .iter()
            .map(|p| (p.slot, p.name.clone()))
            .collect();
        if summary.slot >= 0 {
            if table.contains_key(&summary.slot) {
                self.fail(&format!(
                    "{} lists its own slot {} as another player's",
                    self.players[i].name, summary.slot
                ));
            }
            table.insert(summary.slot, self.players[i].current.clone());
        }
        (summary.slot, table)
    }

    /// Series numbers (rc 0) that `s` queued from its phase start on.
    fn queued(&self, s: usize) -> Vec<(u32, String)> {
        let p = &self.players[s];
        p.game
            .process
            .lines_from(p.phase_start)
            .iter()
            .filter_map(|l| l.strip_prefix("SERIES "))
            .filter_map(|rest| {
                let f = fields(rest);
                let n = get(&f, "n").parse().ok()?;
                (get(&f, "rc") == "0").then(|| (n, get(&f, "to").to_string()))
            })
            .collect()
    }

    /// The numbers of `queued` whose sender saw receiver `r` seated when it queued them (its
    /// `to` list names `r` by its name then): a receiver seated later (in the sender's new game
    /// after a switch, say) was never sent the earlier ones.
    fn queued_for(&self, queued: &[(u32, String)], r: usize) -> Vec<u32> {
        let identity = &self.players[r].name;
        let renamed = format!("{identity}r");
        queued
            .iter()
            .filter(|(_, to)| {
                to.split(',')
                    .any(|n| n == identity.as_str() || n.starts_with(&renamed))
            })
            .map(|(n, _)| *n)
            .collect()
    }

    /// How many times receiver `r` got each series number of sender identity `from`.
    fn received(&self, r: usize, from: &str) -> HashMap<u32, usize> {
        let mut got = HashMap::new();
        for e in self.players[r].game.report().events {
            if e.kind == "CUSTOM" && e.custom == 600 {
                if let Some((n, name)) = series_of(&e.data) {
                    if name == from {
                        *got.entry(n).or_insert(0) += 1;
                    }
                }
            }
        }
        got
    }

    /// Whether game `i` connected or disconnected (or got an error) since its phase start, in a
    /// way that disturbs it as a sender (anything but its own switches' reconnects).
    fn own_lifecycle_since_phase(&self, i: usize) -> (bool, bool) {
        let p = &self.players[i];
        let mut any = false;
        let mut not_switch = false;
        for line in p.game.process.lines_from(p.phase_start) {
            if let Some(rest) = line.strip_prefix("EVENT ") {
                let f = fields(rest);
                match get(&f, "type") {
                    "CONNECTED" => any = true,
                    "DISCONNECTED" => {
                        any = true;
                        if !get(&f, "text").starts_with("switching packet backend") {
                            not_switch = true;
                        }
                    }
                    "ERROR" => {
                        any = true;
                        not_switch = true;
                    }
                    _ => {}
                }
            }
        }
        (any, not_switch)
    }

    /// Everything every game printed so far obeys the per-event invariants.
    fn check_streams(&self) {
        for p in &self.players {
            self.check_stream(&p.name, &p.game.process.stdout());
        }
        for (name, out, _) in &self.finished {
            self.check_stream(name, out);
        }
    }

    fn check_stream(&self, who: &str, stdout: &str) {
        let mut own: Option<i32> = None;
        // slot -> identity of the player seated there
        let mut seated: BTreeMap<i32, String> = BTreeMap::new();
        // identity -> last series number
        let mut last: HashMap<String, u32> = HashMap::new();
        let report = parse(stdout);
        for (k, e) in report.events.iter().enumerate() {
            let line = &report.event_lines[k];
            let bad = |what: &str| -> ! {
                self.fail(&format!("{who}: event {k} {line}: {what}"));
            };
            match e.kind.as_str() {
                "CONNECTED" => {
                    if own.is_some() {
                        bad("CONNECTED while connected");
                    }
                    own = Some(e.player);
                    if !seated.is_empty() {
                        bad("CONNECTED with players seated from before");
                    }
                }
                "DISCONNECTED" => {
                    own = None;
                    seated.clear();
                }
                "ERROR" => {}
                "PLAYER_CONNECTED" => {
                    if Some(e.player) == own {
                        bad("PLAYER_CONNECTED for its own slot");
                    }
                    if seated.contains_key(&e.player) {
                        bad("PLAYER_CONNECTED for a slot already seated");
                    }
                    let Some(identity) = self.names.identity.get(&e.text) else {
                        bad("PLAYER_CONNECTED with a name no player had");
                    };
                    seated.insert(e.player, identity.clone());
                }
                _ => {
                    if own.is_none() {
                        bad("an event while not connected");
                    }
                    let Some(identity) = seated.get(&e.player).cloned() else {
                        bad("an event from a slot not seated");
                    };
                    match e.kind.as_str() {
                        "PLAYER_DISCONNECTED" => {
                            seated.remove(&e.player);
                        }
                        "PLAYER_NAME" => {
                            if self.names.identity.get(&e.text) != Some(&identity) {
                                bad(&format!("a name of another player than {identity}"));
                            }
                        }
                        "CUSTOM" if e.custom == 600 || e.custom == 601 => {
                            let Some((n, from)) = series_of(&e.data) else {
                                bad("a series event without number and name");
                            };
                            if from != identity {
                                bad(&format!("{from}'s series from the seat of {identity}"));
                            }
                            if e.custom == 600 {
                                if let Some(&before) = last.get(&from) {
                                    if n <= before {
                                        bad(&format!("series number {n} of {from} after {before}"));
                                    }
                                }
                                last.insert(from, n);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        if let Some(line) = stdout.lines().find(|l| {
            l.starts_with("EXEC ") && l.contains(" line=\"net.sim ") && !l.starts_with("EXEC rc=0 ")
        }) {
            self.fail(&format!("{who}: net.sim refused: {line}"));
        }
        if let Some(line) = stdout.lines().find(|l| l.starts_with("POLL ")) {
            self.fail(&format!("{who}: NET_PollEvent failed: {line}"));
        }
    }

    /// Bring every game into a game and wait until the tables agree and every owed series
    /// number arrived; then start a new phase.
    fn settle(&mut self) {
        self.note("settle".into());
        for p in &mut self.players {
            if p.stopped_until.is_some() {
                p.game.process.signal("CONT");
                p.stopped_until = None;
            }
        }
        // An impaired game keeps its network through the settle about half the time, unless its
        // delays reach the connect timing of `setup_lines` (4 requests 50 ms apart: a newcomer
        // that hears no answer within 200 ms starts a game of its own).
        for i in 0..self.players.len() {
            if let Some((_, delay)) = self.players[i].impaired {
                if delay > 40 || self.extra.chance(50) {
                    self.send(i, "net.sim off");
                    self.players[i].impaired = None;
                }
            }
        }
        let limit = if self.players.iter().any(|p| p.impaired.is_some()) {
            SETTLE_DEADLINE_IMPAIRED
        } else {
            SETTLE_DEADLINE
        };
        // Who was disturbed in the phase, and what is owed.
        let n = self.players.len();
        let mut owed: Vec<(usize, usize, Vec<u32>)> = Vec::new();
        for group in self.groups.clone() {
            for &s in &group {
                let (_, not_switch) = self.own_lifecycle_since_phase(s);
                if self.players[s].disturbed_tx || not_switch {
                    continue;
                }
                let queued = self.queued(s);
                for &r in &group {
                    let (any, _) = self.own_lifecycle_since_phase(r);
                    if r != s && !self.players[r].disturbed_rx && !any {
                        owed.push((s, r, self.queued_for(&queued, r)));
                    }
                }
            }
        }
        // Players on another backend than the others cannot meet them: switch them back (a
        // switch like any other, after what is owed was reckoned).
        let home = self.net.home_api().to_string();
        for i in 0..n {
            if self.players[i].api != home {
                // A switch typed in a game that is out of a game only reopens the socket: it
                // stays idle, to be connected below.
                let idle = self.idle(i, &life(&self.players[i].game.process.lines_from(0)));
                let connect_line = self.players[i].last_connect_line;
                self.switch(i, &home);
                if idle {
                    self.players[i].last_connect_line = connect_line;
                }
            }
        }
        let settle_start = Instant::now();
        let deadline = settle_start + limit;
        let mut connect_sent: HashMap<usize, Instant> = HashMap::new();
        loop {
            self.check_streams();
            let lives: Vec<Life> = (0..n)
                .map(|i| life(&self.players[i].game.process.lines_from(0)))
                .collect();
            let in_game: Vec<usize> = (0..n).filter(|&i| lives[i].connected).collect();
            // Connect whoever is idle out of a game.
            for i in 0..n {
                if lives[i].connected {
                    continue;
                }
                let idle = self.idle(i, &lives[i]);
                // Out of a game for long (a `net.api` typed after a refusal only reopens the
                // socket; a reconnect that went nowhere): connect it.
                let waited_long = connect_sent
                    .get(&i)
                    .map_or(settle_start.elapsed() > Duration::from_secs(6), |t| {
                        t.elapsed() > Duration::from_secs(8)
                    });
                if (idle || self.players[i].left_on_purpose || waited_long)
                    && connect_sent
                        .get(&i)
                        .is_none_or(|t| t.elapsed() > Duration::from_millis(500))
                {
                    let to = in_game.first().copied().unwrap_or((i + 1) % n.max(1));
                    if to != i {
                        self.connect(i, to);
                        connect_sent.insert(i, Instant::now());
                    }
                }
            }
            if let Some(problem) = self.agreement(&lives, &mut owed) {
                if Instant::now() >= deadline {
                    self.fail(&format!("no agreement within {limit:?}: {problem}"));
                }
                self.sleep(150);
                continue;
            }
            break;
        }
        // A new phase.
        for p in &mut self.players {
            p.phase_start = p.game.process.line_count();
            p.disturbed_rx = false;
            p.disturbed_tx = false;
        }
        let groups = self.groups.clone();
        let checked: usize = owed.iter().map(|(_, _, numbers)| numbers.len()).sum();
        self.owed_checked += checked;
        self.note(format!(
            "settled: games {groups:?}; {checked} series numbers owed over {} pairs arrived once",
            owed.len()
        ));
    }

    /// None when every game agrees and everything owed arrived; else what is still wrong. Also
    /// moves the players of smaller games into the largest one.
    fn agreement(
        &mut self,
        lives: &[Life],
        owed: &mut Vec<(usize, usize, Vec<u32>)>,
    ) -> Option<String> {
        let n = self.players.len();
        if let Some(i) = (0..n).find(|&i| !lives[i].connected) {
            return Some(format!("{} is not in a game", self.players[i].name));
        }
        let views: Vec<(i32, BTreeMap<i32, String>)> = (0..n).map(|i| self.view(i)).collect();
        let by_name: HashMap<String, usize> = (0..n)
            .map(|i| (self.players[i].current.clone(), i))
            .collect();
        let mut groups: Vec<BTreeSet<usize>> = Vec::new();
        for i in 0..n {
            let (slot, table) = &views[i];
            if *slot < 0 {
                return Some(format!("{} has no slot", self.players[i].name));
            }
            let mut group = BTreeSet::new();
            for (s, name) in table {
                let Some(&j) = by_name.get(name) else {
                    return Some(format!(
                        "{} sees {name:?} in slot {s}, no current player's name",
                        self.players[i].name
                    ));
                };
                if views[j].0 != *s || views[j].1 != *table {
                    return Some(format!(
                        "{} sees {table:?} (own slot {slot}); {} sees {:?} (own slot {})",
                        self.players[i].name, self.players[j].name, views[j].1, views[j].0
                    ));
                }
                group.insert(j);
            }
            if group.len() > 4 {
                self.fail(&format!("a game of {} players: {table:?}", group.len()));
            }
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        if groups.len() > 1 {
            // Separate games do not merge by themselves: move the smaller ones over.
            groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
            let target = *groups[0].iter().next().expect("a game has a player");
            let movers: Vec<usize> = groups[1..].iter().flatten().copied().collect();
            // A sender whose switch took it into another game than a receiver's (it reconnects
            // to its earlier target) meets that receiver again only as a new player: nothing is
            // owed between the two games.
            owed.retain(|(s, r, _)| groups[0].contains(s) == groups[0].contains(r));
            for &m in &movers {
                self.players[m].left_on_purpose = true;
                self.send(m, "disconnect");
            }
            self.sleep(100);
            for &m in &movers {
                self.connect(m, target);
            }
            return Some(format!("separate games {groups:?}: merging"));
        }
        for (s, r, numbers) in owed.iter() {
            let got = self.received(*r, &self.players[*s].name);
            for &number in numbers {
                match got.get(&number).copied().unwrap_or(0) {
                    1 => {}
                    0 => {
                        return Some(format!(
                            "{} has not got series number {number} of {}",
                            self.players[*r].name, self.players[*s].name
                        ))
                    }
                    k => self.fail(&format!(
                        "{} got series number {number} of {} {k} times",
                        self.players[*r].name, self.players[*s].name
                    )),
                }
            }
        }
        self.groups = groups;
        None
    }

    /// A fifth player that connects to a game of four gets an error event saying the game is
    /// full, and is never seated (by anyone).
    ///
    /// The player it asks gets its plain network back first: the fifth's connect loop is the
    /// short one of `setup_lines` (4 requests 50 ms apart), and with `net.sim` loss on the
    /// asked player's paths every request or refusal can be lost (about 1 in 60 at 20 %), after
    /// which the fifth rightly starts a game of its own (`peer_chaos` seed 3367, seen once).
    fn fifth_is_refused(&mut self) {
        let to = self.rng.index(4);
        if self.players[to].impaired.take().is_some() {
            self.send(to, "net.sim off");
            self.note(format!(
                "{}: net.sim off before the fifth asks it",
                self.players[to].name
            ));
        }
        let mut fifth = self.spawn(4, 0, Some(to));
        let how = self.how_connecting(to);
        self.note(format!("started {} {how}", fifth.name));
        let found = fifth.game.process.wait_for_line(0, SETTLE_DEADLINE, |l| {
            l.starts_with("EVENT type=ERROR ") || l.starts_with("EVENT type=CONNECTED ")
        });
        let lines = fifth.game.process.lines_from(0);
        let _ = fifth.game.process.send("@quit");
        let output = fifth.game.finish(Duration::from_secs(20)).output;
        self.finished.push((
            fifth.name.clone(),
            output.stdout.clone(),
            output.stderr.clone(),
        ));
        match found {
            Some(at) if lines[at].contains("game full") => {}
            _ => self.fail(&format!(
                "{} connecting to a game of four got no 'game full' error event",
                fifth.name
            )),
        }
        for p in &self.players {
            if p.game
                .process
                .stdout()
                .contains(&format!("text=\"{}\"", fifth.name))
            {
                self.fail(&format!("{} seated the refused fifth player", p.name));
            }
        }
    }

    fn finish(mut self) -> usize {
        self.settle();
        if self.players.len() == 4 {
            self.fifth_is_refused();
        }
        self.check_streams();
        let players = std::mem::take(&mut self.players);
        let mut outputs = Vec::new();
        for mut p in players {
            let _ = p.game.process.send("@quit");
            let name = p.name.clone();
            let out = p.game.finish(Duration::from_secs(20)).output;
            outputs.push((name, out));
        }
        for (name, out) in &outputs {
            if !out.status.success() || out.stderr.contains("Sanitizer") {
                self.fail(&format!(
                    "{name} ended badly: {}\n{}",
                    out.status,
                    out.transcript()
                ));
            }
        }
        for (name, _, err) in &self.finished {
            if err.contains("Sanitizer") {
                self.fail(&format!("{name}: a sanitizer report\n{err}"));
            }
        }
        self.owed_checked
    }
}

/// The steps per run: `PREFIX_STEPS`, or 14.
pub fn steps(net: &dyn Network) -> u64 {
    chaos::steps(net.prefix(), DEFAULT_STEPS)
}

/// The seeds to run: `PREFIX_SEED`, `PREFIX_FIRST`/`PREFIX_RUNS`, or `default`.
pub fn seeds(prefix: &str, default: &[u64]) -> Vec<u64> {
    chaos::seeds(prefix, default)
}

/// Whether `PREFIX_ASAN` asks for the games built with AddressSanitizer.
pub fn asan_asked(prefix: &str) -> bool {
    chaos::env_u64(&format!("{prefix}_ASAN")).is_some_and(|v| v != 0)
}

/// Whether a search or replay was asked for (`PREFIX_SEED` or `PREFIX_RUNS`).
pub fn search_asked(prefix: &str) -> bool {
    std::env::var(format!("{prefix}_SEED")).is_ok()
        || std::env::var(format!("{prefix}_RUNS")).is_ok()
}

/// Run the script of `seed` with `program` (`c/peer_game.c`, built with AddressSanitizer if
/// `asan`) on `net`; panics with the script and every game's output on a failure.
pub fn run_seed(net: &dyn Network, program: &Path, seed: u64, asan: bool) {
    let mut rng = Rng(seed);
    let count = 2 + rng.index(3);
    let mut chaos = Chaos {
        net,
        seed,
        rng,
        extra: Rng(seed ^ 0x6e65_742e_7369_6d00),
        program: program.to_path_buf(),
        asan,
        players: Vec::new(),
        names: Names::default(),
        log: Vec::new(),
        started: Instant::now(),
        finished: Vec::new(),
        groups: Vec::new(),
        owed_checked: 0,
    };
    for i in 0..count {
        let to = if i == 0 {
            None
        } else {
            Some(chaos.rng.index(i))
        };
        let player = chaos.spawn(i, 0, to);
        chaos.note(format!("started {} ({})", player.name, net.describe(i)));
        chaos.players.push(player);
        let pause = chaos.rng.index(400) as u64;
        chaos.sleep(pause);
    }
    chaos.settle();
    for k in 0..steps(net) {
        chaos.step();
        chaos.impair();
        if k % 7 == 6 {
            chaos.settle();
        }
    }
    let players = chaos.players.len();
    let started = chaos.started;
    let impairments = chaos
        .log
        .iter()
        .filter(|l| l.contains(": net.sim ") && !l.ends_with(" off"))
        .count();
    let owed = chaos.finish();
    println!(
        "{} seed {seed}: {players} players, {} steps, {impairments} impairments (net.sim), \
         {owed} series numbers owed and delivered once, {:?}",
        net.prefix().to_lowercase(),
        steps(net),
        started.elapsed()
    );
}
