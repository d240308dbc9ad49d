#!/usr/bin/env bash
# nandlab against MQSim on small controlled traces whose answer is known
# (docs/validation.md, "Against MQSim"): a sequential fill, uniform random
# writes to steady state, random reads of a filled device. Both simulators get
# the same MQSim-format trace, geometry, latencies, channel rate, greedy GC
# with a ten-free-block threshold (MQSim's floor), and an empty start; the script prints GC
# copies, erases and latencies of each beside the analytic value.
#
# Usage: scripts/vs-mqsim.sh MQSIM_CHECKOUT [WORK_DIR]
#   MQSIM_CHECKOUT: your own build of github.com/CMU-SAFARI/MQSim (`make` in it
#   leaves the MQSim binary there); nothing of MQSim is part of nandlab.
#   WORK_DIR: where traces, configurations and outputs go (default: a temporary folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ] || [ ! -x "$1/MQSim" ]; then
    echo "usage: scripts/vs-mqsim.sh MQSIM_CHECKOUT [WORK_DIR]  (MQSIM_CHECKOUT/MQSim must be built)" >&2
    exit 2
fi
mqsim=$(cd "$1" && pwd)/MQSim
work=${2:-$(mktemp -d -t nandlab-vs-mqsim-XXXXXX)}
mkdir -p "$work"
if [ -z "${NANDLAB_BIN:-}" ]; then
    cargo build --release -q -p nandlab-cli --manifest-path "$root/Cargo.toml"
    NANDLAB_BIN="$root/target/release/nandlab"
fi
exec python3 "$root/scripts/vs_mqsim.py" "$mqsim" "$NANDLAB_BIN" "$work"
