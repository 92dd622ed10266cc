#!/usr/bin/env bash
# Runs every fuzz target in net-core/fuzz under libFuzzer (cargo fuzz, nightly) for SECONDS
# each: `tools/fuzz.sh 10` is the short run of the test suite, `tools/fuzz.sh 600` a longer one
# (docs/fuzzing.md); a short run starts from a sample of the corpus. Installs the nightly
# toolchain and cargo-fuzz when they are missing. The corpus grows in net-core/fuzz/corpus/ (not
# committed); an input that fails a target is copied to net-core/fuzz/regressions/<target>/,
# which the stable test suite replays from then on.
# Usage: tools/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../net-core/fuzz"
seconds=${1:-60}
shift || true

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz: installing the nightly toolchain (cargo fuzz needs it)"
    rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null; then
    echo "fuzz: installing cargo-fuzz"
    cargo install cargo-fuzz --locked --quiet
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# libFuzzer replays the whole corpus before it looks at the clock, and a structure-aware
# target's corpus grows to thousands of inputs in a long run (relay_datagrams: about 3,000
# after 15 minutes, several seconds to replay): a short run starts from a sample of it and
# adds what it finds to the corpus afterwards.
SAMPLE=500
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

failed=()
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "regressions/$target"
    echo "== fuzz $target for ${seconds}s =="
    corpus="corpus/$target"
    if [ "$seconds" -le 60 ] && [ "$(find "$corpus" -type f | wc -l)" -gt "$SAMPLE" ]; then
        corpus="$scratch/$target"
        mkdir -p "$corpus"
        find "corpus/$target" -type f | shuf -n "$SAMPLE" | xargs -r cp -t "$corpus"
        echo "fuzz: starting from $SAMPLE of the corpus's inputs (a short run)"
    fi
    if ! cargo +nightly fuzz run "$target" "$corpus" "regressions/$target" -- \
        -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 2>"corpus/$target.log"; then
        tail -40 "corpus/$target.log"
        for artifact in artifacts/"$target"/*; do
            [ -f "$artifact" ] || continue
            cp "$artifact" "regressions/$target/"
            echo "fuzz: saved $artifact to regressions/$target/ (add it to the repository)"
        done
        failed+=("$target")
    else
        grep -E '^stat::number_of_executed_units|^Done [0-9]+ runs' "corpus/$target.log" | tail -2
    fi
    if [ "$corpus" != "corpus/$target" ]; then
        cp -n "$corpus"/* "corpus/$target/" 2>/dev/null || true
    fi
done

if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: FAILED: ${failed[*]}"
    exit 1
fi
echo "fuzz: every target ran ${seconds}s without a failure"
