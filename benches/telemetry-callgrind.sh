#!/usr/bin/env bash
# Stop 40 (issue 36): what yiem's telemetry costs per call of the pipeline (`ToolExecutor::execute` of a
# one-call batch, as in `callgrind.sh`), in instructions counted by callgrind inside `run_all` only:
#   - `dispatch-count` built with yiem-core's default features, no subscriber (the reference);
#   - built with `--features otel` (yiem-core's `otel`: the bridge, the metrics), still no subscriber;
#   - the `otel` build with a live OpenTelemetry pipeline (`yiem_pipeline_otel_*`: every span bridged,
#     built by the SDK and handed to an exporter, see `dispatch-count`'s `otel` module).
# "pipeline" has an event sink registered, "quiet" none. Independent of the machine's load.
#
# Usage: benches/telemetry-callgrind.sh [N]   (default 10000 calls per variant; needs valgrind)
set -euo pipefail
N="${1:-10000}"
cd "$(dirname "$0")"
TARGET="${CARGO_TARGET_DIR:-target}"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/yiem-telemetry-callgrind.XXXXXX")"
echo "callgrind output in $OUT" >&2
# The two builds share the target directory: each binary is kept before the next build replaces it.
cargo build --quiet --release --bin dispatch-count
cp "$TARGET/release/dispatch-count" "$OUT/default"
cargo build --quiet --release --bin dispatch-count --features otel
cp "$TARGET/release/dispatch-count" "$OUT/otel"

count() {
    valgrind --tool=callgrind --toggle-collect='*run_all*' --callgrind-out-file="$OUT/$1-$2.out" \
        "$OUT/$1" "$2" "$N" >/dev/null 2>"$OUT/$1-$2.log"
    awk '/^summary:/ { print $2 }' "$OUT/$1-$2.out"
}

per_call() {
    awk -v v="$1" -v t="$2" -v r="$3" -v n="$N" \
        'BEGIN { printf "%-34s %12.0f %10.4f %+10.0f\n", v, t / n, t / r, (t - r) / n }'
}

for kind in value string; do
    printf '\n%-34s %12s %10s %10s\n' "arguments as a JSON $kind" "instr/call" "x default" "+/call"
    for variant in pipeline pipeline_quiet; do
        reference=$(count default "yiem_${variant}_$kind")
        per_call "$variant, default features" "$reference" "$reference"
        per_call "$variant, otel, no subscriber" "$(count otel "yiem_${variant}_$kind")" "$reference"
        if [ "$variant" = pipeline ]; then
            per_call "$variant, otel, live exporter" "$(count otel "yiem_pipeline_otel_$kind")" "$reference"
        fi
    done
done
