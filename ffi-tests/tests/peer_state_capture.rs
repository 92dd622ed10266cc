//! Two peer-to-peer facts of SPEC section 6 seen on the wire: "state at 20 Hz" (the default
//! send frequency) and "game state is sent unicast to every peer".
//!
//! Three `c/peer_game.c` games (`--control`), each in its own network namespace on a private
//! bridged LAN (`harness/netns.rs`), find each other by broadcast on the default port 6526 (no
//! address given) and play, while tshark captures the LAN's bridge. The game's ship moves every
//! frame, so the library has a new state to send at every send tick. tshark then reads the
//! capture with the project's dissector (`tools/wireshark/parsec_net.lua`):
//!
//! - every UDP datagram on port 6526 decodes as a game packet;
//! - every broadcast frame is a CONNECT request carrying no ship state, and none is sent after
//!   startup (once every game has sent a state to every other, which a game does only once it
//!   is in the game);
//! - each game sends its state by unicast to each of the two others, at about 20 Hz while the
//!   send frequency is the default (12-28 a second: loose, the machine may be loaded);
//! - after `net.sendfreq 10` is typed in one game mid-game, that game's states to each other
//!   game come at about half the rate they came before (5-15 a second, and 0.3-0.75 of the
//!   earlier rate), while the two others keep about 20 Hz.
//!
//! The rates are counted from the capture's own timestamps inside windows the test marks with
//! the system clock (the same clock tshark stamps frames with), a little inside the phases, so
//! the boundaries do not matter. Needs root (namespaces) and tshark with Lua; without them the
//! test prints SKIPPED and passes. The whole run takes about 15 s and ends by itself; the
//! namespaces (and anything still running in them, tshark included) go when the LAN is dropped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parsec_net_ffi_tests::live::LiveGame;
use parsec_net_ffi_tests::netns::{unavailable, Lan};
use parsec_net_ffi_tests::peer::{check_ran_well, game_args, GameRun};
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::Build;

/// How long a game may take to meet the others (about a second with the timings below).
const DURATION_MS: u64 = 15_000;
/// How long tshark may take to start capturing (it writes its file header then).
const CAPTURE_START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long tshark may take to read the capture.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
const QUIT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long each phase (default send frequency, then 10 Hz in one game) is played.
const PHASE: Duration = Duration::from_secs(3);
/// Left out at either end of a phase when counting, so its boundaries do not matter.
const MARGIN_S: f64 = 0.3;
/// The game port (the default: every game is on a host of its own).
const PORT: u16 = 6526;

/// Loose bounds of the states a second one game sends to another: 20 Hz by default, 10 Hz
/// after `net.sendfreq 10` (a loaded machine runs frames late; never tight).
const DEFAULT_RATE: (f64, f64) = (12.0, 28.0);
const HALVED_RATE: (f64, f64) = (5.0, 15.0);
/// Bounds of the 10 Hz rate over the same pair's 20 Hz rate.
const HALVED_RATIO: (f64, f64) = (0.3, 0.75);

const NAMES: [&str; 3] = ["ada", "bea", "cyd"];
/// The game that types `net.sendfreq 10` mid-game.
const SLOWED: usize = 1;

fn lua_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/wireshark/parsec_net.lua")
}

/// Why tshark cannot be used, if it cannot.
fn tshark_missing() -> Option<String> {
    let out = Command::new("tshark")
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            (!text.contains("with Lua")).then(|| "tshark has no Lua support".to_string())
        }
        _ => Some("tshark is not installed".into()),
    }
}

/// Seconds since the epoch now (the clock tshark stamps frames with).
fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs_f64()
}

/// tshark capturing UDP on port 6526 on the LAN's bridge into `file`, once it has started.
fn start_capture(lan: &Lan, file: &Path) -> Child {
    lan.start_bridge_capture(
        &[],
        &format!("udp port {PORT}"),
        file,
        CAPTURE_START_TIMEOUT,
    )
}

/// One captured datagram as the dissector decoded it.
#[derive(Debug)]
struct Datagram {
    time: f64,
    eth_dst: String,
    src: String,
    dst: String,
    /// The packet type, if the dissector decoded a game packet.
    kind: Option<u64>,
    /// The header's state flag (a ship state follows).
    state: bool,
    line: String,
}

impl Datagram {
    fn is_broadcast(&self, lan: &Lan) -> bool {
        self.eth_dst == "ff:ff:ff:ff:ff:ff"
            || self.dst == lan.broadcast()
            || self.dst == "255.255.255.255"
    }
}

fn number(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Every datagram of the capture, decoded with the project's dissector.
fn decode(file: &Path) -> Vec<Datagram> {
    let mut command = Command::new("tshark");
    command
        .arg("-r")
        .arg(file)
        .arg("-X")
        .arg(format!("lua_script:{}", lua_script().display()))
        .args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=f"])
        .args(["-e", "frame.time_epoch", "-e", "eth.dst", "-e", "ip.src"])
        .args([
            "-e",
            "ip.dst",
            "-e",
            "parsecnet.type",
            "-e",
            "parsecnet.flags",
        ]);
    let out = run(command, READ_TIMEOUT);
    out.assert_success("tshark");
    assert!(
        !out.stderr.to_lowercase().contains("lua") && !out.stdout.contains("Lua Error"),
        "the dissector failed\n{}",
        out.transcript()
    );
    out.stdout
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('|').collect();
            assert!(f.len() >= 6, "tshark line {line:?}");
            Datagram {
                time: f[0].parse().unwrap_or_else(|_| panic!("time in {line:?}")),
                eth_dst: f[1].to_lowercase(),
                src: f[2].to_string(),
                dst: f[3].to_string(),
                kind: number(f[4]),
                state: number(f[5]).is_some_and(|flags| flags & 1 == 1),
                line: line.to_string(),
            }
        })
        .collect()
}

/// States a second from host `from` to host `to` (unicast) between `start` and `end`.
fn rate(datagrams: &[Datagram], lan: &Lan, from: usize, to: usize, start: f64, end: f64) -> f64 {
    let (src, dst) = (lan.address(from), lan.address(to));
    let count = datagrams
        .iter()
        .filter(|d| d.state && d.src == src && d.dst == dst && d.time >= start && d.time < end)
        .count();
    count as f64 / (end - start)
}

#[test]
fn peer_states_go_unicast_to_every_peer_at_the_send_frequency() {
    if let Some(why) = unavailable() {
        println!("SKIPPED: needs root for network namespaces ({why})");
        return;
    }
    if let Some(why) = tshark_missing() {
        println!("SKIPPED: {why}");
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    let lan = Lan::create(3);
    let file = std::env::temp_dir().join(format!("peer-states-{}.pcap", std::process::id()));
    let mut tshark = start_capture(&lan, &file);

    let setup = vec![
        format!("net.udp.broadcast {}", lan.broadcast()),
        "net.peer.connect_interval 100".into(),
        "net.peer.slot_interval 150".into(),
        "net.peer.reply_wait 50".into(),
    ];
    let mut games: Vec<LiveGame> = NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = lan.command(i, &program);
            command.args(game_args(name, &setup, None, 2, DURATION_MS, 0));
            command.arg("--control");
            LiveGame::spawn(name, command, false)
        })
        .collect();
    for game in &games {
        if !game.wait_complete(Duration::from_millis(DURATION_MS)) {
            game.fail("did not meet the others");
        }
    }
    // Phase 1: the default send frequency.
    let default_start = now_s();
    std::thread::sleep(PHASE);
    let default_end = now_s();
    let (rc, reply) = games[SLOWED].exec("net.sendfreq 10");
    assert_eq!(rc, 0, "net.sendfreq 10: {reply}");
    assert!(
        reply.contains("net.sendfreq = 10 Hz (in this game from now on)"),
        "net.sendfreq 10 typed in a game: {reply}"
    );
    // Phase 2: one game at 10 Hz.
    let slowed_start = now_s();
    std::thread::sleep(PHASE);
    let slowed_end = now_s();
    let runs: Vec<GameRun> = games
        .drain(..)
        .map(|g| g.quit(QUIT_TIMEOUT))
        .collect::<Vec<_>>();
    // SIGINT: tshark writes what it has and exits.
    let _ = Command::new("kill")
        .args(["-INT", &tshark.id().to_string()])
        .status();
    let _ = tshark.wait();
    for run in &runs {
        check_ran_well(run);
    }

    let datagrams = decode(&file);
    let _ = std::fs::remove_file(&file);
    let dump = || {
        datagrams
            .iter()
            .map(|d| d.line.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    if let Some(d) = datagrams.iter().find(|d| d.kind.is_none()) {
        panic!("not decoded as a game packet: {}\n{}", d.line, dump());
    }

    // (b) Broadcast is for CONNECT requests at startup only; states go by unicast.
    let hosts: Vec<String> = (0..3).map(|i| lan.address(i)).collect();
    let mut first_state: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for d in datagrams
        .iter()
        .filter(|d| d.state && !d.is_broadcast(&lan))
    {
        let from = hosts.iter().position(|h| *h == d.src);
        let to = hosts.iter().position(|h| *h == d.dst);
        if let (Some(from), Some(to)) = (from, to) {
            first_state.entry((from, to)).or_insert(d.time);
        }
    }
    assert_eq!(
        first_state.len(),
        6,
        "every game sends states to each other game by unicast: {:?}\n{}",
        first_state.keys(),
        dump()
    );
    let in_game = first_state.values().copied().fold(f64::MIN, f64::max);
    let broadcasts: Vec<&Datagram> = datagrams.iter().filter(|d| d.is_broadcast(&lan)).collect();
    assert!(!broadcasts.is_empty(), "no broadcast startup\n{}", dump());
    for d in &broadcasts {
        assert_eq!(
            d.kind,
            Some(1),
            "a broadcast that is not a CONNECT request: {}",
            d.line
        );
        assert!(!d.state, "a broadcast carries a ship state: {}", d.line);
        assert!(
            d.time < in_game,
            "a broadcast after every game sent states to every other (startup is over): {}\n{}",
            d.line,
            dump()
        );
    }
    println!(
        "{} broadcast CONNECT requests, all before {:.3} s into the capture",
        broadcasts.len(),
        in_game - datagrams[0].time
    );

    // (a) About 20 Hz to every peer, and about half that from the game that typed
    // `net.sendfreq 10`.
    let phase1 = (default_start + MARGIN_S, default_end - MARGIN_S);
    let phase2 = (slowed_start + MARGIN_S, slowed_end - MARGIN_S);
    let mut problems = Vec::new();
    let pairs = (0..3).flat_map(|from| {
        (0..3)
            .filter(move |&to| to != from)
            .map(move |to| (from, to))
    });
    for (from, to) in pairs {
        let before = rate(&datagrams, &lan, from, to, phase1.0, phase1.1);
        let after = rate(&datagrams, &lan, from, to, phase2.0, phase2.1);
        println!(
            "{} -> {}: {before:.1} states/s at the default, {after:.1} states/s after \
                 `net.sendfreq 10` in {}",
            NAMES[from], NAMES[to], NAMES[SLOWED]
        );
        let within = |(low, high): (f64, f64), value: f64| value >= low && value <= high;
        if !within(DEFAULT_RATE, before) {
            problems.push(format!(
                "{} -> {}: {before:.1} states/s at the default send frequency (expected \
                     {DEFAULT_RATE:?})",
                NAMES[from], NAMES[to]
            ));
        }
        if from == SLOWED {
            if !within(HALVED_RATE, after) || !within(HALVED_RATIO, after / before) {
                problems.push(format!(
                    "{} -> {}: {after:.1} states/s after `net.sendfreq 10` ({before:.1} \
                         before; expected {HALVED_RATE:?} and {HALVED_RATIO:?} of before)",
                    NAMES[from], NAMES[to]
                ));
            }
        } else if !within(DEFAULT_RATE, after) {
            problems.push(format!(
                "{} -> {}: {after:.1} states/s while another game typed `net.sendfreq 10` \
                     (expected {DEFAULT_RATE:?})",
                NAMES[from], NAMES[to]
            ));
        }
    }
    assert!(problems.is_empty(), "{}\n{}", problems.join("\n"), dump());
}
