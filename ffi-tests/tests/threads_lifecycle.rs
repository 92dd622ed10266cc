//! `c/threads_lifecycle.c`: NET_GetLastError per thread (and kept across successful calls),
//! NET_Init from four threads at once, calls from other threads during NET_Shutdown/NET_Init
//! cycles, a console error reply cut short keeping its code, and NET_Init putting the
//! peer-to-peer entries back in the jump table after `net.subsys gameserver` and NET_Shutdown.
//! Plainly and under AddressSanitizer.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::process::{run, run_asan};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn last_error_per_thread_and_init_shutdown_from_several_threads() {
    let program = Build::c("c/threads_lifecycle.c").build();
    run(Command::new(program), TIMEOUT).assert_checks_passed("threads_lifecycle", "plain");
}

#[test]
fn last_error_per_thread_and_init_shutdown_from_several_threads_under_asan() {
    let program = Build::c("c/threads_lifecycle.c").asan().build();
    run_asan(Command::new(program), TIMEOUT).assert_checks_passed("threads_lifecycle", "ASan");
}
