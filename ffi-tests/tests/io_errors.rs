//! `c/io_errors.c` with the backend `c/bad/io_fails.c`, whose receive and send fail with reasons
//! given by its `last_error` (with a line break and an escape in them): `status` shows the
//! latest reason of each kind as one line (`last receive error: ...`, `last send error: ...`),
//! only once there was one, and switching back to UDP works.

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::compile::shared_object;
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::Build;

const TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn status_shows_the_latest_receive_and_send_error() {
    let backend = shared_object(
        "c/bad/io_fails.c",
        "bad",
        "libparsec_backend_io_fails.so",
        false,
    );
    let mut command = Command::new(Build::c("c/io_errors.c").build());
    command.arg(backend);
    run(command, TIMEOUT).assert_checks_passed("io_errors", "io_errors");
}
