//! Benchmark, not a test: builds `c/bench_jump_table.c` with -O2 against the shared library of
//! this profile and runs it, printing ns per NETs_CompareNodes call through the jump table and
//! through the exported symbol. Arguments are passed on (millions of calls, repetitions).
//!
//!     cargo run -p parsec-net-ffi-tests --example bench_jump_table --release [-- MILLIONS [REPS]]

use std::process::Command;
use std::time::Duration;

use parsec_net_ffi_tests::{run, Build};

fn main() {
    let program = Build::c("c/bench_jump_table.c").optimized().build();
    let mut command = Command::new(&program);
    command.args(std::env::args().skip(1));
    let out = run(command, Duration::from_secs(600));
    print!("{}", out.stdout);
    eprint!("{}", out.stderr);
    if !cfg!(debug_assertions) {
        println!(
            "(library built with the release profile; program {})",
            program.display()
        );
    } else {
        println!("(library built with the debug profile: add --release for meaningful figures)");
    }
    std::process::exit(out.status.code().unwrap_or(1));
}
