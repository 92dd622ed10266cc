//! Running the peer-to-peer game of `c/peer_game.c` and reading what it printed: several games
//! started together (each under its own time limit), their output parsed into events and
//! summaries, and the checks every multi-player test shares (every game reached the game in a
//! distinct slot and got the others' names, ship states and every remote event they sent).
//!
//! The rules the checks rely on (what the game in a slot sends) are those of `c/peer_game.c`'s
//! header comment; they are repeated here as functions.

use std::net::UdpSocket;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::process::{run, run_asan, Output};

/// Object id of the laser the game in `slot` fires.
pub fn laser_id(slot: i32) -> u32 {
    1000 + slot as u32
}

/// Object class of every laser.
pub const LASER_CLASS: u32 = 7;

/// The position the position callback of the game in `slot` reports for its laser.
pub fn laser_position(slot: i32) -> [f32; 3] {
    [(slot * 100 + 1) as f32, 2.0, 3.0]
}

/// The position the game passes to `NET_RmEvCreateLaser` (replaced at send time).
pub const LASER_FIRE_POSITION: [f32; 3] = [-5.0, -5.0, -5.0];

/// Custom event type of the game in `slot`.
pub fn custom_type(slot: i32) -> u32 {
    300 + slot as u32
}

/// Custom event bytes of the game in `slot`.
pub fn custom_data(slot: i32) -> Vec<u8> {
    (0..40).map(|i| (slot * 31 + 7 * i) as u8).collect()
}

/// `NET_SEND_RELIABLE`, as `flags` of a custom event.
pub const NET_SEND_RELIABLE: u32 = 1;

/// One event the game in a slot sends besides its chat line, as the receiver must see it
/// (`c/peer_game.c`'s header comment has the same table).
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub kind: &'static str,
    pub object: u32,
    pub class: u32,
    pub target: u32,
    pub flags: u32,
    pub list: u32,
    pub custom: u32,
    pub pos: Vec<f32>,
    pub dir: Vec<f32>,
    pub orient: Vec<f32>,
    pub data: Vec<u8>,
    /// Unreliable: may be lost, so it must arrive at most once (else exactly once).
    pub may_be_lost: bool,
}

impl Expected {
    fn new(kind: &'static str) -> Expected {
        Expected {
            kind,
            object: 0,
            class: 0,
            target: 0,
            flags: 0,
            list: 0,
            custom: 0,
            pos: vec![0.0; 3],
            dir: vec![0.0; 3],
            orient: vec![0.0; 4],
            data: Vec::new(),
            may_be_lost: false,
        }
    }

    /// Whether `event` is this one (every field the line shows).
    pub fn matches(&self, event: &Event) -> bool {
        event.kind == self.kind
            && event.object == self.object
            && event.class == self.class
            && event.target == self.target
            && event.flags == self.flags
            && event.list == self.list
            && event.custom == self.custom
            && event.pos == self.pos
            && event.dir == self.dir
            && event.orient == self.orient
            && event.data == self.data
            && event.text.is_empty()
    }

    /// Whether `event` is of this one's kind and identity (object id, or custom type), so that
    /// it should match.
    fn is_meant(&self, event: &Event) -> bool {
        event.kind == self.kind
            && match self.kind {
                "CUSTOM" => event.custom == self.custom,
                "PARTICLE_OBJECT" => true,
                _ => event.object == self.object,
            }
    }
}

/// Everything except the chat line that the game named `name` in `slot` sends, in order.
pub fn expected_events(slot: i32, name: &str) -> Vec<Expected> {
    let s = slot as f32;
    let id = |base: u32| base + slot as u32;
    vec![
        Expected {
            object: id(2000),
            class: 11,
            pos: vec![s, 10.0, 20.0],
            orient: vec![0.0, 0.6, 0.0, 0.8],
            flags: 0xA500_0000 + slot as u32,
            ..Expected::new("CREATE_OBJECT")
        },
        Expected {
            object: id(3000),
            class: 12,
            pos: vec![s, 11.0, 21.0],
            dir: vec![1.0, 0.0, 0.0],
            target: laser_id(slot),
            ..Expected::new("CREATE_MISSILE")
        },
        Expected {
            object: id(4000),
            class: 13 + slot as u32,
            pos: vec![s, 12.0, 22.0],
            ..Expected::new("CREATE_EXTRA")
        },
        Expected {
            class: 14 + slot as u32,
            pos: vec![s, 13.0, 23.0],
            ..Expected::new("PARTICLE_OBJECT")
        },
        Expected {
            object: id(2000),
            list: 9,
            ..Expected::new("KILL_OBJECT")
        },
        Expected {
            custom: 500 + slot as u32,
            data: format!("unreliable from {name}").into_bytes(),
            may_be_lost: true,
            ..Expected::new("CUSTOM")
        },
        Expected {
            object: laser_id(slot),
            class: LASER_CLASS,
            pos: laser_position(slot).to_vec(),
            dir: vec![0.0, 0.0, 1.0],
            ..Expected::new("CREATE_LASER")
        },
        Expected {
            custom: custom_type(slot),
            data: custom_data(slot),
            flags: NET_SEND_RELIABLE,
            ..Expected::new("CUSTOM")
        },
    ]
}

/// What `NET_FetchOwner` must say at the end for the objects of the game in `slot`: its laser,
/// missile and extra are its own; its object was killed.
pub fn expected_owners(slot: i32) -> Vec<(u32, i32)> {
    let id = |base: u32| base + slot as u32;
    vec![
        (laser_id(slot), slot),
        (id(2000), -1),
        (id(3000), slot),
        (id(4000), slot),
    ]
}

/// The console lines that make a game use loopback only, on `port`, with fast peer timings.
pub fn loopback_setup(port: u16) -> Vec<String> {
    vec![
        "net.udp.bind 127.0.0.1".into(),
        "net.udp.ipv6 0".into(),
        format!("net.port {port}"),
        "net.peer.connect_interval 50".into(),
        "net.peer.slot_interval 80".into(),
        "net.peer.reply_wait 30".into(),
    ]
}

/// [`loopback_setup`] with a connect loop three times as long (1.5 s) and a slot wait longer
/// than it (3.2 s), for games whose startup must survive a process that does not run for a
/// while on a loaded machine: stops of up to 0.5 s split none of 10,000 simulated four-peer
/// startups with it, 11 with the short loop (`net-core/tests/peer_startup.rs`).
pub fn patient_loopback_setup(port: u16) -> Vec<String> {
    let mut setup = loopback_setup(port);
    setup.push("net.peer.connect_tries 30".into());
    setup.push("net.peer.slot_tries 40".into());
    setup
}

/// `count` distinct UDP ports that are free on 127.0.0.1 right now (each was bound and released).
///
/// They are taken from outside the kernel's ephemeral range (`ip_local_port_range`), so no
/// socket bound to port 0 meanwhile (by another test, or a temporary socket of the UDP backend)
/// can get one of them before the game binds it; a port bound to 0 and released can be taken
/// that way, and was in about one run of thirty. Each call starts at a different place, derived
/// from the process id and a counter. Falls back to ports the kernel picks (port 0) if the
/// ephemeral range leaves no room.
pub fn free_loopback_ports(count: usize) -> Vec<u16> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let (low, high) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut numbers = text.split_whitespace().map(|n| n.parse::<u32>().ok());
            Some((numbers.next()??, numbers.next()??))
        })
        .unwrap_or((32_768, 60_999));
    let (first, last) = if low > 11_000 {
        (10_000, low - 1)
    } else {
        (high + 1, 65_535)
    };
    let mut held: Vec<UdpSocket> = Vec::new();
    if first <= last {
        let span = last - first + 1;
        let start = std::process::id().wrapping_mul(7919) % span;
        for _ in 0..span {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let port = first + start.wrapping_add(n) % span;
            if let Ok(socket) = UdpSocket::bind(("127.0.0.1", port as u16)) {
                held.push(socket);
                if held.len() == count {
                    break;
                }
            }
        }
    }
    while held.len() < count {
        held.push(UdpSocket::bind("127.0.0.1:0").expect("binding a UDP socket on 127.0.0.1"));
    }
    held.iter()
        .map(|s| {
            s.local_addr()
                .expect("a bound socket has an address")
                .port()
        })
        .collect()
}

/// The arguments of one live game: `--name`, `--exec` per setup line, `--peer` if given,
/// `--expect`, `--duration`, `--linger`.
pub fn game_args(
    name: &str,
    setup: &[String],
    peer: Option<&str>,
    expect: usize,
    duration_ms: u64,
    linger_ms: u64,
) -> Vec<String> {
    let mut args = vec!["--name".to_string(), name.to_string()];
    for line in setup {
        args.push("--exec".into());
        args.push(line.clone());
    }
    if let Some(peer) = peer {
        args.push("--peer".into());
        args.push(peer.to_string());
    }
    args.extend([
        "--expect".into(),
        expect.to_string(),
        "--duration".into(),
        duration_ms.to_string(),
        "--linger".into(),
        linger_ms.to_string(),
    ]);
    args
}

/// A game program that takes `--name`, `--peer`, `--duration` and `--exec` per setup line
/// (`contract_pair`, `three_games`), with `extra` arguments after them.
pub fn scripted_game(
    program: &Path,
    name: &str,
    setup: &[String],
    peer: &str,
    duration_ms: &str,
    extra: &[&str],
) -> Command {
    let mut command = Command::new(program);
    command.args(["--name", name, "--peer", peer, "--duration", duration_ms]);
    for line in setup {
        command.args(["--exec", line]);
    }
    command.args(extra);
    command
}

/// The console lines that make a game use loopback only, IPv4, on `port`, with the default
/// timings, and `net.subsys PROTOCOL` if given.
pub fn loopback_protocol_setup(port: u16, protocol: Option<&str>) -> Vec<String> {
    let mut lines = vec![
        "net.udp.bind 127.0.0.1".to_string(),
        "net.udp.ipv6 0".to_string(),
        format!("net.port {port}"),
    ];
    if let Some(protocol) = protocol {
        lines.push(format!("net.subsys {protocol}"));
    }
    lines
}

/// How long a game may take to meet the others before it gives up (`--duration`).
pub const GAME_DURATION_MS: u64 = 15_000;
/// The time limit of a game process (longer than [`GAME_DURATION_MS`] plus its linger, with room
/// for AddressSanitizer).
pub const GAME_TIMEOUT: Duration = Duration::from_secs(40);

/// Two games, "alice" (A) and "bob" (B), on 127.0.0.1 with ports picked by
/// [`free_loopback_ports`], each connecting to the other with `connect 127.0.0.1:PORT`; B runs
/// `b_extra` after its setup lines; both get the extra arguments `args`. A lingers longer than
/// B, so B leaves first (and a recording B makes ends with A still in the game). Returns [A, B].
pub fn two_loopback_games(
    program: &Path,
    asan: bool,
    b_extra: &[String],
    args: &[&str],
) -> Vec<GameRun> {
    let ports = free_loopback_ports(2);
    let names = ["alice", "bob"];
    let lingers = [1500, 500];
    let games = (0..2)
        .map(|i| {
            let mut setup = loopback_setup(ports[i]);
            if i == 1 {
                setup.extend(b_extra.iter().cloned());
            }
            let peer = format!("127.0.0.1:{}", ports[1 - i]);
            let mut command = Command::new(program);
            command.args(game_args(
                names[i],
                &setup,
                Some(&peer),
                1,
                GAME_DURATION_MS,
                lingers[i],
            ));
            command.args(args);
            (names[i].to_string(), command)
        })
        .collect();
    run_together(games, GAME_TIMEOUT, asan)
}

/// One finished game: its name, what it printed, and that parsed.
#[derive(Debug)]
pub struct GameRun {
    pub name: String,
    pub output: Output,
    pub report: Report,
}

impl GameRun {
    /// Panic with `message` and this game's whole output.
    pub fn fail(&self, message: &str) -> ! {
        panic!(
            "game {}: {message}\n{}",
            self.name,
            self.output.transcript()
        )
    }

    /// The summary, or a failure if the game printed none.
    pub fn summary(&self) -> &Summary {
        match &self.report.summary {
            Some(summary) => summary,
            None => self.fail("no SUMMARY line"),
        }
    }
}

/// Run the games `(name, command)` at the same time, each with the time limit `timeout`
/// (killed when it passes it); under AddressSanitizer's runtime options if `asan`. Waits for all;
/// a game that timed out fails the call with its output.
pub fn run_together(games: Vec<(String, Command)>, timeout: Duration, asan: bool) -> Vec<GameRun> {
    let outputs: Vec<(String, std::thread::Result<Output>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = games
            .into_iter()
            .map(|(name, command)| {
                let handle = scope.spawn(move || {
                    if asan {
                        run_asan(command, timeout)
                    } else {
                        run(command, timeout)
                    }
                });
                (name, handle)
            })
            .collect();
        handles
            .into_iter()
            .map(|(name, handle)| (name, handle.join()))
            .collect()
    });
    outputs
        .into_iter()
        .map(|(name, output)| match output {
            Ok(output) => {
                let report = parse(&output.stdout);
                GameRun {
                    name,
                    output,
                    report,
                }
            }
            Err(panic) => std::panic::resume_unwind(panic),
        })
        .collect()
}

/// One `EVENT` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub kind: String,
    pub player: i32,
    pub object: u32,
    pub class: u32,
    pub target: u32,
    pub flags: u32,
    pub list: u32,
    pub custom: u32,
    pub pos: Vec<f32>,
    pub dir: Vec<f32>,
    pub orient: Vec<f32>,
    pub data: Vec<u8>,
    pub text: String,
}

/// One `PLAYER` line of a summary.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerView {
    pub slot: i32,
    pub name: String,
    /// `ok` or `err(CODE)`.
    pub state: String,
    /// `ok`, `none` or `bad(REASON)`.
    pub marker: String,
    pub frame: u32,
    pub pos: Vec<f32>,
}

/// The summary block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub mode: String,
    pub slot: i32,
    pub name: String,
    pub frames: u64,
    pub callback_calls: u64,
    /// `--hostile-callback`: what NET_PollEvent answered inside the position callback.
    pub reentry: i32,
    pub complete: bool,
    pub players: Vec<PlayerView>,
    /// `(object, owner)` of every `OWNER` line.
    pub owners: Vec<(u32, i32)>,
}

impl Summary {
    pub fn player(&self, slot: i32) -> Option<&PlayerView> {
        self.players.iter().find(|p| p.slot == slot)
    }

    pub fn owner(&self, object: u32) -> Option<i32> {
        self.owners
            .iter()
            .find(|(o, _)| *o == object)
            .map(|(_, s)| *s)
    }
}

/// Everything a game printed, parsed.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The `EVENT` lines exactly as printed.
    pub event_lines: Vec<String>,
    /// The `LOOKUP` lines (`--lookups`) exactly as printed.
    pub lookup_lines: Vec<String>,
    pub events: Vec<Event>,
    pub summary: Option<Summary>,
    /// `(frames, callback_calls)` of the `END` line (a live game that ran to its end).
    pub end: Option<(u64, u64)>,
    /// The console's `status` at the end of a live game (lines joined with newlines).
    pub status: String,
    /// `(rc, reply)` of the `STOP` line.
    pub stop: Option<(i32, String)>,
    /// `(rc, line, reply)` of every `EXEC` line.
    pub execs: Vec<(i32, String, String)>,
    /// Every `ACT` line, without the `ACT ` prefix.
    pub acts: Vec<String>,
}

impl Report {
    /// The own slot from the `CONNECTED` event.
    pub fn connected_slot(&self) -> Option<i32> {
        self.events
            .iter()
            .find(|e| e.kind == "CONNECTED")
            .map(|e| e.player)
    }

    /// The events of `kind` from `player`.
    pub fn events_from<'a>(
        &'a self,
        kind: &'a str,
        player: i32,
    ) -> impl Iterator<Item = &'a Event> + 'a {
        self.events
            .iter()
            .filter(move |e| e.kind == kind && e.player == player)
    }
}

/// Split a line into `key=value` fields; a value may be a quoted string with `\"`, `\\` and
/// `\xNN` escapes (returned unescaped).
pub fn fields(line: &str) -> Vec<(String, String)> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && bytes[i] != b' ' {
            i += 1;
        }
        let key = line[key_start..i].to_string();
        if i >= bytes.len() || bytes[i] != b'=' {
            out.push((key, String::new()));
            continue;
        }
        i += 1;
        let mut value = Vec::new();
        if i < bytes.len() && bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                if bytes[i] == b'\\' && i + 1 < bytes.len() {
                    if bytes[i + 1] == b'x' && i + 3 < bytes.len() {
                        let hex = &line[i + 2..i + 4];
                        value.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                        i += 4;
                    } else {
                        value.push(bytes[i + 1]);
                        i += 2;
                    }
                } else {
                    value.push(bytes[i]);
                    i += 1;
                }
            }
            i += 1;
        } else {
            while i < bytes.len() && bytes[i] != b' ' {
                value.push(bytes[i]);
                i += 1;
            }
        }
        out.push((key, String::from_utf8_lossy(&value).into_owned()));
    }
    out
}

fn get<'a>(fields: &'a [(String, String)], key: &str) -> &'a str {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

fn number<T: std::str::FromStr + Default>(fields: &[(String, String)], key: &str) -> T {
    get(fields, key).parse().unwrap_or_default()
}

fn floats(text: &str) -> Vec<f32> {
    text.split(',').filter_map(|f| f.parse().ok()).collect()
}

fn hex_bytes(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .filter_map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// Parse the output of `peer_game`.
pub fn parse(stdout: &str) -> Report {
    let mut report = Report::default();
    for line in stdout.lines() {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let f = fields(rest);
        match word {
            "EVENT" => {
                report.event_lines.push(line.to_string());
                report.events.push(Event {
                    kind: get(&f, "type").to_string(),
                    player: number(&f, "player"),
                    object: number(&f, "object"),
                    class: number(&f, "class"),
                    target: number(&f, "target"),
                    flags: number(&f, "flags"),
                    list: number(&f, "list"),
                    custom: number(&f, "custom"),
                    pos: floats(get(&f, "pos")),
                    dir: floats(get(&f, "dir")),
                    orient: floats(get(&f, "orient")),
                    data: hex_bytes(get(&f, "data")),
                    text: get(&f, "text").to_string(),
                });
            }
            "SUMMARY" => {
                report.summary = Some(Summary {
                    mode: get(&f, "mode").to_string(),
                    slot: number(&f, "slot"),
                    name: get(&f, "name").to_string(),
                    frames: number(&f, "frames"),
                    callback_calls: number(&f, "callback_calls"),
                    reentry: number(&f, "reentry"),
                    complete: get(&f, "complete") == "yes",
                    ..Summary::default()
                })
            }
            "PLAYER" => {
                if let Some(summary) = report.summary.as_mut() {
                    summary.players.push(PlayerView {
                        slot: number(&f, "slot"),
                        name: get(&f, "name").to_string(),
                        state: get(&f, "state").to_string(),
                        marker: get(&f, "marker").to_string(),
                        frame: number(&f, "frame"),
                        pos: floats(get(&f, "pos")),
                    });
                }
            }
            "OWNER" => {
                if let Some(summary) = report.summary.as_mut() {
                    summary
                        .owners
                        .push((number(&f, "object"), number(&f, "owner")));
                }
            }
            "END" => report.end = Some((number(&f, "frames"), number(&f, "callback_calls"))),
            "STATUS" => report.status = get(&f, "text").to_string(),
            "STOP" => {
                report.stop = Some((number(&f, "rc"), get(&f, "reply").to_string()));
            }
            "EXEC" => report.execs.push((
                number(&f, "rc"),
                get(&f, "line").to_string(),
                get(&f, "reply").to_string(),
            )),
            "ACT" => report.acts.push(rest.to_string()),
            "LOOKUP" => report.lookup_lines.push(line.to_string()),
            _ => {}
        }
    }
    report
}

/// The checks of a finished multi-player game: every game exited 0 after running its frame loop
/// to the end, reached the game in a slot of its own (its `CONNECTED` event and its summary
/// agree), every game call it made succeeded and its position callback ran; and it got from every
/// other game its join and, exactly once each and with every field right, its chat line "hello
/// from NAME", object, missile, extra, particle object, kill, laser (with the position the
/// sender's callback reported at send time, not the one it fired with) and reliable custom event
/// (every byte), and its unreliable custom event at most once. At the end it knows every other
/// game's name, each one's ship state carries that game's marker, and `NET_FetchOwner` gives the
/// sender's slot for its laser, missile and extra and -1 for its killed object. The reliable
/// events of each sender arrive in the order it sent them. No game saw an error event. Returns
/// the slot of each game, in order.
pub fn check_all_met(runs: &[GameRun]) -> Vec<i32> {
    with_the_other_transcripts(runs, || {
        for run in runs {
            check_ran_well(run);
        }
        check_met_each_other(runs, &|_, _| true, &[])
    })
}

/// Run `checks` on games that played together; should one fail, print what every game other
/// than the one it names printed too (a game left out is often explained by another's lines),
/// then fail as it did.
pub fn with_the_other_transcripts<T>(runs: &[GameRun], checks: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(checks)) {
        Ok(value) => value,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("");
            for run in runs {
                if !message.starts_with(&format!("game {}:", run.name)) {
                    eprintln!(
                        "--- game {}, which played beside it ---\n{}",
                        run.name,
                        run.output.transcript()
                    );
                }
            }
            std::panic::resume_unwind(payload)
        }
    }
}

/// The checks of one finished game on its own: it exited 0 after running its frame loop to the
/// end, no `NET_PollEvent` failed, no error event arrived, every game call it made succeeded,
/// and its position callback ran.
pub fn check_ran_well(run: &GameRun) {
    check_ran_well_from(run, 0);
}

/// [`check_ran_well`] for a game that connects again after a try that failed
/// (`--connect-tries`), as a player would: the error events before its first `CONNECTED` are
/// those tries' (a join that TCP's backed-off resends on a damaged LAN took past the client's
/// wait for the answer); any later one fails the check.
pub fn check_ran_well_after_retries(run: &GameRun) {
    let connected = run
        .report
        .events
        .iter()
        .position(|e| e.kind == "CONNECTED")
        .unwrap_or(0);
    check_ran_well_from(run, connected);
}

/// [`check_ran_well`], with the events before index `from` left out of the error check.
fn check_ran_well_from(run: &GameRun, from: usize) {
    if !run.output.status.success() {
        run.fail("did not exit with status 0");
    }
    if let Some(line) = run.output.stdout.lines().find(|l| l.starts_with("POLL ")) {
        run.fail(&format!("NET_PollEvent failed: {line}"));
    }
    if let Some(error) = run.report.events[from..].iter().find(|e| e.kind == "ERROR") {
        run.fail(&format!("an error event: {}", error.text));
    }
    if let Some(act) = run.report.acts.iter().find(|a| !a.contains("rc=0")) {
        run.fail(&format!("a game call failed: ACT {act}"));
    }
    if run.summary().callback_calls == 0 {
        run.fail("the object-position callback was never called");
    }
    if run.report.end.is_none() {
        run.fail("no END line: the frame loop did not run to its end");
    }
}

/// What [`check_all_met`] checks between the games (not how each ended; see
/// [`check_ran_well`]): each reached the game in a slot of its own (its first `CONNECTED` event
/// and its last summary agree), got every other's join and events, and at the end knows every
/// other by name; the ship state of game `j` as game `i` knows it must carry `j`'s marker only
/// where `needs_state(i, j)` (a gameserver does not forward states between distant ships).
/// The events of the kinds in `may_overtake` are left out of the order check (a gameserver
/// forwards laser and missile creations ahead of everything else). Returns the slot of each
/// game, in order.
pub fn check_met_each_other(
    runs: &[GameRun],
    needs_state: &dyn Fn(usize, usize) -> bool,
    may_overtake: &[&str],
) -> Vec<i32> {
    let mut slots = Vec::new();
    for run in runs {
        let summary = run.summary();
        let slot = run.report.connected_slot().unwrap_or(-1);
        if !(0..16).contains(&slot) || summary.slot != slot {
            run.fail(&format!(
                "connected in slot {slot}, summary says {}",
                summary.slot
            ));
        }
        slots.push(slot);
    }
    for (i, run) in runs.iter().enumerate() {
        if slots.iter().filter(|&&s| s == slots[i]).count() != 1 {
            run.fail(&format!(
                "slot {} is taken twice: slots {slots:?}",
                slots[i]
            ));
        }
    }
    for (i, run) in runs.iter().enumerate() {
        let summary = run.summary();
        for (j, other) in runs.iter().enumerate() {
            if i == j {
                continue;
            }
            let rules = MetRules {
                needs_state: needs_state(i, j),
                may_overtake,
            };
            check_met(run, summary, slots[j], &other.name, &rules);
        }
        if summary.players.len() != runs.len() - 1 {
            run.fail(&format!(
                "knows {} other players, expected {}: {:?}",
                summary.players.len(),
                runs.len() - 1,
                summary.players
            ));
        }
        if !summary.complete {
            run.fail("did not finish (complete=no)");
        }
    }
    slots
}

/// The indices of the events of `report` that satisfy `what`.
fn positions(report: &Report, what: impl Fn(&Event) -> bool) -> Vec<usize> {
    report
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| what(e))
        .map(|(i, _)| i)
        .collect()
}

/// What [`check_met`] may let pass.
struct MetRules<'a> {
    /// The receiver must have a state of the sender with its marker.
    needs_state: bool,
    /// Kinds of events left out of the order check.
    may_overtake: &'a [&'a str],
}

/// `run` got everything from the game `name` in `slot`, the reliable events once each and in the
/// order they were sent (and a state with its marker if `rules.needs_state`).
fn check_met(run: &GameRun, summary: &Summary, slot: i32, name: &str, rules: &MetRules) {
    let report = &run.report;
    let text = format!("hello from {name}");
    let texts: Vec<usize> = positions(report, |e| {
        e.kind == "TEXT" && e.player == slot && e.text == text
    });
    if texts.len() != 1 {
        run.fail(&format!(
            "got \"{text}\" from slot {slot} {} times, expected once",
            texts.len()
        ));
    }
    // Where each reliable event arrived: they must come in the order they were sent.
    let mut order = vec![(texts[0], "TEXT")];
    for want in expected_events(slot, name) {
        let at = positions(report, |e| e.player == slot && want.is_meant(e));
        let meant: Vec<&Event> = at.iter().map(|&i| &report.events[i]).collect();
        if !want.may_be_lost && at.len() == 1 && !rules.may_overtake.contains(&want.kind) {
            order.push((at[0], want.kind));
        }
        let count_ok = if want.may_be_lost {
            meant.len() <= 1
        } else {
            meant.len() == 1
        };
        if !count_ok || meant.iter().any(|e| !want.matches(e)) {
            run.fail(&format!(
                "from slot {slot} expected {} {} event {want:?}; got {meant:?}{}",
                if want.may_be_lost {
                    "at most one"
                } else {
                    "exactly one"
                },
                want.kind,
                if want.kind == "CREATE_LASER" {
                    format!(
                        " (the laser must carry what the sender's position callback reported \
                         at send time, not {LASER_FIRE_POSITION:?} it was fired at)"
                    )
                } else {
                    String::new()
                }
            ));
        }
    }
    if order.windows(2).any(|pair| pair[0].0 > pair[1].0) {
        run.fail(&format!(
            "the reliable events of slot {slot} arrived out of order: {:?}",
            order.iter().map(|(_, kind)| kind).collect::<Vec<_>>()
        ));
    }
    if report.events_from("PLAYER_JOINED", slot).next().is_none() {
        run.fail(&format!("never saw slot {slot} join"));
    }
    match summary.player(slot) {
        Some(view) if view.name == name && !rules.needs_state => {}
        Some(view) if view.name == name && view.state == "ok" && view.marker == "ok" => {
            if view.frame == 0 {
                run.fail(&format!("the state of slot {slot} is from frame 0"));
            }
        }
        view => run.fail(&format!(
            "at the end, slot {slot} should be {name} with a state carrying its marker: {view:?}"
        )),
    }
    for (object, owner) in expected_owners(slot) {
        if summary.owner(object) != Some(owner) {
            run.fail(&format!(
                "NET_FetchOwner({object}) is {:?}, expected {owner}",
                summary.owner(object)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_unescape_quoted_values() {
        let f = fields(r#"a=1 name="x \"y\" \x41\\" pos=1,2.5,-3 data= text="""#);
        assert_eq!(get(&f, "a"), "1");
        assert_eq!(get(&f, "name"), "x \"y\" A\\");
        assert_eq!(floats(get(&f, "pos")), vec![1.0, 2.5, -3.0]);
        assert_eq!(get(&f, "data"), "");
        assert_eq!(get(&f, "text"), "");
    }

    #[test]
    fn parse_reads_events_and_the_summary() {
        let out = "EVENT type=CUSTOM player=2 object=0 class=0 target=0 flags=1 list=0 custom=302 \
                   pos=0,0,0 dir=0,0,0 orient=0,0,0,0 data=0aff text=\"hi there\"\n\
                   SUMMARY mode=live slot=1 name=\"bob\" frames=9 callback_calls=2 complete=yes\n\
                   PLAYER slot=2 name=\"amy\" state=ok marker=ok frame=7 pos=1,2,3\n\
                   OWNER object=1002 owner=2\nSUMMARY_END\nSTOP rc=-13 reply=\"no\"\n";
        let report = parse(out);
        assert_eq!(report.events.len(), 1);
        assert_eq!(report.events[0].data, vec![0x0a, 0xff]);
        assert_eq!(report.events[0].text, "hi there");
        let summary = report.summary.unwrap();
        assert!(summary.complete);
        assert_eq!(summary.player(2).unwrap().name, "amy");
        assert_eq!(summary.owner(1002), Some(2));
        assert_eq!(report.stop, Some((-13, "no".to_string())));
    }
}
