//! Seeded random peer-to-peer games on loopback UDP, checking that the players of one game agree
//! (SPEC 6 "Peer-to-peer", SPEC 8 reliability): the script and checks of
//! `harness/peer_chaos.rs` with every game on 127.0.0.1, connecting by address, and `net.api udp`
//! switches.
//!
//! The suite runs seed 1 plainly and seed 2 under AddressSanitizer (a few seconds each).
//! `PEER_CHAOS_SEED=S` replays seed S, `PEER_CHAOS_FIRST=F PEER_CHAOS_RUNS=R` runs seeds F..F+R,
//! `PEER_CHAOS_STEPS=N` sets the steps (default 14), `PEER_CHAOS_ASAN=1` builds the games with
//! AddressSanitizer (see docs/fuzzing.md).

use parsec_net_ffi_tests::peer_chaos::{asan_asked, run_seed, search_asked, seeds, Loopback};
use parsec_net_ffi_tests::Build;

const SUITE_SEEDS: &[u64] = &[1];
const ASAN_SEEDS: &[u64] = &[2];

#[test]
fn random_peer_games_agree() {
    let net = Loopback::new();
    let asan = asan_asked(Loopback::PREFIX);
    let mut build = Build::c("c/peer_game.c");
    if asan {
        build = build.asan();
    }
    let program = build.build();
    for seed in seeds(Loopback::PREFIX, SUITE_SEEDS) {
        run_seed(&net, &program, seed, asan);
    }
}

#[test]
fn random_peer_games_agree_under_asan() {
    if search_asked(Loopback::PREFIX) {
        return; // a search runs in the other test
    }
    let net = Loopback::new();
    let program = Build::c("c/peer_game.c").asan().build();
    for &seed in ASAN_SEEDS {
        run_seed(&net, &program, seed, true);
    }
}
