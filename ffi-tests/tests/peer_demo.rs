//! A recorded C session plays back identically: the two-player loopback game of
//! `c/peer_game.c` runs with bob recording a demo (`record FILE` before connecting, `stop` before
//! he exits); then `peer_game --play FILE` (a fresh process, no network) prints the events of the
//! demo. They must be exactly the `EVENT` lines bob printed live, in the same order with the same
//! fields; playback must end by itself (afterwards `stop` finds nothing playing), take about as
//! long as the recording, and while it plays the player views (`NET_FetchPlayerName`,
//! `NET_GetPlayerState`, `NET_FetchOwner`) must show alice as bob saw her. Both print what those
//! lookups answer at each event (`--lookups`: the event's player, bob's own slot, the event's
//! object), which must be what bob saw live too.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::demo::{recorded_seconds, DemoDir};
use parsec_net_ffi_tests::peer::{check_all_met, laser_id, parse, two_loopback_games};
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::Build;

const PLAY_TIMEOUT: Duration = Duration::from_secs(40);

#[test]
fn a_recorded_c_session_plays_back_identically() {
    let program = Build::c("c/peer_game.c").build();
    let dir = DemoDir::new("peer-demo");
    let file = dir.0.join("bob.demo");
    let record = format!("record {}", file.display());
    let runs = two_loopback_games(
        &program,
        false,
        std::slice::from_ref(&record),
        &["--lookups"],
    );
    let slots = check_all_met(&runs);
    let (alice, bob) = (&runs[0], &runs[1]);
    let alice_slot = slots[0];

    let live = &bob.report;
    if !live
        .execs
        .iter()
        .any(|(rc, line, _)| *rc == 0 && *line == record)
    {
        bob.fail("did not start recording");
    }
    let seconds = match &live.stop {
        Some((0, reply)) if reply.starts_with("recorded ") => recorded_seconds(reply),
        stop => bob.fail(&format!("stopping the recording answered {stop:?}")),
    };
    // No PLAYER_NAME: nobody renames, and PLAYER_CONNECTED already gave alice's name.
    for kind in [
        "CONNECTED",
        "PLAYER_CONNECTED",
        "PLAYER_JOINED",
        "TEXT",
        "CREATE_OBJECT",
        "CREATE_MISSILE",
        "CREATE_EXTRA",
        "PARTICLE_OBJECT",
        "KILL_OBJECT",
        "CREATE_LASER",
        "CUSTOM",
    ] {
        if !live.events.iter().any(|e| e.kind == kind) {
            bob.fail(&format!(
                "printed no {kind} event; the comparison would prove little"
            ));
        }
    }

    let mut command = Command::new(&program);
    command
        .arg("--play")
        .arg(&file)
        .args(["--duration", "30000", "--lookups"]);
    let out = run(command, PLAY_TIMEOUT);
    out.assert_success("peer_game --play");
    assert!(
        !out.stdout.lines().any(|l| l.starts_with("POLL ")),
        "NET_PollEvent failed during playback\n{}",
        out.transcript()
    );
    let played = parse(&out.stdout);
    if played.event_lines != live.event_lines {
        let shown = |lines: &[String]| lines.join("\n");
        panic!(
            "playback printed other events than bob saw live\n--- live ({} events) ---\n{}\n\
             --- played ({} events) ---\n{}\n{}",
            live.event_lines.len(),
            shown(&live.event_lines),
            played.event_lines.len(),
            shown(&played.event_lines),
            out.transcript()
        );
    }
    if live.lookup_lines.len() != live.event_lines.len() {
        bob.fail("did not print a LOOKUP line after every event");
    }
    if played.lookup_lines != live.lookup_lines {
        let shown = |lines: &[String]| lines.join("\n");
        panic!(
            "the lookups during playback answered otherwise than bob's live\n--- live ---\n{}\n\
             --- played ---\n{}\n{}",
            shown(&live.lookup_lines),
            shown(&played.lookup_lines),
            out.transcript()
        );
    }
    match &played.stop {
        // The demo's players stay visible after it ends, until stop returns to the live game.
        Some((0, reply)) if reply.contains("playback had finished") => {}
        stop => panic!(
            "after playback, stop should say the demo had finished: {stop:?}\n{}",
            out.transcript()
        ),
    }
    assert!(
        !out.stdout.contains("TIMEOUT"),
        "playback did not end by itself\n{}",
        out.transcript()
    );
    // Items play at their recorded times: the playback lasts until the last item, which came
    // shortly before bob stopped recording.
    let elapsed = out.elapsed.as_secs_f64();
    assert!(
        elapsed >= seconds - 1.0 && elapsed <= seconds + 5.0,
        "the recording lasted {seconds} s; playing it took {elapsed:.2} s\n{}",
        out.transcript()
    );

    let summary = played.summary.clone().unwrap_or_default();
    match summary.player(alice_slot) {
        Some(view) if view.name == alice.name && view.state == "ok" && view.marker == "ok" => {}
        view => panic!(
            "while the demo played, slot {alice_slot} should show {} with her marked state: \
             {view:?}\n{}",
            alice.name,
            out.transcript()
        ),
    }
    assert_eq!(
        summary.owner(laser_id(alice_slot)),
        Some(alice_slot),
        "NET_FetchOwner of alice's laser while the demo played\n{}",
        out.transcript()
    );
    println!(
        "{} events recorded in {seconds} s and played back identically in {elapsed:.2} s",
        live.event_lines.len()
    );
}
