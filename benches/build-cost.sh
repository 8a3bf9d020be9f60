#!/usr/bin/env bash
# Item 5 of the benchmark issue: the build cost of `#[tool]`.
#
# Generates two crates in a scratch workspace: `gen_macro`, 200 `#[tool]` functions, and `gen_builder`, the
# same 200 tools written by hand against `AgentTool::builder` (same argument structs, same functions, a
# handler that deserializes the arguments and calls the function, a list of the tools). Builds every
# dependency once, then times `cargo build` (the dev profile) of each crate alone from clean
# (`cargo clean -p <crate>`), alternating, RUNS times each, and prints the median wall and CPU times and
# their ratio.
#
# Usage: benches/build-cost.sh [RUNS]   (default 5; run it under `nice -n 10` on a shared machine)
set -euo pipefail

RUNS="${1:-5}"
TOOLS=200
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/yiem-build-cost.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
export CARGO_TARGET_DIR="$SCRATCH/target"
export CARGO_INCREMENTAL=0
export CARGO_TERM_COLOR=never

cat >"$SCRATCH/Cargo.toml" <<EOF
[workspace]
resolver = "3"
members = ["gen_macro", "gen_builder"]

[workspace.dependencies]
yiem-core = { path = "$ROOT/yiem-core" }
serde = { version = "1.0", features = ["derive"] }
serde_json = "1.0"
schemars = "1.2"
EOF
# The main workspace's lockfile, so the scratch crates build against the same dependency versions.
cp "$ROOT/Cargo.lock" "$SCRATCH/Cargo.lock"

for krate in gen_macro gen_builder; do
    mkdir -p "$SCRATCH/$krate/src"
    cat >"$SCRATCH/$krate/Cargo.toml" <<EOF
[package]
name = "$krate"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
yiem-core.workspace = true
serde.workspace = true
serde_json.workspace = true
schemars.workspace = true
EOF
done

# The argument struct and the function of tool $1, the same in both crates.
common() {
    cat <<EOF
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Args$1 {
    /// The first addend.
    pub a: i64,
    /// The second addend.
    pub b: i64,
    /// A note to append to the sum.
    pub note: Option<String>,
}

EOF
}

{
    echo "//! $TOOLS tools written with \`#[tool]\`."
    echo
    for i in $(seq 1 $TOOLS); do
        common "$i"
        cat <<EOF
/// Add two integers, number $i.
#[yiem_core::tool(parallel)]
pub async fn add_$i(args: Args$i) -> String {
    match args.note {
        Some(note) => format!("{} ({note})", args.a + args.b + $i),
        None => (args.a + args.b + $i).to_string(),
    }
}

EOF
    done
} >"$SCRATCH/gen_macro/src/lib.rs"

{
    echo "//! The same $TOOLS tools written by hand against \`AgentTool::builder\`."
    echo
    echo "use yiem_core::AgentTool;"
    echo
    for i in $(seq 1 $TOOLS); do
        common "$i"
        cat <<EOF
/// Add two integers, number $i.
pub async fn add_$i(args: Args$i) -> String {
    match args.note {
        Some(note) => format!("{} ({note})", args.a + args.b + $i),
        None => (args.a + args.b + $i).to_string(),
    }
}

/// The tool of \`add_$i\`.
pub fn add_${i}_tool() -> AgentTool {
    AgentTool::builder("add_$i")
        .description("Add two integers, number $i.")
        .input_schema(schemars::schema_for!(Args$i).to_value())
        .parallel()
        .handler(|_ctx, args: serde_json::Value| async move {
            match serde_json::from_value::<Args$i>(args) {
                Ok(args) => Ok(add_$i(args).await),
                Err(error) => Err(error.to_string()),
            }
        })
        .build()
        .expect("a valid definition")
}

EOF
    done
    echo "/// Every tool, for registration."
    echo "pub fn all_tools() -> Vec<AgentTool> {"
    echo "    vec!["
    for i in $(seq 1 $TOOLS); do echo "        add_${i}_tool(),"; done
    echo "    ]"
    echo "}"
} >"$SCRATCH/gen_builder/src/lib.rs"

cd "$SCRATCH"
echo "== building dependencies once (not timed)" >&2
cargo build --quiet -p gen_macro -p gen_builder 2>&1 | tail -5 >&2

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A wall cpu
for run in $(seq 1 "$RUNS"); do
    for krate in gen_macro gen_builder; do
        cargo clean --quiet -p "$krate"
        # Wall time, and CPU time (user + sys of cargo and the rustc it runs), from bash's `time`.
        read -r w cpu_used < <({ TIMEFORMAT='%R %U %S'; time cargo build --quiet -p "$krate" >/dev/null 2>&1; } 2>&1 | awk '{ print $1, $2 + $3 }')
        wall[$krate]+="$w "
        cpu[$krate]+="$cpu_used "
        printf 'run %d %-12s wall %6.2f s  cpu %6.2f s\n' "$run" "$krate" "$w" "$cpu_used" >&2
    done
done

wm=$(tr ' ' '\n' <<<"${wall[gen_macro]}" | grep . | median)
wb=$(tr ' ' '\n' <<<"${wall[gen_builder]}" | grep . | median)
cm=$(tr ' ' '\n' <<<"${cpu[gen_macro]}" | grep . | median)
cb=$(tr ' ' '\n' <<<"${cpu[gen_builder]}" | grep . | median)
printf '\n%d tools, median of %d clean builds of the crate alone (dev profile, dependencies prebuilt)\n' "$TOOLS" "$RUNS"
printf '%-34s %8s %8s\n' "" "wall s" "cpu s"
printf '%-34s %8.2f %8.2f\n' "#[tool] (gen_macro)" "$wm" "$cm"
printf '%-34s %8.2f %8.2f\n' "AgentTool::builder (gen_builder)" "$wb" "$cb"
printf '%-34s %8.2f %8.2f   (target <= 1.3)\n' "ratio macro / builder" "$(awk "BEGIN { print $wm / $wb }")" "$(awk "BEGIN { print $cm / $cb }")"
