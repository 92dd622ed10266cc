//! Test harness: finds the backend libraries cargo built (target/<profile>/ and its deps/), and
//! calls a trace vtable only through its function pointers, as the core does, on loopback only.
#![allow(dead_code)]

use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use parsec_backend_abi::{
    NET_BackendEntryFn, NET_BackendOpenParams, NET_BackendVTable, NET_Node,
    NET_BACKEND_ABI_VERSION, NET_BACKEND_ENTRY_SYMBOL, NET_BACKEND_OK, NET_BACKEND_WOULD_BLOCK,
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

pub use parsec_backend_abi::conformance::c_text;

/// An open backend socket, closed on drop.
pub struct Sock {
    pub vt: &'static NET_BackendVTable,
    pub handle: *mut c_void,
}

impl Sock {
    pub fn open_with(
        vt: &'static NET_BackendVTable,
        port: u16,
        options: &str,
    ) -> Result<Sock, (i32, String)> {
        let options = CString::new(options).expect("test options contain no NUL");
        let params = NET_BackendOpenParams {
            size: std::mem::size_of::<NET_BackendOpenParams>() as u32,
            port,
            reserved: 0,
            options: options.as_ptr(),
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        let mut err = [0 as c_char; 1024];
        // SAFETY: all pointers are valid for the duration of the call.
        let rc = unsafe { (vt.open.unwrap())(&params, &mut handle, err.as_mut_ptr(), err.len()) };
        if rc == NET_BACKEND_OK {
            assert!(!handle.is_null());
            Ok(Sock { vt, handle })
        } else {
            assert!(handle.is_null());
            Err((rc, c_text(&err)))
        }
    }

    /// A trace socket (this process's rlib vtable) with `extra` option lines.
    pub fn open(extra: &str) -> Result<Sock, (i32, String)> {
        Sock::open_with(traced(), 0, &format!("{V4}\n{extra}"))
    }

    pub fn v4() -> Sock {
        Sock::open("").expect("IPv4 loopback trace socket")
    }

    pub fn send(&self, to: &NET_Node, data: &[u8]) -> i32 {
        // SAFETY: valid handle, node and buffer.
        unsafe { (self.vt.send.unwrap())(self.handle, to, data.as_ptr(), data.len()) }
    }

    /// Send, retrying briefly while the backend says WOULD_BLOCK.
    pub fn send_ok(&self, to: &NET_Node, data: &[u8]) {
        for _ in 0..1000 {
            match self.send(to, data) {
                NET_BACKEND_OK => return,
                NET_BACKEND_WOULD_BLOCK => std::thread::sleep(Duration::from_millis(1)),
                rc => panic!("send failed: {rc} {}", self.last_error()),
            }
        }
        panic!("send kept blocking");
    }

    pub fn receive(&self, cap: usize) -> Result<Option<(NET_Node, Vec<u8>)>, i32> {
        let mut buf = vec![0u8; cap];
        let mut from = NET_Node::default();
        // SAFETY: valid handle, node and a buffer of `cap` bytes.
        let rc =
            unsafe { (self.vt.receive.unwrap())(self.handle, &mut from, buf.as_mut_ptr(), cap) };
        match rc {
            0 => Ok(None),
            n if n > 0 => {
                buf.truncate(n as usize);
                Ok(Some((from, buf)))
            }
            err => Err(err),
        }
    }

    /// Wait and receive until a datagram arrives or `timeout` passes.
    pub fn receive_within(&self, timeout: Duration) -> Option<(NET_Node, Vec<u8>)> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(got) = self.receive(2048).expect("receive") {
                return Some(got);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            assert!(self.wait(left.as_millis() as u32) >= 0);
        }
    }

    pub fn wait(&self, timeout_ms: u32) -> i32 {
        // SAFETY: valid handle.
        unsafe { (self.vt.wait.unwrap())(self.handle, timeout_ms) }
    }

    pub fn local_node(&self) -> NET_Node {
        let mut out = NET_Node::default();
        // SAFETY: valid handle and output; NULL `towards` means the primary network.
        let rc = unsafe { (self.vt.local_node.unwrap())(self.handle, std::ptr::null(), &mut out) };
        assert_eq!(rc, NET_BACKEND_OK, "local_node: {}", self.last_error());
        out
    }

    pub fn broadcast_node(&self, port: u16) -> Result<NET_Node, i32> {
        let mut out = NET_Node::default();
        // SAFETY: valid handle and output.
        let rc = unsafe { (self.vt.broadcast_node.unwrap())(self.handle, port, &mut out) };
        if rc == NET_BACKEND_OK {
            Ok(out)
        } else {
            Err(rc)
        }
    }

    pub fn bound_port(&self) -> i32 {
        // SAFETY: valid handle.
        unsafe { (self.vt.bound_port.unwrap())(self.handle) }
    }

    pub fn last_error(&self) -> String {
        let mut buf = [0 as c_char; 512];
        // SAFETY: valid handle and buffer.
        let n = unsafe { (self.vt.last_error.unwrap())(self.handle, buf.as_mut_ptr(), buf.len()) };
        assert!(n >= 0);
        let text = c_text(&buf);
        assert_eq!(text.len(), n as usize);
        text
    }

    /// The trace socket's counters (only for sockets of this process's rlib vtable).
    pub fn counters(&self) -> parsec_backend_trace::Counters {
        // SAFETY: the handle came from the rlib's `open` and is still open.
        unsafe { parsec_backend_trace::counters(self.handle) }.expect("a live trace socket")
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        // SAFETY: the handle came from `open` and is closed exactly once.
        unsafe { (self.vt.close.unwrap())(self.handle) };
    }
}

pub fn parse(vt: &NET_BackendVTable, text: &str, default_port: u16) -> Result<NET_Node, i32> {
    let text = CString::new(text).expect("no NUL in test text");
    let mut out = NET_Node::default();
    // SAFETY: valid string and output.
    let rc = unsafe { (vt.node_parse.unwrap())(text.as_ptr(), default_port, &mut out) };
    if rc == NET_BACKEND_OK {
        Ok(out)
    } else {
        Err(rc)
    }
}

pub fn print(vt: &NET_BackendVTable, node: &NET_Node) -> Result<String, i32> {
    let mut buf = [0 as c_char; 128];
    // SAFETY: valid node and buffer.
    let rc = unsafe { (vt.node_print.unwrap())(node, buf.as_mut_ptr(), buf.len()) };
    if rc >= 0 {
        let text = c_text(&buf);
        assert_eq!(text.len(), rc as usize);
        Ok(text)
    } else {
        Err(rc)
    }
}

pub fn compare(vt: &NET_BackendVTable, a: &NET_Node, b: &NET_Node) -> i32 {
    // SAFETY: valid nodes.
    unsafe { (vt.node_compare.unwrap())(a, b) }
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
