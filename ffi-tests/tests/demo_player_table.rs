//! SPEC section 8: "playback feeds [the remote-event stream] back through the same path, so the
//! game sees exactly what it saw live", also while the player table changes in unusual ways.
//! `c/peer_game.c --lookups-all` prints, after every event it polls, the event and what every
//! lookup answers at that moment: NET_FetchPlayerName and NET_GetPlayerState (result and a hash
//! of every field) of every slot 0-15, and NET_FetchOwner of every object an event named so far.
//! One game records from before it connects (`record FILE`); a fresh `peer_game --play FILE`
//! must print exactly the same lines (docs/demo-format.md: only the timing may differ, and the
//! states are recorded as the lookups showed them, so they must agree too).
//!
//! - Through a gameserver: another player renames; one says a last line and leaves in the same
//!   frame and a newcomer takes its slot; another switches `net.api` and back; the newcomer's
//!   process is killed (its TCP connection drops) and it comes back as a new process.
//! - Peer to peer: a peer stopped (SIGSTOP) until the others drop it for silence comes back in
//!   its old slot with a new session.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::demo::{compare, play, polled_between, recorded_seconds, DemoDir};
use parsec_net_ffi_tests::live::{wait_all_complete, LiveGame};
use parsec_net_ffi_tests::peer::{free_loopback_ports, game_args, loopback_setup};
use parsec_net_ffi_tests::server::{game_command, Server};
use parsec_net_ffi_tests::Build;

const MEET_TIMEOUT: Duration = Duration::from_secs(30);
const EVENT_TIMEOUT: Duration = Duration::from_secs(15);
const QUIT_TIMEOUT: Duration = Duration::from_secs(15);
const FLAGS: &[&str] = &["--lookups", "--lookups-all"];

fn exec_ok(game: &mut LiveGame, line: &str) -> String {
    let (rc, reply) = game.exec(line);
    if rc != 0 {
        game.fail(&format!("{line:?} answered {rc}: {reply}"));
    }
    reply
}

/// Wait until `game` prints an EVENT line of `kind` for `slot` after stdout line `from`.
fn wait_event(game: &LiveGame, from: usize, kind: &str, slot: i32) {
    game.wait_event(from, kind, slot, EVENT_TIMEOUT);
}

/// Wait until `game` prints an EVENT line starting with `prefix` after stdout line `from`.
fn wait_line(game: &LiveGame, from: usize, prefix: &str) -> String {
    match game
        .process
        .wait_for_line(from, EVENT_TIMEOUT, |l| l.starts_with(prefix))
    {
        Some(at) => game.process.lines_from(at).remove(0),
        None => game.fail(&format!("printed no {prefix:?}")),
    }
}

/// Stop `recorder`'s recording, end every game, and compare the recorder's live lines with a
/// playback of `file`; `kinds` are event types the recording must hold.
fn stop_and_compare(
    program: &Path,
    mut recorder: LiveGame,
    others: Vec<LiveGame>,
    file: &Path,
    kinds: &[&str],
) {
    std::thread::sleep(Duration::from_millis(200));
    let stop = exec_ok(&mut recorder, "stop");
    for game in others {
        game.quit(QUIT_TIMEOUT);
    }
    let run = recorder.quit(QUIT_TIMEOUT);
    let lines: Vec<String> = run.output.stdout.lines().map(str::to_string).collect();
    let live = polled_between(&lines, None, "stop");
    for kind in kinds {
        let wanted = format!("EVENT type={kind} ");
        assert!(
            live.iter().any(|l| l.starts_with(&wanted)),
            "{} polled no {kind} while recording; the comparison would prove little\n{}",
            run.name,
            live.join("\n")
        );
    }
    // SHOW_LIVE=1 (with --nocapture) shows what was compared.
    if std::env::var_os("SHOW_LIVE").is_some() {
        println!("{}", live.join("\n"));
    }
    let played = play(program, file, recorded_seconds(&stop), FLAGS);
    compare(&run.name, &live, &played);
}

/// Wait until `game` sees the player `name` connect after stdout line `from` and then gets its
/// reliable custom event (the last thing a `peer_game` sends when it acts); its slot.
fn seated_and_acted(game: &LiveGame, from: usize, name: &str) -> i32 {
    let line = wait_line(game, from, "EVENT type=PLAYER_CONNECTED ");
    let slot = game
        .events_since(from)
        .iter()
        .find(|e| e.kind == "PLAYER_CONNECTED")
        .map(|e| e.player)
        .expect("a PLAYER_CONNECTED line");
    assert!(line.contains(&format!("text=\"{name}\"")), "{line}");
    wait_line(
        game,
        from,
        &format!("EVENT type=CUSTOM player={slot} object=0 class=0 target=0 flags=1 "),
    );
    slot
}

fn server_client(program: &Path, name: &str, server: &Server, extra: &[&str]) -> LiveGame {
    let mut command = game_command(
        program,
        name,
        &["--control", "--expect", "2"],
        "gameserver",
        true,
        server,
        MEET_TIMEOUT,
    );
    command.args(extra);
    LiveGame::spawn(name, command, false)
}

#[test]
fn gameserver_renames_departures_switches_and_dropped_connections_play_back_as_live() {
    let program = Build::c("c/peer_game.c").build();
    let server = Server::start(
        "gameserver",
        &[
            "--port",
            "0",
            "--no-http",
            "--bind",
            "127.0.0.1",
            "--udp-port",
            "0",
            "--distance",
            "0",
        ],
    );
    let dir = DemoDir::new("demo-player-table-gameserver");
    let file = dir.file("ann.demo");
    let record = format!("record {}", file.display());
    let mut extra = vec!["--exec", record.as_str()];
    extra.extend(FLAGS);
    let ann = server_client(&program, "ann", &server, &extra);
    let mut ben = server_client(&program, "ben", &server, &[]);
    let mut cid = server_client(&program, "cid", &server, &[]);
    wait_all_complete([&ann, &ben, &cid], MEET_TIMEOUT);
    let b = ben.summary_now().slot;
    let c = cid.summary_now().slot;

    // ben renames.
    let mark = ann.process.line_count();
    exec_ok(&mut ben, "name benny");
    wait_event(&ann, mark, "PLAYER_NAME", b);

    // cid says a last line and leaves in the same frame; dan comes and takes the free slot.
    let mark = ann.process.line_count();
    cid.send("say last words of cid");
    cid.send("disconnect");
    wait_event(&ann, mark, "PLAYER_DISCONNECTED", c);
    let dan = server_client(&program, "dan", &server, &[]);
    let d = seated_and_acted(&ann, mark, "dan");
    // dan's process is killed: its TCP connection drops; a new dan process comes back.
    let mut dan = dan;
    let mark = ann.process.line_count();
    dan.process.kill();
    wait_event(&ann, mark, "PLAYER_DISCONNECTED", d);
    drop(dan);
    let mark = ann.process.line_count();
    let dan = server_client(&program, "dan", &server, &[]);
    seated_and_acted(&ann, mark, "dan");

    // ben switches the packet backend and back.
    for api in ["trace", "udp"] {
        let mark = ben.process.line_count();
        exec_ok(&mut ben, &format!("net.api {api}"));
        wait_line(&ben, mark, "EVENT type=CONNECTED ");
        std::thread::sleep(Duration::from_millis(300));
    }
    let mark = ann.process.line_count();
    exec_ok(&mut ben, "say after the switch");
    wait_line(&ann, mark, "EVENT type=TEXT ");

    stop_and_compare(
        &program,
        ann,
        vec![ben, cid, dan],
        &file,
        &[
            "PLAYER_CONNECTED",
            "PLAYER_DISCONNECTED",
            "PLAYER_NAME",
            "TEXT",
            "CREATE_OBJECT",
            "KILL_OBJECT",
            "CREATE_LASER",
        ],
    );
    server.stop();
}

fn peer(program: &Path, name: &str, port: u16, to: u16, extra: &[&str]) -> LiveGame {
    let mut setup = loopback_setup(port);
    setup.extend(extra.iter().map(|l| l.to_string()));
    let mut command = Command::new(program);
    command.args(game_args(
        name,
        &setup,
        Some(&format!("127.0.0.1:{to}")),
        2,
        MEET_TIMEOUT.as_millis() as u64,
        0,
    ));
    command.args(["--control"]).args(FLAGS);
    LiveGame::spawn(name, command, false)
}

#[test]
fn peer_renames_silence_drops_reconnects_and_departures_play_back_as_live() {
    let program = Build::c("c/peer_game.c").build();
    let dir = DemoDir::new("demo-player-table-peer");
    let file = dir.file("alice.demo");
    let record = format!("record {}", file.display());
    let ports = free_loopback_ports(4);
    // alice keeps the default 20 s timeout: bob, stopped for a few seconds, is dropped by carol
    // but is still seated at alice when he comes back (he does not drop the others for his own
    // silence, see `Session::credit_own_stall`).
    let alice = peer(&program, "alice", ports[0], ports[1], &[record.as_str()]);
    let mut bob = peer(&program, "bob", ports[1], ports[0], &["net.timeout 2"]);
    let mut carol = peer(&program, "carol", ports[2], ports[0], &["net.timeout 2"]);
    wait_all_complete([&alice, &bob, &carol], MEET_TIMEOUT);
    let b = bob.summary_now().slot;
    let c = carol.summary_now().slot;

    let mark = alice.process.line_count();
    exec_ok(&mut bob, "name bobby");
    wait_event(&alice, mark, "PLAYER_NAME", b);

    // bob stops until carol drops him; woken, he is told and connects again with a new session.
    let mark = (alice.process.line_count(), carol.process.line_count());
    bob.process.signal("STOP");
    wait_event(&carol, mark.1, "PLAYER_DISCONNECTED", b);
    let bob_mark = bob.process.line_count();
    bob.process.signal("CONT");
    wait_line(&bob, bob_mark, "EVENT type=DISCONNECTED ");
    wait_line(&bob, bob_mark, "EVENT type=CONNECTED ");
    wait_line(&alice, mark.0, "EVENT type=PLAYER_CONNECTED ");
    std::thread::sleep(Duration::from_millis(300));

    // carol says a last line and leaves in the same frame.
    let mark = alice.process.line_count();
    carol.send("say last words of carol");
    carol.send("disconnect");
    wait_event(&alice, mark, "PLAYER_DISCONNECTED", c);

    stop_and_compare(
        &program,
        alice,
        vec![bob, carol],
        &file,
        &[
            "PLAYER_CONNECTED",
            "PLAYER_DISCONNECTED",
            "PLAYER_NAME",
            "TEXT",
        ],
    );
}
