#!/usr/bin/env bash
# Times one CPU-bound sweep (8 points of ~1.4 s each) on a Dask cluster of
# 1 and of 2 worker processes, in turn, REPEATS times, and prints each wall
# time; docs/architecture.md ("Replay and sweeps") quotes the result.
#
# The cluster is the one a real deployment runs: `dask scheduler` and `dask
# worker` processes, the sweep given the scheduler's address, the cluster's
# start-up left out of the timing. Each worker starts in its own session
# (setsid): with the kernel's autogroup scheduling on
# (/proc/sys/kernel/sched_autogroup_enabled), a loaded machine gives each
# session one share of the CPUs, so workers in the sweep's own session would
# split one share between them, as they do on a busy desktop but not on
# cluster nodes. Needs the package installed in .venv (./scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${REPEATS:-5}
PORT=${PORT:-8799}
BIN=$PWD/.venv/bin
SWEEP=(--preset small --set workload.device_writes=${DEVICE_WRITES:-2000} --grid ftl.gc_policy=greedy --seeds 1,2,3,4,5,6,7,8)
work=$(mktemp -d)
pids=()

stop_cluster() {
    for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; done
    pids=()
}
trap 'stop_cluster; rm -rf "$work"' EXIT

start_cluster() {
    local workers=$1
    setsid "$BIN/dask" scheduler --port "$PORT" --no-dashboard >>"$work/cluster.log" 2>&1 &
    pids+=($!)
    for _ in $(seq "$workers"); do
        setsid "$BIN/dask" worker "tcp://127.0.0.1:$PORT" --nworkers 1 --nthreads 1 --no-dashboard \
            >>"$work/cluster.log" 2>&1 &
        pids+=($!)
    done
    "$BIN/python" -c "
from dask.distributed import Client
with Client('tcp://127.0.0.1:$PORT', timeout=60) as client:
    client.wait_for_workers($workers, timeout=60)
"
}

echo "repeat workers wall_s"
for repeat in $(seq "$REPEATS"); do
    for workers in 1 2; do
        start_cluster "$workers"
        start=$(date +%s.%N)
        "$BIN/python" -m nandlab.sweep "${SWEEP[@]}" --scheduler "tcp://127.0.0.1:$PORT" \
            --out "$work/$workers.csv" 2>/dev/null
        end=$(date +%s.%N)
        echo "$repeat $workers $(echo "$end - $start" | bc)"
        stop_cluster
    done
done
