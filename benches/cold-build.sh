#!/usr/bin/env bash
# Issue 17: what a tool author's crate costs to build from nothing, yiem beside rmcp.
#
# Generates a scratch workspace with three library crates holding the same ten tools (same argument
# structs, same bodies):
#   author_yiem       `#[tool]` fns on yiem-core's default features, + serde + schemars
#   author_yiem_full  the same with yiem-core's `schema-validation` feature (jsonschema)
#   author_rmcp       the ten tools as an rmcp 3.11 `#[tool_router(server_handler)]` server
#                     (features `server` + `macros`, no transport), + serde + schemars
# and builds each one cold (`cargo build`, dev profile, a new empty target dir every time, dependencies
# already downloaded), alternating, RUNS times each. Prints each crate's dependency-tree size
# (`cargo tree -e normal,build`, unique crates), whether `openssl-sys` is in it, and the median wall and CPU
# (user + sys) times.
#
# Usage: benches/cold-build.sh [RUNS]   (default 3; run it under `nice -n 10` on a shared machine)
set -euo pipefail

RUNS="${1:-3}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/yiem-cold-build.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
export CARGO_INCREMENTAL=0
export CARGO_TERM_COLOR=never
CRATES=(author_yiem author_yiem_full author_rmcp)

cat >"$SCRATCH/Cargo.toml" <<EOF
[workspace]
resolver = "3"
members = ["author_yiem", "author_yiem_full", "author_rmcp"]
EOF
# The benchmarks' lockfile holds yiem's dependencies and rmcp 3.11: every crate builds the same versions.
cp "$ROOT/benches/Cargo.lock" "$SCRATCH/Cargo.lock"

manifest() {
    cat <<EOF
[package]
name = "$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
serde = { version = "1.0", features = ["derive"] }
schemars = "1.2"
$2
EOF
}

# The ten argument structs, the same in every crate.
args() {
    cat <<'EOF'
use schemars::JsonSchema;
use serde::Deserialize;

/// Two integers.
#[derive(Deserialize, JsonSchema)]
pub struct Pair {
    /// The first.
    pub a: i64,
    /// The second.
    pub b: i64,
}

/// A text.
#[derive(Deserialize, JsonSchema)]
pub struct Text {
    /// The text.
    pub text: String,
}

/// A greeting.
#[derive(Deserialize, JsonSchema)]
pub struct Greeting {
    /// Who to greet.
    pub name: String,
    /// An optional title, e.g. "Dr".
    pub title: Option<String>,
}

/// A value and its bounds.
#[derive(Deserialize, JsonSchema)]
pub struct Clamp {
    /// The value.
    pub value: f64,
    /// The lower bound.
    pub min: f64,
    /// The upper bound.
    pub max: f64,
}

/// Words to join.
#[derive(Deserialize, JsonSchema)]
pub struct Join {
    /// The words.
    pub words: Vec<String>,
    /// The separator; a space when absent.
    pub separator: Option<String>,
}

/// How to round.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Towards negative infinity.
    Floor,
    /// Towards positive infinity.
    Ceil,
}

/// A number to round.
#[derive(Deserialize, JsonSchema)]
pub struct Round {
    /// The number.
    pub value: f64,
    /// How.
    pub mode: Mode,
}
EOF
}

# name|args type|description|body (over `args`)
TOOLS=(
    'add|Pair|Add two integers.|(args.a + args.b).to_string()'
    'subtract|Pair|Subtract b from a.|(args.a - args.b).to_string()'
    'multiply|Pair|Multiply two integers.|(args.a * args.b).to_string()'
    'echo|Text|Repeat the text.|args.text'
    'reverse|Text|Reverse the text.|args.text.chars().rev().collect()'
    'count_words|Text|Count the words of the text.|args.text.split_whitespace().count().to_string()'
    'greet|Greeting|Greet someone.|match args.title { Some(t) => format!("Hello, {t} {}!", args.name), None => format!("Hello, {}!", args.name) }'
    'clamp|Clamp|Clamp a value between bounds.|args.value.clamp(args.min, args.max).to_string()'
    'join|Join|Join words.|args.words.join(args.separator.as_deref().unwrap_or(" "))'
    'round|Round|Round a number.|match args.mode { Mode::Floor => args.value.floor(), Mode::Ceil => args.value.ceil() }.to_string()'
)

yiem_lib() {
    echo "//! Ten tools written with \`#[tool]\`."
    args
    for entry in "${TOOLS[@]}"; do
        IFS='|' read -r name ty description body <<<"$entry"
        cat <<EOF

/// $description
#[yiem_core::tool]
pub async fn $name(args: $ty) -> String {
    $body
}
EOF
    done
}

rmcp_lib() {
    echo "//! The same ten tools as an rmcp \`#[tool_router]\` server."
    args
    cat <<'EOF'

use rmcp::handler::server::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;

/// The server.
#[derive(Clone)]
pub struct Tools {
    /// The router `#[tool_router]` builds.
    pub tool_router: ToolRouter<Tools>,
}

impl Default for Tools {
    fn default() -> Self {
        Tools { tool_router: Self::tool_router() }
    }
}

#[rmcp::tool_router(server_handler)]
impl Tools {
EOF
    for entry in "${TOOLS[@]}"; do
        IFS='|' read -r name ty description body <<<"$entry"
        cat <<EOF
    #[rmcp::tool(description = "$description")]
    async fn $name(&self, Parameters(args): Parameters<$ty>) -> String {
        $body
    }

EOF
    done
    echo "}"
}

for krate in "${CRATES[@]}"; do mkdir -p "$SCRATCH/$krate/src"; done
manifest author_yiem "yiem-core = { path = \"$ROOT/yiem-core\" }" >"$SCRATCH/author_yiem/Cargo.toml"
manifest author_yiem_full "yiem-core = { path = \"$ROOT/yiem-core\", features = [\"schema-validation\"] }" \
    >"$SCRATCH/author_yiem_full/Cargo.toml"
manifest author_rmcp 'rmcp = { version = "=3.11.0", default-features = false, features = ["server", "macros"] }' \
    >"$SCRATCH/author_rmcp/Cargo.toml"
yiem_lib >"$SCRATCH/author_yiem/src/lib.rs"
yiem_lib >"$SCRATCH/author_yiem_full/src/lib.rs"
rmcp_lib >"$SCRATCH/author_rmcp/src/lib.rs"

cd "$SCRATCH"
echo "== fetching and checking once (not timed)" >&2
CARGO_TARGET_DIR="$SCRATCH/check" cargo check --quiet --workspace 2>&1 | tail -5 >&2
rm -rf "$SCRATCH/check"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A wall cpu count openssl
for krate in "${CRATES[@]}"; do
    tree=$(cargo tree -p "$krate" -e normal,build --prefix none | sed 's/ (\*)$//; s/ (proc-macro)$//' | sort -u)
    count[$krate]=$(($(wc -l <<<"$tree") - 1)) # without the crate itself
    openssl[$krate]=$(grep -q '^openssl-sys ' <<<"$tree" && echo yes || echo no)
done
for run in $(seq 1 "$RUNS"); do
    for krate in "${CRATES[@]}"; do
        export CARGO_TARGET_DIR="$SCRATCH/target-$krate"
        rm -rf "$CARGO_TARGET_DIR"
        read -r w cpu_used < <({ TIMEFORMAT='%R %U %S'; time cargo build --quiet -p "$krate" >/dev/null 2>&1; } 2>&1 | awk '{ print $1, $2 + $3 }')
        rm -rf "$CARGO_TARGET_DIR"
        wall[$krate]+="$w "
        cpu[$krate]+="$cpu_used "
        printf 'run %d %-17s wall %6.2f s  cpu %6.2f s  (load %s)\n' "$run" "$krate" "$w" "$cpu_used" "$(cut -d' ' -f1 /proc/loadavg)" >&2
    done
done

printf '\nten tools, cold dev-profile build of the crate and all its dependencies, median of %d\n' "$RUNS"
printf '%-18s %8s %9s %8s %8s\n' "crate" "crates" "openssl" "wall s" "cpu s"
for krate in "${CRATES[@]}"; do
    printf '%-18s %8d %9s %8.1f %8.1f\n' "$krate" "${count[$krate]}" "${openssl[$krate]}" \
        "$(tr ' ' '\n' <<<"${wall[$krate]}" | grep . | median)" \
        "$(tr ' ' '\n' <<<"${cpu[$krate]}" | grep . | median)"
done
