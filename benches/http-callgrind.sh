#!/usr/bin/env bash
# Instructions per `tools/call` over one keep-alive HTTP/1.1 connection, yiem's `McpHttpServer` and rmcp's
# own `StreamableHttpService` (issue 28; `rmcp`: its factory builds the `#[tool_router]` server per
# request, `rmcp-shared`: it clones one built once, as yiem's does, `rmcp-guarded`: `rmcp-shared` behind
# hyper's header-read time limit, as yiem's server always is), counted by callgrind on the server's
# thread only (`--separate-threads=yes`; `src/bin/http_count.rs` runs each server on a thread of its own,
# the client on the main thread). Startup and the first requests' one-time work (schemas, lists) are taken
# out by difference: (server instructions with 2N calls - with N calls) / N. Also the share of those
# instructions spent in glibc's memcpy/memmove (self cost), by the same difference.
#
# Usage: benches/http-callgrind.sh [N]   (default 500; needs valgrind)
set -euo pipefail
N="${1:-500}"
cd "$(dirname "$0")"
cargo build --quiet --release --bin http_count
BIN="${CARGO_TARGET_DIR:-target}/release/http_count"
OUT="$(mktemp -d "${TMPDIR:-/tmp}/yiem-http-callgrind.XXXXXX")"
echo "callgrind output in $OUT" >&2

# The server thread's total and memcpy instructions for `$1` server and `$2` calls: every thread but the
# main one (callgrind numbers the main thread 1).
count() {
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$OUT/$1-$2" \
        "$BIN" "$1" "$2" >/dev/null 2>"$OUT/$1-$2.log"
    local total=0 copy=0 file
    for file in "$OUT/$1-$2"-*; do
        [[ "$file" == *-01 ]] && continue
        total=$((total + $(awk '/^summary:/ { print $2 }' "$file")))
        copy=$((copy + $(callgrind_annotate --auto=no --threshold=100 "$file" |
            awk '/__mem(cpy|move)/ { gsub(",", "", $1); n += $1 } END { print n + 0 }')))
    done
    echo "$total $copy"
}

printf '%-12s %14s %14s %8s\n' server "instr/request" "memcpy/request" "memcpy %"
for server in yiem rmcp rmcp-shared rmcp-guarded; do
    read -r total1 copy1 < <(count "$server" "$N")
    read -r total2 copy2 < <(count "$server" $((2 * N)))
    awk -v s="$server" -v t=$((total2 - total1)) -v c=$((copy2 - copy1)) -v n="$N" \
        'BEGIN { printf "%-12s %14.0f %14.0f %7.1f%%\n", s, t / n, c / n, 100 * c / t }'
done
