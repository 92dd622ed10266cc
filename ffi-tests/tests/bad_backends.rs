//! `c/bad_backends.c`: switching to a missing file, a text file, a library without the entry
//! symbol, an entry returning NULL, a newer ABI, a too-small vtable, a NULL `send`, and a backend
//! whose open fails each fail with a one-line message naming the problem, while UDP stays active
//! and loses nothing. Run as built, under AddressSanitizer, and under valgrind.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::backends::bad_backends;
use parsec_net_ffi_tests::process::{run, run_asan, run_under_valgrind, Output};
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

fn args() -> Vec<String> {
    bad_backends().iter().map(|b| b.arg()).collect()
}

fn assert_all_checks_passed(out: &Output, what: &str) {
    out.assert_success(what);
    let summary = out
        .stdout
        .lines()
        .find(|l| l.starts_with("bad_backends: "))
        .unwrap_or("(no summary)");
    assert!(
        summary.ends_with(" 0 failed"),
        "{what}: {summary}\n{}",
        out.transcript()
    );
    println!("{what}: {summary}");
}

#[test]
fn broken_backends_are_refused_and_udp_keeps_working() {
    let program = Build::c("c/bad_backends.c").build();
    let mut command = Command::new(program);
    command.args(args());
    assert_all_checks_passed(&run(command, TIMEOUT), "bad_backends");
}

#[test]
fn broken_backends_are_refused_and_udp_keeps_working_under_asan() {
    let program = Build::c("c/bad_backends.c").asan().build();
    let mut command = Command::new(program);
    command.args(args());
    let out = run_asan(command, TIMEOUT);
    assert_all_checks_passed(&out, "bad_backends (AddressSanitizer)");
    assert!(!out.stderr.contains("Sanitizer"), "{}", out.transcript());
}

#[test]
fn broken_backends_are_refused_and_udp_keeps_working_under_valgrind() {
    let program = Build::c("c/bad_backends.c").build();
    let args = args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    if let Some(out) = run_under_valgrind(&program, &args, TIMEOUT) {
        assert_all_checks_passed(&out, "bad_backends (valgrind)");
    }
}
