//! Compiling the C and C++ sources of `ffi-tests/` with the system compilers (`cc` and `c++`, or
//! `$CC` and `$CXX`) under the project's warning flags, linked against the shared or the static
//! parsec-net library, optionally with AddressSanitizer.
//!
//! Each output is built at most once per process and reused across processes while it is newer
//! than its inputs and was made by the same command line (kept beside it as `<output>.cmd`).
//! Outputs are written under a temporary name and renamed into place, so parallel test processes
//! never see half-written files.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use crate::paths::paths;
use crate::process::run;

/// Warning flags every C program is built with.
pub const C_FLAGS: &[&str] = &["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"];
/// Warning flags every C++ program is built with.
pub const CPP_FLAGS: &[&str] = &["-std=c++11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"];
/// AddressSanitizer, for compiling and linking.
pub const ASAN_FLAGS: &[&str] = &["-fsanitize=address", "-fno-omit-frame-pointer"];
/// What a program needs besides the Rust staticlib (as `rustc --print native-static-libs` says).
pub const STATIC_LIB_DEPS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// The longest a single compiler run may take.
const COMPILE_TIMEOUT: Duration = Duration::from_secs(120);

/// Source language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    C,
    Cpp,
}

impl Lang {
    fn compiler(self) -> OsString {
        let (var, default) = match self {
            Lang::C => ("CC", "cc"),
            Lang::Cpp => ("CXX", "c++"),
        };
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.into())
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Lang::C => C_FLAGS,
            Lang::Cpp => CPP_FLAGS,
        }
    }
}

/// How a program is linked with parsec-net.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// `-lparsec_net` with an rpath to the directory of `libparsec_net.so`.
    Shared,
    /// `libparsec_net.a` and its system libraries.
    Static,
}

/// A test program to build: one source file, a language, a link mode and variants.
#[derive(Clone, Debug)]
pub struct Build {
    source: String,
    lang: Lang,
    link: Link,
    static_bind: bool,
    asan: bool,
    optimize: bool,
}

impl Build {
    /// A C99 program from `ffi-tests/<source>`, linked with the shared library.
    pub fn c(source: &str) -> Build {
        Build::new(source, Lang::C)
    }

    /// A C++11 program from `ffi-tests/<source>`, linked with the shared library.
    pub fn cpp(source: &str) -> Build {
        Build::new(source, Lang::Cpp)
    }

    fn new(source: &str, lang: Lang) -> Build {
        Build {
            source: source.to_string(),
            lang,
            link: Link::Shared,
            static_bind: false,
            asan: false,
            optimize: false,
        }
    }

    /// Link with `libparsec_net.a` instead of the shared library.
    pub fn link_static(mut self) -> Build {
        self.link = Link::Static;
        self
    }

    /// Define `PARSEC_NET_STATIC_BIND` (NETs_ calls go to the exported functions directly).
    pub fn static_bind(mut self) -> Build {
        self.static_bind = true;
        self
    }

    /// Build with AddressSanitizer.
    pub fn asan(mut self) -> Build {
        self.asan = true;
        self
    }

    /// Build with `-O2` (for benchmarks); the default is `-O0 -g`.
    pub fn optimized(mut self) -> Build {
        self.optimize = true;
        self
    }

    /// The output file name: the source's stem plus one suffix per variant.
    pub fn name(&self) -> String {
        let stem = Path::new(&self.source)
            .file_stem()
            .map_or("program".into(), |s| s.to_string_lossy());
        let mut name = stem.into_owned();
        name.push_str(match self.link {
            Link::Shared => "-shared",
            Link::Static => "-static",
        });
        if self.static_bind {
            name.push_str("-staticbind");
        }
        if self.optimize {
            name.push_str("-O2");
        }
        if self.asan {
            name.push_str("-asan");
        }
        name
    }

    /// Compile and link the program (once); returns the executable. Panics with the compiler's
    /// output if it fails.
    pub fn build(&self) -> PathBuf {
        let p = paths();
        let output = p.out_subdir("bin").join(self.name());
        let mut args = self.common_args();
        args.push(p.source(&self.source).into_os_string());
        match self.link {
            Link::Shared => {
                let dir = p.shared_lib_dir().as_os_str().to_os_string();
                args.push(concat("-L", &dir));
                args.push("-lparsec_net".into());
                args.push(concat("-Wl,-rpath,", &dir));
            }
            Link::Static => {
                args.push(p.static_lib.clone().into_os_string());
                args.extend(STATIC_LIB_DEPS.iter().map(OsString::from));
            }
        }
        let library = match self.link {
            Link::Shared => &p.shared_lib,
            Link::Static => &p.static_lib,
        };
        let mut inputs = header_inputs();
        inputs.push(p.source(&self.source));
        inputs.push(library.clone());
        build_cached(self.lang, args, &output, &inputs)
    }

    fn common_args(&self) -> Vec<OsString> {
        let p = paths();
        let mut args: Vec<OsString> = self.lang.flags().iter().map(OsString::from).collect();
        args.push(if self.optimize { "-O2" } else { "-O0" }.into());
        args.push("-g".into());
        args.push(concat("-I", p.include_dir.as_os_str()));
        args.push(concat("-I", p.source("c").as_os_str()));
        if self.static_bind {
            args.push("-DPARSEC_NET_STATIC_BIND".into());
        }
        if self.asan {
            args.extend(ASAN_FLAGS.iter().map(OsString::from));
        }
        args
    }
}

/// Compile `ffi-tests/<source>` to an object file only (`-c`) with the language's flags plus
/// `extra` (e.g. `-DPARSEC_NET_STATIC_BIND`). Returns the compiler's complaint on failure.
pub fn compile_only(
    source: &str,
    lang: Lang,
    extra: &[&str],
    tag: &str,
) -> Result<PathBuf, String> {
    let p = paths();
    let stem = Path::new(source)
        .file_stem()
        .map_or("object".into(), |s| s.to_string_lossy());
    let output = p.out_subdir("obj").join(format!("{stem}-{tag}.o"));
    let mut args: Vec<OsString> = lang.flags().iter().map(OsString::from).collect();
    args.extend(extra.iter().map(OsString::from));
    args.push(concat("-I", p.include_dir.as_os_str()));
    args.push("-c".into());
    args.push(p.source(source).into_os_string());
    compile_to(lang, &args, &output).map(|()| output)
}

/// Build `ffi-tests/<source>` as a shared library `<out>/<dir>/<file_name>` the way a backend is
/// built: C99 with the warning flags, `-fPIC -shared -fvisibility=hidden`.
pub fn shared_object(source: &str, dir: &str, file_name: &str, asan: bool) -> PathBuf {
    let p = paths();
    let output = p.out_subdir(dir).join(file_name);
    let mut args: Vec<OsString> = C_FLAGS.iter().map(OsString::from).collect();
    args.extend(["-O1", "-g", "-fPIC", "-shared", "-fvisibility=hidden"].map(OsString::from));
    if asan {
        args.extend(ASAN_FLAGS.iter().map(OsString::from));
    }
    args.push(concat("-I", p.include_dir.as_os_str()));
    args.push(p.source(source).into_os_string());
    let mut inputs = header_inputs();
    inputs.push(p.source(source));
    build_cached(Lang::C, args, &output, &inputs)
}

fn concat(prefix: &str, value: &std::ffi::OsStr) -> OsString {
    let mut s = OsString::from(prefix);
    s.push(value);
    s
}

/// Every header a program may include: `include/*.h` and the `.h` files of `ffi-tests/c/**`.
fn header_inputs() -> Vec<PathBuf> {
    let p = paths();
    let mut headers = Vec::new();
    for dir in [p.include_dir.clone(), p.source("c"), p.source("c/bad")] {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            headers.extend(
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|path| path.extension().is_some_and(|x| x == "h")),
            );
        }
    }
    headers
}

/// Build `output` with `args` unless this process already did, or an earlier process built it
/// from the same command line and it is newer than every input.
fn build_cached(lang: Lang, args: Vec<OsString>, output: &Path, inputs: &[PathBuf]) -> PathBuf {
    type Cell = Arc<OnceLock<Result<PathBuf, String>>>;
    static BUILT: OnceLock<Mutex<HashMap<PathBuf, Cell>>> = OnceLock::new();
    let cell: Cell = {
        let mut map = BUILT
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.entry(output.to_path_buf()).or_default().clone()
    };
    let result = cell.get_or_init(|| {
        let command_line = format!("{:?} {:?}", lang.compiler(), args);
        let record = sidecar(output);
        if is_up_to_date(output, inputs)
            && std::fs::read_to_string(&record).ok() == Some(command_line.clone())
        {
            return Ok(output.to_path_buf());
        }
        compile_to(lang, &args, output)?;
        std::fs::write(&record, command_line)
            .map_err(|e| format!("writing {}: {e}", record.display()))?;
        Ok(output.to_path_buf())
    });
    match result {
        Ok(path) => path.clone(),
        Err(message) => panic!("{message}"),
    }
}

fn sidecar(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_os_string();
    name.push(".cmd");
    PathBuf::from(name)
}

fn is_up_to_date(output: &Path, inputs: &[PathBuf]) -> bool {
    let modified = |p: &Path| -> Option<SystemTime> { p.metadata().ok()?.modified().ok() };
    let Some(built) = modified(output) else {
        return false;
    };
    inputs
        .iter()
        .all(|input| modified(input).is_some_and(|t| t < built))
}

/// Run the compiler with `args -o <temporary>` and rename the result to `output` (no flags are
/// added: `args` holds all of them). Returns the compiler's complaint on failure.
pub fn compile_to(lang: Lang, args: &[OsString], output: &Path) -> Result<(), String> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut temporary = output.as_os_str().to_os_string();
    temporary.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let temporary = PathBuf::from(temporary);
    let mut command = Command::new(lang.compiler());
    command.args(args).arg("-o").arg(&temporary);
    let shown = format!("{command:?}");
    let result = run(command, COMPILE_TIMEOUT);
    if !result.status.success() {
        let _ = std::fs::remove_file(&temporary);
        return Err(format!(
            "compiling failed ({}):\n{shown}\n{}{}",
            result.status, result.stdout, result.stderr
        ));
    }
    std::fs::rename(&temporary, output).map_err(|e| {
        format!(
            "renaming {} to {}: {e}",
            temporary.display(),
            output.display()
        )
    })
}
