//! `c/peer_game.c` over the IPX backend (issue 7 acceptance), each game in its own network
//! namespace on a private bridged LAN (`harness/netns.rs`): raw IPX frames on the namespace's
//! `eth0`, which two programs on one interface could not exchange. Needs root; without it the
//! tests print SKIPPED and pass.
//!
//! - Three peers start with `net.api ipx` and connect with no address: they find each other by
//!   IPX broadcast, take three distinct slots they all agree on, and each gets every other's
//!   name, join, chat line, state and remote events. Each socket's node carries its namespace's
//!   `eth0` MAC.
//! - Three peers start on UDP (broadcast on the LAN) and reach the game; then, while every game
//!   keeps queueing a numbered series of reliable custom events, each switches to IPX with
//!   `net.api ipx` (it sees DISCONNECTED and CONNECTED and finds the two others again), they
//!   chat, each switches back with `net.api udp`, finds the others again, and they chat again.
//!   Every number the library accepted while the receiver was in the sender's game must arrive
//!   exactly once and in order (SPEC: reliable events are delivered once and in order per
//!   sender; docs/decisions.md, "A backend switch during a game reconnects": nothing queued is
//!   lost or delivered twice). The one thing the decisions allow is that a number queued while
//!   the receiver was not in the sender's game (away switching, not found again yet) never
//!   arrives: those are reported, not failed. Any duplicate or reordering fails. The same again
//!   with games that connected by UDP address: IPX cannot read that address, so they look for
//!   each other by broadcast after `net.api ipx` (the reply says why), and connect to their
//!   addresses again after `net.api udp`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use parsec_net_ffi_tests::backends::built_backend_dir;
use parsec_net_ffi_tests::live::LiveGame;
use parsec_net_ffi_tests::netns::{skip_without, Lan};
use parsec_net_ffi_tests::peer::{
    check_all_met, check_met_each_other, check_ran_well, game_args, parse, run_together, GameRun,
};
use parsec_net_ffi_tests::series::{deliveries, sent, stop_and_drain_owed};
use parsec_net_ffi_tests::Build;

/// How long a game may take to meet the others (about a second with the timings below).
const DURATION_MS: u64 = 15_000;
const TIMEOUT: Duration = Duration::from_secs(25);
/// How long a switched game may take to find the others again.
const REFIND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a chat line may take to arrive.
const TEXT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the last series numbers may take to arrive once the series stops.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);
const QUIT_TIMEOUT: Duration = Duration::from_secs(15);
/// A series number every this many milliseconds.
const SERIES_MS: &str = "20";
/// The games switch one after another, this far apart (as players would, not all at once).
const SWITCH_STAGGER: Duration = Duration::from_millis(100);
/// How long the games play (and send the series) between switches, once they have chatted.
const DWELL: Duration = Duration::from_millis(500);

/// Faster peer-to-peer timings than the defaults (the LAN answers in well under a millisecond).
fn fast_peer_timings() -> Vec<String> {
    vec![
        "net.peer.connect_interval 100".into(),
        "net.peer.slot_interval 150".into(),
        "net.peer.reply_wait 50".into(),
    ]
}

/// Skip (print why and return true) unless namespaces can be used.
fn skip() -> bool {
    skip_without("root for network namespaces and raw IPX frames")
}

/// The game of host `i` of `lan`, with the IPX backend findable by name.
fn game_command(lan: &Lan, i: usize, program: &Path, backends: &Path) -> Command {
    let mut command = lan.command(i, program);
    command.env("PARSEC_NET_BACKEND_PATH", backends);
    command
}

/// The MAC address of host `i`'s `eth0`, as an IPX node prints it (12 upper-case hex digits).
fn node_mac(lan: &Lan, i: usize) -> String {
    lan.eth0_mac(i).replace(':', "").to_uppercase()
}

/// The local node a game's `status` reports.
fn local_node(status: &str) -> Option<&str> {
    status
        .split("local node ")
        .nth(1)?
        .split_whitespace()
        .next()
}

#[test]
fn three_peers_over_ipx_in_namespaces() {
    if skip() {
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    let backends = built_backend_dir("ipx");
    let lan = Lan::create(3);
    let names = ["ivy", "jon", "kim"];
    let mut setup = vec!["net.ipx.interface eth0".to_string(), "net.api ipx".into()];
    setup.extend(fast_peer_timings());
    let games = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = game_command(&lan, i, &program, &backends);
            command.args(game_args(name, &setup, None, 2, DURATION_MS, 1500));
            (name.to_string(), command)
        })
        .collect();
    let runs = run_together(games, TIMEOUT, false);
    let slots = check_all_met(&runs);
    let mut sorted = slots.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![0, 1, 2], "three players take slots 0-2");
    for (i, run) in runs.iter().enumerate() {
        let switched = run.report.execs.iter().any(|(rc, line, reply)| {
            *rc == 0 && line == "net.api ipx" && reply.contains("packet backend ipx active")
        });
        if !switched {
            run.fail("net.api ipx did not make IPX the active backend");
        }
        if !run.report.status.contains("backend: ipx") {
            run.fail("status does not show the IPX backend at the end");
        }
        // NNNNNNNN:MAC:SSSS, with the MAC of the namespace's own eth0.
        let node = local_node(&run.report.status).unwrap_or("");
        let parts: Vec<&str> = node.split(':').collect();
        let mac = node_mac(&lan, i);
        if parts.len() != 3 || parts[0].len() != 8 || parts[1] != mac || parts[2].len() != 4 {
            run.fail(&format!(
                "local node {node:?} is not an IPX node on eth0 (MAC {mac})"
            ));
        }
        if !run
            .report
            .acts
            .iter()
            .any(|a| a.starts_with("connect rc=0"))
        {
            run.fail("did not connect with NETs_Connect() (no address)");
        }
        if run
            .report
            .execs
            .iter()
            .any(|(_, line, _)| line.starts_with("connect"))
        {
            run.fail("was given an address to connect to");
        }
        println!(
            "{} ({node}) in slot {}, finished after {:?}",
            run.name, slots[i], run.output.elapsed
        );
    }
}

/// In the stdout `lines` from a switch on: `Some(names)` once the game has seen DISCONNECTED and
/// then CONNECTED, with the names of the other players seated since (`None` before that, or
/// while it is disconnected again).
fn seated_after_reconnect(lines: &[String]) -> Option<Vec<String>> {
    let report = parse(&lines.join("\n"));
    let left = report
        .events
        .iter()
        .position(|e| e.kind == "DISCONNECTED")?;
    let mut connected = false;
    let mut seated: BTreeMap<i32, String> = BTreeMap::new();
    for event in &report.events[left..] {
        match event.kind.as_str() {
            "CONNECTED" => {
                connected = true;
                seated.clear();
            }
            "DISCONNECTED" => {
                connected = false;
                seated.clear();
            }
            "PLAYER_CONNECTED" | "PLAYER_NAME" => {
                seated.insert(event.player, event.text.clone());
            }
            "PLAYER_DISCONNECTED" => {
                seated.remove(&event.player);
            }
            _ => {}
        }
    }
    let mut names: Vec<String> = seated.into_values().collect();
    names.sort();
    connected.then_some(names)
}

/// Switch every game to `api`, one after another ([`SWITCH_STAGGER`] apart); each must see
/// DISCONNECTED and CONNECTED, find the two others again, and show `api` as its backend; then
/// each says "`words` NAME" and must hear the others'. How long finding each other took.
fn switch_all(games: &mut [LiveGame], names: &[&str], api: &str, words: &str) -> Duration {
    let marks: Vec<usize> = games.iter().map(|g| g.process.line_count()).collect();
    let started = Instant::now();
    for (i, game) in games.iter_mut().enumerate() {
        if i > 0 {
            std::thread::sleep(SWITCH_STAGGER);
        }
        game.send(&format!("net.api {api}"));
    }
    for (i, game) in games.iter().enumerate() {
        let mut others: Vec<String> = names
            .iter()
            .filter(|n| **n != names[i])
            .map(|n| n.to_string())
            .collect();
        others.sort();
        let found = game.process.wait_until(REFIND_TIMEOUT, |lines| {
            seated_after_reconnect(&lines[marks[i]..]).as_ref() == Some(&others)
        });
        if !found {
            game.fail(&format!(
                "after `net.api {api}` did not see DISCONNECTED, CONNECTED and {others:?} \
                 seated again within {REFIND_TIMEOUT:?}"
            ));
        }
    }
    let refound = started.elapsed();
    for (i, game) in games.iter_mut().enumerate() {
        let lines = game.process.lines_from(marks[i]);
        let report = parse(&lines.join("\n"));
        let switched = report.execs.iter().any(|(rc, line, reply)| {
            *rc == 0
                && *line == format!("net.api {api}")
                && reply.contains(&format!("packet backend {api} active"))
        });
        if !switched {
            game.fail(&format!("`net.api {api}` did not succeed"));
        }
        let (_, status) = game.exec("status");
        if !status.contains(&format!("backend: {api} ")) {
            game.fail(&format!("status does not show the {api} backend: {status}"));
        }
        // The socket line says where the backend is bound (its describe_socket).
        let bound = if api == "ipx" {
            "binding: interface eth0, MAC "
        } else {
            "binding: IPv4 "
        };
        if !status.lines().any(|l| l.starts_with(bound)) {
            game.fail(&format!(
                "status does not say where {api} is bound: {status}"
            ));
        }
    }
    for (game, name) in games.iter_mut().zip(names) {
        game.send(&format!("say {words} {name}"));
    }
    for (i, game) in games.iter().enumerate() {
        for other in names.iter().filter(|n| **n != names[i]) {
            let text = format!("text=\"{words} {other}\"");
            let heard = game.process.wait_for_line(marks[i], TEXT_TIMEOUT, |l| {
                l.starts_with("EVENT type=TEXT ") && l.ends_with(&text)
            });
            if heard.is_none() {
                game.fail(&format!("did not hear \"{words} {other}\" over {api}"));
            }
        }
    }
    refound
}

#[test]
fn switching_udp_to_ipx_and_back_in_a_running_peer_session() {
    switch_udp_to_ipx_and_back(false);
}

/// The same with games that connected to each other's UDP address: that address means nothing
/// to the IPX backend, so after `net.api ipx` they look for each other by broadcast (the reply
/// says why), and after `net.api udp` they connect to their addresses again.
#[test]
fn peers_that_connected_by_address_find_each_other_by_broadcast_after_switching_to_ipx() {
    switch_udp_to_ipx_and_back(true);
}

/// Three games reach a game over UDP (by broadcast, or `by_address`: the first to the second's
/// address, the others to the first's), then switch to IPX and back while each sends a series.
fn switch_udp_to_ipx_and_back(by_address: bool) {
    if skip() {
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    let backends = built_backend_dir("ipx");
    let lan = Lan::create(3);
    let names = ["lea", "max", "noa"];
    let mut setup = vec![
        format!("net.udp.broadcast {}", lan.broadcast()),
        "net.ipx.interface eth0".to_string(),
    ];
    setup.extend(fast_peer_timings());
    let mut games: Vec<LiveGame> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = game_command(&lan, i, &program, &backends);
            let peer = by_address.then(|| lan.address(usize::from(i == 0)));
            command.args(game_args(name, &setup, peer.as_deref(), 2, DURATION_MS, 0));
            command.args(["--control", "--series-ms", SERIES_MS]);
            LiveGame::spawn(name, command, false)
        })
        .collect();
    for game in &games {
        if !game.wait_complete(Duration::from_millis(DURATION_MS)) {
            game.fail("did not meet the others over UDP");
        }
    }
    for game in games.iter_mut() {
        game.send("@series on");
    }
    std::thread::sleep(DWELL);
    let to_ipx = switch_all(&mut games, &names, "ipx", "over ipx from");
    if by_address {
        for game in games.iter_mut() {
            let lines = game.process.lines_from(0);
            let report = parse(&lines.join("\n"));
            let said_why = report.execs.iter().any(|(_, line, reply)| {
                line == "net.api ipx"
                    && reply.contains("looking for other players (broadcast), since '")
                    && reply.contains("is not an address for the ipx backend")
            });
            if !said_why {
                game.fail(
                    "`net.api ipx` did not say it looks for the others by broadcast, and why",
                );
            }
        }
    }
    std::thread::sleep(DWELL);
    let to_udp = switch_all(&mut games, &names, "udp", "back on udp from");
    std::thread::sleep(DWELL);
    // Give the last numbers owed time to arrive (and stop waiting early once they all have;
    // what was queued while a receiver was away switching is not owed, see below).
    stop_and_drain_owed(&mut games, &[], TEXT_TIMEOUT, DRAIN_TIMEOUT);
    let runs: Vec<GameRun> = games.into_iter().map(|g| g.quit(QUIT_TIMEOUT)).collect();

    for run in &runs {
        check_ran_well(run);
        let series = sent(&run.output.stdout);
        if let Some(gap) = &series.gap {
            run.fail(&format!("its series is not 0, 1, 2, ...: {gap}"));
        }
        if let Some(code) = series.refused.keys().find(|c| **c != -12) {
            run.fail(&format!(
                "the library refused a series event with {code} (only NET_ERR_NOT_CONNECTED, \
                 -12, while finding the game again, is expected)"
            ));
        }
        println!(
            "{}: {} series numbers queued, refused while not connected: {:?}",
            run.name,
            series.queued.len(),
            series.refused
        );
    }
    // Everything of the first game over UDP, before the switches.
    check_met_each_other(&runs, &|_, _| true, &[]);

    let all = deliveries(&runs);
    let report: Vec<String> = all.iter().map(|d| d.describe()).collect();
    println!(
        "switched to IPX (all found again) in {to_ipx:?}, back to UDP in {to_udp:?}\n{}",
        report.join("\n")
    );
    for d in &all {
        if !d.lost_while_absent.is_empty() {
            println!(
                "NOTE: {} never got {:?} from {}: queued while {} was not in {}'s game (it had \
                 left to switch, or not come back yet)",
                d.receiver, d.lost_while_absent, d.sender, d.receiver, d.sender
            );
        }
    }
    let mut failed: Vec<String> = Vec::new();
    for (d, line) in all.iter().zip(&report) {
        if d.lost_while_seated.is_empty()
            && d.never_sent.is_empty()
            && d.duplicates.is_empty()
            && d.out_of_order.is_empty()
        {
            continue;
        }
        failed.push(line.clone());
        let sender = runs
            .iter()
            .find(|r| r.name == d.sender)
            .expect("a sender is one of the games");
        for n in &d.lost_while_seated {
            failed.push(format!(
                "  {} queued {n}, then saw:\n{}",
                d.sender,
                what_followed(&sender.output.stdout, *n)
            ));
        }
        let repeated = d.duplicates.iter().map(|(n, _)| *n);
        let reordered = d.out_of_order.iter().map(|(_, later)| *later);
        for n in repeated.chain(reordered).take(3) {
            failed.push(format!(
                "  {} queued {n} (received twice or late), then saw:\n{}",
                d.sender,
                what_followed(&sender.output.stdout, n)
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "reliable custom events were lost while the receiver was in the sender's game, \
         delivered more than once, delivered out of order, or arrived without being sent:\n{}",
        failed.join("\n")
    );
}

/// The sender's `SERIES` line for number `n` (accepted) and the events and console lines it
/// printed next (up to the next accepted number), shortened: what happened around a lost one.
fn what_followed(stdout: &str, n: u32) -> String {
    let mark = format!("SERIES n={n} rc=0 ");
    let lines: Vec<&str> = stdout.lines().collect();
    let Some(at) = lines.iter().position(|l| l.starts_with(&mark)) else {
        return "    (no SERIES line)".into();
    };
    let next = format!("SERIES n={} rc=0 ", n + 1);
    lines[at..]
        .iter()
        .take_while(|l| !l.starts_with(&next))
        .filter(|l| !l.starts_with("SERIES ") || l.starts_with(&mark))
        .take(8)
        .map(|l| {
            let shown: String = l.chars().take(160).collect();
            format!("    {shown}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
