//! Where things are: the cargo profile directory the tests were built into, the parsec-net
//! libraries in it, the C headers and sources, and the harness's own output directory.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;

/// Every location the harness uses.
#[derive(Debug)]
pub struct Paths {
    /// `target/<profile>`.
    pub profile_dir: PathBuf,
    /// `libparsec_net.so` (the newest of `<profile>/` and `<profile>/deps/`).
    pub shared_lib: PathBuf,
    /// `libparsec_net.a` (the newest of `<profile>/` and `<profile>/deps/`).
    pub static_lib: PathBuf,
    /// The repository's `include/` (parsec_net.h, parsec_net_backend.h).
    pub include_dir: PathBuf,
    /// `ffi-tests/` (holds `c/` and `cpp/`).
    pub source_dir: PathBuf,
    /// `<target>/ffi-tests/<profile>/`: everything the harness builds.
    pub out_dir: PathBuf,
}

impl Paths {
    /// A source file of `ffi-tests/`, e.g. `c/exchange.c`.
    pub fn source(&self, relative: &str) -> PathBuf {
        self.source_dir.join(relative)
    }

    /// The directory holding `libparsec_net.so` (linked with `-L` and used as the rpath).
    pub fn shared_lib_dir(&self) -> &Path {
        self.shared_lib
            .parent()
            .expect("a library file has a directory")
    }

    /// A subdirectory of the output directory, created if needed.
    pub fn out_subdir(&self, name: &str) -> PathBuf {
        let dir = self.out_dir.join(name);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        dir
    }
}

/// The locations, found once per process. Panics with instructions if the libraries are missing.
pub fn paths() -> &'static Paths {
    static PATHS: OnceLock<Paths> = OnceLock::new();
    PATHS.get_or_init(find)
}

fn find() -> Paths {
    let source_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let repo_dir = source_dir
        .parent()
        .expect("ffi-tests is inside the repository")
        .to_path_buf();
    let profile_dir = profile_dir(&repo_dir);
    let target_dir = profile_dir.parent().unwrap_or(&profile_dir).to_path_buf();
    let profile = profile_dir
        .file_name()
        .map_or("debug".into(), |n| n.to_string_lossy().into_owned());
    let shared_lib = library(&profile_dir, "libparsec_net.so");
    let static_lib = library(&profile_dir, "libparsec_net.a");
    refuse_stale_loaded_libraries(&profile_dir);
    let out_dir = target_dir.join("ffi-tests").join(profile);
    std::fs::create_dir_all(&out_dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", out_dir.display()));
    Paths {
        profile_dir,
        shared_lib,
        static_lib,
        include_dir: repo_dir.join("include"),
        source_dir,
        out_dir,
    }
}

/// `target/<profile>`: from the running executable (`target/<profile>/deps/<test>` or
/// `target/<profile>/examples/<example>`), else from `CARGO_TARGET_DIR` (or `<repo>/target`) and
/// the build's profile.
fn profile_dir(repo_dir: &Path) -> PathBuf {
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let name = dir.file_name().and_then(|n| n.to_str());
            if matches!(name, Some("deps") | Some("examples")) {
                if let Some(profile) = dir.parent() {
                    return profile.to_path_buf();
                }
            }
        }
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_dir.join("target"));
    let target = if target.is_relative() {
        repo_dir.join(target)
    } else {
        target
    };
    target.join(if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    })
}

/// The shared libraries the games load at run time.
const LOADED_LIBRARIES: [&str; 4] = [
    "libparsec_net.so",
    "libparsec_backend_udp.so",
    "libparsec_backend_ipx.so",
    "libparsec_backend_trace.so",
];

/// `cargo test` runs the tests with `LD_LIBRARY_PATH=<profile>:<profile>/deps:...`, and the games
/// inherit it; it wins over their rpath. When the libraries were rebuilt as dev-dependencies
/// into `deps/` only (`cargo test -p parsec-net-ffi-tests` after a change, without `cargo
/// build`), the games would silently load the older copies in `<profile>/`. Refuse to run then.
fn refuse_stale_loaded_libraries(profile_dir: &Path) {
    let search = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let dirs: Vec<&Path> = search.split(':').map(Path::new).collect();
    let deps = profile_dir.join("deps");
    let first = |dir: &Path| dirs.iter().position(|d| *d == dir);
    let profile_first = match (first(profile_dir), first(&deps)) {
        (Some(p), Some(d)) => p < d,
        (Some(_), None) => true,
        _ => false,
    };
    if !profile_first {
        return;
    }
    for file in LOADED_LIBRARIES {
        if let Some(reason) = stale_copy(&profile_dir.join(file), &deps.join(file)) {
            panic!(
                "{} {reason}, and LD_LIBRARY_PATH puts {} first, so the games would load the \
                 old copy: run `cargo build --workspace` before the tests",
                profile_dir.join(file).display(),
                profile_dir.display()
            );
        }
    }
}

/// Why `uplifted` is an older copy than `built` (None if it is the same file, or not older, or
/// has the same bytes: cargo sometimes relinks a dependency without a change in its code, or
/// either is missing).
fn stale_copy(uplifted: &Path, built: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let (old, new) = (uplifted.metadata().ok()?, built.metadata().ok()?);
    let same = old.dev() == new.dev() && old.ino() == new.ino();
    if same || old.modified().ok()? >= new.modified().ok()? {
        return None;
    }
    if old.len() == new.len() && std::fs::read(uplifted).ok()? == std::fs::read(built).ok()? {
        return None;
    }
    Some(format!(
        "is older than {} and differs from it",
        built.display()
    ))
}

/// Why the program `binary` is older than the code it is built from (`sources`: files, or
/// directories searched for `.rs` files and `Cargo.toml`), if it is: the file changed last
/// after it. `cargo test -p parsec-net-ffi-tests` rebuilds the library as a dev-dependency but
/// not the `parsecnet` binary, so a test of a changed server would run the old one.
pub fn stale_binary(binary: &Path, sources: &[PathBuf]) -> Option<String> {
    let built = binary.metadata().ok()?.modified().ok()?;
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    let mut pending: Vec<PathBuf> = sources.to_vec();
    while let Some(path) = pending.pop() {
        let Ok(meta) = path.metadata() else { continue };
        if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                pending.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
            }
            continue;
        }
        let is_code = path.extension().is_some_and(|e| e == "rs")
            || path.file_name().is_some_and(|n| n == "Cargo.toml");
        let Ok(modified) = meta.modified() else {
            continue;
        };
        if is_code && newest.as_ref().is_none_or(|(t, _)| modified > *t) {
            newest = Some((modified, path));
        }
    }
    let (changed, file) = newest?;
    (changed > built).then(|| format!("is older than {}", file.display()))
}

/// The newest of `<profile>/<file>` and `<profile>/deps/<file>`.
fn library(profile_dir: &Path, file: &str) -> PathBuf {
    let candidates = [profile_dir.join(file), profile_dir.join("deps").join(file)];
    let modified = |p: &PathBuf| -> Option<SystemTime> { p.metadata().ok()?.modified().ok() };
    candidates
        .iter()
        .filter_map(|p| modified(p).map(|t| (t, p)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| {
            panic!(
                "{file} not found in {} or its deps/: build the library first with \
                 `cargo build --workspace` (or run `cargo test -p parsec-net-ffi-tests`, which \
                 builds it as a dev-dependency)",
                profile_dir.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::{stale_binary, stale_copy};
    use std::time::{Duration, SystemTime};

    #[test]
    fn an_older_separate_copy_is_stale_and_a_hard_link_is_not() {
        let dir = std::env::temp_dir().join(format!("parsec-paths-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("deps")).unwrap();
        let (uplifted, built) = (dir.join("lib.so"), dir.join("deps").join("lib.so"));
        std::fs::write(&uplifted, b"old").unwrap();
        std::fs::write(&built, b"new").unwrap();
        let set_earlier = |path: &std::path::Path| {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(SystemTime::now() - Duration::from_secs(60))
                .unwrap();
        };
        set_earlier(&uplifted);
        assert!(stale_copy(&uplifted, &built).is_some());
        // Newer than the build, or missing: not stale.
        assert!(stale_copy(&built, &uplifted).is_none());
        assert!(stale_copy(&dir.join("missing.so"), &built).is_none());
        // An older copy with the same bytes (a relink without a change): not stale.
        std::fs::write(&uplifted, b"new").unwrap();
        set_earlier(&uplifted);
        assert!(stale_copy(&uplifted, &built).is_none());
        // What `cargo build` leaves: one file under two names.
        std::fs::remove_file(&uplifted).unwrap();
        std::fs::hard_link(&built, &uplifted).unwrap();
        assert!(stale_copy(&uplifted, &built).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_program_older_than_a_source_file_is_stale() {
        let dir = std::env::temp_dir().join(format!("parsec-binary-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src/nested")).unwrap();
        let (binary, source) = (dir.join("parsecnet"), dir.join("src/nested/lib.rs"));
        std::fs::write(&source, b"fn main() {}").unwrap();
        std::fs::write(dir.join("src/notes.txt"), b"").unwrap();
        std::fs::write(&binary, b"program").unwrap();
        let at = |path: &std::path::Path, age: u64| {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(SystemTime::now() - Duration::from_secs(age))
                .unwrap();
        };
        let sources = [dir.join("src")];
        at(&source, 120);
        at(&binary, 60);
        assert_eq!(stale_binary(&binary, &sources), None);
        // A source changed after the build (another kind of file does not count).
        at(&source, 30);
        at(&dir.join("src/notes.txt"), 120);
        let reason = stale_binary(&binary, &sources).expect("stale");
        assert!(reason.contains("lib.rs"), "{reason}");
        at(&source, 120);
        at(&dir.join("src/notes.txt"), 10);
        assert_eq!(stale_binary(&binary, &sources), None);
        // No program: nothing to call stale (its absence is reported where it is run).
        assert_eq!(stale_binary(&dir.join("missing"), &sources), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
