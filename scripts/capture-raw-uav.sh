#!/bin/bash
# Raw tracefs capture of Delay-D's UAV single-erase on a 1 GiB ext4 (-o discard) on a loop device.
# Usage: scripts/capture-raw-uav.sh OUTDIR (root; NANDLAB=path/to/nandlab). Writes OUTDIR/raw.txt and
# OUTDIR/journal.txt (dumpe2fs/debugfs facts); how crates/lab/tests/data/uav-single-ext4-1g-discard.* were made.
set -euo pipefail
NANDLAB=${NANDLAB:-nandlab}
OUT=${1:?output directory}
WORK=$(mktemp -d /dev/shm/nandlab-raw-XXXXXX)
INST=/sys/kernel/tracing/instances/nandlab-raw-$$
DEV=""
cleanup() {
  [ -d "$INST" ] && { echo 0 > "$INST/tracing_on" || true; echo 0 > "$INST/events/block/block_rq_issue/enable" || true; rmdir "$INST" || true; }
  mountpoint -q "$WORK/mnt" && umount "$WORK/mnt" || true
  [ -n "$DEV" ] && losetup -d "$DEV" || true
  rm -rf "$WORK"
}
trap cleanup EXIT
truncate -s 1G "$WORK/fs.img"
DEV=$(losetup -f --show "$WORK/fs.img")
mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$DEV"
mkdir "$WORK/mnt"
mount -o discard "$DEV" "$WORK/mnt"
RDEV=$(stat -c '%t %T' "$DEV"); MAJ=$((16#${RDEV% *})); MIN=$((16#${RDEV#* }))
mkdir "$INST"
echo 65536 > "$INST/buffer_size_kb"
echo "dev == $(( (MAJ << 20) | MIN ))" > "$INST/events/block/block_rq_issue/filter"
echo 1 > "$INST/events/block/block_rq_issue/enable"
echo 1 > "$INST/tracing_on"
"$NANDLAB" fsload --dir "$WORK/mnt" uav-single
umount "$WORK/mnt"
echo 0 > "$INST/tracing_on"
cat "$INST/trace" > "$OUT/raw.txt"
cat "$INST/per_cpu/cpu0/stats" | grep -i overrun > "$OUT/overrun.txt" || true
{
  echo "Kernel $(uname -r); $(dumpe2fs -V 2>&1 | head -1)"
  dumpe2fs -h "$DEV" 2>/dev/null | grep -E "^(Block size|Journal inode|Total journal size|Total journal blocks|Journal sequence)"
  debugfs -R "stat <8>" "$DEV" 2>/dev/null | sed -n '/^EXTENTS:/,$p'
  echo "dumpe2fs journal:"; dumpe2fs "$DEV" 2>/dev/null | grep -iE "journal (backup|features|size|length|start)" || true
} > "$OUT/journal.txt"
