//! Three `c/peer_game.c` clients play through the real `parsecnet` servers, started as child
//! processes on 127.0.0.1 with ports picked by the kernel (issue 5 acceptance).
//!
//! Through a gameserver (`net.subsys gameserver`, `connect 127.0.0.1:P`): the three see each
//! other connect and join, get the admin's message lines, each other's chat line and every
//! remote event; the two ships flying close together keep receiving each other's state while
//! the third, 50000 units away (the server forwards states only within 1000), gets none of
//! theirs and they none of its (and the server counts the states it filtered). The third client
//! comes after the first two have joined, and must be told that they have. One client is then
//! killed with SIGKILL: its connection closes, and the two others get PLAYER_DISCONNECTED for its
//! slot at once (at the latest within the alive timeout, 3 s). Another is stopped with SIGSTOP,
//! so its connection stays open but it sends nothing: the last one gets PLAYER_DISCONNECTED for
//! it when the alive timeout passes. One client runs under AddressSanitizer.
//!
//! Through a slotserver (`net.subsys slotserver`): the same joins, states (all of them: no
//! distance filter) and events, and the game packets go peer to peer: the server process holds
//! no UDP socket at all (read from /proc), and every game lists the others at the very UDP
//! nodes their own `status` reports and counts datagrams received from them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use parsec_net_ffi_tests::live::{wait_all_complete, LiveGame};
use parsec_net_ffi_tests::peer::{check_met_each_other, check_ran_well, GameRun, Summary};
use parsec_net_ffi_tests::server::{game_command, Server};
use parsec_net_ffi_tests::{paths, Build};

/// How long the three games may take to meet and finish (they take well under a second).
const MEET_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a game may take to end after `@quit`.
const QUIT_TIMEOUT: Duration = Duration::from_secs(15);
/// The gameserver's alive timeout, in seconds.
const ALIVE_TIMEOUT_S: u64 = 3;
/// The gameserver's forwarding distance, and where the far ship flies.
const DISTANCE: f32 = 1000.0;
const FAR_X: f32 = 50_000.0;
/// The admin's four message lines (the empty ones are not shown to the game).
const MESSAGES: [&str; 4] = [
    "ffi tests: welcome, pilots",
    "",
    "ffi tests: no camping at the stargate",
    "",
];

/// A messages file for this test process.
fn messages_file(kind: &str) -> PathBuf {
    let path = paths()
        .out_subdir("servers")
        .join(format!("{kind}-messages-{}.txt", std::process::id()));
    std::fs::write(&path, MESSAGES.join("\n") + "\n")
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// A client game on loopback (`net.port 0`) that connects to `server` with `protocol`, kept
/// running (`--control`) until told to quit.
fn client(
    program: &Path,
    name: &str,
    protocol: &str,
    server: &Server,
    extra: &[String],
) -> Command {
    let mut command = game_command(
        program,
        name,
        &["--control", "--expect", "2"],
        protocol,
        false,
        server,
        MEET_TIMEOUT,
    );
    command.args(extra);
    command
}

/// Each game saw every other connect under its name, and got the admin's (non-empty) message
/// lines in order, as text from player -1.
fn check_connects_and_messages(runs: &[GameRun], slots: &[i32]) {
    let wanted: Vec<&str> = MESSAGES.iter().copied().filter(|m| !m.is_empty()).collect();
    for (i, run) in runs.iter().enumerate() {
        for (j, other) in runs.iter().enumerate() {
            if i != j
                && !run
                    .report
                    .events_from("PLAYER_CONNECTED", slots[j])
                    .any(|e| e.text == other.name)
            {
                run.fail(&format!(
                    "no PLAYER_CONNECTED for {} in slot {}",
                    other.name, slots[j]
                ));
            }
        }
        let messages: Vec<&str> = run
            .report
            .events_from("TEXT", -1)
            .map(|e| e.text.as_str())
            .collect();
        if messages != wanted {
            run.fail(&format!(
                "the server's message lines are {messages:?}, expected {wanted:?}"
            ));
        }
    }
}

/// Kill `games[victim]` with SIGKILL and wait until every other game got PLAYER_DISCONNECTED for
/// its slot; how long that took.
fn kill_and_wait_for_the_slot_to_free(
    games: &mut [LiveGame],
    victim: usize,
    slot: i32,
    limit: Duration,
) -> Duration {
    let marks: Vec<usize> = games.iter().map(|g| g.process.line_count()).collect();
    let killed = Instant::now();
    games[victim].process.kill();
    let wanted = format!("EVENT type=PLAYER_DISCONNECTED player={slot} ");
    for (i, game) in games.iter().enumerate() {
        if i != victim
            && game
                .process
                .wait_for_line(marks[i], limit, |l| l.starts_with(&wanted))
                .is_none()
        {
            game.fail(&format!(
                "no PLAYER_DISCONNECTED for slot {slot} within {limit:?} of killing {}",
                games[victim].name()
            ));
        }
    }
    killed.elapsed()
}

/// No AddressSanitizer report in an ASan game's stderr.
fn check_asan_clean(run: &GameRun) {
    if run.output.stderr.contains("Sanitizer") {
        run.fail("AddressSanitizer reported a problem");
    }
}

#[test]
fn three_c_clients_play_through_a_gameserver() {
    let program = Build::c("c/peer_game.c").build();
    let asan_program = Build::c("c/peer_game.c").asan().build();
    let messages = messages_file("gameserver");
    let alive = ALIVE_TIMEOUT_S.to_string();
    let distance = DISTANCE.to_string();
    let mut server = Server::start_on_loopback(
        "gameserver",
        "ffi-gameserver",
        &[
            "--distance",
            &distance,
            "--alive-timeout",
            &alive,
            "--messages",
            messages.to_str().expect("a UTF-8 path"),
        ],
    );
    let udp = server
        .udp
        .unwrap_or_else(|| panic!("the gameserver printed no UDP address: {}", server.announce));
    assert!(
        server.tcp.ip().is_loopback() && udp.ip().is_loopback() && udp.port() != 0,
        "the gameserver must listen on 127.0.0.1: {}",
        server.announce
    );

    // ann (under ASan) and ben fly close together; cid is far away.
    let names = ["ann", "ben", "cid"];
    let (near, far) = ([0usize, 1], 2usize);
    let mut places: Vec<String> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let x = if i == far { FAR_X } else { 0.0 };
        places.extend(["--pos".to_string(), format!("{name}={x},0,0")]);
    }
    places.extend(["--near".to_string(), distance.clone()]);
    let spawn = |i: usize| {
        let asan = i == 0;
        let program = if asan { &asan_program } else { &program };
        let command = client(program, names[i], "gameserver", &server, &places);
        LiveGame::spawn(names[i], command, asan)
    };
    // ann and ben start together and join; cid comes to the running game a little later (as
    // players do), so it must learn from the server who is there and who has joined.
    let started = Instant::now();
    let mut games = vec![spawn(0), spawn(1)];
    for game in &games {
        if game
            .process
            .wait_for_line(0, MEET_TIMEOUT, |l| {
                l.starts_with("EVENT type=PLAYER_JOINED ")
            })
            .is_none()
        {
            game.fail("did not see the other game join");
        }
    }
    games.push(spawn(2));
    wait_all_complete(&games, MEET_TIMEOUT);
    let met_after = started.elapsed();

    // Two looks at what each game knows, a second apart: between near ships the state moves on;
    // between the far ship and the others nothing arrives.
    let first: Vec<Summary> = games.iter_mut().map(LiveGame::summary_now).collect();
    std::thread::sleep(Duration::from_secs(1));
    let second: Vec<Summary> = games.iter_mut().map(LiveGame::summary_now).collect();
    let slots: Vec<i32> = second.iter().map(|s| s.slot).collect();
    for i in 0..3 {
        for j in (0..3).filter(|&j| j != i) {
            let (Some(before), Some(after)) =
                (first[i].player(slots[j]), second[i].player(slots[j]))
            else {
                games[i].fail(&format!("does not know {} (slot {})", names[j], slots[j]));
            };
            let both_near = near.contains(&i) && near.contains(&j);
            if both_near {
                if after.marker != "ok" || after.frame < before.frame + 10 {
                    games[i].fail(&format!(
                        "the state of near {} did not keep arriving: {before:?} then, a \
                         second later, {after:?}",
                        names[j]
                    ));
                }
            } else if before != after {
                games[i].fail(&format!(
                    "got a new state of {} although their ships are {FAR_X} apart (the \
                     server's distance is {DISTANCE}): {before:?}, a second later {after:?}",
                    names[j]
                ));
            }
        }
    }

    // A client vanishes: ben's process is killed.
    assert!(server.is_running(), "the gameserver is still running");
    let limit = Duration::from_secs(ALIVE_TIMEOUT_S + 2);
    let freed_after = kill_and_wait_for_the_slot_to_free(&mut games, 1, slots[1], limit);

    // Another goes silent without closing its connection: cid's process is stopped (SIGSTOP).
    // Only the alive timeout can free its slot: not much before it, and not long after.
    let mark = games[0].process.line_count();
    let stopped = Instant::now();
    games[2].process.signal("STOP");
    let wanted = format!("EVENT type=PLAYER_DISCONNECTED player={} ", slots[2]);
    if games[0]
        .process
        .wait_for_line(mark, limit, |l| l.starts_with(&wanted))
        .is_none()
    {
        games[0].fail(&format!(
            "no PLAYER_DISCONNECTED for the silent cid (slot {}) within {limit:?}",
            slots[2]
        ));
    }
    let silent_freed_after = stopped.elapsed();
    assert!(
        silent_freed_after >= Duration::from_millis(ALIVE_TIMEOUT_S * 1000 - 500),
        "cid's slot was freed {silent_freed_after:?} after it went silent, before the alive \
         timeout of {ALIVE_TIMEOUT_S} s"
    );
    games[2].process.kill();

    let mut runs: Vec<GameRun> = Vec::new();
    for game in games {
        runs.push(if game.name() == "ann" {
            game.quit(QUIT_TIMEOUT)
        } else {
            game.finish(QUIT_TIMEOUT)
        });
    }
    check_ran_well(&runs[0]);
    check_asan_clean(&runs[0]);
    check_connects_and_messages(&runs, &slots);

    let sockets = server.sockets("udp");
    assert!(
        !sockets.is_empty(),
        "the gameserver holds a UDP socket (this also shows the /proc check works)"
    );
    let output = server.stop();
    output.assert_success("the gameserver (stopped with SIGTERM)");
    let filtered: u64 = output
        .stdout
        .split("filtered by distance ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        filtered > 0,
        "the gameserver counted no state filtered by distance\n{}",
        output.transcript()
    );
    println!(
        "gameserver {}: met after {met_after:?}; ben's slot {} freed {freed_after:?} after the \
         kill, silent cid's slot {} {silent_freed_after:?} after it stopped; {filtered} states \
         filtered by distance",
        server_line(&output.stdout),
        slots[1],
        slots[2]
    );

    // cid came after ann and ben had joined: the server must tell it that they are in the game
    // (the peer-to-peer and slotserver protocols repeat a join to a newcomer).
    for j in near {
        if runs[far]
            .report
            .events_from("PLAYER_JOINED", slots[j])
            .next()
            .is_none()
        {
            runs[far].fail(&format!(
                "connected to the gameserver after {} (slot {}) had joined, and was never told \
                 it had: no PLAYER_JOINED for slot {} (its `players` would show joined=no)",
                names[j], slots[j], slots[j]
            ));
        }
    }

    // Last, what every game got from every other (joins, chat lines, remote events, states
    // between near ships), each sender's events in the order it sent them: the relay forwards
    // laser and missile creations first (design 2.3.3, burst handling) but takes the shooter's
    // earlier events along.
    let agreed = check_met_each_other(&runs, &|i, j| near.contains(&i) && near.contains(&j), &[]);
    assert_eq!(agreed, slots, "the slots the games connected in");
}

#[test]
fn the_same_c_clients_play_over_a_slotserver() {
    let program = Build::c("c/peer_game.c").build();
    let messages = messages_file("slotserver");
    let mut server = Server::start_on_loopback(
        "slotserver",
        "ffi-slotserver",
        &["--messages", messages.to_str().expect("a UTF-8 path")],
    );
    assert!(
        server.udp.is_none() && !server.announce.contains("UDP"),
        "a slotserver has no game socket: {}",
        server.announce
    );
    let names = ["dee", "eve", "fay"];
    let mut games: Vec<LiveGame> = names
        .iter()
        .map(|name| {
            LiveGame::spawn(
                name,
                client(&program, name, "slotserver", &server, &[]),
                false,
            )
        })
        .collect();
    let started = Instant::now();
    wait_all_complete(&games, MEET_TIMEOUT);
    let met_after = started.elapsed();
    let summaries: Vec<Summary> = games.iter_mut().map(LiveGame::summary_now).collect();
    let slots: Vec<i32> = summaries.iter().map(|s| s.slot).collect();

    // Peer to peer: every game lists the others at the UDP nodes they themselves report, and
    // has received datagrams; the server has no UDP socket to relay through.
    let nodes: Vec<String> = games
        .iter_mut()
        .map(|game| {
            let (_, status) = game.exec("status");
            match status
                .split("local node ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
            {
                Some(node) if node.starts_with("127.0.0.1:") => node.to_string(),
                _ => game.fail(&format!(
                    "status shows no local node on 127.0.0.1: {status}"
                )),
            }
        })
        .collect();
    for (i, game) in games.iter_mut().enumerate() {
        let (_, status) = game.exec("status");
        let received: u64 = status
            .split("datagrams: sent ")
            .nth(1)
            .and_then(|rest| rest.split("received ").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if received == 0 {
            game.fail(&format!("received no datagram: {status}"));
        }
        let (_, players) = game.exec("players");
        for j in (0..3).filter(|&j| j != i) {
            let listed = players.lines().any(|row| {
                let columns: Vec<&str> = row.split_whitespace().collect();
                columns.len() > 3
                    && columns[0] == slots[j].to_string()
                    && columns[1] == names[j]
                    && columns[3] == nodes[j]
            });
            if !listed {
                game.fail(&format!(
                    "does not list {} in slot {} at its own node {}: {players}",
                    names[j], slots[j], nodes[j]
                ));
            }
        }
    }
    let udp: Vec<_> = [server.sockets("udp"), server.sockets("udp6")].concat();
    let tcp: Vec<_> = [server.sockets("tcp"), server.sockets("tcp6")].concat();
    assert!(
        udp.is_empty(),
        "the slotserver process holds UDP sockets {udp:?}: game packets could go through it"
    );
    assert!(
        !tcp.is_empty(),
        "the slotserver's TCP sockets were not found in /proc (so the UDP check proves nothing)"
    );

    // eve's process is killed: the server drops her connection and tells the others.
    let limit = Duration::from_secs(5);
    let freed_after = kill_and_wait_for_the_slot_to_free(&mut games, 1, slots[1], limit);
    let mut runs: Vec<GameRun> = Vec::new();
    for game in games {
        runs.push(if game.name() == "eve" {
            game.finish(QUIT_TIMEOUT)
        } else {
            game.quit(QUIT_TIMEOUT)
        });
    }
    for run in [&runs[0], &runs[2]] {
        check_ran_well(run);
    }
    let agreed = check_met_each_other(&runs, &|_, _| true, &[]);
    assert_eq!(agreed, slots, "the slots the games connected in");
    check_connects_and_messages(&runs, &slots);
    assert!(server.is_running(), "the slotserver is still running");
    let output = server.stop();
    output.assert_success("the slotserver (stopped with SIGTERM)");
    println!(
        "slotserver {}: met after {met_after:?}; nodes {nodes:?}; no UDP socket, {} TCP \
         sockets; eve's slot {} freed {freed_after:?} after the kill",
        server_line(&output.stdout),
        tcp.len(),
        slots[1]
    );
}

/// The server's first line (its addresses), for the test's output.
fn server_line(stdout: &str) -> &str {
    stdout.lines().next().unwrap_or("")
}
