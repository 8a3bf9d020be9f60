#!/usr/bin/env bash
# Instructions per reply of each case of `benches/provider_streams.rs` (issue 50), counted by callgrind in
# `src/bin/provider-stream-count.rs` over the whole process, the setup (the reply's text, the server, two
# warm-up replies) taken out by difference: (instructions with N+1 replies - with 1) / N. Independent of
# the machine's load: if a size 8x as large takes more than 8x the instructions, the parse is not linear;
# if it takes 8x the instructions and more than 8x the time, the rest is the memory system.
#
# Usage: benches/provider-stream-callgrind.sh [N] [SIZES...]   (default N=2, sizes 4MB 32MB; needs valgrind)
set -euo pipefail
N="${1:-2}"
shift || true
SIZES=("$@")
[[ ${#SIZES[@]} -gt 0 ]] || SIZES=(4MB 32MB)
cd "$(dirname "$0")"
cargo build --quiet --release --bin provider-stream-count
BIN="${CARGO_TARGET_DIR:-target}/release/provider-stream-count"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/yiem-stream-callgrind.XXXXXX")"
echo "callgrind output in $OUT" >&2

count() {
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$1-$2-$3-$4" \
        "$BIN" "$1" "$2" "$3" "$4" >/dev/null 2>"$OUT/$1-$2-$3-$4.log"
    awk '/^summary:/ { print $2 }' "$OUT/$1-$2-$3-$4"
}

printf '%-10s %-10s %6s %16s %8s\n' client kind size "instr/reply" "x prev"
for provider in openai responses anthropic gemini; do
    for kind in text arguments; do
        prev=""
        for size in "${SIZES[@]}"; do
            one=$(count "$provider" "$kind" "$size" 1)
            more=$(count "$provider" "$kind" "$size" $((N + 1)))
            per=$(( (more - one) / N ))
            ratio=$([[ -n "$prev" ]] && awk -v a="$per" -v b="$prev" 'BEGIN { printf "%.2f", a / b }' || echo "")
            printf '%-10s %-10s %6s %16d %8s\n' "$provider" "$kind" "$size" "$per" "$ratio"
            prev=$per
        done
    done
done
