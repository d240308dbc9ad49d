#!/usr/bin/env bash
# DHRD durable writes vs the backing disk's durable writes, measured alternately (ROUNDS times) so
# both see the same state of a disk whose speed drifts (host caches, writeback after a fill).
#   SSD: fio O_DIRECT+O_DSYNC on a file; DHRD: fio O_DIRECT on DIR/disk (durability=direct).
# Usage: run-write-compare.sh WORKDIR_ON_DISK [SIZE_MIB=1024] [RUNTIME_S=5] [ROUNDS=3]  (root)
# PIN_CPU=N pins fio and the daemon to one CPU (see common.sh).
set -euo pipefail
work=${1:?work directory on the disk under test}
size_mib=${2:-1024}
runtime=${3:-5}
rounds=${4:-3}
source "$(dirname "$0")/common.sh"
mkdir -p "$work/mnt"
cleanup() {
  [ -n "${pid:-}" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -f "$work/cmp-ssd.img" "$work/cmp-dhrd.img" "$work/cmp.out"
}
trap cleanup EXIT
for f in cmp-ssd.img cmp-dhrd.img; do
  fio --name=fill --filename="$work/$f" --rw=write --bs=1m --size="${size_mib}m" --direct=1 \
      --ioengine=psync --end_fsync=1 >/dev/null
done
rm -f "$work/cmp.out"
"${pin_daemon[@]}" "$daemon" --backing "$work/cmp-dhrd.img" --mount "$work/mnt" --progress-ms 0 >"$work/cmp.out" 2>&1 &
pid=$!
until grep -q "dhrd: serving" "$work/cmp.out" 2>/dev/null; do sleep 0.05; done
until grep -q "init_finished_after_ms [0-9]" "$work/mnt/stats"; do sleep 0.1; done
sleep 20 # let the host finish writing back the fills

iops() { # file sync rw bs
  fio --name=w --filename="$1" --rw="$3" --bs="$4" --size="${size_mib}m" --direct=1 --sync="$2" \
    --ioengine=psync --time_based --runtime="$runtime" --output-format=json "${pin_fio[@]}" |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["write"]; p=j["clat_ns"]["percentile"]["50.000000"]; print("%.0f %.1f" % (j["iops"], p/1000))'
}
echo "| workload | round | SSD IOPS (p50 us) | DHRD IOPS (p50 us) | DHRD / SSD |"
echo "|---|---:|---:|---:|---:|"
for w in "randwrite 4k" "write 1m"; do
  set -- $w
  for round in $(seq "$rounds"); do
    read -r s_iops s_p50 < <(iops "$work/cmp-ssd.img" dsync "$1" "$2")
    read -r d_iops d_p50 < <(iops "$work/mnt/disk" 0 "$1" "$2")
    ratio=$(python3 -c "print(f'{$d_iops/$s_iops:.2f}')")
    echo "| $1 $2 | $round | $s_iops ($s_p50) | $d_iops ($d_p50) | $ratio |"
  done
done
