//! Four `c/peer_game.c` processes, each in its own network namespace on a private bridged LAN
//! (`harness/netns.rs`), start together on the default port 6526 and connect with
//! `NETs_Connect()` and no address: they find each other only by broadcast (`net.udp.broadcast`
//! set to the LAN's broadcast address). All four must reach the game in four distinct slots that
//! every one of them agrees on, and each must get every other's name, chat line, ship state,
//! laser and custom event. Needs root; without it the test prints SKIPPED and passes.

use std::time::Duration;

use parsec_net_ffi_tests::netns::{unavailable, Lan};
use parsec_net_ffi_tests::peer::{check_all_met, game_args, run_together};
use parsec_net_ffi_tests::Build;

/// The whole game may take this long (default peer timings: ~3.5 s to seat everyone).
const DURATION_MS: u64 = 15_000;
const TIMEOUT: Duration = Duration::from_secs(25);

#[test]
fn four_peers_in_network_namespaces_find_each_other_by_broadcast() {
    if let Some(why) = unavailable() {
        println!("SKIPPED: needs root for network namespaces ({why})");
        return;
    }
    let program = Build::c("c/peer_game.c").build();
    let lan = Lan::create(4);
    let names = ["ann", "bea", "cid", "dot"];
    let setup = vec![format!("net.udp.broadcast {}", lan.broadcast())];
    let games = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut command = lan.command(i, &program);
            command.args(game_args(name, &setup, None, 3, DURATION_MS, 1500));
            (name.to_string(), command)
        })
        .collect();
    let runs = run_together(games, TIMEOUT, false);
    let slots = check_all_met(&runs);
    for run in &runs {
        if !run
            .report
            .acts
            .iter()
            .any(|a| a.starts_with("connect rc=0"))
        {
            run.fail("did not connect with NETs_Connect() (no address)");
        }
        if !run.report.status.contains("open on port 6526") {
            run.fail("did not use the default port 6526");
        }
        if run
            .report
            .execs
            .iter()
            .any(|(_, line, _)| line.starts_with("connect"))
        {
            run.fail("was given an address to connect to");
        }
    }
    let mut sorted = slots.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![0, 1, 2, 3], "four players take slots 0-3");
    for (i, run) in runs.iter().enumerate() {
        println!(
            "{} ({}) in slot {}, finished after {:?}",
            run.name,
            lan.address(i),
            slots[i],
            run.output.elapsed
        );
    }
}
