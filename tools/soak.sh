#!/usr/bin/env bash
# The soak test of issue 9 (docs/soak.md): a parsecnet gameserver on 127.0.0.1 and 64 C game
# clients joining, leaving and switching protocol for MINUTES minutes (default 10); checks that
# the server's memory and file descriptors do not grow and that no reliable event is lost.
# Needs no root. SOAK_CLIENTS (default 64) and SOAK_SEED (repeat a run's choices) are honoured.
#   tools/soak.sh [MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
if ! [[ $minutes =~ ^[0-9]+$ ]] || (( minutes < 1 )); then
    echo "usage: tools/soak.sh [MINUTES]   (a whole number of minutes, at least 1; default 10)" >&2
    exit 2
fi
cargo build --workspace --quiet
cargo test -p parsec-net-ffi-tests --quiet --no-run
export SOAK_SECONDS=$(( minutes * 60 )) SOAK_CLIENTS=${SOAK_CLIENTS:-64}
echo "soak: ${SOAK_CLIENTS} clients for ${minutes} min (SOAK_SEED=${SOAK_SEED:-random})"
exec cargo test -p parsec-net-ffi-tests --quiet --test soak -- --nocapture --test-threads 1
