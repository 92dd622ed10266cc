//! `c/bad_port.c` with the backend `c/bad/port_bad.c`, whose `bound_port` returns a real port,
//! -1, 70000 or 0: the `net.api` reply and `status` show the real port, and otherwise say the
//! backend reported no valid port (with the value) instead of `on port 0`.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::compile::shared_object;
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn a_port_that_is_no_port_is_not_shown_as_port_0() {
    let backend = shared_object(
        "c/bad/port_bad.c",
        "bad",
        "libparsec_backend_port_bad.so",
        false,
    );
    let mut command = Command::new(Build::c("c/bad_port.c").build());
    command.arg(backend);
    run(command, TIMEOUT).assert_checks_passed("bad_port", "bad_port");
}
