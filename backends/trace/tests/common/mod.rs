//! Test harness: finds the backend libraries cargo built (target/<profile>/ and its deps/), and
//! calls a trace vtable only through its function pointers, as the core does, on loopback only.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use parsec_backend_abi::vtable_socket::VtableSocket;
use parsec_backend_abi::{
    NET_BackendEntryFn, NET_BackendVTable, NET_BACKEND_ABI_VERSION, NET_BACKEND_ENTRY_SYMBOL,
};

/// Options of every test socket: IPv4 loopback only (passed through to the UDP backend).
pub const V4: &str = "bind=127.0.0.1\nipv6=0";
pub const SECOND: Duration = Duration::from_secs(2);

/// `target/<profile>`, from the test executable's place (`target/<profile>/deps/<test>`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its executable");
    let deps = exe.parent().expect("the executable has a directory");
    deps.parent().unwrap_or(deps).to_path_buf()
}

/// The newest build of backend `name`'s library in target/<profile>/ or its deps/.
pub fn built_library(name: &str) -> PathBuf {
    let file = parsec_backend_trace::library_file_name(name);
    let profile = profile_dir();
    let modified = |p: &PathBuf| -> Option<SystemTime> { p.metadata().ok()?.modified().ok() };
    [profile.join(&file), profile.join("deps").join(&file)]
        .into_iter()
        .filter_map(|p| modified(&p).map(|t| (t, p)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p)
        .unwrap_or_else(|| {
            panic!(
                "{file} not found in {} or its deps/: run the tests with cargo (which builds it \
                 as a dev-dependency) or `cargo build --workspace` first",
                profile.display()
            )
        })
}

/// A fresh, empty directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pn-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// Load a backend library and call its entry function, keeping the library loaded for good.
pub fn entry_of(path: &Path) -> NET_BackendEntryFn {
    // SAFETY: the file is one of this workspace's backend libraries.
    let library = unsafe { libloading::Library::new(path) }
        .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()));
    // SAFETY: the entry symbol has the ABI's type.
    let entry = unsafe { library.get::<NET_BackendEntryFn>(NET_BACKEND_ENTRY_SYMBOL.as_bytes()) }
        .map(|symbol| *symbol)
        .expect("the library exports the entry symbol");
    std::mem::forget(library); // the vtable it returns must stay valid
    entry
}

/// The vtable of a backend library file (panics if the entry refuses).
pub fn vtable_of(path: &Path) -> &'static NET_BackendVTable {
    // SAFETY: the entry accepts any version; a non-NULL result is a static vtable.
    unsafe { entry_of(path)(NET_BACKEND_ABI_VERSION).as_ref() }
        .unwrap_or_else(|| panic!("{} refused ABI version 1", path.display()))
}

/// The trace vtable of this test process (the rlib), with the UDP library cargo built as the
/// default inner backend.
pub fn traced() -> &'static NET_BackendVTable {
    static TABLE: OnceLock<&'static NET_BackendVTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let udp = built_library("udp");
        let spec = udp.to_str().expect("UTF-8 target path");
        parsec_backend_trace::vtable_with_default_inner(spec).expect("trace over udp")
    })
}

/// The UDP library's own vtable (the very library the trace backend uses as its inner one).
pub fn udp() -> &'static NET_BackendVTable {
    static TABLE: OnceLock<&'static NET_BackendVTable> = OnceLock::new();
    TABLE.get_or_init(|| vtable_of(&built_library("udp")))
}

// Not every test file uses every helper.
#[allow(unused_imports)]
pub use parsec_backend_abi::conformance::c_text;

#[allow(unused_imports)]
pub use parsec_backend_abi::vtable_socket::{compare, parse, print};

parsec_backend_abi::vtable_socket_wrapper!(
    /// An open backend socket driven through a vtable (the trace's or the UDP library's),
    /// closed on drop.
    Sock
);

impl Sock {
    pub fn open_with(
        vt: &'static NET_BackendVTable,
        port: u16,
        options: &str,
    ) -> Result<Sock, (i32, String)> {
        VtableSocket::open(vt, port, options).map(Sock)
    }

    /// A trace socket (this process's rlib vtable) with `extra` option lines.
    pub fn open(extra: &str) -> Result<Sock, (i32, String)> {
        Sock::open_with(traced(), 0, &format!("{V4}\n{extra}"))
    }

    pub fn v4() -> Sock {
        Sock::open("").expect("IPv4 loopback trace socket")
    }

    /// The trace socket's counters (only for sockets of this process's rlib vtable).
    pub fn counters(&self) -> parsec_backend_trace::Counters {
        // SAFETY: the handle came from the rlib's `open` and is still open.
        unsafe { parsec_backend_trace::counters(self.handle) }.expect("a live trace socket")
    }
}

/// One parsed line of a trace file.
#[derive(Debug, PartialEq, Eq)]
pub struct Line {
    pub ms: u64,
    pub direction: String,
    pub node: String,
    pub len: usize,
    pub hex: String,
}

/// Read a trace file into its lines, checking each has the five documented fields.
pub fn read_trace(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!(fields.len(), 5, "{line:?}");
            Line {
                ms: fields[0].parse().expect("milliseconds"),
                direction: fields[1].to_string(),
                node: fields[2].to_string(),
                len: fields[3].parse().expect("length"),
                hex: fields[4].to_string(),
            }
        })
        .collect()
}

/// The hex the trace file shows for a payload.
pub fn shown_hex(data: &[u8]) -> String {
    if data.is_empty() {
        return "-".to_string();
    }
    data.iter().take(32).map(|b| format!("{b:02x}")).collect()
}
