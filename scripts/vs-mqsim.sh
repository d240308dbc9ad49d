#!/usr/bin/env bash
# nandlab against MQSim on small controlled traces whose answer is known
# (docs/validation.md, "Against MQSim"): a sequential fill, uniform random
# writes to steady state, random reads of a filled device. Both simulators get
# the same MQSim-format trace, geometry, latencies, channel rate, greedy GC
# with a ten-free-block threshold (MQSim's floor), and an empty start; the script prints GC
# copies, erases and latencies of each beside the analytic value.
# With --race (what scripts/bench-vs-mqsim.sh runs): the timed race on a
# 1.1 M-request trace of the same device instead (scripts/bench_vs_mqsim.py).
#
# Usage: scripts/vs-mqsim.sh [--race] MQSIM_CHECKOUT [WORK_DIR] [--runs N] [--device-writes K]
#   MQSIM_CHECKOUT: your own checkout of github.com/CMU-SAFARI/MQSim; the
#   script runs `make` in it when its MQSim binary is missing. Nothing of
#   MQSim is part of nandlab.
#   WORK_DIR: where traces, configurations and outputs go (default: a temporary folder).
#   --runs, --device-writes: the race's rounds and trace length (scripts/bench_vs_mqsim.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
comparison=vs_mqsim.py
if [ "${1:-}" = --race ]; then
    comparison=bench_vs_mqsim.py
    shift
fi
if [ $# -lt 1 ] || [ ! -f "$1/Makefile" ] || [ ! -d "$1/src" ]; then
    echo "usage: $0 MQSIM_CHECKOUT [WORK_DIR]  (MQSIM_CHECKOUT: a checkout of github.com/CMU-SAFARI/MQSim)" >&2
    exit 2
fi
checkout=$(cd "$1" && pwd)
shift
if [ ! -x "$checkout/MQSim" ]; then
    echo "building MQSim in $checkout (make)" >&2
    make -C "$checkout" -j "$(nproc)" >&2
fi
if [ $# -ge 1 ] && [ "${1#--}" = "$1" ]; then
    work=$1
    shift
    mkdir -p "$work"
else
    work=$(mktemp -d -t nandlab-vs-mqsim-XXXXXX)
fi
if [ -z "${NANDLAB_BIN:-}" ]; then
    cargo build --release -q -p nandlab-cli --manifest-path "$root/Cargo.toml"
    NANDLAB_BIN="$root/target/release/nandlab"
fi
exec python3 "$root/scripts/$comparison" "$checkout/MQSim" "$NANDLAB_BIN" "$work" "$@"
