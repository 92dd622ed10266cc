//! SPEC section 8 for games through the servers: "Demo recording writes the remote-event stream
//! (with timestamps) to a file; playback feeds it back through the same path, so the game sees
//! exactly what it saw live". Three `c/peer_game.c` games (`--lookups`) play through a real
//! `parsecnet gameserver` (and a `slotserver`): ann records from before `connect`, ben starts
//! recording in the middle of the game. Then ben renames, cid unjoins and joins again, ann
//! switches `net.api trace` and back, then `net.subsys peer` and back (and connects again), and
//! cid leaves. Each demo, played by a fresh `peer_game --play` process with no network, must
//! print exactly the EVENT lines (every field) and LOOKUP lines (NET_FetchPlayerName,
//! NET_GetPlayerState, NET_FetchOwner) the recording game printed live while recording, in
//! order; ben's starts with the snapshot of the game as he knew it (CONNECTED, the others'
//! PLAYER_CONNECTED with their names and PLAYER_JOINED). Playback takes about as long as the
//! recording (loose bounds).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::demo::{compare, play, polled_between, recorded_seconds, DemoDir};
use parsec_net_ffi_tests::live::{wait_all_complete, LiveGame};
use parsec_net_ffi_tests::peer::parse;
use parsec_net_ffi_tests::server::{game_command, Server};
use parsec_net_ffi_tests::Build;

const MEET_TIMEOUT: Duration = Duration::from_secs(30);
const EVENT_TIMEOUT: Duration = Duration::from_secs(15);
const QUIT_TIMEOUT: Duration = Duration::from_secs(15);

fn start(kind: &str) -> Server {
    let mut args = vec!["--port", "0", "--no-http", "--bind", "127.0.0.1"];
    if kind == "gameserver" {
        args.extend(["--udp-port", "0", "--distance", "0"]);
    }
    Server::start(kind, &args)
}

fn client(program: &Path, name: &str, kind: &str, server: &Server, extra: &[String]) -> Command {
    let mut command = game_command(
        program,
        name,
        &["--control", "--lookups", "--expect", "2"],
        kind,
        true,
        server,
        MEET_TIMEOUT,
    );
    command.args(extra);
    command
}

/// Wait until `game` prints an EVENT line of `kind` for `slot` after line `from`.
fn wait_event(game: &LiveGame, from: usize, kind: &str, slot: i32) {
    game.wait_event(from, kind, slot, EVENT_TIMEOUT);
}

fn exec_ok(game: &mut LiveGame, line: &str) -> String {
    let (rc, reply) = game.exec(line);
    if rc != 0 {
        game.fail(&format!("{line:?} answered {rc}: {reply}"));
    }
    reply
}

fn slot_of(game: &mut LiveGame) -> i32 {
    game.summary_now().slot
}

fn record_and_play_through(kind: &str) {
    let program = Build::c("c/peer_game.c").build();
    let server = start(kind);
    let dir = DemoDir::new(&format!("server-demo-{kind}"));
    let ann_file = dir.0.join(format!("{kind}-ann.demo"));
    let ben_file = dir.0.join(format!("{kind}-ben.demo"));
    let ann_record = format!("record {}", ann_file.display());
    let ben_record = format!("record {}", ben_file.display());

    let mut ann = LiveGame::spawn(
        "ann",
        client(
            &program,
            "ann",
            kind,
            &server,
            &["--exec".to_string(), ann_record.clone()],
        ),
        false,
    );
    let mut ben = LiveGame::spawn("ben", client(&program, "ben", kind, &server, &[]), false);
    let mut cid = LiveGame::spawn("cid", client(&program, "cid", kind, &server, &[]), false);
    wait_all_complete([&ann, &ben, &cid], MEET_TIMEOUT);
    let (a, b, c) = (slot_of(&mut ann), slot_of(&mut ben), slot_of(&mut cid));

    // ben starts recording in the middle of the game.
    exec_ok(&mut ben, &ben_record);
    std::thread::sleep(Duration::from_millis(300));

    // A rename, an unjoin and a join, chat.
    let mark = ann.process.line_count();
    exec_ok(&mut ben, "name benny");
    wait_event(&ann, mark, "PLAYER_NAME", b);
    let mark = (ann.process.line_count(), ben.process.line_count());
    exec_ok(&mut cid, "unjoin");
    wait_event(&ann, mark.0, "PLAYER_UNJOINED", c);
    wait_event(&ben, mark.1, "PLAYER_UNJOINED", c);
    exec_ok(&mut cid, "join");
    wait_event(&ann, mark.0, "PLAYER_JOINED", c);
    wait_event(&ben, mark.1, "PLAYER_JOINED", c);
    let mark = (ann.process.line_count(), ben.process.line_count());
    exec_ok(&mut cid, "say chat from cid");
    wait_event(&ann, mark.0, "TEXT", c);
    wait_event(&ben, mark.1, "TEXT", c);

    // ann switches the packet backend and back: the recording goes on.
    for api in ["trace", "udp"] {
        let mark = ann.process.line_count();
        exec_ok(&mut ann, &format!("net.api {api}"));
        let wanted = "EVENT type=CONNECTED ";
        if ann
            .process
            .wait_for_line(mark, EVENT_TIMEOUT, |l| l.starts_with(wanted))
            .is_none()
        {
            ann.fail(&format!("not back in the game after net.api {api}"));
        }
        std::thread::sleep(Duration::from_millis(700));
    }
    let mark = ann.process.line_count();
    exec_ok(&mut ben, "say after the switch");
    wait_event(&ann, mark, "TEXT", b);

    // ann switches the protocol away and back, and connects again.
    let mark = ben.process.line_count();
    exec_ok(&mut ann, "net.subsys peer");
    wait_event(&ben, mark, "PLAYER_DISCONNECTED", a);
    let mark = (ann.process.line_count(), ben.process.line_count());
    exec_ok(&mut ann, &format!("net.subsys {kind}"));
    exec_ok(&mut ann, &format!("connect {}", server.tcp));
    let back = ann.process.wait_until(EVENT_TIMEOUT, |lines| {
        let joined = |who: i32| {
            lines[mark.0..]
                .iter()
                .any(|l| l.starts_with(&format!("EVENT type=PLAYER_JOINED player={who} ")))
        };
        lines[mark.0..]
            .iter()
            .any(|l| l.starts_with("EVENT type=CONNECTED "))
            && joined(b)
            && joined(c)
    });
    if !back {
        ann.fail("did not see ben and cid again after connecting again");
    }
    let a = slot_of(&mut ann);
    wait_event(&ben, mark.1, "PLAYER_JOINED", a);

    // cid leaves.
    let mark = (ann.process.line_count(), ben.process.line_count());
    exec_ok(&mut cid, "disconnect");
    wait_event(&ann, mark.0, "PLAYER_DISCONNECTED", c);
    wait_event(&ben, mark.1, "PLAYER_DISCONNECTED", c);
    std::thread::sleep(Duration::from_millis(500));

    let ann_stop = exec_ok(&mut ann, "stop");
    let ben_stop = exec_ok(&mut ben, "stop");
    let runs: Vec<_> = [ann, ben, cid]
        .into_iter()
        .map(|g| g.quit(QUIT_TIMEOUT))
        .collect();
    let lines =
        |i: usize| -> Vec<String> { runs[i].output.stdout.lines().map(str::to_string).collect() };

    let ann_live = polled_between(&lines(0), None, "stop");
    for kind in [
        "CONNECTED",
        "DISCONNECTED",
        "PLAYER_CONNECTED",
        "PLAYER_DISCONNECTED",
        "PLAYER_JOINED",
        "PLAYER_UNJOINED",
        "PLAYER_NAME",
        "TEXT",
        "CREATE_OBJECT",
        "CREATE_MISSILE",
        "CREATE_EXTRA",
        "PARTICLE_OBJECT",
        "KILL_OBJECT",
        "CREATE_LASER",
        "CUSTOM",
    ] {
        let wanted = format!("EVENT type={kind} ");
        assert!(
            ann_live.iter().any(|l| l.starts_with(&wanted)),
            "ann polled no {kind} while recording; the comparison would prove little\n{}",
            ann_live.join("\n")
        );
    }
    let ann_played = play(
        &program,
        &ann_file,
        recorded_seconds(&ann_stop),
        &["--lookups"],
    );
    compare("ann (recorded from before connect)", &ann_live, &ann_played);

    let ben_live = polled_between(&lines(1), Some(&ben_record), "stop");
    let ben_played = play(
        &program,
        &ben_file,
        recorded_seconds(&ben_stop),
        &["--lookups"],
    );
    // The snapshot: CONNECTED with ben's slot, ann and cid seated under their names and joined.
    let snapshot_len = ben_played.len().saturating_sub(ben_live.len());
    let snapshot = &ben_played[..snapshot_len];
    for wanted in [
        format!("EVENT type=CONNECTED player={b} "),
        format!(
            "EVENT type=PLAYER_CONNECTED player={} ",
            slot_of_name(&runs[1].output.stdout, "ann")
        ),
        format!("EVENT type=PLAYER_CONNECTED player={c} "),
        format!("EVENT type=PLAYER_JOINED player={c} "),
    ] {
        assert!(
            snapshot.iter().any(|l| l.starts_with(&wanted)),
            "ben's demo (recorded mid-game) should start with {wanted:?}\n--- played ---\n{}",
            ben_played.join("\n")
        );
    }
    compare(
        "ben (recorded mid-game), after the snapshot",
        &ben_live,
        &ben_played[snapshot_len..],
    );
    server.stop();
}

/// The slot under which `name` first connected in a game's output.
fn slot_of_name(stdout: &str, name: &str) -> i32 {
    parse(stdout)
        .events
        .iter()
        .find(|e| e.kind == "PLAYER_CONNECTED" && e.text == name)
        .map(|e| e.player)
        .unwrap_or_else(|| panic!("{name} never connected\n{stdout}"))
}

#[test]
fn a_gameserver_game_records_and_plays_back_as_seen_live() {
    record_and_play_through("gameserver");
}

#[test]
fn a_slotserver_game_records_and_plays_back_as_seen_live() {
    record_and_play_through("slotserver");
}
