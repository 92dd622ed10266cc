//! The soak test of issue 9 (hardening item 6; docs/soak.md): a `parsecnet gameserver` on
//! 127.0.0.1 and `c/peer_game.c` clients that keep joining, sending numbered reliable series,
//! unjoining, leaving and switching protocol. The server's memory and file descriptors must not
//! grow, and every series number owed must arrive exactly once and in order.
//!
//! In the default suite this is a short soak (16 clients, 30 s). `SOAK_CLIENTS` and
//! `SOAK_SECONDS` select a longer one; `tools/soak.sh` runs 64 clients for 600 s. Needs no root.

use parsec_net_ffi_tests::soak::{run, SoakConfig};

#[test]
fn a_gameserver_survives_clients_joining_leaving_and_switching_protocol() {
    let config = SoakConfig::from_env();
    let outcome = run(&config);
    println!("{}", outcome.summary);
    assert!(
        outcome.failures.is_empty(),
        "the soak failed ({} problems):\n{}\n\n{}",
        outcome.failures.len(),
        outcome
            .failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
        outcome.summary
    );
}
