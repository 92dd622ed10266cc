//! Seeded random peer-to-peer games over the IPX backend, checking that the players of one game
//! agree (SPEC 6 "Peer-to-peer", SPEC 8 reliability): the script and checks of
//! `harness/peer_chaos.rs` (as `peer_chaos.rs` runs them on loopback UDP) with every game in a
//! network namespace of its own on a private bridged LAN (`harness/netns.rs`), starting on
//! `net.api ipx` and connecting by broadcast with no address. The switch steps type
//! `net.api ipx` or `net.api udp` (UDP broadcasts on the LAN): a player switched to UDP leaves
//! the IPX game for a game on UDP (alone, or with others that switched too), and owes and is
//! owed what docs/decisions.md says of a switch; every settle switches it back to IPX first.
//! Needs root; without it the test prints SKIPPED and passes.
//!
//! The suite runs seed 1 (a few seconds). `PEER_CHAOS_IPX_SEED=S` replays seed S,
//! `PEER_CHAOS_IPX_FIRST=F PEER_CHAOS_IPX_RUNS=R` runs seeds F..F+R, `PEER_CHAOS_IPX_STEPS=N`
//! sets the steps (default 14), `PEER_CHAOS_IPX_ASAN=1` builds the games with AddressSanitizer
//! (see docs/fuzzing.md). The namespaces are made and removed by the test, named after its
//! process, so runs in parallel do not meet.

use parsec_net_ffi_tests::backends::built_backend_dir;
use parsec_net_ffi_tests::netns::skip_without;
use parsec_net_ffi_tests::peer_chaos::{asan_asked, run_seed, seeds, IpxLan};
use parsec_net_ffi_tests::Build;

const SUITE_SEEDS: &[u64] = &[1];

#[test]
fn random_peer_games_over_ipx_agree() {
    if skip_without("root for network namespaces and raw IPX frames") {
        return;
    }
    let backends = built_backend_dir("ipx");
    let asan = asan_asked(IpxLan::PREFIX);
    let mut build = Build::c("c/peer_game.c");
    if asan {
        build = build.asan();
    }
    let program = build.build();
    for seed in seeds(IpxLan::PREFIX, SUITE_SEEDS) {
        // A LAN of its own for every seed: nothing of one run reaches the next.
        let net = IpxLan::new(backends.clone());
        run_seed(&net, &program, seed, asan);
    }
}
