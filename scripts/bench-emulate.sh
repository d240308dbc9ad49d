#!/usr/bin/env bash
# Queue depth end to end: fio's 4 KiB random reads against a paced `nandlab emulate` NBD export
# (fio's nbd engine, one connection) at queue depths 1, 4, 16 and 32, beside the timing model
# replaying the recorded session: open loop at the recorded arrival times (what the emulator
# reported) and closed loop at the same depth (the device's own IOPS and latency at that depth).
# The emulator reports two latencies: the model's (arrival in the simulated device to its
# completion, which the open-loop replay must equal) and the served one (request read off the
# socket to reply sent: what the client waits, the server's host path included), which is
# compared with fio's. Each depth
# runs REPEAT times on a fresh device (the `small` preset, random-filled before the session so
# reads reach the flash); every figure is given as median, min and max over the runs, with the
# machine's load before and after. Writes docs/results/emulate-qd.json (docs/emulate.md,
# "Queue depth" quotes it) unless OUT says otherwise.
#
# Usage: scripts/bench-emulate.sh [RUNTIME_S] [REPEAT]   (needs fio with the nbd engine)
#   OUT=FILE writes the results elsewhere; QDS="1 16" limits the depths; NANDLAB_BIN=PATH runs that
#   build instead of building this checkout (an A/B; a build without the served latency gets no
#   served_* figures).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runtime=${1:-3}
repeat=${2:-3}
out=${OUT:-$root/docs/results/emulate-qd.json}
qds=${QDS:-1 4 16 32}
nandlab=${NANDLAB_BIN:-$root/target/release/nandlab}
fio --enghelp 2>/dev/null | grep -qx '[[:space:]]*nbd' || { echo "bench-emulate: fio has no nbd engine" >&2; exit 2; }
[ -n "${NANDLAB_BIN:-}" ] || (cd "$root" && cargo build --release -q -p nandlab-cli)
work=$(mktemp -d /tmp/bench-emulate.XXXXXX)
# The device: `small`, filled before the session so every read costs a flash read.
device=(--preset small --set precondition.kind=random-fill)
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
for run in $(seq 1 "$repeat"); do
  for qd in $qds; do
    cell="$work/qd$qd-run$run"
    socket="$work/nbd.sock"
    "$nandlab" emulate "${device[@]}" --nbd "unix:$socket" --pace real --record "$cell.nlt" \
      --json "$cell.emulated.json" >"$cell.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
    [ -S "$socket" ] || { cat "$cell.log" >&2; exit 1; }
    # fio prints a line before its JSON on stdout; keep the JSON.
    fio --name="qd$qd" --ioengine=nbd --uri="nbd+unix:///small?socket=$socket" --rw=randread --bs=4k \
      --size=32m --iodepth="$qd" --time_based --runtime="$runtime" --lat_percentiles=1 \
      --output-format=json 2>/dev/null | sed -n '/^{/,$p' >"$cell.fio.json"
    kill -INT "$pid"
    wait "$pid"
    pid=""
    replay=("$nandlab" replay "$cell.nlt" "${device[@]}" --timing on --quiet)
    "${replay[@]}" --json "$cell.open.json" 2>>"$cell.log"
    "${replay[@]}" --arrival closed --set "timing.queue_depth=$qd" --json "$cell.closed.json" \
      2>>"$cell.log"
    echo "bench-emulate: QD $qd run $run done" >&2
  done
done

BENCH_ROOT="$root" python3 - "$work" "$out" "$repeat" "$started" "$load_before" "$runtime" $qds <<'EOF'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["BENCH_ROOT"], "scripts"))
from results import provenance, spread

work, out, repeat, started, load_before, runtime = sys.argv[1:7]
qds = sys.argv[7:]

def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)

def read_summary(report):
    """IOPS of the timed run and its read latencies (µs)."""
    timed = report["timed"]
    return timed["iops"], timed["latency"]["read"]

derived, runs = {}, []
for qd in qds:
    cells = []
    for run in range(1, int(repeat) + 1):
        cell = os.path.join(work, f"qd{qd}-run{run}")
        fio = load(cell + ".fio.json")["jobs"][0]["read"]
        percentiles = fio["lat_ns"]["percentile"]
        emulated_document = load(cell + ".emulated.json")
        emulated_iops, emulated = read_summary(emulated_document)
        # An emulator from before issue 29's served latency has none (NANDLAB_BIN=old, an A/B).
        served = emulated_document.get("served_latency", {}).get("read")
        open_iops, opened = read_summary(load(cell + ".open.json"))
        closed_iops, closed = read_summary(load(cell + ".closed.json"))
        cells.append({
            "qd": int(qd), "run": run,
            "fio_iops": fio["iops"],
            "fio_p50_us": percentiles["50.000000"] / 1e3,
            "fio_p99_us": percentiles["99.000000"] / 1e3,
            "device_p50_us": emulated["p50_us"], "device_p99_us": emulated["p99_us"],
            "replay_open_p50_us": opened["p50_us"], "replay_open_p99_us": opened["p99_us"],
            "model_iops": closed_iops,
            "model_p50_us": closed["p50_us"], "model_p99_us": closed["p99_us"],
            "fio_iops_over_model": fio["iops"] / closed_iops,
            "fio_p50_over_model": percentiles["50.000000"] / 1e3 / closed["p50_us"],
            "fio_p99_over_model": percentiles["99.000000"] / 1e3 / closed["p99_us"],
            "replay_matches_report": opened == emulated,
        })
        if served:
            cells[-1] |= {"served_p50_us": served["p50_us"], "served_p99_us": served["p99_us"],
                          "served_p50_over_fio": served["p50_us"] / (percentiles["50.000000"] / 1e3)}
    runs.extend(cells)
    derived[f"qd{qd}"] = {key: spread(cell[key] for cell in cells)
                         for key in cells[0] if key not in ("qd", "run", "replay_matches_report")}
    derived[f"qd{qd}"]["replay_matches_report"] = all(cell["replay_matches_report"] for cell in cells)
if "1" in qds:
    for qd in qds:
        ratios = [high["fio_iops"] / low["fio_iops"] for high, low in zip(
            (c for c in runs if c["qd"] == int(qd)), (c for c in runs if c["qd"] == 1))]
        derived[f"qd{qd}"]["fio_iops_over_qd1"] = spread(ratios)
command = f"scripts/bench-emulate.sh {runtime} {repeat}"
result = {
    "provenance": provenance(command, float(started)) | {"load_average_before": load_before},
    "setup": "preset small, precondition.kind=random-fill, --pace real, NBD on a Unix socket; "
             f"fio --ioengine=nbd --rw=randread --bs=4k --size=32m --runtime={runtime}; "
             "model: nandlab replay of the recorded session with --timing on, open loop (as recorded) "
             "and closed loop at timing.queue_depth = fio's iodepth; served: the emulator's request-read-to-"
             "reply-sent latency; device: its model latency (arrival to simulated completion)",
    "derived": derived,
    "runs": runs,
}
os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
with open(out, "w", encoding="utf-8") as handle:
    json.dump(result, handle, indent=2)
    handle.write("\n")
print(f"{'QD':>3} {'fio IOPS':>24} {'model IOPS':>24} {'fio p50 us':>22} {'served p50 us':>22} {'model p50 us':>22}")
for qd in qds:
    row = derived[f"qd{qd}"]
    cell = lambda key: f"{row[key]['median']:.0f} [{row[key]['min']:.0f}-{row[key]['max']:.0f}]" if key in row else "-"
    print(f"{qd:>3} {cell('fio_iops'):>24} {cell('model_iops'):>24} {cell('fio_p50_us'):>22} "
          f"{cell('served_p50_us'):>22} {cell('model_p50_us'):>22}")
print(f"load average before {load_before}, after {result['provenance']['load_average']}; wrote {out}")
EOF
