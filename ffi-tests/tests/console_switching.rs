//! Players switching protocol and backend from the console in the middle of a session, written
//! only from SPEC sections 4 and 5 as a game sees them.
//!
//! - `c/console_subsys.c` (one process, no other player): `help net.subsys`, the protocol
//!   already selected, switches while not connected and while still connecting, bad, uppercase
//!   and extra arguments, IPX and the client-server protocols in both orders, `status` after
//!   each step, and the demo counts of `stop`/`play` for one item.
//! - Three `c/peer_game.c` games (ann, ben, cid) play peer to peer on 127.0.0.1 while dan plays
//!   on a `parsecnet slotserver` and eve on a `parsecnet gameserver`; everyone sends a numbered
//!   series of reliable custom events. cid types `say`, then `net.subsys slotserver`,
//!   `net.server HOST:PORT`, `connect`, `say`; later `net.subsys gameserver` and `connect
//!   HOST:PORT`; then `net.subsys peer` and `connect HOST:PORT` of ann; in each of the three
//!   games it also types `net.api trace` and `net.api udp`. After every step the
//!   replies, `status` and `players` must show the right protocol, backend, state, slot and
//!   players; each game sees cid leave and arrive once per switch, in that order
//!   (PLAYER_DISCONNECTED, PLAYER_CONNECTED with its name, PLAYER_JOINED), in whatever slot it
//!   is given (a backend switch may move it: docs/decisions.md), cid sees DISCONNECTED then
//!   CONNECTED once per switch and the others by name, and NET_FetchPlayerName names exactly
//!   the players seated; every chat line and series number cid sent right before a switch
//!   reaches the players it was seated with, once and in order (after a backend switch,
//!   possibly resumed after it came back), and one sent right after a protocol switch is
//!   refused (NET_ERR_NOT_CONNECTED) until CONNECTED, never silently lost.
//!
//! Counting and ordering only; waits are for events, with generous limits.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn net_subsys_edges_as_a_player_types_them() {
    let program = Build::c("c/console_subsys.c").build();
    let demo =
        std::env::temp_dir().join(format!("pnffi-console-subsys-{}.demo", std::process::id()));
    let mut command = Command::new(program);
    command.arg(&demo);
    let out = run(command, TIMEOUT);
    let _ = std::fs::remove_file(&demo);
    for line in out.stdout.lines().filter(|l| l.starts_with("NOTE ")) {
        println!("{line}");
    }
    out.assert_checks_passed("console_subsys", "console_subsys");
}

use parsec_net_ffi_tests::live::{wait_all_complete, LiveGame};
use parsec_net_ffi_tests::peer::{free_loopback_ports, game_args, loopback_setup, parse, Event};
use parsec_net_ffi_tests::series::{compare_outputs, outputs, stop_and_drain_owed};
use parsec_net_ffi_tests::server::{game_command, Server};

/// Longest wait for one step (a few hundred milliseconds on an idle machine).
const STEP: Duration = Duration::from_secs(30);
const SERIES_MS: &str = "25";
const NET_ERR_NOT_CONNECTED: i32 = -12;

fn start_server(kind: &str) -> Server {
    Server::start_on_loopback(kind, kind, &[])
}

/// A peer-to-peer game on 127.0.0.1:`port` connecting to 127.0.0.1:`peer`.
fn peer_game(program: &std::path::Path, name: &str, port: u16, peer: u16) -> LiveGame {
    let mut setup = loopback_setup(port);
    // The `trace` backend (UDP with a packet log), for a backend switch, on loopback too.
    setup.extend(["net.trace.bind 127.0.0.1".into(), "net.trace.ipv6 0".into()]);
    let mut command = Command::new(program);
    command.args(game_args(
        name,
        &setup,
        Some(&format!("127.0.0.1:{peer}")),
        2,
        600_000,
        0,
    ));
    command.args(["--control", "--series-ms", SERIES_MS]);
    LiveGame::spawn(name, command, false)
}

/// A game alone on `server` (it acts at once: nobody else is expected).
fn server_game(program: &std::path::Path, name: &str, kind: &str, server: &Server) -> LiveGame {
    let mut command = game_command(program, name, &["--control"], kind, false, server, STEP);
    command.args(["--expect", "0", "--series-ms", SERIES_MS]);
    LiveGame::spawn(name, command, false)
}

/// Run `line` in `game`; fail unless it returns `rc` with `wanted` in the reply.
#[track_caller]
fn exec(game: &mut LiveGame, line: &str, rc: i32, wanted: &str) -> String {
    let (got, reply) = game.exec(line);
    if got != rc || !reply.contains(wanted) {
        game.fail(&format!(
            "{line:?} returned {got} {reply:?}; wanted {rc} with {wanted:?} in it"
        ));
    }
    reply
}

/// `status`, checked to start with `protocol: HEAD` and to hold every one of `lines`. Asked
/// again for a while until it does: what the servers tell a client that just connected (the
/// other players) comes over the next frames.
#[track_caller]
fn status(game: &mut LiveGame, head: &str, lines: &[&str]) -> String {
    let deadline = std::time::Instant::now() + STEP;
    loop {
        let reply = exec(game, "status", 0, "");
        let first = reply.lines().next().unwrap_or("");
        let head_ok = first.starts_with(&format!("protocol: {head}"));
        let missing = lines.iter().find(|l| !reply.contains(*l));
        if head_ok && missing.is_none() {
            return reply;
        }
        if std::time::Instant::now() > deadline {
            game.fail(&format!(
                "status should start `protocol: {head}` and hold {missing:?}:\n{reply}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The index (in `game`'s events from stdout line `from`) of the first event `what` accepts,
/// waiting for it.
#[track_caller]
fn wait_for(game: &LiveGame, from: usize, what: impl Fn(&Event) -> bool, said: &str) -> Event {
    let mut found = None;
    // Parsed from the lines given: asking the game for them here would wait for the lock
    // held while this runs.
    let seen = game.process.wait_until(STEP, |lines| {
        let text = lines.get(from..).unwrap_or_default().join("\n");
        found = parse(&text).events.into_iter().find(|e| what(e));
        found.is_some()
    });
    if !seen {
        game.fail(&format!("never saw {said}"));
    }
    found.expect("found when seen")
}

/// `CONNECTED` in `game` from line `from` on, and the slot it gave.
#[track_caller]
fn connected_slot(game: &LiveGame, from: usize) -> i32 {
    wait_for(game, from, |e| e.kind == "CONNECTED", "CONNECTED").player
}

/// A `PLAYER_CONNECTED` naming `name` from line `from` on; its slot.
#[track_caller]
fn arrival(game: &LiveGame, from: usize, name: &str) -> i32 {
    wait_for(
        game,
        from,
        |e| e.kind == "PLAYER_CONNECTED" && e.text == name,
        &format!("PLAYER_CONNECTED of {name}"),
    )
    .player
}

/// In `game`'s events from line `from` on: `text` arrived once from `slot`, before the one
/// PLAYER_DISCONNECTED of `slot`.
#[track_caller]
fn said_then_left(game: &LiveGame, from: usize, slot: i32, text: &str) {
    wait_for(
        game,
        from,
        |e| e.kind == "PLAYER_DISCONNECTED" && e.player == slot,
        &format!("PLAYER_DISCONNECTED of slot {slot}"),
    );
    let events = game.events_since(from);
    let texts: Vec<usize> = (0..events.len())
        .filter(|&i| events[i].kind == "TEXT" && events[i].player == slot && events[i].text == text)
        .collect();
    let left: Vec<usize> = (0..events.len())
        .filter(|&i| events[i].kind == "PLAYER_DISCONNECTED" && events[i].player == slot)
        .collect();
    if texts.len() != 1 || left.len() != 1 || texts[0] > left[0] {
        game.fail(&format!(
            "wanted {text:?} once from slot {slot} and then one PLAYER_DISCONNECTED: text at \
             {texts:?}, left at {left:?} of the events since line {from}"
        ));
    }
}

/// In `game`'s events from line `from` on: one PLAYER_DISCONNECTED of `old`, one
/// PLAYER_CONNECTED of `name` in `new` after it, and `text` once: from `old` before the
/// departure, or from `new` after the arrival. A `net.api` switch resumes: what the old session
/// had not sent goes out first on the new one (docs/decisions.md), so a line typed just before
/// the switch may come either way, but never twice, never lost, and never from a slot the game
/// does not seat `name` in at that moment.
#[track_caller]
fn said_across_a_switch(game: &LiveGame, from: usize, old: i32, new: i32, name: &str, text: &str) {
    let said =
        |e: &Event| e.kind == "TEXT" && e.text == text && (e.player == old || e.player == new);
    wait_for(game, from, said, text);
    let events = game.events_since(from);
    let at = |what: &dyn Fn(&Event) -> bool| -> Vec<usize> {
        (0..events.len()).filter(|&i| what(&events[i])).collect()
    };
    let left = at(&|e| e.kind == "PLAYER_DISCONNECTED" && e.player == old);
    let came = at(&|e| e.kind == "PLAYER_CONNECTED" && e.text == name);
    let texts = at(&said);
    let ok = match (&left[..], &came[..], &texts[..]) {
        (&[l], &[c], &[t]) => {
            l < c && ((t < l && events[t].player == old) || (t > c && events[t].player == new))
        }
        _ => false,
    };
    if !ok {
        game.fail(&format!(
            "wanted {text:?} once, from slot {old} before its one PLAYER_DISCONNECTED or from \
             slot {new} after {name}'s one PLAYER_CONNECTED there: text at {texts:?}, left at \
             {left:?}, came at {came:?} of the events since line {from}"
        ));
    }
}

/// cid, seated in `slot`, types `say before B` and `net.api B` for B = trace and then udp, in
/// the middle of whatever game it is in (`head(slot)`: how `status` starts there); each of
/// `watchers` (a game and the other players it seats besides cid) watches. cid comes back
/// seated and joined over B in whatever slot it is given (docs/decisions.md: "its slot may
/// change"); every watcher sees it leave its slot once and arrive once by name, in that
/// order, hears what it said just before the switch once (before it left, or resumed after
/// it came back), and what it says over B from its new slot, and knows exactly the players it
/// seats. Returns cid's slots, the first one included.
#[track_caller]
fn backend_switches(
    cid: &mut LiveGame,
    slot: i32,
    head: impl Fn(i32) -> String,
    watchers: &mut [(&mut LiveGame, Vec<(i32, &str)>)],
) -> Vec<i32> {
    let seen_by_cid: Vec<(i32, String)> = watchers
        .iter_mut()
        .map(|(g, _)| (g.summary_now().slot, g.name().to_string()))
        .collect();
    let seen_by_cid: Vec<(i32, &str)> = seen_by_cid.iter().map(|(s, n)| (*s, n.as_str())).collect();
    let names: Vec<&str> = seen_by_cid.iter().map(|(_, n)| *n).collect();
    let mut slots = vec![slot];
    for backend in ["trace", "udp"] {
        let old = *slots.last().expect("a slot");
        let b = cid.process.line_count();
        let marks: Vec<usize> = watchers
            .iter()
            .map(|(g, _)| g.process.line_count())
            .collect();
        exec(cid, &format!("say before {backend}"), 0, "");
        exec(cid, &format!("net.api {backend}"), 0, backend);
        let slot = connected_slot(cid, b);
        status(cid, &head(slot), &[&format!("\nbackend: {backend} ")]);
        players(cid, &names);
        exec(cid, &format!("say over {backend}"), 0, "");
        for ((game, others), &e) in watchers.iter_mut().zip(&marks) {
            let name = game.name().to_string();
            assert_eq!(
                arrival(game, e, "cid"),
                slot,
                "{name} saw cid arrive elsewhere"
            );
            said_across_a_switch(game, e, old, slot, "cid", &format!("before {backend}"));
            let over = format!("over {backend}");
            wait_for(
                game,
                e,
                |ev| ev.kind == "TEXT" && ev.player == slot && ev.text == over,
                &over,
            );
            let mut known = others.clone();
            known.push((slot, "cid"));
            knows(game, &known);
        }
        knows(cid, &seen_by_cid);
        slots.push(slot);
    }
    slots
}

/// `NET_FetchPlayerName` (the summary lists every other slot it names) names exactly `who`:
/// no player of a game the switcher left, or that left this game, is still known.
#[track_caller]
fn knows(game: &mut LiveGame, who: &[(i32, &str)]) {
    let summary = game.summary_now();
    let mut known: Vec<(i32, String)> = summary
        .players
        .iter()
        .map(|p| (p.slot, p.name.clone()))
        .collect();
    known.sort();
    let mut wanted: Vec<(i32, String)> = who.iter().map(|(s, n)| (*s, n.to_string())).collect();
    wanted.sort();
    if known != wanted {
        game.fail(&format!(
            "NET_FetchPlayerName knows {known:?}, wanted {wanted:?}"
        ));
    }
}

/// `players` lists this client and every one of `names`, and nobody else.
#[track_caller]
fn players(game: &mut LiveGame, names: &[&str]) {
    let reply = exec(game, "players", 0, "(this client)");
    let rows = reply.lines().skip(1).count();
    if rows != names.len() + 1 || names.iter().any(|n| !reply.contains(&format!(" {n} "))) {
        game.fail(&format!(
            "players should list {names:?} and this client:\n{reply}"
        ));
    }
}

#[test]
fn a_player_switches_peer_slotserver_gameserver_peer_in_mid_game() {
    let program = Build::c("c/peer_game.c").build();
    let slotserver = start_server("slotserver");
    let gameserver = start_server("gameserver");
    let ports = free_loopback_ports(3);
    let mut ann = peer_game(&program, "ann", ports[0], ports[1]);
    let mut ben = peer_game(&program, "ben", ports[1], ports[0]);
    let mut cid = peer_game(&program, "cid", ports[2], ports[0]);
    let mut dan = server_game(&program, "dan", "slotserver", &slotserver);
    let mut eve = server_game(&program, "eve", "gameserver", &gameserver);
    wait_all_complete([&ann, &ben, &cid], STEP);
    let dan_slot = connected_slot(&dan, 0);
    let eve_slot = connected_slot(&eve, 0);
    let peer_slot = |g: &mut LiveGame| g.summary_now().slot;
    let (ann_slot, ben_slot, cid_peer_slot) = (
        peer_slot(&mut ann),
        peer_slot(&mut ben),
        peer_slot(&mut cid),
    );
    for game in [&mut ann, &mut ben, &mut cid, &mut dan, &mut eve] {
        game.send("@series on");
    }
    std::thread::sleep(Duration::from_secs(1));
    let mark = |games: [&LiveGame; 5]| -> Vec<usize> {
        games.iter().map(|g| g.process.line_count()).collect()
    };
    let start = mark([&ann, &ben, &cid, &dan, &eve]);

    // 1. peer -> slotserver, with `net.server` and a bare `connect`.
    let m = mark([&ann, &ben, &cid, &dan, &eve]);
    exec(&mut cid, "say before slotserver", 0, "before slotserver");
    let reply = exec(&mut cid, "net.subsys slotserver", 0, "");
    assert_eq!(
        reply, "disconnected from the peer game first; protocol slotserver selected",
        "the switch must say it disconnected first"
    );
    exec(
        &mut cid,
        "say right after the switch",
        NET_ERR_NOT_CONNECTED,
        "not connected",
    );
    status(
        &mut cid,
        "slotserver (not connected)",
        &[
            "\nbackend: udp ",
            "\ngame: not in a game (slot -, 0 other players, not joined",
        ],
    );
    exec(&mut cid, "players", 0, "not connected");
    let at = slotserver.tcp.to_string();
    exec(
        &mut cid,
        &format!("net.server {at}"),
        0,
        &format!("net.server = {at}"),
    );
    exec(
        &mut cid,
        "connect",
        0,
        &format!("connecting to the slotserver at {at}"),
    );
    // Refused while connecting; taken once CONNECTED came (a fast server may beat this line).
    // peer_game polls every event after NETs_MaintainNet and only then reads its control
    // lines, so its output says which came first: the line checks `CONTROL` against
    // `EVENT type=CONNECTED` there, not against when this test sent it.
    let (rc, reply) = cid.exec("say while connecting");
    let cid_lines = cid.process.lines_from(m[2]);
    let control = cid_lines
        .iter()
        .position(|l| l == "CONTROL line=\"say while connecting\"")
        .unwrap_or_else(|| cid.fail("no CONTROL line for `say while connecting`"));
    let connected_first = cid_lines[..control]
        .iter()
        .any(|l| l.starts_with("EVENT type=CONNECTED "));
    let refused = rc == NET_ERR_NOT_CONNECTED && reply.contains("not connected");
    let taken = rc == 0 && connected_first;
    if !(refused || taken) {
        cid.fail(&format!(
            "`say` while connecting returned {rc} {reply:?} (CONNECTED before it: {connected_first})"
        ));
    }
    let cid_slot = connected_slot(&cid, m[2]);
    arrival(&cid, m[2], "dan");
    cid.process
        .wait_for_line(m[2], STEP, |l| l.starts_with("ACT join rc=0"))
        .unwrap_or_else(|| cid.fail("did not join on the slotserver"));
    wait_for(
        &dan,
        m[3],
        |e| e.kind == "PLAYER_JOINED" && e.player == cid_slot,
        "cid join",
    );
    exec(&mut cid, "say on the slotserver", 0, "on the slotserver");
    status(
        &mut cid,
        &format!("slotserver (on 'slotserver' ({at}), slot {cid_slot}, 1 other player, joined)"),
        &[
            "\nbackend: udp ",
            &format!("\ngame: slot {cid_slot}, 1 other player, joined"),
        ],
    );
    players(&mut cid, &["dan"]);
    for (i, game) in [&ann, &ben].into_iter().enumerate() {
        said_then_left(game, m[i], cid_peer_slot, "before slotserver");
    }
    assert_eq!(arrival(&dan, m[3], "cid"), cid_slot);
    wait_for(
        &dan,
        m[3],
        |e| e.kind == "TEXT" && e.player == cid_slot && e.text == "on the slotserver",
        "cid's chat on the slotserver",
    );
    let texts_at_dan = |text: &str| {
        dan.events_since(m[3])
            .iter()
            .filter(|e| e.kind == "TEXT" && e.player == cid_slot && e.text == text)
            .count()
    };
    // What the library took is delivered (before "on the slotserver", queued after it); what
    // it refused is not.
    let wanted_at_dan = usize::from(taken);
    if texts_at_dan("while connecting") != wanted_at_dan {
        dan.fail(&format!(
            "cid's `say while connecting` (rc {rc}) reached dan {} times, wanted {wanted_at_dan}",
            texts_at_dan("while connecting")
        ));
    }
    knows(&mut dan, &[(cid_slot, "cid")]);
    knows(&mut cid, &[(dan_slot, "dan")]);
    knows(&mut ann, &[(ben_slot, "ben")]);
    knows(&mut ben, &[(ann_slot, "ann")]);
    // The backend too, in the middle of the slotserver game, and back.
    let ss_slots = backend_switches(
        &mut cid,
        cid_slot,
        |slot| format!("slotserver (on 'slotserver' ({at}), slot {slot}, 1 other player, joined)"),
        &mut [(&mut dan, vec![])],
    );
    let cid_slot = *ss_slots.last().expect("a slot");

    // 2. slotserver -> gameserver, with `connect HOST:PORT`.
    let m = mark([&ann, &ben, &cid, &dan, &eve]);
    exec(&mut cid, "say before gameserver", 0, "before gameserver");
    let reply = exec(&mut cid, "net.subsys gameserver", 0, "");
    assert_eq!(
        reply,
        "disconnected from the slotserver game first; protocol gameserver selected"
    );
    exec(
        &mut cid,
        "net.subsys gameserver",
        0,
        "protocol gameserver is already selected",
    );
    status(&mut cid, "gameserver (not connected)", &["\nbackend: udp "]);
    let at = gameserver.tcp.to_string();
    exec(
        &mut cid,
        &format!("connect {at}"),
        0,
        &format!("connecting to the gameserver at {at}"),
    );
    let cid_slot_2 = connected_slot(&cid, m[2]);
    arrival(&cid, m[2], "eve");
    cid.process
        .wait_for_line(m[2], STEP, |l| l.starts_with("ACT join rc=0"))
        .unwrap_or_else(|| cid.fail("did not join on the gameserver"));
    wait_for(
        &eve,
        m[4],
        |e| e.kind == "PLAYER_JOINED" && e.player == cid_slot_2,
        "cid join",
    );
    exec(&mut cid, "say on the gameserver", 0, "on the gameserver");
    status(
        &mut cid,
        &format!("gameserver (on 'gameserver' ({at}), slot {cid_slot_2}, 1 other player, joined)"),
        &[&format!(
            "\ngame: slot {cid_slot_2}, 1 other player, joined"
        )],
    );
    players(&mut cid, &["eve"]);
    said_then_left(&dan, m[3], cid_slot, "before gameserver");
    assert_eq!(arrival(&eve, m[4], "cid"), cid_slot_2);
    wait_for(
        &eve,
        m[4],
        |e| e.kind == "TEXT" && e.player == cid_slot_2 && e.text == "on the gameserver",
        "cid's chat on the gameserver",
    );
    knows(&mut eve, &[(cid_slot_2, "cid")]);
    knows(&mut cid, &[(eve_slot, "eve")]);
    knows(&mut dan, &[]);
    // The backend too, in the middle of the gameserver game, and back.
    let gs_slots = backend_switches(
        &mut cid,
        cid_slot_2,
        |slot| format!("gameserver (on 'gameserver' ({at}), slot {slot}, 1 other player, joined)"),
        &mut [(&mut eve, vec![])],
    );
    let cid_slot_2 = *gs_slots.last().expect("a slot");

    // 3. gameserver -> peer, with `connect HOST:PORT` of ann.
    let m = mark([&ann, &ben, &cid, &dan, &eve]);
    exec(&mut cid, "say before peer", 0, "before peer");
    let reply = exec(&mut cid, "net.subsys peer", 0, "");
    assert_eq!(
        reply,
        "disconnected from the gameserver game first; protocol peer selected"
    );
    status(&mut cid, "peer (not connected)", &["\nbackend: udp "]);
    let to = format!("127.0.0.1:{}", ports[0]);
    exec(
        &mut cid,
        &format!("connect {to}"),
        0,
        &format!("connecting to {to}"),
    );
    let cid_slot_3 = connected_slot(&cid, m[2]);
    assert_eq!(arrival(&cid, m[2], "ann"), ann_slot);
    assert_eq!(arrival(&cid, m[2], "ben"), ben_slot);
    cid.process
        .wait_for_line(m[2], STEP, |l| l.starts_with("ACT join rc=0"))
        .unwrap_or_else(|| cid.fail("did not join the peer game"));
    for (i, game) in [&ann, &ben].into_iter().enumerate() {
        wait_for(
            game,
            m[i],
            |e| e.kind == "PLAYER_JOINED" && e.player == cid_slot_3,
            "cid join",
        );
    }
    exec(&mut cid, "say back among peers", 0, "back among peers");
    status(
        &mut cid,
        &format!("peer (in game, slot {cid_slot_3}, 3 of 4 players, joined)"),
        &[&format!(
            "\ngame: slot {cid_slot_3}, 2 other players, joined"
        )],
    );
    players(&mut cid, &["ann", "ben"]);
    said_then_left(&eve, m[4], cid_slot_2, "before peer");
    let pairs = [(&mut ann, ben_slot, "ben"), (&mut ben, ann_slot, "ann")];
    for (i, (game, other, other_name)) in pairs.into_iter().enumerate() {
        assert_eq!(arrival(game, m[i], "cid"), cid_slot_3);
        wait_for(
            game,
            m[i],
            |e| e.kind == "TEXT" && e.player == cid_slot_3 && e.text == "back among peers",
            "cid's chat back among peers",
        );
        knows(game, &[(cid_slot_3, "cid"), (other, other_name)]);
    }
    knows(&mut cid, &[(ann_slot, "ann"), (ben_slot, "ben")]);
    knows(&mut eve, &[]);
    // The backend too, in the middle of the peer game, and back.
    let mut peer_slots = backend_switches(
        &mut cid,
        cid_slot_3,
        |slot| format!("peer (in game, slot {slot}, 3 of 4 players, joined)"),
        &mut [
            (&mut ann, vec![(ben_slot, "ben")]),
            (&mut ben, vec![(ann_slot, "ann")]),
        ],
    );
    peer_slots.push(cid_peer_slot);

    // Everyone's view of the whole session, once everything drained.
    let mut games = vec![ann, ben, cid, dan, eve];
    // Numbers on their way to cid when it left a game never arrive (they are not owed): the
    // wait ends when everything else has, or at its limit, and the comparison below decides.
    let _ = stop_and_drain_owed(&mut games, &["cid"], STEP, Duration::from_secs(8));
    let cid_kinds: Vec<String> = games[2]
        .events_since(start[2])
        .into_iter()
        .filter(|e| e.kind == "CONNECTED" || e.kind == "DISCONNECTED" || e.kind == "ERROR")
        .map(|e| e.kind)
        .collect();
    // Three protocol switches and two backend switches in each game (SPEC 5, docs/console.md: the game sees
    // a disconnect and a connect for each).
    let wanted = ["DISCONNECTED", "CONNECTED"].repeat(9);
    if cid_kinds != wanted {
        games[2].fail(&format!(
            "cid's own events: {cid_kinds:?}, wanted {wanted:?}"
        ));
    }
    // What each other game saw of cid, in order: a departure (after the chat line checked
    // above) and an arrival by name and a join. In every game, each of cid's two backend
    // switches is seen as cid leaving and then coming back, in whichever slot it was given
    // (it reconnects; its reliable events are resumed, see the series below).
    let leave = ["PLAYER_DISCONNECTED"];
    let come = ["PLAYER_CONNECTED", "PLAYER_JOINED"];
    let peer_seen = [&leave[..], &come, &leave, &come, &leave, &come].concat();
    let seen: [(usize, &[i32], Vec<&str>); 4] = [
        (0, &peer_slots, peer_seen.clone()),
        (1, &peer_slots, peer_seen),
        (
            3,
            &ss_slots,
            [&come[..], &leave, &come, &leave, &come, &leave].concat(),
        ),
        (
            4,
            &gs_slots,
            [&come[..], &leave, &come, &leave, &come, &leave].concat(),
        ),
    ];
    for (i, slots, wanted) in seen {
        let events = games[i].events_since(start[i]);
        let about_cid: Vec<&Event> = events
            .iter()
            .filter(|e| {
                (e.kind == "PLAYER_CONNECTED" && e.text == "cid")
                    || (slots.contains(&e.player)
                        && ["PLAYER_DISCONNECTED", "PLAYER_JOINED", "PLAYER_CONNECTED"]
                            .contains(&e.kind.as_str()))
            })
            .collect();
        let told: Vec<String> = about_cid
            .iter()
            .map(|e| format!("{} {} {:?}", e.kind, e.player, e.text))
            .collect();
        println!("{} saw of cid: {}", games[i].name(), told.join(", "));
        let about_cid: Vec<&str> = about_cid.iter().map(|e| e.kind.as_str()).collect();
        let errors: Vec<&Event> = events.iter().filter(|e| e.kind == "ERROR").collect();
        if about_cid != wanted || !errors.is_empty() {
            games[i].fail(&format!(
                "cid's comings and goings: {about_cid:?}, wanted {wanted:?}; errors {errors:?}"
            ));
        }
    }
    let deliveries = compare_outputs(&outputs(&games));
    for d in &deliveries {
        println!("{}", d.describe());
    }
    let bad: Vec<String> = deliveries
        .iter()
        .filter(|d| {
            // cid really left each game: what was on the way to it then is not owed; what it
            // sent before leaving is.
            (d.receiver != "cid" && !d.lost_while_seated.is_empty())
                || !d.duplicates.is_empty()
                || !d.out_of_order.is_empty()
                || !d.never_sent.is_empty()
        })
        .map(|d| d.describe())
        .collect();
    assert!(bad.is_empty(), "series deliveries:\n{}", bad.join("\n"));
    for game in games {
        let _ = game.quit(STEP);
    }
    slotserver.stop().assert_success("the slotserver");
    gameserver.stop().assert_success("the gameserver");
}
