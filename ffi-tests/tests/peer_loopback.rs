//! Two `c/peer_game.c` processes play on 127.0.0.1 over the real UDP backend with the peer-to-peer
//! protocol, each told the other's address (`connect 127.0.0.1:PORT`, ports picked beforehand):
//! both reach the game in different slots and each gets the other's name, chat line, ship state
//! (with its marker, intact), laser (carrying the position the sender's object-position callback
//! reported at send time, not the one it fired with), reliable custom event (every byte), and
//! `NET_FetchOwner` of the other's laser is the other's slot (and every other kind of remote
//! event arrives intact: see `check_all_met`). Linked with the shared library, with the static
//! library, with `PARSEC_NET_STATIC_BIND`, and under AddressSanitizer. And once with a position
//! callback that breaks its rules: it calls back into the library (which must refuse with
//! NET_ERR_STATE instead of deadlocking or handing it an event) and reports a NaN position for
//! the game's object (which must be ignored: the object keeps the position it was created with).

use std::process::Command;

use parsec_net_ffi_tests::peer::{
    check_all_met, free_loopback_ports, game_args, patient_loopback_setup, run_together,
    two_loopback_games, GameRun, GAME_DURATION_MS, GAME_TIMEOUT,
};

/// NET_ERR_STATE of parsec_net.h.
const NET_ERR_STATE: i32 = -13;
use parsec_net_ffi_tests::Build;

/// Print what each game did; and check it stayed on loopback (its socket's node, from `status`).
fn report(runs: &[GameRun], slots: &[i32], what: &str) {
    for (run, slot) in runs.iter().zip(slots) {
        if !run.report.status.contains("local node 127.0.0.1:") {
            run.fail("its socket is not on 127.0.0.1");
        }
        let summary = run.summary();
        println!(
            "{what}: {} in slot {slot}, {} frames in {:?}, {} events",
            run.name,
            summary.frames,
            run.output.elapsed,
            run.report.events.len()
        );
    }
}

#[test]
fn two_c_peers_on_loopback_exchange_state_and_text() {
    let program = Build::c("c/peer_game.c").build();
    let runs = two_loopback_games(&program, false, &[], &[]);
    let slots = check_all_met(&runs);
    report(&runs, &slots, "shared library");
}

#[test]
fn two_c_peers_on_loopback_exchange_state_and_text_linked_statically() {
    let program = Build::c("c/peer_game.c").link_static().build();
    let runs = two_loopback_games(&program, false, &[], &[]);
    let slots = check_all_met(&runs);
    report(&runs, &slots, "static library");
}

#[test]
fn two_c_peers_on_loopback_exchange_state_and_text_with_static_bind() {
    let program = Build::c("c/peer_game.c").static_bind().build();
    let runs = two_loopback_games(&program, false, &[], &[]);
    let slots = check_all_met(&runs);
    report(&runs, &slots, "PARSEC_NET_STATIC_BIND");
}

#[test]
fn two_c_peers_on_loopback_exchange_state_and_text_under_asan() {
    let program = Build::c("c/peer_game.c").asan().build();
    let runs = two_loopback_games(&program, true, &[], &[]);
    for run in &runs {
        if run.output.stderr.contains("Sanitizer") {
            run.fail("AddressSanitizer reported a problem");
        }
    }
    let slots = check_all_met(&runs);
    report(&runs, &slots, "AddressSanitizer");
}

#[test]
fn a_position_callback_that_breaks_its_rules_does_no_harm() {
    let program = Build::c("c/peer_game.c").build();
    let runs = two_loopback_games(&program, false, &[], &["--hostile-callback"]);
    let slots = check_all_met(&runs);
    for run in &runs {
        let reentry = run.summary().reentry;
        if reentry != NET_ERR_STATE {
            run.fail(&format!(
                "NET_PollEvent inside the position callback returned {reentry}, expected \
                 NET_ERR_STATE ({NET_ERR_STATE})"
            ));
        }
    }
    report(&runs, &slots, "hostile callback");
}

/// Four games on one host, started together, each on its own port (so no broadcast reaches
/// another): the first connects with `NETs_Connect()` and no address, the other three send their
/// requests to the first one's address (`connect 127.0.0.1:PORT`). The first yields to one of
/// them and waits for its slot; the requests of the other two, which reach it meanwhile, must
/// reach that master too: all four end in one game in four distinct slots (they once ended in
/// three games, two players alone in slot 0 each). The games use the longer connect loop of
/// [`patient_loopback_setup`]: with the short one, CI once left a game alone in slot 1 of a
/// game its master had left for the others' (four processes starting on a loaded machine).
#[test]
fn four_c_peers_started_together_on_loopback_all_connecting_to_the_first_meet_in_one_game() {
    let program = Build::c("c/peer_game.c").build();
    let ports = free_loopback_ports(4);
    let names = ["ann", "bea", "cid", "dot"];
    let rendezvous = format!("127.0.0.1:{}", ports[0]);
    let games = (0..4)
        .map(|i| {
            let peer = (i > 0).then_some(rendezvous.as_str());
            let mut command = Command::new(&program);
            command.args(game_args(
                names[i],
                &patient_loopback_setup(ports[i]),
                peer,
                3,
                GAME_DURATION_MS,
                1500,
            ));
            (names[i].to_string(), command)
        })
        .collect();
    let runs = run_together(games, GAME_TIMEOUT, false);
    let slots = check_all_met(&runs);
    let mut sorted = slots.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![0, 1, 2, 3], "four players take slots 0-3");
    report(&runs, &slots, "four connecting to one");
}
