//! A player's network interface goes down for about 3 s in the middle of a peer game (well
//! under the 20 s silence timeout) and comes back up: three `c/peer_game.c` games, each in its
//! own network namespace on a private bridged LAN (`harness/netns.rs`), over IPX (raw frames on
//! the namespace's `eth0`) and over UDP. While every game keeps queueing a numbered series of
//! reliable custom events, host 0's `eth0` is set down (`ip link set eth0 down` in its
//! namespace), its `status` is read while it is down, and the link is set up again. The game
//! must carry on: nobody leaves or is dropped (no DISCONNECTED, no PLAYER_DISCONNECTED), every
//! number the library accepted reaches every other game exactly once and in order (SPEC:
//! reliable events are delivered once and in order per sender), and the downed game's `status`
//! counts the send errors it met meanwhile. Needs root; without it the tests print SKIPPED and
//! pass. Each test is bounded (about 15 s; the limits below are generous waits, not timings).

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::backends::built_backend_dir;
use parsec_net_ffi_tests::live::LiveGame;
use parsec_net_ffi_tests::netns::{skip_without, Lan};
use parsec_net_ffi_tests::peer::{check_ran_well, GameRun};
use parsec_net_ffi_tests::series::{deliveries, sent, stop_and_drain};
use parsec_net_ffi_tests::Build;

/// How long the games may take to meet (about a second with the timings below).
const MEET_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the link stays down (well under the 20 s silence timeout).
const DOWN: Duration = Duration::from_secs(3);
/// How long the games play before the link goes down and after it is back.
const DWELL: Duration = Duration::from_millis(1500);
/// How long a game may take to read a control line.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the last series numbers may take to arrive once the series stops.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
const QUIT_TIMEOUT: Duration = Duration::from_secs(15);
/// The games' own limit (they quit on their own after this, the test's backstop).
const DURATION_MS: u64 = 50_000;

/// Set `eth0` in host `host`'s namespace down or up again.
fn link(lan: &Lan, host: usize, up: bool) {
    let status = Command::new("ip")
        .args(["-n", lan.namespace(host), "link", "set", "eth0"])
        .arg(if up { "up" } else { "down" })
        .status()
        .expect("run ip");
    assert!(status.success(), "ip link set eth0 up={up}: {status}");
}

/// The `errors: send N, receive M, ...` counts of a `status` text.
fn error_counts(status: &str) -> (u64, u64) {
    let line = status
        .lines()
        .find(|l| l.starts_with("errors: "))
        .unwrap_or_else(|| panic!("no errors: line in status:\n{status}"));
    let count = |key: &str| -> u64 {
        line.split(key)
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {key:?} count in {line:?}"))
    };
    (count("send "), count("receive "))
}

fn link_down_in_a_peer_game(api: &str) {
    if skip_without("root for network namespaces and raw IPX frames") {
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    let backends = built_backend_dir("ipx");
    let lan = Lan::create(3);
    let names = ["oda", "pia", "quy"];
    let mut setup = vec![
        format!("net.udp.broadcast {}", lan.broadcast()),
        "net.peer.connect_interval 100".into(),
        "net.peer.slot_interval 150".into(),
        "net.peer.reply_wait 50".into(),
    ];
    if api == "ipx" {
        setup.push("net.ipx.interface eth0".into());
        setup.push("net.api ipx".into());
    }
    let mut games: Vec<LiveGame> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = lan.command(i, &program);
            command.env("PARSEC_NET_BACKEND_PATH", &backends);
            command.args(parsec_net_ffi_tests::peer::game_args(
                name,
                &setup,
                None,
                2,
                DURATION_MS,
                0,
            ));
            command.args(["--control", "--series-ms", "20"]);
            LiveGame::spawn(name, command, false)
        })
        .collect();
    for game in &games {
        if !game.wait_complete(MEET_TIMEOUT) {
            game.fail(&format!("did not meet the others over {api}"));
        }
    }
    for game in games.iter_mut() {
        game.send("@series on");
    }
    std::thread::sleep(DWELL);
    let (_, before) = games[0].exec("status");
    let marks: Vec<usize> = games.iter().map(|g| g.events_since(0).len()).collect();

    link(&lan, 0, false);
    std::thread::sleep(DOWN);
    let (_, during) = games[0].exec("status");
    link(&lan, 0, true);
    std::thread::sleep(DWELL);
    let drained = stop_and_drain(&mut games, READ_TIMEOUT, DRAIN_TIMEOUT);
    let (_, after) = games[0].exec("status");
    let left: Vec<String> = games
        .iter()
        .flat_map(|g| {
            g.events_since(0)
                .into_iter()
                .skip(marks[names.iter().position(|n| *n == g.name()).unwrap()])
                .filter(|e| e.kind == "DISCONNECTED" || e.kind == "PLAYER_DISCONNECTED")
                .map(move |e| format!("{}: {} {} {:?}", g.name(), e.kind, e.player, e.text))
                .collect::<Vec<_>>()
        })
        .collect();
    let runs: Vec<GameRun> = games.into_iter().map(|g| g.quit(QUIT_TIMEOUT)).collect();

    println!(
        "{}'s status before:\n{before}\nwhile eth0 was down:\n{during}\nafter:\n{after}",
        names[0]
    );
    println!("drained in {drained:?}");
    assert!(
        left.is_empty(),
        "a game left or dropped a player while {}'s eth0 was down for {DOWN:?}:\n{}",
        names[0],
        left.join("\n")
    );
    for run in &runs {
        check_ran_well(run);
        let series = sent(&run.output.stdout);
        if let Some(gap) = &series.gap {
            run.fail(&format!("its series is not 0, 1, 2, ...: {gap}"));
        }
        println!(
            "{}: {} series numbers queued, refused: {:?}",
            run.name,
            series.queued.len(),
            series.refused
        );
    }
    let all = deliveries(&runs);
    let report: Vec<String> = all.iter().map(|d| d.describe()).collect();
    println!("{}", report.join("\n"));
    let bad: Vec<&String> = all
        .iter()
        .zip(&report)
        .filter(|(d, _)| {
            !d.lost_while_seated.is_empty()
                || !d.lost_while_absent.is_empty()
                || !d.duplicates.is_empty()
                || !d.out_of_order.is_empty()
                || !d.never_sent.is_empty()
        })
        .map(|(_, line)| line)
        .collect();
    assert!(
        bad.is_empty(),
        "reliable events lost, repeated or reordered across {}'s link going down over {api}:\n{}",
        names[0],
        bad.iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let (sends_before, _) = error_counts(&before);
    let (sends_during, _) = error_counts(&during);
    assert!(
        sends_during > sends_before,
        "{}'s status counted no send error while its eth0 was down:\nbefore:\n{before}\n\
         during:\n{during}",
        names[0]
    );
    assert!(
        during.lines().any(|l| l.starts_with("last send error: ")),
        "status says why the sends failed: {during}"
    );
}

#[test]
fn an_ipx_peer_game_carries_on_when_a_players_interface_is_down_for_three_seconds() {
    link_down_in_a_peer_game("ipx");
}

#[test]
fn a_udp_peer_game_carries_on_when_a_players_interface_is_down_for_three_seconds() {
    link_down_in_a_peer_game("udp");
}
