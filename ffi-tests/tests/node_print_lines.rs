//! `c/node_print_lines.c` with the backend `c/bad/print_lines.c`, whose `node_print` writes a
//! line break, an escape, a carriage return and a tab: `NETs_PrintNode` and `status` both get
//! one line without control characters.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::compile::shared_object;
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn node_texts_reach_every_caller_as_one_line() {
    let backend = shared_object(
        "c/bad/print_lines.c",
        "bad",
        "libparsec_backend_print_lines.so",
        false,
    );
    let mut command = Command::new(Build::c("c/node_print_lines.c").build());
    command.arg(backend);
    run(command, TIMEOUT).assert_checks_passed("node_print_lines", "node_print_lines");
}
