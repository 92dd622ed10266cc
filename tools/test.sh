#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what the tests need, checks formatting and lints,
# builds every crate (the C-ABI library, the backends, the parsecnet program), then runs every
# test: Rust unit and integration tests, the simulator runs, and the C/C++ programs in ffi-tests
# (shared, static, static-bind, AddressSanitizer, valgrind). Tests that need root say SKIPPED.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

tools/ensure-packages.sh cc=gcc c++=g++ valgrind=valgrind ip=iproute2 tmux=tmux cmake=cmake pkg-config=pkg-config make=make chromium=chromium

step() { printf '\n== %s == (%d s into the run)\n' "$*" "$SECONDS"; }
step "format"
cargo fmt --all -- --check
step "lint"
cargo clippy --workspace --all-targets --quiet -- -D warnings
step "build"
# The protocol core's own tests build and run once, in the checked profile below.
cargo build --workspace --exclude parsec-net-core --all-targets --quiet
step "test"
cargo test --workspace --exclude parsec-net-core --no-fail-fast -- --test-threads="${TEST_THREADS:-2}"
step "test the protocol core, optimised as games and servers ship it, with debug assertions"
# Optimised code can differ from what a debug build runs (a release-only miscompile once lost a
# server counter: server/connections.rs), and its simulations run many times faster; the
# `checked` profile (Cargo.toml) is release with debug assertions on.
cargo test --profile checked -p parsec-net-core --no-fail-fast -- --test-threads="${TEST_THREADS:-2}"
step "fuzz (short run of every target; docs/fuzzing.md for longer runs)"
tools/fuzz.sh "${FUZZ_SECONDS:-5}"
step "all tests passed"
