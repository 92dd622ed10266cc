//! parsec-net as C and C++ users get it: `tools/install.sh` installs the already-built libraries,
//! headers, backends and the parsecnet program into a fresh prefix (`--no-build`, the profile the
//! tests were built in), and the projects of `ffi-tests/consumers/` are built against that prefix
//! from copies outside the source tree, the way a game's build finds an installed library:
//!
//! - the CMake project (`find_package(ParsecNet)`), linked with `ParsecNet::parsec_net` and with
//!   `ParsecNet::parsec_net_static`;
//! - the Makefile project (`pkg-config parsec-net` and `pkg-config --static parsec-net-static`).
//!
//! Each program loads the UDP backend with `net.api udp`, reports which backend file it loaded,
//! sends a datagram to itself on loopback and prints OK. The programs run from their build
//! directory without `LD_LIBRARY_PATH` (which cargo points at the build tree): the shared-linked
//! ones must find `libparsec_net.so` through the rpath the metadata gives, and the backend beside
//! it in the prefix without `PARSEC_NET_BACKEND_PATH`; the static ones find it with
//! `PARSEC_NET_BACKEND_PATH` set to the installed backend directory. The installed `parsecnet`
//! finds its backends beside itself.
//!
//! Without `cmake` the CMake test prints SKIPPED (tools/test.sh installs it), likewise without
//! `pkg-config` or `make`. Without a built `parsecnet` (`cargo test -p parsec-net-ffi-tests` alone
//! does not build it) every test prints SKIPPED.
//!
//! Everything goes to `<target>/ffi-tests/<profile>/install-consumers/<pid>/`; directories of
//! processes that no longer run are removed when the next run starts, so the last one stays for a
//! look after a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use parsec_net_ffi_tests::paths;
use parsec_net_ffi_tests::process::{run, Output};

const INSTALL_TIMEOUT: Duration = Duration::from_secs(180);
const BUILD_TIMEOUT: Duration = Duration::from_secs(300);
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// The installation all tests of this process share.
struct Installed {
    /// The prefix, with symbolic links resolved (as the library reports the paths it loads).
    prefix: PathBuf,
    /// The per-process working directory holding the prefix and the consumer builds.
    work: PathBuf,
}

impl Installed {
    fn path(&self, relative: &str) -> PathBuf {
        self.prefix.join(relative)
    }

    /// `PREFIX/lib/parsec-net`: the backend copies for static programs and parsecnet.
    fn backend_dir(&self) -> PathBuf {
        self.path("lib/parsec-net")
    }
}

/// The repository (the parent of `ffi-tests/`).
fn repo_dir() -> PathBuf {
    paths()
        .source_dir
        .parent()
        .expect("ffi-tests is inside the repository")
        .to_path_buf()
}

/// The installation, made once per process; `None` (after printing why) when it cannot be made
/// here.
fn installed() -> Option<&'static Installed> {
    static INSTALLED: OnceLock<Option<Installed>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(install).as_ref();
    if installed.is_none() {
        println!("SKIPPED: {}", skip_reason().unwrap_or_default());
    }
    installed
}

/// Why nothing can be installed from this build, if so.
fn skip_reason() -> Option<String> {
    let profile_dir = &paths().profile_dir;
    let profile = profile_dir.file_name().and_then(|n| n.to_str());
    if !matches!(profile, Some("debug") | Some("release")) {
        return Some(format!(
            "tools/install.sh installs the debug or release profile, not {}",
            profile_dir.display()
        ));
    }
    let program = profile_dir.join("parsecnet");
    if !program.is_file() {
        return Some(format!(
            "{} is not built (run `cargo build --workspace` first; tools/test.sh does)",
            program.display()
        ));
    }
    // Built but older than its code: a panic that says so, not a test of the old program.
    parsec_net_ffi_tests::server::parsecnet();
    None
}

fn install() -> Option<Installed> {
    if skip_reason().is_some() {
        return None;
    }
    let p = paths();
    let base = p.out_subdir("install-consumers");
    remove_dead_runs(&base);
    let work = base.join(std::process::id().to_string());
    if work.exists() {
        std::fs::remove_dir_all(&work)
            .unwrap_or_else(|e| panic!("cannot remove {}: {e}", work.display()));
    }
    std::fs::create_dir_all(&work)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", work.display()));
    let work = work.canonicalize().expect("the working directory exists");
    let prefix = work.join("prefix");

    run_install(&prefix).assert_success("tools/install.sh");

    // Installing again over the same prefix works, and removes what the earlier install made
    // and this one does not (here a backend planted in the manifest).
    let manifest = prefix.join("lib/parsec-net/install-manifest.txt");
    let gone = prefix.join("lib/libparsec_backend_gone.so");
    std::fs::write(&gone, b"not a library").expect("planting a file in the prefix");
    let mut listed = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("reading {}: {e}", manifest.display()));
    listed.push_str("lib/libparsec_backend_gone.so\n");
    std::fs::write(&manifest, listed).expect("extending the manifest");
    let again = run_install(&prefix);
    again.assert_success("tools/install.sh over an existing installation");
    assert!(
        !gone.exists(),
        "a file of an earlier install that this one does not make was left in place\n{}",
        again.transcript()
    );

    Some(Installed { prefix, work })
}

/// `tools/install.sh --prefix PREFIX --no-build --debug|--release` for the tests' own build.
fn run_install(prefix: &Path) -> Output {
    let p = paths();
    let profile = p
        .profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug");
    let target_dir = p
        .profile_dir
        .parent()
        .expect("target/<profile> has a parent");
    let mut command = Command::new("bash");
    command
        .arg(repo_dir().join("tools/install.sh"))
        .arg("--prefix")
        .arg(prefix)
        .arg("--no-build")
        .arg(format!("--{profile}"))
        .env("CARGO_TARGET_DIR", target_dir)
        .env_remove("DESTDIR");
    run(command, INSTALL_TIMEOUT)
}

/// Remove the working directories of earlier test processes that are no longer running.
fn remove_dead_runs(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether `program --version` runs.
fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// A command as a user's shell would run it: in the working directory, without the variables
/// cargo sets that point into the build tree (`LD_LIBRARY_PATH`) and without
/// `PARSEC_NET_BACKEND_PATH`; pkg-config looks in the prefix.
fn user_command(program: impl AsRef<std::ffi::OsStr>, installed: &Installed) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(&installed.work)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("PARSEC_NET_BACKEND_PATH")
        .env("PKG_CONFIG_PATH", installed.path("lib/pkgconfig"));
    command
}

/// Copy the consumer project `ffi-tests/consumers/<name>` to `<work>/<name>-src`.
fn copy_consumer(name: &str, installed: &Installed) -> PathBuf {
    let from = paths().source("consumers").join(name);
    let to = installed.work.join(format!("{name}-src"));
    std::fs::create_dir_all(&to).unwrap_or_else(|e| panic!("cannot create {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(&from).unwrap_or_else(|e| panic!("cannot list {}: {e}", from.display()));
    for entry in entries.flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))
                .unwrap_or_else(|e| panic!("cannot copy {}: {e}", entry.path().display()));
        }
    }
    to
}

/// Run a built consumer program and check that it printed OK and loaded the UDP backend from
/// `expected_backend`.
fn check_consumer(program: &Path, backend_path: Option<&Path>, expected_backend: &Path) {
    let installed = installed().expect("installed");
    let mut command = user_command(program, installed);
    if let Some(dir) = backend_path {
        command.env("PARSEC_NET_BACKEND_PATH", dir);
    }
    let out = run(command, RUN_TIMEOUT);
    let what = program.display().to_string();
    out.assert_success(&what);
    assert!(
        out.stdout.lines().any(|line| line == "OK"),
        "{what} did not print OK\n{}",
        out.transcript()
    );
    assert_eq!(
        loaded_backend(&out),
        Some(expected_backend.to_path_buf()),
        "{what} did not load the udp backend from {}\n{}",
        expected_backend.display(),
        out.transcript()
    );
}

/// The file named in the `backend: udp (FILE), ...` line of a program's output.
fn loaded_backend(out: &Output) -> Option<PathBuf> {
    let line = out
        .stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix("backend: udp ("))?;
    line.split_once("),").map(|(path, _)| PathBuf::from(path))
}

#[test]
fn install_puts_everything_in_its_place() {
    let Some(installed) = installed() else {
        return;
    };
    for file in [
        "include/parsec-net/parsec_net.h",
        "include/parsec-net/parsec_net_backend.h",
        "lib/libparsec_net.so",
        "lib/libparsec_net.a",
        "lib/libparsec_backend_udp.so",
        "lib/parsec-net/libparsec_backend_udp.so",
        "lib/parsec-net/parsecnet",
        "bin/parsecnet",
        "lib/pkgconfig/parsec-net.pc",
        "lib/pkgconfig/parsec-net-static.pc",
        "lib/cmake/ParsecNet/ParsecNetConfig.cmake",
        "lib/cmake/ParsecNet/ParsecNetConfigVersion.cmake",
        "lib/parsec-net/install-manifest.txt",
    ] {
        assert!(
            installed.path(file).is_file(),
            "{} is missing",
            installed.path(file).display()
        );
    }
    // Every backend beside the library is also in the backend directory.
    let lib = installed.path("lib");
    for entry in std::fs::read_dir(&lib).expect("lib/ exists").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("libparsec_backend_") && name.ends_with(".so") {
            assert!(
                installed.backend_dir().join(&name).is_file(),
                "{name} is in lib/ but not in lib/parsec-net/"
            );
        }
    }
    // The headers are the repository's.
    for header in ["parsec_net.h", "parsec_net_backend.h"] {
        let source = std::fs::read(repo_dir().join("include").join(header)).expect("header");
        let copy = std::fs::read(installed.path("include/parsec-net").join(header))
            .expect("installed header");
        assert!(
            source == copy,
            "the installed {header} differs from include/{header}"
        );
    }
    // Nothing of the prefix is left out of the manifest (so a later install can clean up).
    let manifest = std::fs::read_to_string(installed.path("lib/parsec-net/install-manifest.txt"))
        .expect("manifest");
    for file in [
        "lib/libparsec_net.so",
        "bin/parsecnet",
        "lib/pkgconfig/parsec-net.pc",
    ] {
        assert!(
            manifest.lines().any(|l| l == file),
            "{file} not in the manifest:\n{manifest}"
        );
    }
}

#[test]
fn pkg_config_reports_the_installation() {
    let Some(installed) = installed() else {
        return;
    };
    if !have("pkg-config") {
        println!("SKIPPED: pkg-config not installed (tools/test.sh installs it)");
        return;
    }
    let query = |args: &[&str]| -> String {
        let mut command = user_command("pkg-config", installed);
        command.args(args);
        let out = run(command, RUN_TIMEOUT);
        out.assert_success(&format!("pkg-config {args:?}"));
        out.stdout.trim().to_string()
    };
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(query(&["--modversion", "parsec-net"]), version);
    assert_eq!(query(&["--modversion", "parsec-net-static"]), version);
    assert_eq!(
        PathBuf::from(query(&["--variable=backenddir", "parsec-net"])),
        installed.backend_dir()
    );
    let include = format!("-I{}", installed.path("include/parsec-net").display());
    assert_eq!(query(&["--cflags", "parsec-net"]), include);
    let libs = query(&["--libs", "parsec-net"]);
    let lib_dir = installed.path("lib").display().to_string();
    assert!(libs.contains(&format!("-L{lib_dir}")), "{libs}");
    assert!(libs.contains(&format!("-Wl,-rpath,{lib_dir}")), "{libs}");
    assert!(libs.contains("-lparsec_net"), "{libs}");
    // Libs.private: what a static link needs, as the harness links its static programs.
    let static_libs = query(&["--static", "--libs", "parsec-net"]);
    for lib in parsec_net_ffi_tests::compile::STATIC_LIB_DEPS {
        assert!(
            static_libs.contains(lib),
            "{lib} missing from {static_libs}"
        );
    }
    let archive = query(&["--static", "--libs", "parsec-net-static"]);
    assert!(
        archive.contains(&format!("{lib_dir}/libparsec_net.a")),
        "{archive}"
    );
}

#[test]
fn cmake_consumer_builds_and_runs_against_the_installation() {
    let Some(installed) = installed() else {
        return;
    };
    if !have("cmake") {
        println!("SKIPPED: cmake not installed (tools/test.sh installs it)");
        return;
    }
    if !have("make") {
        println!("SKIPPED: make not installed (CMake's default generator needs it)");
        return;
    }
    let source = copy_consumer("cmake", installed);
    let build = installed.work.join("cmake-build");
    let mut configure = user_command("cmake", installed);
    configure
        .arg("-S")
        .arg(&source)
        .arg("-B")
        .arg(&build)
        .arg(format!(
            "-DCMAKE_PREFIX_PATH={}",
            installed.prefix.display()
        ))
        .arg("-DCMAKE_BUILD_TYPE=Debug");
    let out = run(configure, BUILD_TIMEOUT);
    out.assert_success("cmake configure");
    assert!(
        out.stdout
            .contains(&format!("ParsecNet {}", env!("CARGO_PKG_VERSION"))),
        "find_package(ParsecNet) did not report the installed version\n{}",
        out.transcript()
    );
    let mut compile = user_command("cmake", installed);
    compile.arg("--build").arg(&build).arg("--verbose");
    run(compile, BUILD_TIMEOUT).assert_success("cmake --build");

    check_consumer(
        &build.join("consumer_shared"),
        None,
        &installed.path("lib/libparsec_backend_udp.so"),
    );
    check_consumer(
        &build.join("consumer_static"),
        Some(&installed.backend_dir()),
        &installed.backend_dir().join("libparsec_backend_udp.so"),
    );
}

#[test]
fn pkg_config_consumers_build_and_run_against_the_installation() {
    let Some(installed) = installed() else {
        return;
    };
    for tool in ["pkg-config", "make"] {
        if !have(tool) {
            println!("SKIPPED: {tool} not installed (tools/test.sh installs pkg-config)");
            return;
        }
    }
    let source = copy_consumer("pkgconfig", installed);
    let mut make = user_command("make", installed);
    make.arg("-C").arg(&source).arg("CXXFLAGS=-O0 -g");
    run(make, BUILD_TIMEOUT).assert_success("make (pkg-config consumers)");

    check_consumer(
        &source.join("consumer-shared"),
        None,
        &installed.path("lib/libparsec_backend_udp.so"),
    );
    check_consumer(
        &source.join("consumer-static"),
        Some(&installed.backend_dir()),
        &installed.backend_dir().join("libparsec_backend_udp.so"),
    );
}

#[test]
fn installed_parsecnet_finds_its_backends() {
    let Some(installed) = installed() else {
        return;
    };
    let mut command = user_command(installed.path("bin/parsecnet"), installed);
    command.args([
        "console",
        "--exec",
        "net.udp.bind 127.0.0.1; net.port 0; net.api udp; status",
    ]);
    let out = run(command, RUN_TIMEOUT);
    out.assert_success("the installed parsecnet");
    assert_eq!(
        loaded_backend(&out),
        Some(installed.backend_dir().join("libparsec_backend_udp.so")),
        "the installed parsecnet did not load the udp backend installed beside it\n{}",
        out.transcript()
    );
}
