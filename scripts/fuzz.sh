#!/usr/bin/env bash
# Coverage-guided fuzzing of nandlab on the stable toolchain (docs/fuzzing.md).
#
#   scripts/fuzz.sh TARGET MINUTES     one target, e.g. scripts/fuzz.sh admit_tasks 30
#   scripts/fuzz.sh all MINUTES        every target in turn, MINUTES each (0.25: 15 s)
#
# Builds fuzz/ with LLVM's SanitizerCoverage switched on through plain rustc
# flags (inline 8-bit edge counters, the PC table and comparison tracing: what
# cargo-fuzz passes, minus its nightly-only sanitizer flags) and links
# libFuzzer from the libfuzzer-sys crate, so no nightly toolchain is needed.
# Each target grows its corpus in fuzz/corpus/TARGET (kept between campaigns,
# not committed), starting from fuzz/seeds/TARGET; the report gives the
# coverage (edges) and features at the start and the end, and the executions.
# A crash, hang (over 10 s) or out-of-memory input is copied into
# fuzz/seeds/TARGET/ (the stable test replays every seed) and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(trace_reader native_reader config_parser replay_small nbd_protocol emulate_state admit_tasks)
if [ $# -ne 2 ]; then
    echo "usage: $0 TARGET|all MINUTES   (targets: ${TARGETS[*]})" >&2
    exit 2
fi
target=$1
seconds=$(awk -v minutes="$2" 'BEGIN { if (minutes !~ /^[0-9]*\.?[0-9]+$/ || minutes * 60 < 1) exit 1; printf "%d", minutes * 60 }') || {
    echo "MINUTES must be a positive number (at least 1/60), got '$2'" >&2
    exit 2
}
if [ "$target" = all ]; then
    selected=("${TARGETS[@]}")
elif [[ " ${TARGETS[*]} " == *" $target "* ]]; then
    selected=("$target")
else
    echo "unknown target '$target' (targets: ${TARGETS[*]})" >&2
    exit 2
fi

triple=$(rustc -vV | sed -n 's/^host: //p')
coverage_flags=(
    --cfg fuzzing
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    -Cdebug-assertions
    -Coverflow-checks
)
echo "== fuzz: building the targets with coverage instrumentation (stable $(rustc --version | cut -d' ' -f2))"
# --target keeps build scripts and proc macros uninstrumented.
RUSTFLAGS="${coverage_flags[*]}" cargo build --quiet --release --manifest-path fuzz/Cargo.toml --target "$triple" --bins

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
found=0
for name in "${selected[@]}"; do
    corpus=fuzz/corpus/$name
    artifacts=$scratch/artifacts/$name
    mkdir -p "$corpus" "$artifacts"
    log=$scratch/$name.log
    echo "== fuzz: $name for $seconds s"
    # The emulate target writes its files under TMPDIR.
    status=0
    TMPDIR=$scratch "fuzz/target/$triple/release/$name" "$corpus" "fuzz/seeds/$name" \
        -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
    inited=$(grep -m1 -E '^#[0-9]+[[:space:]]+INITED' "$log" || true)
    last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse)' "$log" | tail -n1 || true)
    execs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log")
    field() { sed -n "s/.* $1: \([0-9]*\).*/\1/p" <<<"$2"; }
    echo "   coverage: $(field cov "$inited") -> $(field cov "$last") edges, features $(field ft "$inited") -> $(field ft "$last"), ${execs:-?} executions, corpus $(find "$corpus" -type f | wc -l) inputs"
    for artifact in "$artifacts"/*; do
        [ -e "$artifact" ] || continue
        kept=fuzz/seeds/$name/$(basename "$artifact")
        cp "$artifact" "$kept"
        echo "   FOUND: $kept (now a regression input; fix the bug, keep the file)"
        found=1
    done
    if [ "$status" -ne 0 ] && [ "$found" -eq 0 ]; then
        tail -n 20 "$log" >&2
        echo "   libFuzzer exited with $status" >&2
        exit 1
    fi
done
if [ "$found" -ne 0 ]; then
    exit 1
fi
