//! Two `c/exchange.c` processes exchange numbered datagrams over UDP, then over the C backend
//! (`c/backend_unixdgram.c`), then over UDP again, switching while each phase's datagrams are
//! still unread in the old socket; every number must arrive exactly once, through the queue the
//! switch drained. For the shared library, the static library and PARSEC_NET_STATIC_BIND, with the
//! C backend loaded by path; once with it found by name through PARSEC_NET_BACKEND_PATH; and once
//! with the program and the C backend under AddressSanitizer.

use parsec_net_ffi_tests::backends::unixdgram;
use parsec_net_ffi_tests::exchange::{switching_exchange, Report};
use parsec_net_ffi_tests::Build;

fn assert_ran_on_c_backend(report: &Report, origin: &str) {
    assert_eq!(report.backends.len(), 3, "{report:?}");
    assert!(
        report.backends[0].starts_with("backend: udp "),
        "{report:?}"
    );
    assert!(
        report.backends[1].starts_with("backend: unixdgram ")
            && report.backends[1].contains(origin),
        "the middle phase did not run on the C backend loaded from {origin}: {report:?}"
    );
    assert!(
        report.backends[2].starts_with("backend: udp "),
        "{report:?}"
    );
    println!("phases {:?}: {:?}", report.phases, report.backends);
}

#[test]
fn datagrams_survive_switches_with_the_shared_library() {
    let backend = unixdgram(false);
    let program = Build::c("c/exchange.c").build();
    let report = switching_exchange(&program, &backend.display().to_string(), &[]);
    assert_ran_on_c_backend(&report, &backend.display().to_string());
}

#[test]
fn datagrams_survive_switches_with_the_static_library() {
    let backend = unixdgram(false);
    let program = Build::c("c/exchange.c").link_static().build();
    let report = switching_exchange(&program, &backend.display().to_string(), &[]);
    assert_ran_on_c_backend(&report, &backend.display().to_string());
}

#[test]
fn datagrams_survive_switches_with_static_bind() {
    let backend = unixdgram(false);
    let program = Build::c("c/exchange.c").static_bind().build();
    let report = switching_exchange(&program, &backend.display().to_string(), &[]);
    assert_ran_on_c_backend(&report, &backend.display().to_string());
}

#[test]
fn datagrams_survive_switches_to_the_c_backend_found_by_name() {
    let backend = unixdgram(false);
    let dir = backend
        .parent()
        .expect("the backend has a directory")
        .display()
        .to_string();
    let env = [("PARSEC_NET_BACKEND_PATH".to_string(), dir)];
    let program = Build::c("c/exchange.c").build();
    let report = switching_exchange(&program, "unixdgram", &env);
    assert_ran_on_c_backend(&report, &backend.display().to_string());
}

#[test]
fn datagrams_survive_switches_under_asan() {
    let backend = unixdgram(true);
    let program = Build::c("c/exchange.c").asan().build();
    let env = [(
        "ASAN_OPTIONS".to_string(),
        "detect_leaks=1:halt_on_error=1:exitcode=1".to_string(),
    )];
    let report = switching_exchange(&program, &backend.display().to_string(), &env);
    assert_ran_on_c_backend(&report, &backend.display().to_string());
}
