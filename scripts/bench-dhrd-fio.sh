#!/usr/bin/env bash
# DHRD speed as users see it: fio, unpinned, against DIR/disk of a DHRD served over FUSE
# (`nandlab-dhrd-fuse`, durability direct, default thread count) and against the backing
# store's own kind of file on the same disk with O_DIRECT (reads) and O_DIRECT|O_DSYNC (writes):
# the durable baseline. libaio at queue depth 1 and 16, 1 and 4 jobs; random 4 KiB reads, random
# 4 KiB durable writes, mixed 66:34 4 KiB, sequential 1 MiB reads and writes. Every cell is run
# REPEAT times, alternating DHRD and baseline, and reported as median [min-max], because the
# machine is shared and single runs are noisy. Writes the table, dated, into docs/dhrd.md between
# the fio-table markers (WRITE_DOCS=0 prints it only).
#
# Usage: scripts/bench-dhrd-fio.sh [WORKDIR_ON_DISK] [SIZE_MIB] [RUNTIME_S] [REPEAT]
#   (root; needs fio and /dev/fuse). ONLY=regex limits the workloads (e.g. ONLY=randread).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/var/tmp/dhrd-fio}
size_mib=${2:-1024}
runtime=${3:-4}
repeat=${4:-3}
only=${ONLY:-.}
mkdir -p "$work/mnt"
daemon="$root/target/release/nandlab-dhrd-fuse"
(cd "$root" && cargo build --release -q -p nandlab-fuse)
results="$work/results.tsv"
: >"$results"

pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -f "$work/baseline.img" "$work/backing.img"
}
trap cleanup EXIT

fill() { # preallocate with data so reads hit real blocks
  fio --name=fill --filename="$1" --rw=write --bs=1m --size="${size_mib}m" --direct=1 \
    --ioengine=psync --end_fsync=1 >/dev/null
}

# name rw bs [extra fio flags]
workloads=(
  "randread-4k randread 4k"
  "randwrite-4k randwrite 4k"
  "randrw-66:34-4k randrw 4k --rwmixread=66"
  "seqread-1m read 1m"
  "seqwrite-1m write 1m"
)

measure() { # config file round
  local config=$1 file=$2 round=$3
  for w in "${workloads[@]}"; do
    set -- $w
    local name=$1 rw=$2 bs=$3
    shift 3
    [[ $name =~ $only ]] || continue
    for qd in 1 16; do
      for jobs in 1 4; do
        local json
        json=$(fio --name="$name" --filename="$file" --rw="$rw" --bs="$bs" --size="${size_mib}m" \
          --direct=1 --sync=dsync --ioengine=libaio --iodepth="$qd" --numjobs="$jobs" \
          --group_reporting --time_based --runtime="$runtime" --randrepeat=0 \
          --output-format=json "$@")
        FIO_JSON=$json python3 - "$config" "$name" "$qd" "$jobs" "$round" >>"$results" <<'PY'
import json, os, sys
config, name, qd, jobs, rnd = sys.argv[1:]
job = json.loads(os.environ["FIO_JSON"])["jobs"][0]
iops = job["read"]["iops"] + job["write"]["iops"]
mib = (job["read"]["bw_bytes"] + job["write"]["bw_bytes"]) / 2**20
print(f"{config}\t{name}\t{qd}\t{jobs}\t{rnd}\t{iops:.1f}\t{mib:.2f}")
PY
      done
    done
  done
}

fill "$work/baseline.img"
fill "$work/backing.img"
"$daemon" --backing "$work/backing.img" --mount "$work/mnt" --progress-ms 0 >"$work/daemon.out" 2>"$work/daemon.err" &
pid=$!
until grep -q "dhrd: serving" "$work/daemon.out" 2>/dev/null; do sleep 0.05; done
until grep -q "init_finished_after_ms [0-9]" "$work/mnt/stats"; do sleep 0.1; done
started=$(date -u +"%Y-%m-%d %H:%M UTC")
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$repeat"); do
  echo "bench-dhrd-fio: round $round of $repeat" >&2
  measure dhrd "$work/mnt/disk" "$round"
  measure baseline "$work/baseline.img" "$round"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
grep -E "^(flushes|writes) " "$work/mnt/stats" >&2 || true

table=$(python3 - "$results" "$started" "$load_before" "$load_after" "$size_mib" "$runtime" "$repeat" <<'PY'
import collections, statistics, sys
path, started, load_before, load_after, size_mib, runtime, repeat = sys.argv[1:]
runs = collections.defaultdict(list)
order = []
for line in open(path):
    config, name, qd, jobs, rnd, iops, mib = line.rstrip("\n").split("\t")
    key = (name, int(qd), int(jobs))
    if key not in order:
        order.append(key)
    runs[(config,) + key].append((int(rnd), float(iops), float(mib)))
def spread(values, fmt):
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}-{fmt(max(values))}]"
print(f"Measured {started} by `scripts/bench-dhrd-fio.sh` (fio {runtime} s per cell, {size_mib} MiB, "
      f"{repeat} rounds alternating DHRD and baseline; unpinned; libaio, O_DIRECT, O_DSYNC on writes; "
      f"load average {load_before} before, {load_after} after: the machine is shared with other "
      f"builds, so each cell is the median [min-max] of the rounds).\n")
print("| workload | QD | jobs | DHRD IOPS | baseline IOPS | DHRD / baseline, per round | DHRD MiB/s |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, qd, jobs in order:
    dhrd = sorted(runs[("dhrd", name, qd, jobs)])
    base = sorted(runs[("baseline", name, qd, jobs)])
    ratios = [d[1] / b[1] for d, b in zip(dhrd, base) if b[1] > 0]
    print(f"| {name} | {qd} | {jobs} | {spread([d[1] for d in dhrd], lambda v: f'{v:.0f}')} | "
          f"{spread([b[1] for b in base], lambda v: f'{v:.0f}')} | "
          f"{spread(ratios, lambda v: f'{v:.2f}x')} | {statistics.median(d[2] for d in dhrd):.1f} |")
PY
)
echo "$table"
if [ "${WRITE_DOCS:-1}" = 1 ]; then
  TABLE=$table python3 - "$root/docs/dhrd.md" <<'PY'
import os, re, sys
path = sys.argv[1]
text = open(path).read()
start, end = "<!-- fio-table:start -->", "<!-- fio-table:end -->"
block = f"{start}\n{os.environ['TABLE']}\n{end}"
if start in text:
    text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
else:
    text += "\n" + block + "\n"
open(path, "w").write(text)
PY
  echo "bench-dhrd-fio: table written to docs/dhrd.md" >&2
fi
