//! The backends the harness builds: the real C backend `libparsec_backend_unixdgram.so` and the
//! deliberately broken ones of `c/bad/`, plus a text file named like a library; and where cargo
//! put the Rust backends (IPX).

use std::path::PathBuf;

use crate::compile::shared_object;
use crate::paths::paths;

/// The directory holding the Rust backend `libparsec_backend_NAME.so` that cargo built (the newest
/// of `target/<profile>/` and its `deps/`), for `PARSEC_NET_BACKEND_PATH`; a panic saying how to
/// build it if it is missing.
pub fn built_backend_dir(name: &str) -> PathBuf {
    let profile = &paths().profile_dir;
    let file = format!("libparsec_backend_{name}.so");
    let modified = |p: &PathBuf| p.metadata().ok()?.modified().ok();
    [profile.clone(), profile.join("deps")]
        .into_iter()
        .filter_map(|dir| modified(&dir.join(&file)).map(|t| (t, dir)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, dir)| dir)
        .unwrap_or_else(|| {
            panic!(
                "{file} not found in {} or its deps/: build it with `cargo build --workspace`",
                profile.display()
            )
        })
}

/// File name of the C backend, as the loader looks it up for `net.api unixdgram`.
pub const UNIXDGRAM_FILE: &str = "libparsec_backend_unixdgram.so";

/// Build the C backend into `<out>/backends/` (or `<out>/backends-asan/` with AddressSanitizer)
/// and return its path. The directory holds nothing else, so it can be PARSEC_NET_BACKEND_PATH.
pub fn unixdgram(asan: bool) -> PathBuf {
    let dir = if asan { "backends-asan" } else { "backends" };
    shared_object("c/backend_unixdgram.c", dir, UNIXDGRAM_FILE, asan)
}

/// One broken backend: the `KIND` `bad_backends.c` knows it by, and its path.
#[derive(Clone, Debug)]
pub struct BadBackend {
    pub kind: &'static str,
    pub path: PathBuf,
}

impl BadBackend {
    /// The `KIND=PATH` argument of `bad_backends`.
    pub fn arg(&self) -> String {
        format!("{}={}", self.kind, self.path.display())
    }
}

/// Build every broken backend into `<out>/bad/` (and write the fake library, and pick a path
/// that does not exist). In the order `bad_backends` tries them.
pub fn bad_backends() -> Vec<BadBackend> {
    let dir = paths().out_subdir("bad");
    let missing = dir.join("libparsec_backend_missing.so");
    let _ = std::fs::remove_file(&missing);
    let not_a_library = dir.join("libparsec_backend_notalib.so");
    std::fs::write(
        &not_a_library,
        "This is a text file with a library's name, not a library.\n",
    )
    .unwrap_or_else(|e| panic!("writing {}: {e}", not_a_library.display()));
    let built = |kind: &'static str, stem: &str| BadBackend {
        kind,
        path: shared_object(
            &format!("c/bad/{stem}.c"),
            "bad",
            &format!("libparsec_backend_{stem}.so"),
            false,
        ),
    };
    vec![
        BadBackend {
            kind: "missing",
            path: missing,
        },
        BadBackend {
            kind: "notlib",
            path: not_a_library,
        },
        built("noentry", "no_entry"),
        built("nullentry", "entry_null"),
        built("newer", "abi_newer"),
        built("small", "vtable_small"),
        built("nullsend", "null_send"),
        built("openfails", "open_fails"),
        built("opennosocket", "open_no_socket"),
        built("undefsym", "undefined_symbol"),
        built("abizero", "abi_zero"),
        built("payloadzero", "payload_zero"),
        built("payloadhuge", "payload_huge"),
        built("namebad", "name_bad"),
        built("nullopen", "null_open"),
    ]
}

/// File name of the second C backend, as the loader looks it up for `net.api loopudp`.
pub const LOOPUDP_FILE: &str = "libparsec_backend_loopudp.so";

/// Build `c/backend_loopudp.c` (UDP on 127.0.0.1, written from the backend guide alone; it
/// carries the client-server protocols) into `<out>/backends-loopudp/` and return its path.
pub fn loopudp() -> PathBuf {
    shared_object(
        "c/backend_loopudp.c",
        "backends-loopudp",
        LOOPUDP_FILE,
        false,
    )
}

/// Build the broken backend `c/bad/STEM.c` into `<out>/bad/` and return its path.
pub fn bad_backend(stem: &str) -> PathBuf {
    shared_object(
        &format!("c/bad/{stem}.c"),
        "bad",
        &format!("libparsec_backend_{stem}.so"),
        false,
    )
}
