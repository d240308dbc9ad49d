#!/usr/bin/env bash
# The paper's video test (section 4.4, Figure 12) on three configurations: a file system on
#   (a) DHRD: ext4 on a loop device over DIR/disk served by `nandlab dhrd serve`, in durability
#       modes direct and write-back (ext4's flushes reach the DHRD as fsync through the loop device),
#   (b) SSD: ext4 directly on this machine's disk (WORKDIR's file system),
#   (c) RAMDisk: tmpfs.
# Each: read a SIZE file, modify MODIFY bytes in its middle, write it as another file (fsync),
# three times, page cache dropped before each read. Usage (root):
#   run-video.sh WORKDIR_ON_DISK [SIZE, default 1800MB] [MODIFY, default 64MiB]
set -euo pipefail
work=${1:?work directory on the disk under test}
size=${2:-1800MB}
modify=${3:-64MiB}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
nandlab="$root/target/release/nandlab"
[ -x "$nandlab" ] || (cd "$root" && cargo build --release -p nandlab-cli)
mkdir -p "$work/mnt" "$work/ext4" "$work/plain"
shm=$(mktemp -d /dev/shm/dhrd-video.XXXX)
loopdev=""
cleanup() {
  mountpoint -q "$work/ext4" && umount "$work/ext4" || true
  [ -n "$loopdev" ] && losetup -d "$loopdev" 2>/dev/null || true
  [ -n "${pid:-}" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$shm" "$work/plain" "$work/video-backing.img"
}
trap cleanup EXIT

video() { # label dir
  echo "### $1"
  "$nandlab" dhrd video --src "$2/src.bin" --dst "$2/dst.bin" --create-size "$size" \
    --modify "$modify" --repeat 3 --drop-caches
}

# (a) DHRD: 4 GiB image, ext4, files inside; once per durability mode (DURABILITIES)
for durability in ${DURABILITIES:-direct write-back}; do
  rm -f "$work/video-backing.img" "$work/serve.out"
  "$nandlab" dhrd serve --backing "$work/video-backing.img" --size 4GiB --mount "$work/mnt" \
    --durability "$durability" --progress-ms 0 >"$work/serve.out" &
  pid=$!
  until grep -q "dhrd: serving" "$work/serve.out" 2>/dev/null; do sleep 0.05; done
  loopdev=$(losetup --find --show "$work/mnt/disk")
  mkfs.ext4 -q -F "$loopdev"
  mount "$loopdev" "$work/ext4"
  video "DHRD durability=$durability (ext4 on loop over FUSE)" "$work/ext4"
  umount "$work/ext4"; losetup -d "$loopdev"; loopdev=""
  kill -TERM "$pid"; wait "$pid"; pid=""
done

video "SSD (ext4 on the VM disk)" "$work/plain"
video "RAMDisk (tmpfs)" "$shm"
