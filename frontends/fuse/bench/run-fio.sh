#!/usr/bin/env bash
# DHRD benchmark table (docs/dhrd.md): fio against
#   (a) DHRD over FUSE (DIR/disk, served by nandlab-dhrd-fuse, durability=direct),
#   (b) the backing file on this machine's disk ("SSD"): O_DIRECT reads, O_DIRECT|O_DSYNC writes,
#   (c) a file on tmpfs ("RAMDisk"),
# (a) is driven with O_DIRECT like (b), so user buffers are page aligned and a 1 MiB request stays one
# FUSE request (the kernel caps a request at 256 pages);
# each with random 4 KiB read, random 4 KiB write, mixed 66:34 4 KiB, sequential 1 MiB read and
# write; psync engine, one job, queue depth 1, RUNTIME seconds each. Configuration (d), the
# in-process read_at, is `nandlab dhrd bench`.
# Usage: run-fio.sh WORKDIR_ON_DISK [SIZE_MIB] [RUNTIME_S] [JOBS]   (root; needs fio and fuse3)
# PIN_CPU=N pins fio and the daemon to one CPU (see common.sh).
set -euo pipefail
work=${1:?work directory on the disk under test}
size_mib=${2:-1024}
runtime=${3:-5}
jobs=${4:-1}
source "$(dirname "$0")/common.sh"
mkdir -p "$work/mnt"
shm=/dev/shm/dhrd-bench-ramdisk.img
cleanup() {
  [ -n "${pid:-}" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -f "$shm" "$work/ssd.img" "$work/dhrd-backing.img"
}
trap cleanup EXIT

# name rw bs extra...
workloads=(
  "randread-4k randread 4k"
  "randwrite-4k randwrite 4k"
  "randrw-66-34-4k randrw 4k --rwmixread=66"
  "seqread-1m read 1m"
  "seqwrite-1m write 1m"
)

fill() { # file: preallocate with data so reads hit real blocks
  fio --name=fill --filename="$1" --rw=write --bs=1m --size="${size_mib}m" --direct="$2" \
      --ioengine=psync --end_fsync=1 >/dev/null
}

run() { # config file direct sync
  local config=$1 file=$2 direct=$3 sync=$4
  for w in "${workloads[@]}"; do
    set -- $w
    local name=$1 rw=$2 bs=$3; shift 3
    local json
    json=$(fio --name="$name" --filename="$file" --rw="$rw" --bs="$bs" --size="${size_mib}m" \
      --direct="$direct" --sync="$sync" --ioengine=psync --numjobs="$jobs" --group_reporting \
      --time_based --runtime="$runtime" --randrepeat=1 --output-format=json "${pin_fio[@]}" "$@")
    FIO_JSON=$json python3 - "$config" "$name" <<'PY'
import json, os, sys
config, name = sys.argv[1], sys.argv[2]
job = json.loads(os.environ["FIO_JSON"])["jobs"][0]
r, w = job["read"], job["write"]
iops = r["iops"] + w["iops"]
mib = (r["bw_bytes"] + w["bw_bytes"]) / 2**20
def p(side, q):
    pct = side.get("clat_ns", {}).get("percentile", {})
    v = pct.get(q)
    return "-" if not v or side["iops"] == 0 else f"{v/1000:.1f}"
print(f"| {config} | {name} | {iops:.0f} | {mib:.1f} | {p(r,'50.000000')} / {p(r,'99.000000')} | {p(w,'50.000000')} / {p(w,'99.000000')} |")
PY
  done
}

echo "| configuration | workload | IOPS | MiB/s | read p50 / p99 us | write p50 / p99 us |"
echo "|---|---|---:|---:|---:|---:|"

# (b) backing file on the disk, O_DIRECT (+O_DSYNC for writes: the durable baseline DHRD must match)
fill "$work/ssd.img" 1
run "SSD file O_DIRECT+O_DSYNC" "$work/ssd.img" 1 dsync
rm -f "$work/ssd.img"

# (c) tmpfs
fill "$shm" 0
run "RAMDisk (tmpfs)" "$shm" 0 0
rm -f "$shm"

# (a) DHRD over FUSE; the backing file is filled first so initialization copies real data
fill "$work/dhrd-backing.img" 1
rm -f "$work/daemon.out"
"${pin_daemon[@]}" "$daemon" --backing "$work/dhrd-backing.img" --mount "$work/mnt" --durability direct --progress-ms 0 >"$work/daemon.out" &
pid=$!
until grep -q "dhrd: serving" "$work/daemon.out" 2>/dev/null; do sleep 0.05; done
until grep -q "init_finished_after_ms [0-9]" "$work/mnt/stats"; do sleep 0.1; done
run "DHRD over FUSE" "$work/mnt/disk" 1 0
cat "$work/mnt/stats" >&2
