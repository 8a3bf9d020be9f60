#!/usr/bin/env bash
# Instructions per dispatch of `add`, for every variant of `src/bin/dispatch-count.rs`, counted by
# callgrind inside `run_all` only (the inputs are built before it). Independent of the machine's load: a
# cross-check of the timed ratios of `benches/dispatch.rs`. "x floor" is against the hand-written dispatch
# of one call (`floor`); "x batch" against the hand-written equivalent of the pipeline's observable work
# (`floor_batch`: the same calls in, messages and four events per call out, nothing else).
#
# Usage: benches/callgrind.sh [N]   (default 10000 calls per variant; needs valgrind)
set -euo pipefail
N="${1:-10000}"
cd "$(dirname "$0")"
cargo build --quiet --release --bin dispatch-count
BIN="${CARGO_TARGET_DIR:-target}/release/dispatch-count"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/yiem-callgrind.XXXXXX")"
echo "callgrind output in $OUT" >&2

count() {
    valgrind --tool=callgrind --toggle-collect='*run_all*' --callgrind-out-file="$OUT/$1.out" \
        "$BIN" "$1" "$N" >/dev/null 2>"$OUT/$1.log"
    awk '/^summary:/ { print $2 }' "$OUT/$1.out"
}

for kind in value string; do
    floor=$(count "floor_$kind")
    batch=$(count "floor_batch_$kind")
    printf '\n%-26s %12s %8s %8s\n' "arguments as a JSON $kind" "instr/call" "x floor" "x batch"
    for variant in floor floor_batch yiem_execute yiem_get_execute yiem_pipeline yiem_pipeline_quiet rmcp rig; do
        case "$variant" in
            floor) total=$floor ;;
            floor_batch) total=$batch ;;
            *) total=$(count "${variant}_$kind") ;;
        esac
        awk -v v="$variant" -v t="$total" -v f="$floor" -v b="$batch" -v n="$N" \
            'BEGIN { printf "%-26s %12.0f %8.2f %8.2f\n", v, t / n, t / f, t / b }'
    done
done
