//! `c/jump_table.c`: the NETs_ jump table as C sees it (version, size, every entry set, calls
//! through it answer like the exported functions). Run as built and under AddressSanitizer.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::process::{run, run_asan};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn jump_table_matches_the_header_and_routes_calls() {
    let program = Build::c("c/jump_table.c").build();
    run(Command::new(program), TIMEOUT).assert_checks_passed("jump_table", "jump_table");
}

#[test]
fn jump_table_matches_the_header_and_routes_calls_when_linked_statically() {
    let program = Build::c("c/jump_table.c").link_static().build();
    run(Command::new(program), TIMEOUT).assert_checks_passed("jump_table", "jump_table (static)");
}

#[test]
fn jump_table_matches_the_header_and_routes_calls_under_asan() {
    let program = Build::c("c/jump_table.c").asan().build();
    let out = run_asan(Command::new(program), TIMEOUT);
    out.assert_checks_passed("jump_table", "jump_table (AddressSanitizer)");
}
