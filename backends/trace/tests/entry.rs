//! The built trace library, loaded with dlopen and used only through the vtable its entry
//! function returns, exactly as the core uses it: the entry finds the default inner backend (UDP)
//! beside the library or in PARSEC_NET_BACKEND_PATH, and returns NULL (saying why on stderr, once)
//! when there is none. Cases that depend on the environment run in a child process (this test
//! executable again, running one `child_*` test, which does nothing unless told to by the parent).

mod common;

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{built_library, entry_of, print, temp_dir, vtable_of, Sock, SECOND};
use parsec_backend_abi::{NET_BackendVTable, NET_BACKEND_ABI_VERSION};

/// Environment variable through which the parent tells a child which library to load.
const CHILD_LIBRARY: &str = "PARSEC_TRACE_TEST_CHILD_LIBRARY";
/// What the child expects from the entry: "table" or "null".
const CHILD_EXPECT: &str = "PARSEC_TRACE_TEST_CHILD_EXPECT";

/// Copy backend `name`'s built library into `dir`; returns the copy.
fn copy_library(name: &str, dir: &Path) -> PathBuf {
    let from = built_library(name);
    let to = dir.join(parsec_backend_trace::library_file_name(name));
    std::fs::copy(&from, &to)
        .unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", from.display(), to.display()));
    to
}

/// Run `child_calls_the_entry` in a new process; returns its stderr.
fn run_child(library: &Path, expect: &str, backend_path: Option<&Path>) -> String {
    let exe = std::env::current_exe().expect("test executable");
    let mut command = Command::new(exe);
    command
        .args([
            "--exact",
            "child_calls_the_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_LIBRARY, library)
        .env(CHILD_EXPECT, expect)
        .env_remove(parsec_backend_trace::BACKEND_PATH_ENV);
    if let Some(dir) = backend_path {
        command.env(parsec_backend_trace::BACKEND_PATH_ENV, dir);
    }
    let output = command.output().expect("child test process runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "child failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    stderr
}

/// Check a vtable the way the core does.
fn assert_valid_trace_table(table: &NET_BackendVTable, inner: &NET_BackendVTable) {
    assert_eq!(table.abi_version, NET_BACKEND_ABI_VERSION);
    assert_eq!(
        table.size as usize,
        std::mem::size_of::<NET_BackendVTable>()
    );
    // SAFETY: `name` points to a static NUL-terminated string.
    assert_eq!(unsafe { CStr::from_ptr(table.name) }.to_str(), Ok("trace"));
    assert_eq!(table.max_payload, inner.max_payload);
    assert_eq!(table.capabilities, inner.capabilities);
    let functions = [
        table.open.is_some(),
        table.close.is_some(),
        table.send.is_some(),
        table.receive.is_some(),
        table.wait.is_some(),
        table.node_compare.is_some(),
        table.node_print.is_some(),
        table.node_parse.is_some(),
        table.broadcast_node.is_some(),
        table.local_node.is_some(),
        table.last_error.is_some(),
        table.bound_port.is_some(),
    ];
    assert!(functions.iter().all(|&present| present));
}

#[test]
fn the_built_library_finds_udp_beside_itself_and_carries_datagrams() {
    let dir = temp_dir("beside");
    let trace = copy_library("trace", &dir);
    let udp = copy_library("udp", &dir);
    let entry = entry_of(&trace);
    // SAFETY: the entry accepts any version.
    assert!(unsafe { entry(0) }.is_null(), "ABI version 0 is refused");
    // SAFETY: as above; a non-NULL result is the library's vtable.
    let table = unsafe { entry(NET_BACKEND_ABI_VERSION).as_ref() }.expect("vtable");
    // SAFETY: as above; later calls give the same table.
    assert_eq!(unsafe { entry(NET_BACKEND_ABI_VERSION) }, table as *const _);
    // The UDP copy beside it is the one it loaded (dlopen gives the same library again).
    let inner = vtable_of(&udp);
    assert_valid_trace_table(table, inner);

    // Real traffic through the dlopen'ed trace library, recorded in a file.
    let file = dir.join("traffic.log");
    let options = format!("{}\nfile={}", common::V4, file.display());
    let a = Sock::open_with(table, 0, &options).expect("trace socket a");
    let b = Sock::open_with(table, 0, common::V4).expect("trace socket b");
    a.send_ok(&b.local_node(), b"through the plugin");
    let (from, data) = b.receive_within(SECOND).expect("datagram");
    assert_eq!(data, b"through the plugin");
    assert_eq!(from, a.local_node());
    assert_eq!(print(table, &from), print(inner, &from));
    drop(a);
    let lines = common::read_trace(&file);
    assert_eq!(lines.len(), 1);
    assert_eq!((lines[0].direction.as_str(), lines[0].len), ("send", 18));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_udp_the_entry_returns_null_and_says_why_once() {
    let dir = temp_dir("alone");
    let trace = copy_library("trace", &dir);
    let stderr = run_child(&trace, "null", None);
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("parsec-backend-trace: "))
        .collect();
    assert_eq!(ours.len(), 1, "{stderr}");
    let expected = "parsec-backend-trace: cannot load the default inner backend 'udp': \
                    no backend named 'udp': looked for ";
    assert!(ours[0].starts_with(expected), "{stderr}");
    assert!(ours[0].contains(&dir.display().to_string()), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_entry_finds_udp_through_the_backend_path_variable() {
    let trace_dir = temp_dir("path-trace");
    let udp_dir = temp_dir("path-udp");
    let trace = copy_library("trace", &trace_dir);
    copy_library("udp", &udp_dir);
    let stderr = run_child(&trace, "table", Some(&udp_dir));
    assert!(!stderr.contains("parsec-backend-trace:"), "{stderr}");
    let _ = std::fs::remove_dir_all(&trace_dir);
    let _ = std::fs::remove_dir_all(&udp_dir);
}

/// Not a test of its own: run by the tests above in a child process.
#[test]
fn child_calls_the_entry() {
    let (Some(library), Some(expect)) = (
        std::env::var_os(CHILD_LIBRARY),
        std::env::var(CHILD_EXPECT).ok(),
    ) else {
        return; // run directly by the test harness: nothing to do
    };
    let entry = entry_of(Path::new(&library));
    for _ in 0..3 {
        // SAFETY: the entry accepts any version.
        let table = unsafe { entry(NET_BACKEND_ABI_VERSION) };
        match expect.as_str() {
            "null" => assert!(table.is_null()),
            _ => {
                // SAFETY: a non-NULL result is the library's static vtable.
                let table = unsafe { table.as_ref() }.expect("vtable");
                let socket = Sock::open_with(table, 0, common::V4).expect("open");
                assert!(socket.bound_port() > 0);
            }
        }
    }
}
