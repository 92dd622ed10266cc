//! Finds and loads packet backend libraries for `net.api udp|ipx|NAME|PATH`.
//!
//! Resolution: text with a path separator or a library suffix is a PATH and is loaded as given;
//! a bare file name with a suffix (`libmy_backend.so`) that is not in the current directory is
//! then looked for in the directories below, like a NAME.
//! Anything else is a NAME (the built-in short names `udp` and `ipx` are names too) and is looked
//! up as `libparsec_backend_NAME`, `libNAME` and `NAME` with the platform's library suffix in, in
//! order: each directory of `PARSEC_NET_BACKEND_PATH`, the directory of the library that holds
//! this core (or of the executable, when linked statically), the executable's directory, and the
//! directory this core was built into and its `deps/` (a development convenience).
//!
//! Every failure is one line naming the file and what was wrong; nothing here panics on a bad
//! library, and nothing is kept loaded when validation fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parsec_backend_abi as abi;

use super::backend::{Backend, BackendOrigin};
use crate::error::{ErrorCode, NetError, NetResult};

/// Names that are always understood without a path.
pub const BUILTIN_BACKENDS: [&str; 2] = ["udp", "ipx"];

/// Environment variable with extra directories to search (':'-separated; ';' on Windows).
pub const BACKEND_PATH_ENV: &str = "PARSEC_NET_BACKEND_PATH";

/// What the user asked `net.api` for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendSpec {
    Name(String),
    Path(PathBuf),
}

impl BackendSpec {
    /// Classify the argument of `net.api`.
    pub fn parse(text: &str) -> NetResult<BackendSpec> {
        let text = text.trim();
        if text.is_empty() {
            return Err(NetError::invalid("no backend given"));
        }
        if text.len() > 4096 {
            return Err(NetError::new(
                ErrorCode::TooLarge,
                "backend path longer than 4096 bytes",
            ));
        }
        // `.` and `..` are directories, not names (they would be looked up as `...so`).
        let looks_like_path = text == "."
            || text == ".."
            || text.contains('/')
            || text.contains('\\')
            || [".so", ".dll", ".dylib"]
                .iter()
                .any(|s| text.ends_with(s) || text.contains(&format!("{s}.")));
        if looks_like_path {
            return Ok(BackendSpec::Path(PathBuf::from(text)));
        }
        if !text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        {
            return Err(NetError::invalid(format!(
                "'{}' is not a backend name (letters, digits, '_', '-', '.' only) or a path",
                text.escape_debug()
            )));
        }
        // The built-in names in any letter case (`net.api UDP`); other names are file names,
        // whose case matters.
        let builtin = BUILTIN_BACKENDS
            .iter()
            .find(|b| b.eq_ignore_ascii_case(text));
        Ok(BackendSpec::Name(builtin.map_or(text, |b| *b).to_string()))
    }
}

impl std::fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendSpec::Name(n) => f.write_str(n),
            BackendSpec::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Candidate file names for a backend name on this platform.
pub fn library_file_names(name: &str) -> Vec<String> {
    let (prefix, suffix) = (std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let mut names = vec![format!("{prefix}parsec_backend_{name}{suffix}")];
    if !prefix.is_empty() {
        names.push(format!("{prefix}{name}{suffix}"));
    }
    names.push(format!("{name}{suffix}"));
    names
}

/// The directories searched for a backend name, in order, without duplicates.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut push = |dir: PathBuf| {
        if !dir.as_os_str().is_empty() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    };
    if let Some(paths) = std::env::var_os(BACKEND_PATH_ENV) {
        for dir in std::env::split_paths(&paths) {
            push(dir);
        }
    }
    if let Some(dir) = core_library_dir() {
        push(dir);
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        push(dir);
    }
    if let Some(dir) = option_env!("PARSEC_NET_BUILD_TARGET_DIR") {
        // Cargo puts the cdylibs of dependencies in deps/.
        push(PathBuf::from(dir));
        push(PathBuf::from(dir).join("deps"));
    }
    dirs
}

/// Directory of the shared library (or executable) that contains this code.
fn core_library_dir() -> Option<PathBuf> {
    #[cfg(unix)]
    {
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let here = core_library_dir as *const libc::c_void;
        // SAFETY: dladdr only reads the address and fills `info`.
        let found = unsafe { libc::dladdr(here, &mut info) };
        if found == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
        let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        use std::os::unix::ffi::OsStrExt;
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(path.to_bytes()));
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        path.parent().map(Path::to_path_buf)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Find the file for a spec: the path itself, or the first match of a name in the search dirs.
pub fn locate(spec: &BackendSpec) -> NetResult<PathBuf> {
    match spec {
        // Named as typed (`net.api ..`, `net.api sub/`), not as the loader would be given it.
        BackendSpec::Path(path) if path.is_dir() => Err(NetError::new(
            ErrorCode::BackendLoad,
            format!("cannot load '{}': it is a directory", path.display()),
        )),
        // A bare file name goes to the loader as a path ("./x.so"): on its own, dlopen would
        // look for it in the system's library directories, not here.
        BackendSpec::Path(path) if path.exists() && path.components().count() == 1 => {
            Ok(Path::new(".").join(path))
        }
        BackendSpec::Path(path) if path.exists() => Ok(path.clone()),
        BackendSpec::Path(path) => {
            // A bare file name ("libmy_backend.so") not in the current directory is looked for
            // where names are.
            let bare = path.components().count() == 1;
            let dirs = if bare { search_dirs() } else { Vec::new() };
            if let Some(found) = dirs.iter().map(|d| d.join(path)).find(|p| p.is_file()) {
                return Ok(found);
            }
            let searched = if bare {
                format!(", here or in {}", dir_list(&dirs))
            } else {
                String::new()
            };
            Err(NetError::new(
                ErrorCode::BackendLoad,
                format!("cannot load '{}': no such file{searched}", path.display()),
            ))
        }
        BackendSpec::Name(name) => {
            let files = library_file_names(name);
            let dirs = search_dirs();
            for dir in &dirs {
                for file in &files {
                    let candidate = dir.join(file);
                    if candidate.is_file() {
                        return Ok(candidate);
                    }
                }
            }
            Err(NetError::new(
                ErrorCode::BackendLoad,
                format!(
                    "no backend named '{name}': looked for {} in {} (set {BACKEND_PATH_ENV} or give a path)",
                    files.join(", "),
                    dir_list(&dirs)
                ),
            ))
        }
    }
}

/// The searched directories for a message.
fn dir_list(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "no directory".to_string();
    }
    let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    shown.join(", ")
}

/// Load and validate the backend a spec names.
pub fn load(spec: &BackendSpec) -> NetResult<Arc<Backend>> {
    let path = locate(spec)?;
    load_path(&path)
}

/// dlopen `path` with every symbol bound now (RTLD_NOW), so a library that uses a function no
/// loaded library defines is refused here with the dynamic linker's reason ("undefined symbol:
/// NAME"); with the default lazy binding it would load, and the first call into it would end
/// the whole process ("symbol lookup error"). Windows binds every import at load time anyway.
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

/// Load and validate a backend library file.
pub fn load_path(path: &Path) -> NetResult<Arc<Backend>> {
    let load_error = |message: String| NetError::new(ErrorCode::BackendLoad, message);
    let shown = path.display().to_string();
    if path.is_dir() {
        return Err(load_error(format!(
            "cannot load '{shown}': it is a directory"
        )));
    }
    // SAFETY: loading a library runs its initializers; that is the documented contract of a
    // backend plugin (the user chose the file). Nothing else is assumed about it yet.
    let library = unsafe { open_library(path) }.map_err(|e| {
        load_error(format!(
            "cannot load '{shown}': not a loadable library ({})",
            abi::helpers::error_chain_line(&e)
        ))
    })?;
    let symbol = abi::NET_BACKEND_ENTRY_SYMBOL;
    // SAFETY: the symbol's type is fixed by the ABI; a library exporting the name with another
    // type is outside what can be checked.
    let entry: abi::NET_BackendEntryFn = unsafe {
        match library.get::<abi::NET_BackendEntryFn>(symbol.as_bytes()) {
            Ok(f) => *f,
            Err(_) => {
                return Err(load_error(format!(
                    "'{shown}' is not a parsec-net backend: it exports no {symbol} symbol"
                )))
            }
        }
    };
    // SAFETY: calling the entry function is the ABI's handshake; the returned pointer is checked
    // by Backend::from_vtable before any use.
    let table = unsafe { entry(abi::NET_BACKEND_ABI_VERSION) };
    // SAFETY: as documented by from_vtable: a backend's vtable is static and readable.
    unsafe {
        Backend::from_vtable(
            table,
            &format!("'{shown}'"),
            BackendOrigin::Library(path.to_path_buf()),
            Some(library),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_classifies_names_and_paths() {
        assert_eq!(
            BackendSpec::parse("udp").unwrap(),
            BackendSpec::Name("udp".into())
        );
        assert_eq!(
            BackendSpec::parse(" my_backend ").unwrap(),
            BackendSpec::Name("my_backend".into())
        );
        assert!(matches!(
            BackendSpec::parse("./x.so").unwrap(),
            BackendSpec::Path(_)
        ));
        assert!(matches!(
            BackendSpec::parse("libfoo.so").unwrap(),
            BackendSpec::Path(_)
        ));
        assert!(matches!(
            BackendSpec::parse("libfoo.so.1").unwrap(),
            BackendSpec::Path(_)
        ));
        assert!(matches!(
            BackendSpec::parse("/abs/lib.dylib").unwrap(),
            BackendSpec::Path(_)
        ));
        assert!(BackendSpec::parse("").is_err());
        assert!(BackendSpec::parse("bad name!").is_err());
        assert!(BackendSpec::parse(&"x".repeat(5000)).is_err());
    }

    #[test]
    fn names_map_to_platform_library_files() {
        let files = library_file_names("udp");
        assert_eq!(
            files[0],
            format!(
                "{}parsec_backend_udp{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            )
        );
        assert!(files.len() >= 2);
    }

    #[test]
    fn missing_path_and_directory_are_clear_errors() {
        let e = load(&BackendSpec::Path("/nonexistent/libnothing.so".into()))
            .err()
            .unwrap();
        assert_eq!(e.code, ErrorCode::BackendLoad);
        assert!(e.message.contains("no such file"), "{}", e.message);
        let e = load_path(Path::new("/tmp")).err().unwrap();
        assert!(e.message.contains("directory"), "{}", e.message);
        // `.` and `..` are directories, named as typed, not names looked up as `...so`.
        for typed in [".", "..", "./", "../"] {
            let spec = BackendSpec::parse(typed).unwrap();
            assert!(matches!(spec, BackendSpec::Path(_)), "{typed}: {spec:?}");
            let e = load(&spec).err().unwrap();
            assert_eq!(
                e.message,
                format!("cannot load '{typed}': it is a directory"),
                "{typed}"
            );
        }
    }

    #[test]
    fn a_bare_library_file_name_is_looked_for_where_names_are() {
        // The UDP backend is built with the workspace, like every test's default backend.
        let by_name = locate(&BackendSpec::Name("udp".into())).expect("the UDP backend is built");
        let file = by_name.file_name().unwrap();
        assert!(!Path::new(file).exists(), "not in the current directory");
        let spec = BackendSpec::parse(file.to_str().unwrap()).unwrap();
        assert!(matches!(spec, BackendSpec::Path(_)));
        assert_eq!(locate(&spec).unwrap(), by_name);
        let e = locate(&BackendSpec::Path("libparsec_backend_nothing.so".into()))
            .err()
            .unwrap();
        assert!(
            e.message.contains("no such file, here or in "),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_file_that_is_not_a_library_is_refused() {
        let dir = std::env::temp_dir().join(format!("pn-loader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("libnotalib.so");
        std::fs::write(&file, "this is text, not ELF\n".repeat(8)).unwrap();
        let e = load_path(&file).err().unwrap();
        assert!(
            e.message.contains("not a loadable library"),
            "{}",
            e.message
        );
        // The loader's own reason, not just "dlopen failed".
        assert!(
            e.message.contains("libnotalib.so: invalid ELF header"),
            "{}",
            e.message
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unknown_name_lists_where_it_looked() {
        let e = load(&BackendSpec::Name("surely_not_there".into()))
            .err()
            .unwrap();
        assert!(
            e.message.contains("no backend named 'surely_not_there'"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("parsec_backend_surely_not_there"),
            "{}",
            e.message
        );
    }
}
