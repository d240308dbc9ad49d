#!/usr/bin/env bash
# Coverage-guided fuzzing of nandlab on the stable toolchain (docs/fuzzing.md).
#
#   scripts/fuzz.sh TARGET MINUTES     one target, e.g. scripts/fuzz.sh admit_tasks 30
#   scripts/fuzz.sh all MINUTES        every target, MINUTES each (0.25: 15 s)
#   scripts/fuzz.sh build              only build the targets (a campaign after it starts at once)
#
# libFuzzer runs one target on one core, so the targets run side by side, as
# many at once as there are cores (FUZZ_JOBS=N sets another number): each
# still gets a core of its own for its MINUTES.
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
build_only=0
if [ $# = 1 ] && [ "$1" = build ]; then
    build_only=1
elif [ $# -ne 2 ]; then
    echo "usage: $0 TARGET|all MINUTES, or $0 build   (targets: ${TARGETS[*]})" >&2
    exit 2
fi
target=$1
[ $build_only = 1 ] || seconds=$(awk -v minutes="$2" 'BEGIN { if (minutes !~ /^[0-9]*\.?[0-9]+$/ || minutes * 60 < 1) exit 1; printf "%d", minutes * 60 }') || {
    echo "MINUTES must be a positive number (at least 1/60), got '$2'" >&2
    exit 2
}
if [ $build_only = 1 ] || [ "$target" = all ]; then
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
[ $build_only = 0 ] || exit 0

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
jobs=${FUZZ_JOBS:-$(nproc)}
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
    echo "FUZZ_JOBS must be a positive whole number, got '$jobs'" >&2
    exit 2
fi

# One target's campaign; its report goes to $scratch/NAME.report, libFuzzer's exit status to
# $scratch/NAME.status.
campaign() {
    local name=$1 corpus=fuzz/corpus/$1 artifacts=$scratch/artifacts/$1 log=$scratch/$1.log
    mkdir -p "$corpus" "$artifacts"
    local status=0
    # The emulate target writes its files under TMPDIR.
    TMPDIR=$scratch "fuzz/target/$triple/release/$name" "$corpus" "fuzz/seeds/$name" \
        -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
    local inited last execs
    inited=$(grep -m1 -E '^#[0-9]+[[:space:]]+INITED' "$log" || true)
    last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse)' "$log" | tail -n1 || true)
    execs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log")
    field() { sed -n "s/.* $1: \([0-9]*\).*/\1/p" <<<"$2"; }
    {
        echo "== fuzz: $name for $seconds s"
        echo "   coverage: $(field cov "$inited") -> $(field cov "$last") edges, features $(field ft "$inited") -> $(field ft "$last"), ${execs:-?} executions, corpus $(find "$corpus" -type f | wc -l) inputs"
    } >"$scratch/$name.report"
    echo "$status" >"$scratch/$name.status"
}

echo "== fuzz: ${#selected[@]} target(s), $jobs at a time"
running=0
for name in "${selected[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    campaign "$name" &
    running=$((running + 1))
done
wait

found=0
failed=0
for name in "${selected[@]}"; do
    cat "$scratch/$name.report" 2>/dev/null || echo "== fuzz: $name: no report (the campaign stopped early)"
    for artifact in "$scratch/artifacts/$name"/*; do
        [ -e "$artifact" ] || continue
        kept=fuzz/seeds/$name/$(basename "$artifact")
        cp "$artifact" "$kept"
        echo "   FOUND: $kept (now a regression input; fix the bug, keep the file)"
        found=1
    done
    status=$(cat "$scratch/$name.status" 2>/dev/null || echo "no status (the campaign stopped early)")
    if [ "$status" != 0 ] && [ -z "$(ls -A "$scratch/artifacts/$name")" ]; then
        tail -n 20 "$scratch/$name.log" >&2
        echo "   libFuzzer exited with $status" >&2
        failed=1
    fi
done
if [ "$found" -ne 0 ] || [ "$failed" -ne 0 ]; then
    exit 1
fi
