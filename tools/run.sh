#!/usr/bin/env bash
# Builds everything (release) and runs `parsecnet` with the given arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --workspace --release --quiet
exec target/release/parsecnet "$@"
