//! `c/bad_backends.c`: switching to a missing file, a text file, a library without the entry
//! symbol, an entry returning NULL, a newer ABI, a too-small vtable, a NULL `send`, a backend
//! whose open fails, one whose open says OK without a socket, one that calls a function no
//! library defines, ABI version 0, a maximum payload of 0 and of 2^32-1, a name with a line
//! break and a NULL `open` each fail with a one-line message naming the problem, while UDP stays
//! active and loses nothing. Run as built, under AddressSanitizer, and under valgrind.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::backends::bad_backends;
use parsec_net_ffi_tests::process::{run, run_asan, run_under_valgrind};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

fn args() -> Vec<String> {
    bad_backends().iter().map(|b| b.arg()).collect()
}

#[test]
fn broken_backends_are_refused_and_udp_keeps_working() {
    let program = Build::c("c/bad_backends.c").build();
    let mut command = Command::new(program);
    command.args(args());
    run(command, TIMEOUT).assert_checks_passed("bad_backends", "bad_backends");
}

#[test]
fn broken_backends_are_refused_and_udp_keeps_working_under_asan() {
    let program = Build::c("c/bad_backends.c").asan().build();
    let mut command = Command::new(program);
    command.args(args());
    let out = run_asan(command, TIMEOUT);
    out.assert_checks_passed("bad_backends", "bad_backends (AddressSanitizer)");
}

#[test]
fn broken_backends_are_refused_and_udp_keeps_working_under_valgrind() {
    let program = Build::c("c/bad_backends.c").build();
    let args = args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    if let Some(out) = run_under_valgrind(&program, &args, TIMEOUT) {
        out.assert_checks_passed("bad_backends", "bad_backends (valgrind)");
    }
}
