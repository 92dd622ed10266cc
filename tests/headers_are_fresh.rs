//! The committed headers in include/ must be exactly what build.rs generates from the current
//! sources. In CI (`CI` set) build.rs does not touch include/, so a stale header fails here.

use std::path::Path;

#[test]
fn committed_headers_match_what_build_rs_generates() {
    let generated = Path::new(env!("PARSEC_NET_GENERATED_INCLUDE"));
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    for name in ["parsec_net.h", "parsec_net_backend.h"] {
        let want = std::fs::read_to_string(generated.join(name)).expect("generated header");
        let have = std::fs::read_to_string(committed.join(name)).unwrap_or_else(|e| {
            panic!("include/{name} is missing ({e}); run `cargo build` and commit it")
        });
        assert!(
            want == have,
            "include/{name} is stale: it differs from what build.rs generates; run `cargo build` \
             (without CI set) and commit include/"
        );
    }
}
