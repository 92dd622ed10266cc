//! Seeded random games through a real `parsecnet slotserver` and `gameserver`, checked for
//! agreement ACROSS the real C game processes (SPEC sections 6 and 8).
//!
//! Both servers run on 127.0.0.1 (ports 0, `--json` files) with 3-6 `c/peer_game.c --control`
//! games, each in one of them. A seeded script then does, with random pauses: connect,
//! disconnect, `net.subsys` switches between the servers (and connect to the other one),
//! `net.api udp` switches, kill -9 and restart (the new process has a new name: the series
//! numbers start again), SIGSTOP and SIGCONT after a while, renames (`name`, unique names), join
//! and unjoin, the numbered reliable series on and off, bursts of it (`@burst K`), numbered
//! texts (`say t SENDER N NAME_IN_USE`), bursts of numbered unreliable events (`@unreliable K`),
//! and ship bases near and far (`@pos`; a gameserver forwards no state between ships further
//! apart than `--distance`). Between the steps, from a second random stream of the seed (the
//! main script of a seed is the one it had before), a game now and then gets a worse network
//! (`net.sim`: loss, duplicates, reordering, lag and jitter on both its paths) or its plain one
//! back; the settle clears about half of the impairments and keeps the others through the
//! checks, which hold under them as well.
//!
//! Checked from every game's printed events (also of the games killed on the way):
//! - an event of another player (custom, text, name, join...) comes from a slot the game had seen
//!   `PLAYER_CONNECTED` for and no `PLAYER_DISCONNECTED` since, and never from its own slot;
//!   `PLAYER_CONNECTED` never for a seated slot, `PLAYER_DISCONNECTED` only for one;
//! - per sender, the numbered reliable series and texts arrive in order and without duplicates,
//!   and within one stretch of the receiver seeing the sender seated (no departure of either in
//!   between) without a gap, except over numbers the sender queued while the receiver was not
//!   seated in its game (its `SERIES` lines say who was: a stretch may bring the late events
//!   of several earlier ones); unreliable numbers at most once;
//! - a text tagged with the sender's name in use is never followed, in that stretch, by the
//!   `PLAYER_NAME` of that name (a rename comes before the events queued after it);
//!
//! After the script, everything resumed and connected:
//! - every game's player table (from its events, and from its lookups in `@summary`) matches its
//!   server's `--json` list, the games' own names and slots included;
//! - a burst each game sends then arrives exactly once at every other game of its server;
//! - through the gameserver, a joined game's view of a far ship does not change, of a near one
//!   it does;
//! - the servers still run and stop cleanly; no game crashed, hung or printed a sanitizer report.
//!
//! The suite runs one seed. `SERVER_GAME_CHAOS_SEED=S` replays seed S,
//! `SERVER_GAME_CHAOS_FIRST=F SERVER_GAME_CHAOS_RUNS=R` searches seeds F..F+R,
//! `SERVER_GAME_CHAOS_STEPS=N` sets the steps (default 40); see docs/fuzzing.md. The choices of
//! a seed are replayed exactly; the timing of real processes still varies.
//! `SERVER_GAME_CHAOS_SHOW_UNSEATED=1` prints each event a game got from a slot nobody was
//! seated in, with its line in the game's output, and writes that output to the temporary
//! directory.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use parsec_net_ffi_tests::chaos::{self, Rng};
use parsec_net_ffi_tests::live::LiveGame;
use parsec_net_ffi_tests::peer::{fields, parse, Event};
use parsec_net_ffi_tests::series::{self, SentSeries};
use parsec_net_ffi_tests::server::Server;
use parsec_net_ffi_tests::Build;

const SUITE_SEEDS: &[u64] = &[1];
const DEFAULT_STEPS: u64 = 40;
/// How long the games may take to agree with their servers after the script.
const SETTLE: Duration = Duration::from_secs(20);
/// The same while a game still plays over an impaired network (`net.sim`).
const SETTLE_IMPAIRED: Duration = Duration::from_secs(40);
const QUIT_TIMEOUT: Duration = Duration::from_secs(15);
/// Far ships fly this far from the origin (the gameserver's default distance is 10,000).
const FAR: &str = "1000000,0,0";

fn seeds() -> Vec<u64> {
    chaos::seeds("SERVER_GAME_CHAOS", SUITE_SEEDS)
}

fn steps() -> u64 {
    chaos::steps("SERVER_GAME_CHAOS", DEFAULT_STEPS)
}

const KINDS: [&str; 2] = ["slotserver", "gameserver"];

/// One game process (an incarnation: a restart after kill -9 is a new one with a new name).
struct Player {
    /// The name it was started with; its series carry it.
    name: String,
    game: LiveGame,
    /// Index into KINDS of the server it plays on (or will connect to).
    kind: usize,
    /// The script believes it is connected (or connecting).
    connected: bool,
    alive: bool,
    stopped_until: Option<Instant>,
    /// The name in use (the last `name` sent).
    current: String,
    renames: u32,
    texts: u32,
    far: bool,
    /// The `net.sim` line in force (None: off).
    impaired: Option<String>,
}

struct Chaos {
    seed: u64,
    program: PathBuf,
    servers: Vec<Server>,
    json: Vec<PathBuf>,
    players: Vec<Player>,
    incarnations: u32,
    log: Vec<String>,
}

impl Chaos {
    fn fail(&self, what: &str) -> ! {
        let mut text = format!(
            "server_game_chaos seed {} failed (replay with SERVER_GAME_CHAOS_SEED={} \
             SERVER_GAME_CHAOS_STEPS={}): {what}\nscript:\n",
            self.seed,
            self.seed,
            steps()
        );
        for line in &self.log {
            text.push_str(&format!("  {line}\n"));
        }
        for p in &self.players {
            text.push_str(&format!(
                "\n===== {} (alive {}) =====\n{}",
                p.name,
                p.alive,
                p.game.process.transcript()
            ));
        }
        for (i, s) in self.servers.iter().enumerate() {
            text.push_str(&format!("\n===== {} =====\n{}", KINDS[i], s.stdout()));
        }
        panic!("{text}");
    }

    fn spawn(&mut self, kind: usize) -> Player {
        self.incarnations += 1;
        let name = format!("p{}", self.incarnations);
        let mut command = Command::new(&self.program);
        command.args(["--name", &name]);
        for line in [
            "net.udp.bind 127.0.0.1".to_string(),
            "net.udp.ipv6 0".into(),
            "net.port 0".into(),
            format!("net.subsys {}", KINDS[kind]),
        ] {
            command.args(["--exec", &line]);
        }
        command.args(["--peer", &self.servers[kind].tcp.to_string()]);
        command.args(["--expect", "0", "--duration", "600000", "--control"]);
        command.args(["--series-ms", "30"]);
        let game = LiveGame::spawn(&name, command, false);
        self.log.push(format!("start {name} on {}", KINDS[kind]));
        Player {
            current: name.clone(),
            name,
            game,
            kind,
            connected: true,
            alive: true,
            stopped_until: None,
            renames: 0,
            texts: 0,
            far: false,
            impaired: None,
        }
    }

    fn send(&mut self, who: usize, line: &str) {
        self.log.push(format!("{}: {line}", self.players[who].name));
        self.players[who].game.send(line);
    }

    fn signal(&mut self, who: usize, signal: &str) {
        self.log
            .push(format!("{}: kill -{signal}", self.players[who].name));
        self.players[who].game.process.signal(signal);
    }

    fn resume_due(&mut self, all: bool) {
        for who in 0..self.players.len() {
            if let Some(until) = self.players[who].stopped_until {
                if all || Instant::now() >= until {
                    self.players[who].stopped_until = None;
                    self.signal(who, "CONT");
                }
            }
        }
    }

    fn step(&mut self, rng: &mut Rng) {
        self.resume_due(false);
        for (i, server) in self.servers.iter_mut().enumerate() {
            if !server.is_running() {
                let kind = KINDS[i];
                self.fail(&format!("the {kind} is gone"));
            }
        }
        let live: Vec<usize> = (0..self.players.len())
            .filter(|&i| self.players[i].alive)
            .collect();
        let who = live[rng.below(live.len() as u64) as usize];
        let addr = |c: &Chaos, kind: usize| c.servers[kind].tcp.to_string();
        match rng.below(100) {
            0..=7 => {
                if self.players[who].connected {
                    self.send(who, "disconnect");
                    self.players[who].connected = false;
                } else {
                    let line = format!("connect {}", addr(self, self.players[who].kind));
                    self.send(who, &line);
                    self.players[who].connected = true;
                }
            }
            8..=15 => {
                let kind = 1 - self.players[who].kind;
                self.send(who, &format!("net.subsys {}", KINDS[kind]));
                self.players[who].kind = kind;
                self.players[who].connected = false;
                if rng.chance(70) {
                    let line = format!("connect {}", addr(self, kind));
                    self.send(who, &line);
                    self.players[who].connected = true;
                }
            }
            16..=22 => self.send(who, "net.api udp"),
            23..=26 => {
                self.signal(who, "KILL");
                self.players[who].game.process.kill();
                self.players[who].alive = false;
                self.players[who].stopped_until = None;
                let kind = rng.below(2) as usize;
                let player = self.spawn(kind);
                self.players.push(player);
            }
            27..=31 => {
                if self.players[who].stopped_until.is_none() {
                    self.signal(who, "STOP");
                    let ms = 100 + rng.below(1400);
                    self.players[who].stopped_until =
                        Some(Instant::now() + Duration::from_millis(ms));
                }
            }
            32..=41 => {
                let p = &mut self.players[who];
                p.renames += 1;
                p.current = format!("{}r{}", p.name, p.renames);
                let line = format!("name {}", p.current);
                self.send(who, &line);
            }
            42..=47 => {
                let line = if rng.chance(50) { "join" } else { "unjoin" };
                self.send(who, line);
            }
            48..=53 => {
                let line = if rng.chance(60) {
                    "@series on"
                } else {
                    "@series off"
                };
                self.send(who, line);
            }
            54..=67 => {
                let k = 1 + rng.below(30);
                self.send(who, &format!("@burst {k}"));
            }
            68..=81 => {
                for _ in 0..1 + rng.below(5) {
                    let p = &mut self.players[who];
                    let line = format!("say t {} {} {}", p.name, p.texts, p.current);
                    p.texts += 1;
                    self.send(who, &line);
                }
            }
            82..=89 => {
                let k = 1 + rng.below(20);
                self.send(who, &format!("@unreliable {k}"));
            }
            _ => {
                let far = rng.chance(50);
                self.players[who].far = far;
                self.send(who, &format!("@pos {}", if far { FAR } else { "0,0,0" }));
            }
        }
        std::thread::sleep(Duration::from_millis(rng.below(120)));
    }
}

impl Chaos {
    /// A step of the second random stream (so a seed's main script is the one it had before
    /// this step was added): now and then a game gets a worse network (`net.sim`: loss up to
    /// 20%, duplicates up to 5%, reordering, lag and jitter up to 100 ms on both its paths), or
    /// an impaired game gets its plain network back.
    fn impair(&mut self, extra: &mut Rng) {
        if !extra.chance(15) {
            return;
        }
        let live: Vec<usize> = (0..self.players.len())
            .filter(|&i| self.players[i].alive)
            .collect();
        let who = live[extra.below(live.len() as u64) as usize];
        if self.players[who].impaired.is_some() && extra.chance(40) {
            self.send(who, "net.sim off");
            self.players[who].impaired = None;
            return;
        }
        let mut parts = Vec::new();
        if extra.chance(70) {
            parts.push(format!("loss {}", 1 + extra.below(20)));
        }
        if extra.chance(40) {
            parts.push(format!("dup {}", 1 + extra.below(5)));
        }
        if extra.chance(40) {
            parts.push(format!("reorder {}", 1 + extra.below(30)));
        }
        if extra.chance(50) {
            parts.push(format!("lag {}", extra.below(81)));
        }
        if extra.chance(40) {
            parts.push(format!("jitter {}", 1 + extra.below(40)));
        }
        if parts.is_empty() {
            parts.push(format!("loss {}", 1 + extra.below(20)));
        }
        let line = format!("net.sim {}", parts.join(" "));
        self.send(who, &line);
        self.players[who].impaired = Some(line);
    }
}

/// What one game's events said, checked on the way.
#[derive(Default)]
struct View {
    own: Option<i32>,
    /// slot -> (name, stretch number)
    seated: BTreeMap<i32, (String, u64)>,
    joined: HashMap<i32, bool>,
    stretch: u64,
    /// per (sender, stretch): last series number
    last_in_stretch: HashMap<(String, u64), u32>,
    /// per sender: last series number, last text number
    last_series: HashMap<String, u32>,
    last_text: HashMap<String, u32>,
    /// per sender: every series number received, counted
    series_count: HashMap<(String, u32), u32>,
    unreliable: HashSet<(String, u32)>,
    /// names carried by texts per stretch
    tagged: HashSet<(u64, String)>,
    /// per stretch: whether the game met that player before it began (so the stretch may open
    /// with events resumed from before the receiver's or the sender's switch, then a gap: what
    /// was queued while one of them was away is not delivered), and whether that gap was seen
    stretch_prior: HashMap<u64, (bool, bool)>,
    /// every player (name it started with) the game ever had a stretch with
    met: HashSet<String>,
    /// slot -> the line of a rename that came after a text sent under that name: a violation
    /// unless the player's departure is the next thing heard of it (at a disconnect or switch
    /// the held events go out without the name: docs/decisions.md)
    late_rename: HashMap<i32, String>,
    /// events from a slot not seated (documented for a gameserver: late events of a player who
    /// left, events held 5 s for a seat that never came)
    unseated: Vec<String>,
    errors: Vec<String>,
}

fn series_of(e: &Event) -> Option<(u32, String)> {
    if e.data.len() < 4 {
        return None;
    }
    let n = u32::from_le_bytes([e.data[0], e.data[1], e.data[2], e.data[3]]);
    let name: Vec<u8> = e.data[4..]
        .iter()
        .copied()
        .take_while(|&b| b != 0)
        .collect();
    Some((n, String::from_utf8_lossy(&name).into_owned()))
}

/// What every game (by its process name) says it queued of the series.
type Sends = HashMap<String, SentSeries>;

/// The process a player name belongs to: names are NAME or NAMErK (renames).
fn process_of(name: &str) -> &str {
    name.split('r').next().unwrap_or_default()
}

/// Whether `sender` queued every number of `missing` while `receiver` (a process name) was not
/// seated in its game: those were never addressed to the receiver, so a gap over them loses
/// nothing.
fn never_addressed(
    sends: &Sends,
    sender: &str,
    receiver: &str,
    missing: std::ops::Range<u32>,
) -> bool {
    let Some(sent) = sends.get(sender) else {
        return false;
    };
    missing.into_iter().all(|n| {
        sent.queued
            .binary_search_by_key(&n, |q| q.n)
            .is_ok_and(|i| {
                !sent.queued[i]
                    .seated
                    .iter()
                    .any(|name| process_of(name) == receiver)
            })
    })
}

/// Walk the output of the game `receiver` (its process name); Err(what is wrong).
fn view_of(lines: &[String], receiver: &str, sends: &Sends) -> Result<View, String> {
    let mut v = View::default();
    for (index, line) in lines.iter().enumerate() {
        if line.starts_with("EXEC ") && line.contains(" line=\"net.sim ") {
            if !line.starts_with("EXEC rc=0 ") {
                return Err(format!("net.sim refused: line {index}: {line}"));
            }
            continue;
        }
        if !line.starts_with("EVENT ") {
            continue;
        }
        let e = parse(line).events.remove(0);
        let at = format!("line {index}: {line}");
        let p = e.player;
        let own_or_server = matches!(e.kind.as_str(), "CONNECTED" | "DISCONNECTED" | "ERROR")
            || (e.kind == "TEXT" && p == -1);
        let from_player = !own_or_server;
        if from_player && Some(p) == v.own {
            return Err(format!("an event from the game's own slot: {at}"));
        }
        if from_player && e.kind != "PLAYER_CONNECTED" && !v.seated.contains_key(&p) {
            if e.kind.starts_with("PLAYER_") {
                return Err(format!("{} for a slot nobody is seated in: {at}", e.kind));
            }
            v.unseated.push(at.clone());
        }
        if from_player {
            if let Some(late) = v.late_rename.remove(&p) {
                match e.kind.as_str() {
                    "PLAYER_DISCONNECTED" => {}
                    // Several renames waiting together go out with the same disconnect (seed
                    // 160: three renames and texts typed in one frame, then `disconnect`).
                    "PLAYER_NAME" => {
                        v.late_rename.insert(p, late);
                    }
                    _ => {
                        return Err(format!(
                            "a rename came after a text sent under that name, and the player \
                             stayed: {late}, then {at}"
                        ))
                    }
                }
            }
        }
        let stretch = v.seated.get(&p).map(|s| s.1).unwrap_or(u64::MAX);
        match e.kind.as_str() {
            "CONNECTED" => {
                if v.own.is_some() {
                    return Err(format!("CONNECTED while connected: {at}"));
                }
                v.own = Some(p);
            }
            "DISCONNECTED" => {
                v.own = None;
                v.seated.clear();
                v.late_rename.clear();
                v.joined.clear();
            }
            "ERROR" => v.errors.push(at.clone()),
            "PLAYER_CONNECTED" => {
                if v.seated.contains_key(&p) {
                    return Err(format!("PLAYER_CONNECTED for a seated slot: {at}"));
                }
                v.stretch += 1;
                v.seated.insert(p, (e.text.clone(), v.stretch));
                // Names are NAME or NAMErK (renames): the part before 'r' names the process.
                let first = process_of(&e.text).to_string();
                let prior = !v.met.insert(first);
                v.stretch_prior.insert(v.stretch, (prior, false));
            }
            "PLAYER_DISCONNECTED" => {
                v.seated.remove(&p);
                v.joined.remove(&p);
            }
            "PLAYER_NAME" => {
                if v.tagged.contains(&(stretch, e.text.clone())) {
                    v.late_rename.insert(p, at.clone());
                }
                if let Some(s) = v.seated.get_mut(&p) {
                    s.0 = e.text.clone();
                }
            }
            "PLAYER_JOINED" => {
                v.joined.insert(p, true);
            }
            "PLAYER_UNJOINED" => {
                v.joined.insert(p, false);
            }
            "TEXT" if p >= 0 && e.text.starts_with("t ") => {
                let parts: Vec<&str> = e.text.split(' ').collect();
                let (sender, n, tag) = (
                    parts[1].to_string(),
                    parts[2].parse::<u32>().unwrap(),
                    parts[3],
                );
                if let Some(&last) = v.last_text.get(&sender) {
                    if n <= last {
                        return Err(format!("text {n} of {sender} after its text {last}: {at}"));
                    }
                }
                v.last_text.insert(sender, n);
                v.tagged.insert((stretch, tag.to_string()));
            }
            "CUSTOM" if e.custom == 600 => {
                let Some((n, sender)) = series_of(&e) else {
                    return Err(format!("a short series event: {at}"));
                };
                if let Some(&last) = v.last_series.get(&sender) {
                    if n <= last {
                        return Err(format!(
                            "series {n} of {sender} after its series {last} (duplicate or out of order): {at}"
                        ));
                    }
                }
                v.last_series.insert(sender.clone(), n);
                *v.series_count.entry((sender.clone(), n)).or_default() += 1;
                if stretch != u64::MAX {
                    let key = (sender.clone(), stretch);
                    let prior = v.stretch_prior.entry(stretch).or_insert((false, false));
                    if let Some(&last) = v.last_in_stretch.get(&key) {
                        if n != last + 1 && never_addressed(sends, &sender, receiver, last + 1..n) {
                            // Said while the receiver was away from the sender's game.
                        } else if n != last + 1 && prior.0 && !prior.1 {
                            prior.1 = true;
                        } else if n != last + 1 {
                            return Err(format!(
                                "series {n} of {sender} after {last} with no departure between (lost {}..{}): {at}",
                                last + 1,
                                n - 1
                            ));
                        }
                    }
                    v.last_in_stretch.insert(key, n);
                }
            }
            "CUSTOM" if e.custom == 601 => {
                let Some((n, sender)) = series_of(&e) else {
                    return Err(format!("a short unreliable event: {at}"));
                };
                if !v.unreliable.insert((sender.clone(), n)) {
                    return Err(format!("unreliable {n} of {sender} twice: {at}"));
                }
            }
            _ => {}
        }
    }
    Ok(v)
}

/// (slot, name) of every player in a `--json` list.
fn roster_of_json(json: &str) -> Option<BTreeMap<i32, String>> {
    if !json.contains("\"running\": true") {
        return None;
    }
    let mut out = BTreeMap::new();
    for part in json.split("{\"slot\": ").skip(1) {
        let (slot, rest) = part.split_once(", \"name\": \"")?;
        let (name, _) = rest.split_once('"')?;
        out.insert(slot.parse().ok()?, name.to_string());
    }
    Some(out)
}

impl Chaos {
    /// What every game, the killed ones too, says it queued of the series.
    fn sends(&self) -> Sends {
        self.players
            .iter()
            .map(|p| {
                let out = p.game.process.lines_from(0).join("\n");
                (p.name.clone(), series::sent(&out))
            })
            .collect()
    }

    fn check_streams(&self) -> Vec<View> {
        let sends = self.sends();
        let mut views = Vec::new();
        for p in &self.players {
            match view_of(&p.game.process.lines_from(0), &p.name, &sends) {
                Ok(v) => views.push(v),
                Err(what) => self.fail(&format!("game {}: {what}", p.name)),
            }
        }
        views
    }

    /// Whether every live game agrees with its server's list; else what differs.
    fn disagreement(&self) -> Option<String> {
        let views = self.check_streams();
        let rosters: Vec<Option<BTreeMap<i32, String>>> = self
            .json
            .iter()
            .map(|path| roster_of_json(&std::fs::read_to_string(path).unwrap_or_default()))
            .collect();
        for kind in 0..2 {
            let Some(roster) = &rosters[kind] else {
                return Some(format!("no {} list yet", KINDS[kind]));
            };
            let mut want: Vec<&str> = self
                .players
                .iter()
                .filter(|p| p.alive && p.kind == kind)
                .map(|p| p.current.as_str())
                .collect();
            want.sort();
            let mut listed: Vec<&str> = roster.values().map(String::as_str).collect();
            listed.sort();
            if want != listed {
                return Some(format!(
                    "the {} lists {listed:?}, the script has {want:?}",
                    KINDS[kind]
                ));
            }
        }
        for (p, v) in self.players.iter().zip(&views) {
            if !p.alive {
                continue;
            }
            let roster = rosters[p.kind].as_ref().unwrap();
            let mut mine: BTreeMap<i32, String> =
                v.seated.iter().map(|(s, (n, _))| (*s, n.clone())).collect();
            match v.own {
                Some(own) => {
                    mine.insert(own, p.current.clone());
                }
                None => return Some(format!("{} is not connected", p.name)),
            }
            if &mine != roster {
                return Some(format!(
                    "{} sees {mine:?}, the {} lists {roster:?}",
                    p.name, KINDS[p.kind]
                ));
            }
        }
        None
    }

    /// Whether a live game still plays over an impaired network.
    fn any_impaired(&self) -> bool {
        self.players.iter().any(|p| p.alive && p.impaired.is_some())
    }

    fn settle(&mut self, extra: &mut Rng) {
        self.log.push("----- settle".into());
        self.resume_due(true);
        for who in 0..self.players.len() {
            if !self.players[who].alive {
                continue;
            }
            // About half the impaired games keep their network through the checks.
            if self.players[who].impaired.is_some() && extra.chance(50) {
                self.send(who, "net.sim off");
                self.players[who].impaired = None;
            }
            self.send(who, "@series off");
            if !self.players[who].connected {
                let line = format!("connect {}", self.servers[self.players[who].kind].tcp);
                self.send(who, &line);
                self.players[who].connected = true;
            }
            self.send(who, "join");
        }
        // Agreement counts only once every game has read what it was sent: a game stopped
        // until now may still have a `disconnect` or `connect` of its own to run, and the others
        // may agree with the server about it until it does.
        for who in 0..self.players.len() {
            if self.players[who].alive {
                self.players[who].game.summary_now();
            }
        }
        let limit = if self.any_impaired() {
            SETTLE_IMPAIRED
        } else {
            SETTLE
        };
        let deadline = Instant::now() + limit;
        while let Some(what) = self.disagreement() {
            if Instant::now() >= deadline {
                self.fail(&format!("no agreement after {limit:?}: {what}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every live game's lookups (`@summary`) match the table of the events it had polled when
    /// it looked. (Events printed after the summary was asked for may already be on their way: a
    /// player seen leaving and coming back while the checks run.)
    #[allow(clippy::needless_range_loop)] // the loop needs `self` mutably
    fn check_lookups(&mut self) -> Vec<BTreeMap<i32, u32>> {
        self.check_streams();
        let mut frames = Vec::new();
        for who in 0..self.players.len() {
            if !self.players[who].alive {
                frames.push(BTreeMap::new());
                continue;
            }
            let (summary, at) = self.players[who].game.summary_now_at();
            let before = self.players[who].game.process.lines_from(0);
            let sends = self.sends();
            let name = &self.players[who].name;
            let view = match view_of(&before[..at.min(before.len())], name, &sends) {
                Ok(view) => view,
                Err(what) => self.fail(&format!("game {}: {what}", self.players[who].name)),
            };
            let looked: BTreeMap<i32, String> = summary
                .players
                .iter()
                .map(|p| (p.slot, p.name.clone()))
                .collect();
            let seen: BTreeMap<i32, String> = view
                .seated
                .iter()
                .map(|(s, (n, _))| (*s, n.clone()))
                .collect();
            if looked != seen {
                let name = self.players[who].name.clone();
                self.fail(&format!(
                    "{name}'s lookups show {looked:?}, its events {seen:?}"
                ));
            }
            frames.push(summary.players.iter().map(|p| (p.slot, p.frame)).collect());
        }
        frames
    }

    /// Each live game sends a burst; every other live game of its server gets all of it once.
    fn check_final_burst(&mut self) {
        let mut sent: Vec<(usize, Vec<u32>)> = Vec::new();
        let mut marks = Vec::new();
        for who in 0..self.players.len() {
            if self.players[who].alive {
                marks.push((who, self.players[who].game.process.line_count()));
                self.send(who, "@burst 5");
            }
        }
        for (who, mark) in marks {
            let game = &self.players[who].game;
            let ok = game.process.wait_until(Duration::from_secs(10), |lines| {
                lines[mark.min(lines.len())..]
                    .iter()
                    .filter(|l| l.starts_with("SERIES "))
                    .count()
                    >= 5
            });
            if !ok {
                self.fail(&format!(
                    "{} did not send its burst",
                    self.players[who].name
                ));
            }
            let numbers: Vec<u32> = game
                .process
                .lines_from(mark)
                .iter()
                .filter(|l| l.starts_with("SERIES "))
                .take(5)
                .filter_map(|l| {
                    let f = fields(&l["SERIES ".len()..]);
                    let get = |k: &str| f.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
                    (get("rc")? == "0").then(|| get("n")?.parse().ok())?
                })
                .collect();
            if numbers.len() != 5 {
                self.fail(&format!(
                    "{} could not send its burst",
                    self.players[who].name
                ));
            }
            sent.push((who, numbers));
        }
        let limit = Duration::from_secs(if self.any_impaired() { 30 } else { 10 });
        let deadline = Instant::now() + limit;
        loop {
            let views = self.check_streams();
            let mut missing = None;
            for (sender, numbers) in &sent {
                let s = &self.players[*sender];
                for (r, v) in self.players.iter().zip(&views) {
                    if !r.alive || r.kind != s.kind || r.name == s.name {
                        continue;
                    }
                    for n in numbers {
                        match v.series_count.get(&(s.name.clone(), *n)) {
                            Some(1) => {}
                            None => {
                                missing =
                                    Some(format!("{} has no series {n} of {}", r.name, s.name))
                            }
                            Some(c) => self.fail(&format!(
                                "{} got series {n} of {} {c} times",
                                r.name, s.name
                            )),
                        }
                    }
                }
            }
            let Some(what) = missing else { break };
            if Instant::now() >= deadline {
                self.fail(&format!("the final bursts did not all arrive: {what}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Through the gameserver: between two summaries, a far ship's state (frame) stays, a near
    /// one's moves on, for every pair of joined games.
    #[allow(clippy::needless_range_loop)] // pairs of games, by index
    fn check_distance(&mut self, before: &[BTreeMap<i32, u32>]) {
        std::thread::sleep(Duration::from_millis(600));
        let after = self.check_lookups();
        let views = self.check_streams();
        let game = 1;
        for r in 0..self.players.len() {
            let rp = &self.players[r];
            if !rp.alive || rp.kind != game {
                continue;
            }
            for s in 0..self.players.len() {
                let sp = &self.players[s];
                if s == r || !sp.alive || sp.kind != game {
                    continue;
                }
                let Some(slot) = views[s].own else { continue };
                let (b, a) = (before[r].get(&slot), after[r].get(&slot));
                let far = rp.far != sp.far;
                if far && b != a {
                    self.fail(&format!(
                        "{} got states of {} (far away): frame {b:?} then {a:?}",
                        rp.name, sp.name
                    ));
                }
                if !far && b == a {
                    self.fail(&format!(
                        "{} got no states of {} (near): frame {b:?} then {a:?}",
                        rp.name, sp.name
                    ));
                }
            }
        }
    }

    fn finish(mut self) {
        let mut unseated = 0;
        let mut errors = Vec::new();
        let show_unseated = std::env::var_os("SERVER_GAME_CHAOS_SHOW_UNSEATED").is_some();
        for (v, p) in self.check_streams().into_iter().zip(&self.players) {
            unseated += v.unseated.len();
            errors.extend(v.errors);
            if show_unseated && !v.unseated.is_empty() {
                println!(
                    "  {} got {} events from unseated slots:",
                    p.name,
                    v.unseated.len()
                );
                for at in &v.unseated {
                    println!("    {at}");
                }
                let path = std::env::temp_dir()
                    .join(format!("server_game_chaos-{}-{}.out", self.seed, p.name));
                let _ = std::fs::write(&path, p.game.process.lines_from(0).join("\n"));
                println!("    its whole output: {}", path.display());
            }
        }
        let players = std::mem::take(&mut self.players);
        for p in players {
            let name = p.name.clone();
            let alive = p.alive;
            let run = if alive {
                p.game.quit(QUIT_TIMEOUT)
            } else {
                p.game.finish(QUIT_TIMEOUT)
            };
            if alive && !run.output.status.success() {
                self.fail(&format!(
                    "{name} exited with {}\n{}",
                    run.output.status,
                    run.output.transcript()
                ));
            }
            if run.output.stderr.contains("Sanitizer") || run.output.stderr.contains("panicked") {
                self.fail(&format!(
                    "{name} reported an error\n{}",
                    run.output.transcript()
                ));
            }
        }
        for (i, server) in std::mem::take(&mut self.servers).into_iter().enumerate() {
            let out = server.stop();
            if !out.status.success() || out.stderr.contains("panicked") {
                self.fail(&format!(
                    "the {} did not stop cleanly\n{}",
                    KINDS[i],
                    out.transcript()
                ));
            }
        }
        for path in &self.json {
            let _ = std::fs::remove_file(path);
        }
        let impairments = self
            .log
            .iter()
            .filter(|l| l.contains(": net.sim ") && !l.ends_with(" off"))
            .count();
        println!(
            "server_game_chaos seed {}: {} steps, {} games, {impairments} impairments (net.sim), \
             {unseated} events from unseated slots, {} error events",
            self.seed,
            steps(),
            self.incarnations,
            errors.len()
        );
        for e in errors {
            println!("  {e}");
        }
    }
}

fn run_seed(program: &Path, seed: u64) {
    let mut rng = Rng(seed);
    // New kinds of steps draw from this second stream: a seed's main script stays what it was.
    let mut extra = Rng(seed ^ 0x6e65_742e_7369_6d00);
    let dir = std::env::temp_dir();
    let json: Vec<PathBuf> = KINDS
        .iter()
        .map(|k| dir.join(format!("pnffi-sgc-{}-{seed}-{k}.json", std::process::id())))
        .collect();
    let servers = KINDS
        .iter()
        .zip(&json)
        .map(|(kind, path)| {
            Server::start_on_loopback(kind, kind, &["--json", path.to_str().unwrap()])
        })
        .collect();
    let mut chaos = Chaos {
        seed,
        program: program.to_path_buf(),
        servers,
        json,
        players: Vec::new(),
        incarnations: 0,
        log: Vec::new(),
    };
    let count = 3 + rng.below(4);
    for _ in 0..count {
        let kind = rng.below(2) as usize;
        let player = chaos.spawn(kind);
        chaos.players.push(player);
    }
    for who in 0..chaos.players.len() {
        if rng.chance(50) {
            chaos.send(who, "@series on");
        }
    }
    for _ in 0..steps() {
        chaos.step(&mut rng);
        chaos.impair(&mut extra);
        chaos.check_streams();
    }
    chaos.settle(&mut extra);
    let before = chaos.check_lookups();
    chaos.check_final_burst();
    // The final burst took time; take the "before" frames again right before the wait.
    let _ = before;
    let before = chaos.check_lookups();
    chaos.check_distance(&before);
    chaos.finish();
}

#[test]
fn random_server_games_agree() {
    let program = Build::c("c/peer_game.c").build();
    for seed in seeds() {
        run_seed(&program, seed);
    }
}
