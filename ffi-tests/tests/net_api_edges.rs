//! `net.api udp|ipx|NAME|PATH` as the SPEC (sections 5 and 7) and docs/console.md describe it,
//! from a game's `NET_ConsoleExec`, with real libraries: `c/backend_loopudp.c` (a backend written
//! from the backend guide alone), the worked example `c/backend_unixdgram.c` and the broken ones
//! of `c/bad/`.
//!
//! - Names along `PARSEC_NET_BACKEND_PATH` with a missing directory, empty entries and several
//!   directories: the first directory that has the file wins, a later one is searched too, an
//!   empty entry is not the current directory. Paths relative to the current directory (`./`,
//!   `../`, `sub/../`), a bare file name there, an absolute path. Refused: `.`, `..`, directories,
//!   missing files behind separators and `..`, a text file, a name with a space; each with a
//!   non-OK code and one line naming the problem, the backend kept and the usage, and counted as a
//!   bad console line; the backend in use still carries datagrams.
//! - In a peer-to-peer game and in a gameserver game, while both players send numbered reliable
//!   series: switches to a backend whose open fails and to a file that is not a library are
//!   refused without anyone leaving the game; a switch to the guide-written C backend, back to
//!   udp and to udp again (the backend in use) each reconnect once; every number arrives once
//!   and in order.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::backends::{bad_backend, loopudp, unixdgram};
use parsec_net_ffi_tests::exchange::REPLY_TIMEOUT;
use parsec_net_ffi_tests::live::{wait_all_complete, LiveGame};
use parsec_net_ffi_tests::paths::paths;
use parsec_net_ffi_tests::peer::{free_loopback_ports, game_args, loopback_setup};
use parsec_net_ffi_tests::series::{compare_outputs, outputs, stop_and_drain_owed};
use parsec_net_ffi_tests::server::{game_command, Server};
use parsec_net_ffi_tests::{Build, Endpoint};

const USAGE: &str = "usage: net.api udp|ipx|NAME|PATH";
const MEET_TIMEOUT: Duration = Duration::from_secs(30);
const EVENT_TIMEOUT: Duration = Duration::from_secs(15);

/// A fresh directory under the harness's output directory.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = paths()
        .out_subdir("net-api-edges")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("copying {} to {}: {e}", from.display(), to.display()));
}

/// `net.api ARG` is refused: "err CODE net.api: ... NEEDLE ...; keeping udp; usage: ...", one
/// line, and udp stays active.
fn assert_refused(a: &mut Endpoint, arg: &str, needle: &str) {
    let line = format!("exec net.api {arg}");
    let reply = a.call(&line, REPLY_TIMEOUT);
    let ok = reply.starts_with("err -")
        && reply.contains(needle)
        && reply.contains("; keeping udp; ")
        && reply.ends_with(USAGE)
        // exchange.c joins lines with '|': the usage's three are the only ones.
        && reply.matches('|').count() == 3;
    if !ok {
        a.fail(&format!(
            "{line:?}: expected a one-line refusal naming {needle:?}, got {reply:?}"
        ));
    }
    let backend = a.backend_line();
    if !backend.starts_with("backend: udp (") {
        a.fail(&format!("{line:?} did not keep udp: {backend}"));
    }
}

/// `net.api ARG` switches to the backend `name` loaded from a file whose path ends in `file`.
fn assert_switched(a: &mut Endpoint, arg: &str, name: &str, file: &str) {
    let line = format!("exec net.api {arg}");
    let reply = a.ok(&line, REPLY_TIMEOUT);
    if !reply.starts_with(&format!("packet backend {name} active on port ")) {
        a.fail(&format!("{line:?}: {reply:?}"));
    }
    let backend = a.backend_line();
    if !backend.starts_with(&format!("backend: {name} (")) || !backend.contains(&format!("{file})"))
    {
        a.fail(&format!(
            "{line:?}: expected {name} from ...{file}, status says {backend}"
        ));
    }
    a.ok("exec net.api udp", REPLY_TIMEOUT);
}

#[test]
fn names_and_paths_are_found_where_the_docs_say_and_bad_ones_are_refused_in_one_line() {
    let root = fresh_dir("lookup");
    let (first, second, empty, cwd) = (
        root.join("first"),
        root.join("second"),
        root.join("empty"),
        root.join("cwd"),
    );
    for dir in [&first, &second, &empty, &cwd.join("sub")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let (guide, example) = (loopudp(), unixdgram(false));
    // The same file name in two directories: the first directory's (loopudp) wins.
    copy(&guide, &first.join("libparsec_backend_edge.so"));
    copy(&example, &second.join("libparsec_backend_edge.so"));
    copy(&guide, &second.join("libparsec_backend_onlysecond.so"));
    // Only in the current directory: a NAME is not looked for there, a file name is.
    copy(&guide, &cwd.join("libparsec_backend_cwdonly.so"));
    std::fs::write(cwd.join("notalib.so"), "text, not a library\n").unwrap();
    let missing = root.join("missing");
    let search = format!(
        "{}::{}:{}:{}:",
        missing.display(),
        empty.display(),
        first.display(),
        second.display()
    );

    let program = Build::c("c/exchange.c").build();
    let mut a = Endpoint::spawn_in(
        "A",
        &program,
        &[("PARSEC_NET_BACKEND_PATH", search.as_str())],
        Some(&cwd),
    );
    for line in [
        "net.udp.bind 127.0.0.1",
        "net.udp.ipv6 0",
        "net.port 0",
        "net.api udp",
    ] {
        a.ok(&format!("exec {line}"), REPLY_TIMEOUT);
    }

    // Names along PARSEC_NET_BACKEND_PATH.
    assert_switched(
        &mut a,
        "edge",
        "loopudp",
        "/first/libparsec_backend_edge.so",
    );
    assert_switched(
        &mut a,
        "onlysecond",
        "loopudp",
        "/second/libparsec_backend_onlysecond.so",
    );
    // Paths: a bare file name in the current directory, relative ones, an absolute one.
    assert_switched(
        &mut a,
        "libparsec_backend_cwdonly.so",
        "loopudp",
        "libparsec_backend_cwdonly.so",
    );
    assert_switched(
        &mut a,
        "./sub/../libparsec_backend_cwdonly.so",
        "loopudp",
        "./sub/../libparsec_backend_cwdonly.so",
    );
    assert_switched(
        &mut a,
        "../first/libparsec_backend_edge.so",
        "loopudp",
        "../first/libparsec_backend_edge.so",
    );
    let absolute = second.join("libparsec_backend_edge.so");
    assert_switched(
        &mut a,
        &absolute.display().to_string(),
        "unixdgram",
        &absolute.display().to_string(),
    );

    // Refusals. A NAME found nowhere lists where it looked: every directory of the variable
    // (the missing one too), none of them empty, and not the current directory.
    let line = "exec net.api cwdonly";
    let reply = a.call(line, REPLY_TIMEOUT);
    let listed = format!(
        "in {}, {}, {}, {}, ",
        missing.display(),
        empty.display(),
        first.display(),
        second.display()
    );
    if !reply.contains("no backend named 'cwdonly'")
        || !reply.contains(&listed)
        || reply.contains(", ,")
        || reply.contains(&format!("{}, ", cwd.display()))
    {
        a.fail(&format!(
            "{line:?}: expected the searched directories {listed:?}: {reply:?}"
        ));
    }
    assert_refused(&mut a, "cwdonly", "no backend named 'cwdonly'");
    assert_refused(&mut a, ".", "cannot load '.': it is a directory");
    assert_refused(&mut a, "..", "cannot load '..': it is a directory");
    assert_refused(&mut a, "sub/", "cannot load 'sub/': it is a directory");
    assert_refused(
        &mut a,
        "../first",
        "cannot load '../first': it is a directory",
    );
    assert_refused(&mut a, "sub", "no backend named 'sub'");
    assert_refused(
        &mut a,
        "../nothere/libx.so",
        "cannot load '../nothere/libx.so': no such file",
    );
    assert_refused(
        &mut a,
        "sub/../../edge",
        "cannot load 'sub/../../edge': no such file",
    );
    assert_refused(
        &mut a,
        "notalib.so",
        "cannot load './notalib.so': not a loadable library",
    );
    assert_refused(&mut a, "ed ge", "'ed ge' is not a backend name");
    let refused = 11; // cwdonly twice
    let counted = a.status_number("bad console lines ");
    if counted != refused {
        a.fail(&format!(
            "{counted} bad console lines counted for {refused} refusals"
        ));
    }

    // udp, kept through all of it, still carries a datagram to ourselves.
    let me = a.ok("local", REPLY_TIMEOUT);
    a.ok(&format!("peer {me}"), REPLY_TIMEOUT);
    a.ok("send 0 3", REPLY_TIMEOUT);
    a.ok("recv_until 3 3000", REPLY_TIMEOUT);
    a.ok("check 0 3", REPLY_TIMEOUT);
    a.quit(REPLY_TIMEOUT);
    let _ = std::fs::remove_dir_all(&root);
}

/// The switches of the game tests, typed by `games[0]` while both send series: refused ones
/// must leave nobody; each real one makes the other game see one PLAYER_DISCONNECTED and one
/// PLAYER_CONNECTED.
fn switch_back_and_forth(games: &mut [LiveGame], first_slot: i32, client_server: bool) {
    // One file per test: the two game tests run side by side in this process.
    let kind = if client_server { "server" } else { "peer" };
    let text = std::env::temp_dir().join(format!("pn-notalib-{}-{kind}.so", std::process::id()));
    std::fs::write(&text, "text, not a library\n").unwrap();
    // (console line before, net.api argument, what the refusal names, console line after)
    let refused = [
        // The stub backend cannot carry the client-server protocols, so under a gameserver it is
        // refused for that before its open would fail.
        (
            None,
            bad_backend("open_fails").display().to_string(),
            if client_server {
                "badstub supports only the peer-to-peer protocol, and gameserver is selected"
            } else {
                "the stub backend never opens a socket"
            },
            None,
        ),
        (
            None,
            text.display().to_string(),
            "not a loadable library",
            None,
        ),
        // udp loads, but cannot open on an address this host does not have.
        (
            Some("net.udp.bind 203.0.113.1"),
            "udp".to_string(),
            "203.0.113.1",
            Some("net.udp.bind 127.0.0.1"),
        ),
    ];
    for (before, arg, needle, after) in &refused {
        let marks: Vec<usize> = games.iter().map(|g| g.process.line_count()).collect();
        if let Some(before) = before {
            let (rc, reply) = games[0].exec(before);
            assert_eq!(rc, 0, "{before}: {reply}");
        }
        let line = format!("net.api {arg}");
        let (rc, reply) = games[0].exec(&line);
        if rc >= 0 || !reply.contains(needle) || reply.contains('\n') || !reply.ends_with(USAGE) {
            games[0].fail(&format!("{line:?}: rc {rc}, {reply:?}"));
        }
        if let Some(after) = after {
            let (rc, reply) = games[0].exec(after);
            assert_eq!(rc, 0, "{after}: {reply}");
        }
        // Still in the game: a chat line is accepted at once and reaches the other.
        let say = format!("say still here after {needle}");
        let (rc, reply) = games[0].exec(&say);
        if rc != 0 {
            games[0].fail(&format!(
                "{say:?} after a refused switch: rc {rc}, {reply:?}"
            ));
        }
        let seen = games[1]
            .process
            .wait_for_line(marks[1], EVENT_TIMEOUT, |l| {
                l.starts_with("EVENT type=TEXT ") && l.contains(needle)
            });
        if seen.is_none() {
            games[1].fail(&format!("did not get the chat line after {line:?}"));
        }
        for (game, mark) in games.iter().zip(&marks) {
            let left: Vec<_> = game
                .events_since(*mark)
                .into_iter()
                .filter(|e| {
                    ["DISCONNECTED", "CONNECTED", "PLAYER_DISCONNECTED"].contains(&e.kind.as_str())
                })
                .collect();
            if !left.is_empty() {
                game.fail(&format!("{line:?} was refused, yet: {left:?}"));
            }
        }
    }
    let _ = std::fs::remove_file(&text);

    let guide = loopudp().display().to_string();
    for arg in [guide.as_str(), "udp", "udp"] {
        let mark = games[1].process.line_count();
        let line = format!("net.api {arg}");
        let (rc, reply) = games[0].exec(&line);
        if rc != 0 || !reply.contains("left the game and connecting") {
            games[0].fail(&format!("{line:?}: rc {rc}, {reply:?}"));
        }
        games[1].wait_event(mark, "PLAYER_DISCONNECTED", first_slot, EVENT_TIMEOUT);
        let back = games[1].process.wait_for_line(mark, EVENT_TIMEOUT, |l| {
            l.starts_with("EVENT type=PLAYER_JOINED ")
        });
        if back.is_none() {
            games[1].fail(&format!("did not see the other join again after {line:?}"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Stop the series, wait for them to drain, and check every number arrived once and in order.
fn check_series(mut games: Vec<LiveGame>) {
    std::thread::sleep(Duration::from_secs(1));
    // What was queued while the other was away switching is not owed (not checked below).
    if stop_and_drain_owed(&mut games, &[], EVENT_TIMEOUT, Duration::from_secs(20)).is_none() {
        eprintln!("the series did not drain; the checks below say what is missing");
    }
    let outputs = outputs(&games);
    let deliveries = compare_outputs(&outputs);
    let bad: Vec<String> = deliveries
        .iter()
        .filter(|d| {
            !d.lost_while_seated.is_empty()
                || !d.duplicates.is_empty()
                || !d.out_of_order.is_empty()
                || !d.never_sent.is_empty()
                || d.received == 0
        })
        .map(|d| d.describe())
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    for game in games {
        let run = game.quit(EVENT_TIMEOUT);
        if let Some(e) = run.report.events.iter().find(|e| e.kind == "ERROR") {
            run.fail(&format!("an error event: {}", e.text));
        }
    }
}

/// Start both games' series and let them run a little.
fn start_series(games: &mut [LiveGame]) {
    for game in games.iter_mut() {
        game.send("@series on");
    }
    std::thread::sleep(Duration::from_secs(1));
}

#[test]
fn a_peer_game_goes_on_through_refused_and_real_switches() {
    let program = Build::c("c/peer_game.c").build();
    let ports = free_loopback_ports(2);
    let names = ["ann", "bob"];
    let mut games: Vec<LiveGame> = (0..2)
        .map(|i| {
            let peer = format!("127.0.0.1:{}", ports[1 - i]);
            let mut command = Command::new(&program);
            command.args(game_args(
                names[i],
                &loopback_setup(ports[i]),
                Some(&peer),
                1,
                MEET_TIMEOUT.as_millis() as u64,
                500,
            ));
            command.args(["--control", "--series-ms", "15"]);
            LiveGame::spawn(names[i], command, false)
        })
        .collect();
    wait_all_complete(&games, MEET_TIMEOUT);
    let ann = games[0].summary_now().slot;
    start_series(&mut games);
    switch_back_and_forth(&mut games, ann, false);
    check_series(games);
}

#[test]
fn a_gameserver_game_goes_on_through_refused_and_real_switches() {
    let program = Build::c("c/peer_game.c").build();
    let server = Server::start(
        "gameserver",
        &[
            "--port",
            "0",
            "--udp-port",
            "0",
            "--no-http",
            "--bind",
            "127.0.0.1",
            "--distance",
            "0",
        ],
    );
    let names = ["ann", "bob"];
    let mut games: Vec<LiveGame> = names
        .iter()
        .map(|n| {
            let mut command = game_command(
                &program,
                n,
                &["--control"],
                "gameserver",
                false,
                &server,
                MEET_TIMEOUT,
            );
            command.args(["--expect", "1", "--series-ms", "15"]);
            LiveGame::spawn(n, command, false)
        })
        .collect();
    wait_all_complete(&games, MEET_TIMEOUT);
    let ann = games[0].summary_now().slot;
    start_series(&mut games);
    switch_back_and_forth(&mut games, ann, true);
    check_series(games);
    server.stop().assert_success("gameserver");
}
