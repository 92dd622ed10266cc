//! Records the directory this build writes its libraries into (target/<profile>), so the backend
//! loader can find backends built beside the core during development and tests.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out.
    if let Some(profile_dir) = out_dir.ancestors().nth(3) {
        println!(
            "cargo:rustc-env=PARSEC_NET_BUILD_TARGET_DIR={}",
            profile_dir.display()
        );
    }
}
