//! A black-box audit of the IPX backend from SPEC sections 4, 5, 6 (IPX is peer to peer only)
//! and 7 (IPX emulation), as a player and a game see it, in network namespaces (needs root,
//! else SKIPPED). What `ipx_netns`, `ipx_console_capture` and `event_bursts` already check is
//! not repeated.
//!
//! - `three_games_burst_over_ipx_and_every_frame_is_ipx_within_546_bytes`: three `c/burst_game.c`
//!   games (`net.ipx.interface eth0`, `net.api ipx`) find each other by broadcast and each
//!   queues 150 reliable 256-byte custom events in one frame while tshark captures the bridge:
//!   every event arrives once, in order, byte for byte; on the wire every frame decodes as IPX
//!   (EtherType 0x8137, checksum 0xFFFF, IPX length = frame - 14 unless padded to 60, at most
//!   30 + 546, packet type 4, transport control 0, networks 0, sockets 0x197E, source node = the
//!   sender's `eth0` MAC, destination another game's MAC or ff:ff:ff:ff:ff:ff), and there are
//!   broadcasts and at least one frame per event each way (needs tshark too).
//! - `bad_ipx_options_and_protocol_refusals_through_the_console`: `c/ipx_options.c options`: an
//!   interface that does not exist, one that is down, `lo`, a 16-character name, garbage socket
//!   numbers (`net.port`), `net.subsys slotserver`/`gameserver` over IPX and `net.api ipx` on a
//!   slotserver/gameserver: each refused with one line naming the problem, the state unchanged
//!   (`status`), no packet socket or descriptor left behind; `status` on IPX shows the node
//!   `00000000:<eth0 MAC>:197E`; `net.ipx.interface ""` puts the default back. Also under
//!   AddressSanitizer (the IPX library is loaded and unloaded three times: nothing it
//!   allocated may outlive it).
//! - `net_api_ipx_without_cap_net_raw_says_so`: `c/ipx_options.c nocap` under `setpriv` (or
//!   `capsh`) without CAP_NET_RAW: `net.api ipx` refused with a line naming CAP_NET_RAW, UDP
//!   kept, nothing left open (SKIPPED without either tool).
//! - `refused_ipx_commands_in_a_live_ipx_game_change_nothing`, `a_refused_net_api_ipx_in_a_live_udp_game_keeps_the_player_in_it`,
//!   `net_api_ipx_in_a_live_gameserver_game_is_refused_and_changes_nothing` and `..._slotserver_...`:
//!   three `c/peer_game.c` games in a game (IPX or UDP peer to peer in namespaces; through a
//!   server on loopback, which needs no root) send a reliable series while players type the
//!   commands above that must be refused (and, without CAP_NET_RAW under `setpriv`, `net.api
//!   ipx`): each refused in one line, nobody leaves or is dropped, seat and node unchanged,
//!   every series number arrives once and in order.
//! - `switching_a_game_of_256_byte_events_from_udp_to_ipx_and_back`: the same games send 256-byte
//!   series events six at a time while each switches UDP -> IPX -> UDP: nothing accepted while
//!   the receiver was seated is lost, nothing reordered, no IPX frame over 546 bytes of payload.
//! - `a_second_program_on_the_same_interface_and_ipx_socket_is_refused`: `c/ipx_options.c hold`,
//!   `hold 0` and `second` in one namespace: the second program's `net.api ipx` on a socket a
//!   holder has is refused as in use (both would have one IPX node), port 0 takes the first
//!   dynamic socket (4000) when 869C is held, another socket number works, and the socket is
//!   free again once the holders have ended.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use parsec_net_ffi_tests::backends::built_backend_dir;
use parsec_net_ffi_tests::live::{LiveGame, Running};
use parsec_net_ffi_tests::netns::{skip_without, tool_works, Lan};
use parsec_net_ffi_tests::peer::{check_ran_well, game_args, GameRun};
use parsec_net_ffi_tests::process::{run, run_asan, Output};
use parsec_net_ffi_tests::series::{deliveries, sent, stop_and_drain, stop_and_drain_owed};
use parsec_net_ffi_tests::server::{game_command, Server};
use parsec_net_ffi_tests::Build;

const NAMES: [&str; 3] = ["ann", "ben", "cat"];
/// Reliable 256-byte events each game queues in one frame.
const BURST: usize = 150;
const GAME_TIMEOUT: Duration = Duration::from_secs(50);
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);
const CAPTURE_START_TIMEOUT: Duration = Duration::from_secs(20);
/// IPX header plus the largest payload SPEC 7 allows.
const MAX_IPX_LEN: u64 = 30 + 546;

fn skip() -> bool {
    skip_without("root for network namespaces")
}

/// tshark capturing IPX frames on the LAN's bridge into `file`; killed on drop.
struct Capture {
    child: std::process::Child,
}

impl Capture {
    fn start(lan: &Lan, file: &Path) -> Capture {
        let child = lan.start_bridge_capture(
            &["-B", "16"],
            "ether proto 0x8137",
            file,
            CAPTURE_START_TIMEOUT,
        );
        Capture { child }
    }

    /// SIGINT: tshark writes what it has and exits.
    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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

fn number(field: &str, line: &str) -> u64 {
    let field = field.trim();
    match field.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => field.parse(),
    }
    .unwrap_or_else(|_| panic!("not a number: {field:?} in {line}"))
}

fn check_games(outputs: &[Output]) {
    let all: String = outputs.iter().map(Output::transcript).collect();
    for out in outputs {
        let text = &out.stdout;
        let fail = |why: &str| panic!("{why}\n{}\n=== all games ===\n{all}", out.transcript());
        if !out.status.success() {
            fail("the game failed");
        }
        if !text.lines().any(|l| l.starts_with("RESULT complete=yes")) {
            fail("the game did not get everything from the two others");
        }
        let queued = format!("ok={BURST} too_large_rc=-8 text_rc=0");
        if !text
            .lines()
            .any(|l| l.starts_with("QUEUED") && l.ends_with(&queued))
        {
            fail(&format!("QUEUED should end with {queued}"));
        }
        let complete = format!("events={BURST} text=yes bad=0");
        let got: Vec<&str> = text.lines().filter(|l| l.starts_with("GOT ")).collect();
        if got.len() != 2 || !got.iter().all(|l| l.ends_with(&complete)) {
            fail(&format!("two GOT lines ending with {complete}"));
        }
        if text.lines().any(|l| l.starts_with("BAD ")) {
            fail("an event arrived damaged, twice or out of order");
        }
    }
}

#[test]
fn three_games_burst_over_ipx_and_every_frame_is_ipx_within_546_bytes() {
    if skip() {
        return;
    }
    if !tool_works("tshark", "--version") {
        println!("SKIPPED: tshark is not installed");
        return;
    }
    let lan = Lan::create(NAMES.len());
    let macs: Vec<String> = (0..NAMES.len()).map(|i| lan.eth0_mac(i)).collect();
    let file = std::env::temp_dir().join(format!("ipx-audit-{}.pcap", std::process::id()));
    let capture = Capture::start(&lan, &file);

    let program = Build::c("c/burst_game.c").build();
    let backends = built_backend_dir("ipx");
    let handles: Vec<_> = NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = lan.command(i, &program);
            command.env("PARSEC_NET_BACKEND_PATH", &backends);
            command.args(["--name", name, "--expect", "2", "--burst"]);
            command.arg(BURST.to_string());
            command.args(["--duration", "30000"]);
            for line in [
                "net.ipx.interface eth0",
                "net.api ipx",
                "net.peer.connect_interval 100",
                "net.peer.slot_interval 150",
                "net.peer.reply_wait 50",
            ] {
                command.args(["--exec", line]);
            }
            std::thread::spawn(move || run(command, GAME_TIMEOUT))
        })
        .collect();
    let outputs: Vec<Output> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    capture.stop();
    check_games(&outputs);

    let fields = [
        "frame.len",
        "eth.type",
        "eth.src",
        "ipx.checksum",
        "ipx.len",
        "ipx.hops",
        "ipx.packet_type",
        "ipx.dst.net",
        "ipx.dst.node",
        "ipx.dst.socket",
        "ipx.src.net",
        "ipx.src.node",
        "ipx.src.socket",
    ];
    let mut command = Command::new("tshark");
    command.arg("-r").arg(&file);
    command.args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=f"]);
    for f in fields {
        command.args(["-e", f]);
    }
    let decoded = run(command, CHECK_TIMEOUT);
    let _ = std::fs::remove_file(&file);
    assert!(decoded.status.success(), "{}", decoded.transcript());
    let text = decoded.stdout;
    let mut broadcasts = 0;
    // Frames from game i to game j carrying at least a 256-byte event.
    let mut large = vec![vec![0usize; NAMES.len()]; NAMES.len()];
    let mut frames = 0;
    for line in text.lines() {
        frames += 1;
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f.len(), fields.len(), "{line}");
        let n = |i: usize| number(f[i], line);
        let frame_len = n(0);
        let ipx_len = n(4);
        assert_eq!(n(1), 0x8137, "EtherType: {line}");
        assert_eq!(n(3), 0xffff, "checksum: {line}");
        assert!(ipx_len > 30, "an IPX header and a payload: {line}");
        assert!(
            ipx_len <= MAX_IPX_LEN,
            "more than 546 bytes of payload on the wire: {line}"
        );
        assert_eq!(
            frame_len,
            (ipx_len + 14).max(60),
            "IPX length against the frame: {line}"
        );
        assert_eq!(n(5), 0, "transport control: {line}");
        assert_eq!(n(6), 4, "packet type: {line}");
        assert_eq!(n(7), 0, "destination network: {line}");
        assert_eq!(n(9), 0x197e, "destination socket: {line}");
        assert_eq!(n(10), 0, "source network: {line}");
        assert_eq!(n(12), 0x197e, "source socket: {line}");
        let src = f[11].to_lowercase();
        assert_eq!(
            src,
            f[2].to_lowercase(),
            "IPX source node = Ethernet source: {line}"
        );
        let from = macs
            .iter()
            .position(|m| *m == src)
            .unwrap_or_else(|| panic!("source node of no game {macs:?}: {line}"));
        let dst = f[8].to_lowercase();
        if dst == "ff:ff:ff:ff:ff:ff" {
            broadcasts += 1;
            continue;
        }
        let to = macs
            .iter()
            .position(|m| *m == dst)
            .unwrap_or_else(|| panic!("destination node of no game {macs:?}: {line}"));
        assert_ne!(from, to, "a frame to itself: {line}");
        if ipx_len >= 30 + 256 {
            large[from][to] += 1;
        }
    }
    assert!(broadcasts > 0, "no broadcast startup ({frames} frames)");
    for (from, row) in large.iter().enumerate() {
        for (to, &count) in row.iter().enumerate() {
            if from != to {
                assert!(
                    count >= BURST,
                    "{} -> {}: {count} frames of 256+ bytes, want at least {BURST} \
                     (one per event): {large:?}",
                    NAMES[from],
                    NAMES[to]
                );
            }
        }
    }
}

/// `ip -n NS link add NAME type veth peer name NAME-p`, left down.
fn add_down_interface(ns: &str, name: &str) {
    let out = Command::new("ip")
        .args([
            "-n", ns, "link", "add", name, "type", "veth", "peer", "name",
        ])
        .arg(format!("{name}p"))
        .output()
        .expect("ip runs");
    assert!(
        out.status.success(),
        "adding {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check_program(out: &Output) {
    assert!(
        out.status.success() && out.stdout.contains(" 0 failed"),
        "{}",
        out.transcript()
    );
}

fn bad_ipx_options(asan: bool) {
    if skip() {
        return;
    }
    let lan = Lan::create(1);
    add_down_interface(lan.namespace(0), "dn0");
    let build = Build::c("c/ipx_options.c");
    let program = if asan { build.asan() } else { build }.build();
    let mut command = lan.command(0, &program);
    command.env("PARSEC_NET_BACKEND_PATH", built_backend_dir("ipx"));
    command.args(["options", "dn0"]);
    let out = if asan {
        run_asan(command, CHECK_TIMEOUT)
    } else {
        run(command, CHECK_TIMEOUT)
    };
    check_program(&out);
}

#[test]
fn bad_ipx_options_and_protocol_refusals_through_the_console() {
    bad_ipx_options(false);
}

#[test]
fn bad_ipx_options_and_protocol_refusals_through_the_console_under_asan() {
    bad_ipx_options(true);
}

#[test]
fn net_api_ipx_without_cap_net_raw_says_so() {
    if skip() {
        return;
    }
    let program = Build::c("c/ipx_options.c").build();
    let lan = Lan::create(1);
    let mut command = Command::new("ip");
    command.args(["netns", "exec", lan.namespace(0)]);
    if tool_works("setpriv", "--version") {
        command.args([
            "setpriv",
            "--inh-caps=-net_raw",
            "--bounding-set=-net_raw",
            "--",
        ]);
        command.arg(&program);
        command.arg("nocap");
    } else if tool_works("capsh", "--print") {
        command.args(["capsh", "--drop=cap_net_raw", "--"]);
        command.arg("-c");
        command.arg(format!("exec '{}' nocap", program.display()));
    } else {
        println!("SKIPPED: neither setpriv nor capsh is installed to drop CAP_NET_RAW");
        return;
    }
    command.env("PARSEC_NET_BACKEND_PATH", built_backend_dir("ipx"));
    check_program(&run(command, CHECK_TIMEOUT));
}

/// Faster peer-to-peer timings than the defaults (the LAN answers in well under a millisecond).
const FAST_PEER: [&str; 3] = [
    "net.peer.connect_interval 100",
    "net.peer.slot_interval 150",
    "net.peer.reply_wait 50",
];
/// How long the live games may take to meet.
const MEET_MS: u64 = 15_000;
const LIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Three `peer_game --control` games on `lan` with `setup`, sending a reliable series; game
/// `i` runs under `wrap[i]` (a command and its arguments put before the program) when given.
fn live_games(lan: &Lan, setup: &[String], wrap: &[Option<Vec<String>>]) -> Vec<LiveGame> {
    let program = Build::c("c/peer_game.c").build();
    let backends = built_backend_dir("ipx");
    let games: Vec<LiveGame> = NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = Command::new("ip");
            command.args(["netns", "exec", lan.namespace(i)]);
            if let Some(Some(prefix)) = wrap.get(i) {
                command.args(prefix);
            }
            command.arg(&program);
            command.env("PARSEC_NET_BACKEND_PATH", &backends);
            command.args(game_args(name, setup, None, 2, MEET_MS, 0));
            command.args(["--control", "--series-ms", "20"]);
            LiveGame::spawn(name, command, false)
        })
        .collect();
    for game in &games {
        if !game.wait_complete(Duration::from_millis(MEET_MS)) {
            game.fail("did not meet the others");
        }
    }
    games
}

/// `line` typed in `game` must be refused with `needle` in its reply.
fn refused(game: &mut LiveGame, line: &str, needle: &str) {
    let (rc, reply) = game.exec(line);
    if rc >= 0 || !reply.contains(needle) || reply.contains('\n') {
        game.fail(&format!(
            "{line:?} should be refused with one line saying {needle:?}: rc {rc}, {reply:?}"
        ));
    }
}

/// The `game:` line of `status` up to the RTT (slot, players, joined).
fn seat(game: &mut LiveGame) -> (String, String) {
    let (_, status) = game.exec("status");
    let game_line = status
        .lines()
        .find(|l| l.starts_with("game: "))
        .and_then(|l| l.split(", RTT").next())
        .unwrap_or("")
        .to_string();
    (game_line, local_node(&status))
}

/// Each game's [`seat`] and how many lines it has printed (before what must change nothing).
fn seats_and_marks(games: &mut [LiveGame]) -> (Vec<(String, String)>, Vec<usize>) {
    let before = games.iter_mut().map(seat).collect();
    let marks = games.iter().map(|g| g.process.line_count()).collect();
    (before, marks)
}

/// The [`seat`] of `game` now; fails the game if it is not `before` any more.
fn same_seat(game: &mut LiveGame, before: &(String, String)) -> (String, String) {
    let now = seat(game);
    if now != *before {
        game.fail(&format!("seat or node changed: {before:?} -> {now:?}"));
    }
    now
}

fn local_node(status: &str) -> String {
    status
        .split("local node ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or("")
        .to_string()
}

/// Stop the series, end the games and check: no game left or lost anyone after stdout line
/// `marks[i]`, and every series number reached every other game once and in order.
fn check_nothing_disturbed(mut games: Vec<LiveGame>, marks: &[usize]) {
    stop_and_drain(&mut games, LIVE_TIMEOUT, Duration::from_secs(5));
    let after: Vec<Vec<String>> = games
        .iter()
        .zip(marks)
        .map(|(g, &m)| g.process.lines_from(m))
        .collect();
    let runs: Vec<GameRun> = games.into_iter().map(|g| g.quit(LIVE_TIMEOUT)).collect();
    for (run, lines) in runs.iter().zip(&after) {
        check_ran_well(run);
        if let Some(l) = lines.iter().find(|l| {
            l.starts_with("EVENT type=DISCONNECTED ")
                || l.starts_with("EVENT type=PLAYER_DISCONNECTED ")
                || l.starts_with("EVENT type=CONNECTED ")
        }) {
            run.fail(&format!("a refused command disturbed the game: {l}"));
        }
        let series = sent(&run.output.stdout);
        if !series.refused.is_empty() || series.gap.is_some() {
            run.fail(&format!(
                "series refused {:?}, gap {:?}",
                series.refused, series.gap
            ));
        }
    }
    for d in deliveries(&runs) {
        assert!(
            d.queued > 0
                && d.lost_while_seated.is_empty()
                && d.lost_while_absent.is_empty()
                && d.duplicates.is_empty()
                && d.out_of_order.is_empty()
                && d.never_sent.is_empty()
                && d.received == d.queued,
            "{}",
            d.describe()
        );
    }
}

#[test]
fn refused_ipx_commands_in_a_live_ipx_game_change_nothing() {
    if skip() {
        return;
    }
    let lan = Lan::create(NAMES.len());
    let mut setup = vec!["net.ipx.interface eth0".to_string(), "net.api ipx".into()];
    setup.extend(FAST_PEER.iter().map(|s| s.to_string()));
    let mut games = live_games(&lan, &setup, &[]);
    for game in games.iter_mut() {
        game.send("@series on");
    }
    let (before, marks) = seats_and_marks(&mut games);
    refused(&mut games[0], "net.subsys slotserver", "peer-to-peer");
    refused(&mut games[0], "net.subsys gameserver", "peer-to-peer");
    let _ = games[1].exec("net.ipx.interface nosuch0");
    refused(&mut games[1], "net.api ipx", "keeping ipx");
    let _ = games[1].exec("net.ipx.interface lo");
    refused(&mut games[1], "net.api ipx", "not an Ethernet interface");
    refused(&mut games[2], "net.port abc", "not a port number");
    refused(&mut games[2], "net.port 65536", "not a port number");
    refused(&mut games[2], "connect 0:020000000001:ZZZZ", "connect: ");
    std::thread::sleep(Duration::from_millis(500));
    for (i, game) in games.iter_mut().enumerate() {
        let now = same_seat(game, &before[i]);
        let mac = lan.eth0_mac(i).replace(':', "").to_uppercase();
        if now.1 != format!("00000000:{mac}:197E") {
            game.fail(&format!("local node {} is not 00000000:{mac}:197E", now.1));
        }
        let (_, status) = game.exec("status");
        if !status.contains("protocol: peer (in game") || !status.contains("backend: ipx ") {
            game.fail(&format!("not in the game over IPX any more: {status}"));
        }
    }
    check_nothing_disturbed(games, &marks);
}

#[test]
fn a_refused_net_api_ipx_in_a_live_udp_game_keeps_the_player_in_it() {
    if skip() {
        return;
    }
    let lan = Lan::create(NAMES.len());
    let mut setup = vec![format!("net.udp.broadcast {}", lan.broadcast())];
    setup.extend(FAST_PEER.iter().map(|s| s.to_string()));
    // The third game has no CAP_NET_RAW, when a tool can take it away.
    let nocap = if tool_works("setpriv", "--version") {
        Some(
            [
                "setpriv",
                "--inh-caps=-net_raw",
                "--bounding-set=-net_raw",
                "--",
            ]
            .map(String::from)
            .to_vec(),
        )
    } else {
        println!("NOTE: setpriv is not installed: the case without CAP_NET_RAW is skipped");
        None
    };
    let mut games = live_games(&lan, &setup, &[None, None, nocap.clone()]);
    for game in games.iter_mut() {
        game.send("@series on");
    }
    let (before, marks) = seats_and_marks(&mut games);
    let _ = games[0].exec("net.ipx.interface nosuch0");
    refused(&mut games[0], "net.api ipx", "keeping udp");
    let _ = games[1].exec("net.ipx.interface lo");
    refused(&mut games[1], "net.api ipx", "keeping udp");
    if nocap.is_some() {
        refused(&mut games[2], "net.api ipx", "CAP_NET_RAW");
    }
    std::thread::sleep(Duration::from_millis(500));
    for (i, game) in games.iter_mut().enumerate() {
        same_seat(game, &before[i]);
        let (_, status) = game.exec("status");
        if !status.contains("protocol: peer (in game") || !status.contains("backend: udp ") {
            game.fail(&format!("not in the game over UDP any more: {status}"));
        }
    }
    check_nothing_disturbed(games, &marks);
}

/// Switch every game to `api` one after another, and wait until each is in the game again with
/// the two others seated.
fn switch_all(games: &mut [LiveGame], api: &str) {
    let marks: Vec<usize> = games.iter().map(|g| g.process.line_count()).collect();
    for (i, game) in games.iter_mut().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        game.send(&format!("net.api {api}"));
    }
    for (i, game) in games.iter_mut().enumerate() {
        let reconnected = game.process.wait_until(LIVE_TIMEOUT, |lines| {
            let after = &lines[marks[i]..];
            after
                .iter()
                .any(|l| l.starts_with("EXEC rc=0 line=\"net.api "))
                && after.iter().any(|l| l.starts_with("EVENT type=CONNECTED "))
        });
        if !reconnected {
            game.fail(&format!("`net.api {api}` did not connect again"));
        }
        let deadline = Instant::now() + LIVE_TIMEOUT;
        loop {
            let (line, _) = seat(game);
            if line.contains(", 2 other players") {
                break;
            }
            if Instant::now() > deadline {
                game.fail(&format!(
                    "over {api} the two others were not found again: {line}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn switching_a_game_of_256_byte_events_from_udp_to_ipx_and_back() {
    if skip() {
        return;
    }
    let capture_on = tool_works("tshark", "--version");
    if !capture_on {
        println!("NOTE: tshark is not installed: the frame sizes are not checked");
    }
    let lan = Lan::create(NAMES.len());
    let macs: Vec<String> = (0..NAMES.len()).map(|i| lan.eth0_mac(i)).collect();
    let file = std::env::temp_dir().join(format!("ipx-audit-switch-{}.pcap", std::process::id()));
    let capture = capture_on.then(|| Capture::start(&lan, &file));
    let mut setup = vec![
        format!("net.udp.broadcast {}", lan.broadcast()),
        "net.ipx.interface eth0".to_string(),
    ];
    setup.extend(FAST_PEER.iter().map(|s| s.to_string()));
    let program = Build::c("c/peer_game.c").build();
    let backends = built_backend_dir("ipx");
    let mut games: Vec<LiveGame> = NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = lan.command(i, &program);
            command.env("PARSEC_NET_BACKEND_PATH", &backends);
            command.args(game_args(name, &setup, None, 2, MEET_MS, 0));
            command.args(["--control", "--series-ms", "20"]);
            command.args(["--series-size", "256", "--series-batch", "6"]);
            LiveGame::spawn(name, command, false)
        })
        .collect();
    for game in &games {
        if !game.wait_complete(Duration::from_millis(MEET_MS)) {
            game.fail("did not meet the others over UDP");
        }
    }
    for game in games.iter_mut() {
        game.send("@series on");
    }
    std::thread::sleep(Duration::from_millis(500));
    switch_all(&mut games, "ipx");
    std::thread::sleep(Duration::from_millis(1000));
    switch_all(&mut games, "udp");
    std::thread::sleep(Duration::from_millis(500));
    // What was queued while a receiver was away switching is not owed (checked below): the
    // drain waits for what is.
    stop_and_drain_owed(&mut games, &[], LIVE_TIMEOUT, Duration::from_secs(5));
    let runs: Vec<GameRun> = games.into_iter().map(|g| g.quit(LIVE_TIMEOUT)).collect();
    if let Some(capture) = capture {
        capture.stop();
    }
    for run in &runs {
        check_ran_well(run);
        let series = sent(&run.output.stdout);
        if let Some(gap) = &series.gap {
            run.fail(&format!("its series is not 0, 1, 2, ...: {gap}"));
        }
        if let Some(code) = series.refused.keys().find(|c| **c != -12) {
            run.fail(&format!("a series event refused with {code}"));
        }
    }
    let all = deliveries(&runs);
    let report: Vec<String> = all.iter().map(|d| d.describe()).collect();
    println!("{}", report.join("\n"));
    for d in &all {
        assert!(
            d.queued > 0
                && d.lost_while_seated.is_empty()
                && d.never_sent.is_empty()
                && d.out_of_order.is_empty(),
            "accepted events lost or reordered:\n{}",
            report.join("\n")
        );
    }
    if !capture_on {
        return;
    }
    let mut command = Command::new("tshark");
    command.arg("-r").arg(&file);
    command.args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=f"]);
    for f in ["frame.len", "ipx.len", "ipx.checksum", "ipx.src.node"] {
        command.args(["-e", f]);
    }
    let decoded = run(command, CHECK_TIMEOUT);
    let _ = std::fs::remove_file(&file);
    let mut large = 0;
    for line in decoded.stdout.lines() {
        let f: Vec<&str> = line.split('|').collect();
        assert_eq!(f.len(), 4, "{line}");
        let ipx_len = number(f[1], line);
        assert!(ipx_len <= MAX_IPX_LEN, "over 546 bytes of payload: {line}");
        assert_eq!(number(f[0], line), (ipx_len + 14).max(60), "{line}");
        assert_eq!(number(f[2], line), 0xffff, "{line}");
        assert!(macs.contains(&f[3].to_lowercase()), "{line}");
        if ipx_len >= 30 + 256 {
            large += 1;
        }
    }
    assert!(large > 0, "no 256-byte event went over IPX");
}

#[test]
fn a_second_program_on_the_same_interface_and_ipx_socket_is_refused() {
    if skip() {
        return;
    }
    let lan = Lan::create(1);
    let program = Build::c("c/ipx_options.c").build();
    let start = |args: &[&str]| {
        let mut command = lan.command(0, &program);
        command.env("PARSEC_NET_BACKEND_PATH", built_backend_dir("ipx"));
        command.args(args);
        Running::spawn(&args.join(" "), command, false)
    };
    let holders: Vec<Running> = [&["hold"][..], &["hold", "0"][..]]
        .into_iter()
        .map(|args| {
            let holder = start(args);
            if holder
                .wait_for_line(0, CHECK_TIMEOUT, |l| l == "HOLDING")
                .is_none()
            {
                panic!("hold did not open IPX:\n{}", holder.transcript());
            }
            holder
        })
        .collect();
    let mut second = start(&["second"]);
    let waiting = second.wait_for_line(0, CHECK_TIMEOUT, |l| l == "WAITING");
    for mut holder in holders {
        holder.close_stdin();
        check_program(&holder.finish(CHECK_TIMEOUT));
    }
    second.close_stdin();
    let out = second.finish(CHECK_TIMEOUT);
    assert!(waiting.is_some(), "{}", out.transcript());
    check_program(&out);
}

/// `net.api ipx` typed in games seated through a `kind` server (on loopback: the refusal comes
/// before any IPX socket is opened, so this needs no root): refused naming the protocol, and
/// nothing changes for anyone.
fn net_api_ipx_refused_in_a_server_game(kind: &str) {
    let mut args = vec!["--port", "0", "--no-http", "--bind", "127.0.0.1"];
    if kind == "gameserver" {
        args.extend(["--udp-port", "0"]);
    }
    let server = Server::start(kind, &args);
    let program = Build::c("c/peer_game.c").build();
    let mut games: Vec<LiveGame> = NAMES
        .iter()
        .map(|name| {
            let mut command = game_command(
                &program,
                name,
                &["--control", "--expect", "2", "--series-ms", "20"],
                kind,
                false,
                &server,
                Duration::from_millis(MEET_MS),
            );
            command.env("PARSEC_NET_BACKEND_PATH", built_backend_dir("ipx"));
            LiveGame::spawn(name, command, false)
        })
        .collect();
    for game in &games {
        if !game.wait_complete(Duration::from_millis(MEET_MS)) {
            game.fail(&format!("did not meet the others through the {kind}"));
        }
    }
    for game in games.iter_mut() {
        game.send("@series on");
    }
    let (before, marks) = seats_and_marks(&mut games);
    refused(&mut games[0], "net.api ipx", "peer-to-peer");
    let (_, reply) = games[1].exec("net.ipx.interface lo");
    assert!(reply.contains("net.ipx.interface = lo"), "{reply}");
    refused(&mut games[1], "net.api ipx", &format!("{kind} is selected"));
    refused(&mut games[2], "net.api ipx", "keeping udp");
    std::thread::sleep(Duration::from_millis(500));
    for (i, game) in games.iter_mut().enumerate() {
        same_seat(game, &before[i]);
        let (_, status) = game.exec("status");
        if !status.starts_with(&format!("protocol: {kind} (on "))
            || !status.contains("backend: udp ")
        {
            game.fail(&format!(
                "not in the {kind} game over UDP any more: {status}"
            ));
        }
    }
    check_nothing_disturbed(games, &marks);
    server.stop().assert_success(kind);
}

#[test]
fn net_api_ipx_in_a_live_gameserver_game_is_refused_and_changes_nothing() {
    net_api_ipx_refused_in_a_server_game("gameserver");
}

#[test]
fn net_api_ipx_in_a_live_slotserver_game_is_refused_and_changes_nothing() {
    net_api_ipx_refused_in_a_server_game("slotserver");
}
