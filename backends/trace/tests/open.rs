//! Opening trace sockets: choosing the inner backend with `inner=`, the clear errors for inner
//! backends that cannot be used, trace files that cannot be opened, and the open parameters.

mod common;

use common::{built_library, temp_dir, traced, Sock, SECOND, V4};
use parsec_backend_abi::{
    NET_BACKEND_ERR_INVALID, NET_BACKEND_ERR_IO, NET_BACKEND_ERR_UNSUPPORTED,
};

fn open_error(extra: &str) -> (i32, String) {
    match Sock::open(extra) {
        Ok(_) => panic!("open with {extra:?} should fail"),
        Err(e) => e,
    }
}

#[test]
fn inner_may_name_the_default_backend_by_name_or_path() {
    let udp_path = built_library("udp");
    let by_path = Sock::open(&format!("inner={}", udp_path.display())).expect("inner=PATH");
    // SAFETY: live handle of this process's trace backend.
    let state = unsafe { parsec_backend_trace::socket_from_handle(by_path.handle) }.unwrap();
    assert_eq!(state.inner_name(), "udp");
    assert_eq!(
        Some(state.inner_path()),
        parsec_backend_trace::default_inner_path()
    );
    // A NAME is found beside the code that holds the trace backend (here the test executable in
    // target/<profile>/deps/, where cargo also puts the UDP library).
    let by_name = Sock::open("inner=udp").expect("inner=NAME");
    by_name.send_ok(&by_path.local_node(), b"by name");
    assert_eq!(by_path.receive_within(SECOND).unwrap().1, b"by name");
}

#[test]
fn an_inner_backend_that_cannot_be_found_is_a_clear_error() {
    let (code, message) = open_error("inner=surely_not_there");
    assert_eq!(code, NET_BACKEND_ERR_INVALID);
    assert!(
        message.starts_with(
            "trace: invalid net.trace.inner 'surely_not_there': no backend named \
             'surely_not_there': looked for "
        ),
        "{message}"
    );
    assert!(message.contains("PARSEC_NET_BACKEND_PATH"), "{message}");

    let (code, message) = open_error("inner=/nonexistent/libparsec_backend_x.so");
    assert_eq!(code, NET_BACKEND_ERR_INVALID);
    assert!(message.ends_with("no such file"), "{message}");

    let (_, message) = open_error("inner=bad name!");
    assert!(message.contains("not a backend name"), "{message}");

    let dir = temp_dir("notalib");
    let fake = dir.join("libparsec_backend_fake.so");
    std::fs::write(&fake, b"not a library").unwrap();
    let (_, message) = open_error(&format!("inner={}", fake.display()));
    assert!(message.contains("not a loadable library"), "{message}");
    assert!(!message.contains('\n'));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A backend whose author forgot to link a library it calls: it links (shared libraries may
/// leave symbols undefined) but the symbol is defined nowhere. Loading it must be a clear error
/// naming the symbol, not the end of the process at its entry's first call.
#[test]
fn an_inner_backend_calling_an_undefined_function_is_refused_naming_it() {
    let dir = temp_dir("undefsym");
    let source = dir.join("undefsym.c");
    std::fs::write(
        &source,
        "extern int trace_test_function_defined_nowhere(void);\n\
         __attribute__((visibility(\"default\"))) const void *parsec_net_backend_entry(unsigned v)\n\
         { return trace_test_function_defined_nowhere() + (int)v ? (const void *)0 : (const void *)0; }\n",
    )
    .unwrap();
    let library = dir.join("libparsec_backend_undefsym.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    match std::process::Command::new(&cc)
        .args(["-fPIC", "-shared", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
    {
        Ok(status) if status.success() => {}
        other => {
            println!("SKIPPED: cannot build a C library with {cc}: {other:?}");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
    }
    let (code, message) = open_error(&format!("inner={}", library.display()));
    assert_eq!(code, NET_BACKEND_ERR_INVALID);
    assert!(message.contains("not a loadable library"), "{message}");
    assert!(
        message.contains("undefined symbol: trace_test_function_defined_nowhere"),
        "{message}"
    );
    assert!(!message.contains('\n'));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_inner_backend_with_other_nodes_is_refused_with_the_reason() {
    let ipx = built_library("ipx");
    let (code, message) = open_error(&format!("inner={}", ipx.display()));
    assert_eq!(code, NET_BACKEND_ERR_UNSUPPORTED);
    assert!(
        message.starts_with(
            "trace: inner backend 'ipx' refused: node functions have no socket, so nodes always \
             go to the default inner backend 'udp' and the inner one must be a 'udp' backend \
             too; use net.api ipx instead ("
        ),
        "{message}"
    );
    // The reason fits the core's 256-byte error buffer even before the path.
    assert!(message.find(" (/").unwrap() < 255, "{message}");
    assert!(!message.contains('\n'));
}

#[test]
fn the_trace_backend_cannot_be_its_own_inner_backend() {
    // The built trace library is another copy of this code (this test links the rlib): its entry
    // loads its own default inner backend from beside it and returns a vtable named "trace".
    let trace = built_library("trace");
    let (code, message) = open_error(&format!("inner={}", trace.display()));
    assert_eq!(code, NET_BACKEND_ERR_UNSUPPORTED, "{message}");
    assert!(
        message.starts_with(
            "trace: inner backend 'trace' refused: it is a trace backend itself; the inner one \
             must be the backend to trace ("
        ),
        "{message}"
    );
}

#[test]
fn a_trace_file_that_cannot_be_opened_fails_open_and_releases_the_port() {
    // The port is one the kernel handed out and this test released: another test's socket
    // bound to port 0 can get it in between (a fresh-clone run once saw that). A socket the
    // failed open leaked would hold every port tried; a port taken meanwhile fails one try.
    const TRIES: usize = 3;
    for attempt in 1..=TRIES {
        let free = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let options = format!("{V4}\nfile=/nonexistent-dir/trace.log");
        match Sock::open_with(traced(), port, &options) {
            Ok(_) => panic!("the trace file cannot be created"),
            Err((code, message)) => {
                assert_eq!(code, NET_BACKEND_ERR_IO);
                assert!(
                    message
                        .starts_with("trace: cannot open trace file /nonexistent-dir/trace.log: "),
                    "{message}"
                );
            }
        }
        // The inner socket was closed again: the port can be bound.
        match Sock::open_with(traced(), port, V4) {
            Ok(again) => {
                assert_eq!(again.bound_port(), i32::from(port));
                return;
            }
            Err((_, message)) if attempt < TRIES && message.contains("Address already in use") => {
                continue
            }
            Err(err) => panic!("port {port} not released: {err:?}"),
        }
    }
}

#[test]
fn inner_open_errors_pass_through_naming_the_trace_variables() {
    let (code, message) = match Sock::open_with(traced(), 0, "bind=127.0.0.256\nipv6=0") {
        Ok(_) => panic!("bad bind address"),
        Err(e) => e,
    };
    assert_eq!(code, NET_BACKEND_ERR_INVALID);
    assert!(message.starts_with("udp: invalid "), "{message}");
    assert!(message.contains("net.trace.bind"), "{message}");
    assert!(!message.contains("net.udp."), "{message}");
}

#[test]
fn trace_options_are_not_passed_to_the_inner_backend() {
    // The UDP backend ignores unknown keys anyway; what matters is that `file` does not leak into
    // it and that the remaining keys (bind, ipv6) do reach it.
    let dir = temp_dir("keys");
    let file = dir.join("keys.log");
    let s = Sock::open(&format!("file={}\ninner=udp", file.display())).unwrap();
    assert!(common::print(traced(), &s.local_node())
        .unwrap()
        .starts_with("127.0.0.1:"));
    drop(s);
    assert!(file.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn open_reads_only_what_params_size_covers() {
    parsec_backend_abi::conformance::open_rejects_params_that_do_not_reach_the_port(traced());
}

#[test]
fn describe_socket_names_the_inner_backend_where_it_is_bound_and_the_file() {
    let dir = temp_dir("describe");
    let file = dir.join("describe.log");
    let s = Sock::open(&format!("file={}", file.display())).unwrap();
    let port = common::print(traced(), &s.local_node())
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let mut buf = [0 as std::ffi::c_char; 256];
    let describe = traced()
        .describe_socket
        .expect("the trace vtable has describe_socket");
    // SAFETY: a live handle of the trace vtable and a buffer of the size given.
    let n = unsafe { describe(s.handle, buf.as_mut_ptr(), buf.len()) };
    let line = parsec_backend_abi::conformance::c_text(&buf);
    assert_eq!(n as usize, line.len());
    assert_eq!(
        line,
        format!(
            "trace of udp: IPv4 127.0.0.1:{port}, broadcast 255.255.255.255, writing {}",
            file.display()
        )
    );
    // SAFETY: a NULL buffer must be refused, not written.
    assert_eq!(
        unsafe { describe(s.handle, std::ptr::null_mut(), 8) },
        NET_BACKEND_ERR_INVALID
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
