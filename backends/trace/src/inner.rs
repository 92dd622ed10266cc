//! Finding, loading and validating the *inner* backend libraries that the trace backend passes
//! every call to. Self-contained on purpose (the trace backend must not depend on the core), but
//! it follows the core's rules so that a library the core accepts is accepted here too:
//!
//! - text with a path separator or a library suffix is a PATH, used as given (relative to the
//!   current directory);
//! - anything else is a NAME, looked up as `libparsec_backend_NAME.so` (the platform's prefix and
//!   suffix) in each directory of `PARSEC_NET_BACKEND_PATH`, then beside the library (or
//!   executable) that contains this code;
//! - the vtable is checked like the core checks it: ABI version, size, name, maximum payload and
//!   every function pointer.
//!
//! A validated inner library is never unloaded: the trace backend hands the core a vtable whose
//! functions call into it, and those calls may come at any time until the process ends. Each file
//! is loaded at most once per process; later requests for the same file reuse it.

use std::ffi::{c_char, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use parsec_backend_abi::{
    read_vtable, NET_BackendEntryFn, NET_BackendOpenParams, NET_BackendVTable, NET_Node,
    NET_BACKEND_ABI_VERSION, NET_BACKEND_ENTRY_SYMBOL, NET_BACKEND_VTABLE_V1_SIZE,
};

/// Environment variable with extra directories to search for a NAME (':'-separated on Unix).
pub const BACKEND_PATH_ENV: &str = "PARSEC_NET_BACKEND_PATH";

/// Longest vtable name the core accepts.
const MAX_NAME_LEN: usize = 31;
/// Largest `max_payload` the core accepts (the largest UDP payload over IPv4).
const MAX_ANNOUNCED_PAYLOAD: u32 = 65507;

pub type OpenFn = unsafe extern "C" fn(
    params: *const NET_BackendOpenParams,
    out_socket: *mut *mut c_void,
    err: *mut c_char,
    err_len: usize,
) -> i32;
pub type CloseFn = unsafe extern "C" fn(socket: *mut c_void);
pub type SendFn = unsafe extern "C" fn(
    socket: *mut c_void,
    to: *const NET_Node,
    data: *const u8,
    len: usize,
) -> i32;
pub type ReceiveFn =
    unsafe extern "C" fn(socket: *mut c_void, from: *mut NET_Node, buf: *mut u8, cap: usize) -> i32;
pub type WaitFn = unsafe extern "C" fn(socket: *mut c_void, timeout_ms: u32) -> i32;
pub type CompareFn = unsafe extern "C" fn(a: *const NET_Node, b: *const NET_Node) -> i32;
pub type PrintFn =
    unsafe extern "C" fn(node: *const NET_Node, out: *mut c_char, out_len: usize) -> i32;
pub type ParseFn =
    unsafe extern "C" fn(text: *const c_char, default_port: u16, out: *mut NET_Node) -> i32;
pub type BroadcastFn =
    unsafe extern "C" fn(socket: *mut c_void, port: u16, out: *mut NET_Node) -> i32;
pub type LocalFn =
    unsafe extern "C" fn(socket: *mut c_void, towards: *const NET_Node, out: *mut NET_Node) -> i32;
pub type LastErrorFn =
    unsafe extern "C" fn(socket: *mut c_void, out: *mut c_char, out_len: usize) -> i32;
pub type BoundPortFn = unsafe extern "C" fn(socket: *mut c_void) -> i32;
pub type ParseErrorFn = unsafe extern "C" fn(out: *mut c_char, out_len: usize) -> i32;

/// The inner backend's functions: those of version 1 known to be present, the appended ones
/// `None` where the inner backend's table does not have them.
#[derive(Clone, Copy, Debug)]
pub struct Functions {
    pub open: OpenFn,
    pub close: CloseFn,
    pub send: SendFn,
    pub receive: ReceiveFn,
    pub wait: WaitFn,
    pub node_compare: CompareFn,
    pub node_print: PrintFn,
    pub node_parse: ParseFn,
    pub broadcast_node: BroadcastFn,
    pub local_node: LocalFn,
    pub last_error: LastErrorFn,
    pub bound_port: BoundPortFn,
    pub node_parse_error: Option<ParseErrorFn>,
    pub describe_socket: Option<LastErrorFn>,
}

/// A loaded and validated inner backend; lives (with its library) until the process ends.
#[derive(Debug)]
pub struct Inner {
    /// The vtable's name, e.g. "udp".
    pub name: String,
    /// The file it was loaded from (canonical).
    pub path: PathBuf,
    pub max_payload: u32,
    pub capabilities: u32,
    pub f: Functions,
}

/// How the user named an inner backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    Name(String),
    Path(PathBuf),
}

impl Spec {
    /// Classify `inner=` text the way the core classifies the argument of `net.api`.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("no backend given".to_string());
        }
        if text.len() > 4096 {
            return Err("backend path longer than 4096 bytes".to_string());
        }
        // `.` and `..` are directories, not names (they would be looked up as `...so`).
        let looks_like_path = text == "."
            || text == ".."
            || text.contains('/')
            || text.contains('\\')
            || [".so", ".dll", ".dylib"]
                .iter()
                .any(|suffix| text.ends_with(suffix) || text.contains(&format!("{suffix}.")));
        if looks_like_path {
            return Ok(Spec::Path(PathBuf::from(text)));
        }
        let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if !text.chars().all(name_char) {
            return Err(format!(
                "'{}' is not a backend name (letters, digits, '_', '-', '.' only) or a path",
                text.escape_debug()
            ));
        }
        Ok(Spec::Name(text.to_string()))
    }
}

/// The library file a backend NAME is looked up as on this platform.
pub fn library_file_name(name: &str) -> String {
    format!(
        "{}parsec_backend_{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The file (shared library or executable) that contains this code, canonicalized.
pub fn own_file() -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: `Dl_info` is plain old data; all-zero is a valid value that dladdr overwrites.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let here = own_file as *const c_void;
        // SAFETY: dladdr only inspects the address (a function of this library) and fills `info`.
        let found = unsafe { libc::dladdr(here, &mut info) };
        let from_loader = if found != 0 && !info.dli_fname.is_null() {
            // SAFETY: dli_fname is a NUL-terminated path owned by the dynamic loader, which stays
            // valid while this library is loaded (it is copied at once).
            let bytes = unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes();
            (!bytes.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
        } else {
            None
        };
        // The main program may be reported with an empty name; then it is the executable.
        let path = from_loader.or_else(|| std::env::current_exe().ok())?;
        Some(std::fs::canonicalize(&path).unwrap_or(path))
    }
    #[cfg(not(unix))]
    {
        std::env::current_exe().ok()
    }
}

/// The directories a NAME is looked up in, in order, without duplicates.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut push = |dir: PathBuf| {
        if !dir.as_os_str().is_empty() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    };
    if let Some(paths) = std::env::var_os(BACKEND_PATH_ENV) {
        std::env::split_paths(&paths).for_each(&mut push);
    }
    if let Some(dir) = own_file().and_then(|file| file.parent().map(Path::to_path_buf)) {
        push(dir);
    }
    dirs
}

/// The file a spec refers to (not yet loaded).
pub fn locate(spec: &Spec) -> Result<PathBuf, String> {
    match spec {
        Spec::Path(path) if path.exists() => Ok(path.clone()),
        Spec::Path(path) => Err(format!("cannot load '{}': no such file", path.display())),
        Spec::Name(name) => {
            let file = library_file_name(name);
            let dirs = search_dirs();
            if let Some(found) = dirs.iter().map(|dir| dir.join(&file)).find(|p| p.is_file()) {
                return Ok(found);
            }
            let places = if dirs.is_empty() {
                "no directory".to_string()
            } else {
                let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                shown.join(", ")
            };
            Err(format!(
                "no backend named '{name}': looked for {file} in {places} \
                 (set {BACKEND_PATH_ENV} or give a path)"
            ))
        }
    }
}

/// Every inner backend loaded so far, by canonical path.
static LOADED: Mutex<Vec<&'static Inner>> = Mutex::new(Vec::new());

fn already_loaded(path: &Path) -> Option<&'static Inner> {
    let loaded = LOADED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    loaded.iter().copied().find(|inner| inner.path == path)
}

/// Find, load and validate the backend a spec names (or reuse it if it is already loaded).
pub fn load(spec: &Spec) -> Result<&'static Inner, String> {
    load_file(&locate(spec)?)
}

/// dlopen `path` with every symbol bound now (RTLD_NOW), as the core does: a library that uses
/// a function no loaded library defines is refused with the dynamic linker's reason ("undefined
/// symbol: NAME") instead of loading and ending the process at its first call ("symbol lookup
/// error"). Windows binds every import at load time anyway.
///
/// # Safety
/// As for `libloading::Library::new`: the library's initializers run.
unsafe fn open_library(path: &Path) -> Result<libloading::Library, libloading::Error> {
    #[cfg(unix)]
    {
        use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
        // SAFETY: as documented for this function.
        unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.map(Into::into)
    }
    #[cfg(not(unix))]
    {
        // SAFETY: as documented for this function.
        unsafe { libloading::Library::new(path) }
    }
}

/// Load and validate a backend library file (or reuse it if it is already loaded).
pub fn load_file(path: &Path) -> Result<&'static Inner, String> {
    let shown = path.display().to_string();
    let path = std::fs::canonicalize(path)
        .map_err(|e| format!("cannot load '{shown}': {}", one_line(&e.to_string())))?;
    if path.is_dir() {
        return Err(format!("cannot load '{shown}': it is a directory"));
    }
    if own_file().is_some_and(|own| own == path) {
        return Err(format!(
            "'{shown}' is the trace backend itself; the inner backend must be another one"
        ));
    }
    if let Some(inner) = already_loaded(&path) {
        return Ok(inner);
    }
    // SAFETY: loading a library runs its initializers; that is the contract of a backend plugin,
    // and the user chose this file. The absolute path keeps dlopen from searching elsewhere.
    let library = unsafe { open_library(&path) }.map_err(|e| {
        format!(
            "cannot load '{shown}': not a loadable library ({})",
            parsec_backend_abi::helpers::error_chain_line(&e)
        )
    })?;
    // SAFETY: the symbol's type is fixed by the ABI; a library exporting the name with another
    // type cannot be detected here (the core has the same limit).
    let entry: NET_BackendEntryFn =
        match unsafe { library.get::<NET_BackendEntryFn>(NET_BACKEND_ENTRY_SYMBOL.as_bytes()) } {
            Ok(symbol) => *symbol,
            Err(_) => {
                return Err(format!(
                    "'{shown}' is not a parsec-net backend: it exports no \
                     {NET_BACKEND_ENTRY_SYMBOL} symbol"
                ))
            }
        };
    // SAFETY: calling the entry function is the ABI's handshake; `validate` checks the result
    // before anything else reads it.
    let table = unsafe { entry(NET_BACKEND_ABI_VERSION) };
    // SAFETY: a backend's vtable is static and readable for the size it declares (checked first).
    let inner = unsafe { validate(table, &format!("'{shown}'"), path) }?;
    // Deliberately leaked: the library is never unloaded. The trace vtable handed to the core and
    // every open trace socket call into it through plain function pointers, which must stay valid
    // for the rest of the process.
    std::mem::forget(library);
    let inner: &'static Inner = Box::leak(Box::new(inner));
    let mut loaded = LOADED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(earlier) = loaded.iter().copied().find(|i| i.path == inner.path) {
        return Ok(earlier); // another thread loaded it meanwhile; both handles stay valid
    }
    loaded.push(inner);
    Ok(inner)
}

/// Check a vtable the way the core does and copy out what the trace backend needs.
///
/// # Safety
/// `table` must be NULL or point to a vtable readable for the `size` it declares.
unsafe fn validate(
    table: *const NET_BackendVTable,
    label: &str,
    path: PathBuf,
) -> Result<Inner, String> {
    if table.is_null() {
        return Err(format!(
            "{label} refused backend ABI version {NET_BACKEND_ABI_VERSION} \
             (its entry function returned NULL)"
        ));
    }
    // Read the version and size (the first two u32 fields) before trusting anything else.
    let prefix = table.cast::<u32>();
    // SAFETY: every vtable starts with `abi_version` and `size`.
    let (version, size) = unsafe { (prefix.read_unaligned(), prefix.add(1).read_unaligned()) };
    if version == 0 {
        return Err(format!(
            "{label} reports backend ABI version 0, which does not exist"
        ));
    }
    if version > NET_BACKEND_ABI_VERSION {
        return Err(format!(
            "{label} implements backend ABI version {version}, newer than this trace backend's \
             version {NET_BACKEND_ABI_VERSION}"
        ));
    }
    if (size as usize) < NET_BACKEND_VTABLE_V1_SIZE {
        return Err(format!(
            "{label} has a {size}-byte vtable, smaller than the {NET_BACKEND_VTABLE_V1_SIZE} bytes \
             backend ABI version {version} requires"
        ));
    }
    // SAFETY: the declared size covers the whole version-1 table; no more than it is read.
    let table = unsafe { read_vtable(table) };
    let name = if table.name.is_null() {
        None
    } else {
        // SAFETY: a non-NULL name is a static NUL-terminated string per the ABI.
        unsafe { CStr::from_ptr(table.name) }.to_str().ok()
    };
    let name = match name {
        Some(n)
            if !n.is_empty()
                && n.len() <= MAX_NAME_LEN
                && n.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            n.to_string()
        }
        _ => {
            return Err(format!(
                "{label} vtable name is not 1-{MAX_NAME_LEN} printable ASCII characters"
            ))
        }
    };
    if table.max_payload == 0 || table.max_payload > MAX_ANNOUNCED_PAYLOAD {
        return Err(format!(
            "{label} announces a maximum payload of {} bytes (must be 1-{MAX_ANNOUNCED_PAYLOAD})",
            table.max_payload
        ));
    }
    let missing = |function: &str| format!("{label} vtable has no '{function}' function");
    let f = Functions {
        open: table.open.ok_or_else(|| missing("open"))?,
        close: table.close.ok_or_else(|| missing("close"))?,
        send: table.send.ok_or_else(|| missing("send"))?,
        receive: table.receive.ok_or_else(|| missing("receive"))?,
        wait: table.wait.ok_or_else(|| missing("wait"))?,
        node_compare: table.node_compare.ok_or_else(|| missing("node_compare"))?,
        node_print: table.node_print.ok_or_else(|| missing("node_print"))?,
        node_parse: table.node_parse.ok_or_else(|| missing("node_parse"))?,
        broadcast_node: table
            .broadcast_node
            .ok_or_else(|| missing("broadcast_node"))?,
        local_node: table.local_node.ok_or_else(|| missing("local_node"))?,
        last_error: table.last_error.ok_or_else(|| missing("last_error"))?,
        bound_port: table.bound_port.ok_or_else(|| missing("bound_port"))?,
        node_parse_error: table.node_parse_error,
        describe_socket: table.describe_socket,
    };
    Ok(Inner {
        name,
        path,
        max_payload: table.max_payload,
        capabilities: table.capabilities,
        f,
    })
}

pub use parsec_backend_abi::helpers::one_line;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_names_or_paths_like_the_core_says() {
        assert_eq!(Spec::parse(" udp "), Ok(Spec::Name("udp".into())));
        assert_eq!(Spec::parse("my-net_2"), Ok(Spec::Name("my-net_2".into())));
        for path in [
            "./x.so",
            "/a/b",
            "libfoo.so",
            "libfoo.so.1",
            "x.dylib",
            "c:\\x",
            ".",
            "..",
        ] {
            assert_eq!(Spec::parse(path), Ok(Spec::Path(path.into())), "{path}");
        }
        assert!(Spec::parse("").is_err());
        assert!(Spec::parse("bad name!")
            .unwrap_err()
            .contains("not a backend name"));
        assert!(Spec::parse(&"x".repeat(5000)).is_err());
    }

    #[test]
    fn names_map_to_the_platform_library_file() {
        let file = library_file_name("udp");
        assert!(file.contains("parsec_backend_udp"));
        assert!(file.ends_with(std::env::consts::DLL_SUFFIX));
    }

    #[test]
    fn own_file_exists_and_its_directory_is_searched() {
        let own = own_file().expect("dladdr finds this code");
        assert!(own.is_file(), "{}", own.display());
        assert!(search_dirs().contains(&own.parent().unwrap().to_path_buf()));
    }

    #[test]
    fn locating_failures_are_one_clear_line() {
        let e = locate(&Spec::Name("surely_not_there".into())).unwrap_err();
        assert!(e.starts_with("no backend named 'surely_not_there'"), "{e}");
        assert!(e.contains(&library_file_name("surely_not_there")), "{e}");
        let e = locate(&Spec::Path("/nonexistent/libx.so".into())).unwrap_err();
        assert!(e.contains("no such file"), "{e}");
        let e = load_file(Path::new("/")).unwrap_err();
        assert!(e.contains("directory"), "{e}");
        let dir = std::env::temp_dir().join(format!("pn-trace-inner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = dir.join("libnotalib.so");
        std::fs::write(&text, b"not ELF").unwrap();
        let e = load_file(&text).unwrap_err();
        assert!(e.contains("not a loadable library"), "{e}");
        assert!(!e.contains('\n'));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn null_and_malformed_vtables_are_refused() {
        // SAFETY: NULL is allowed.
        let e = unsafe { validate(std::ptr::null(), "'x'", PathBuf::new()) }.unwrap_err();
        assert!(e.contains("refused backend ABI version"), "{e}");
        let good = NET_BackendVTable {
            abi_version: NET_BACKEND_ABI_VERSION,
            size: std::mem::size_of::<NET_BackendVTable>() as u32,
            name: c"fake".as_ptr(),
            max_payload: 100,
            capabilities: 0,
            open: None,
            close: None,
            send: None,
            receive: None,
            wait: None,
            node_compare: None,
            node_print: None,
            node_parse: None,
            broadcast_node: None,
            local_node: None,
            last_error: None,
            bound_port: None,
            node_parse_error: None,
            describe_socket: None,
        };
        let check = |table: NET_BackendVTable| {
            // SAFETY: `table` is a complete local vtable.
            unsafe { validate(&table, "'x'", PathBuf::new()) }.unwrap_err()
        };
        assert!(check(good).contains("no 'open' function"));
        assert!(check(NET_BackendVTable {
            abi_version: 0,
            ..good
        })
        .contains("version 0"));
        assert!(check(NET_BackendVTable {
            abi_version: 2,
            ..good
        })
        .contains("newer"));
        assert!(check(NET_BackendVTable { size: 8, ..good }).contains("8-byte vtable"));
        assert!(check(NET_BackendVTable {
            name: c"".as_ptr(),
            ..good
        })
        .contains("name"));
        assert!(check(NET_BackendVTable {
            max_payload: 0,
            ..good
        })
        .contains("maximum payload"));
    }
}
