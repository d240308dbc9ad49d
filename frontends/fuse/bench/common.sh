# Shared set-up of the DHRD fio scripts (sourced): CPU pinning and the daemon binary.
# PIN_CPU=N pins fio and the daemon to CPU N: on a VM, waking a FUSE thread on another (idle) vCPU
# costs tens of microseconds, which otherwise dominates a 4 KiB request and makes runs bimodal.
pin_fio=()
pin_daemon=()
if [ -n "${PIN_CPU:-}" ]; then
  pin_fio=(--cpus_allowed="$PIN_CPU")
  pin_daemon=(taskset -c "$PIN_CPU")
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
daemon="$root/target/release/nandlab-dhrd-fuse"
[ -x "$daemon" ] || (cd "$root" && cargo build --release -p nandlab-fuse)
