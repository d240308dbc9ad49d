#!/usr/bin/env bash
# Delay-D's single-erase scenario at the paper's proportions on a 4 GiB ext4
# (docs/delay-d.md, "At the paper's proportions"): N = 1,294 images (the
# paper's 10,000 per 32 GB), K = 50 N = 64,700 replacements (the paper's
# 500,000 = 50 N; `reproduce delay-d` runs K = 5 N), pre-fill 50 %, each mount
# option captured once (as root, about 13 min each), then replayed with the
# paper's unscaled 5 s delay under Disabled / Enabled / Delay-D on `femu-32g`
# fitted to the capture, for every device DISCARD mode, on a fresh and on a
# workload-aged device. Writes OUT/paper_proportions.csv (one row per replay,
# labelled STATE-MODE-POLICY, e.g. aged-exact-Delay-D).
#
# Usage: scripts/delay-d-paper-proportions.sh OUT [SEED]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/delay-d-paper-proportions.sh OUT [SEED]}
seed=${2:-1}
if [ -z "${NANDLAB_BIN:-}" ]; then
    cargo build --release -q -p nandlab-cli --manifest-path "$root/Cargo.toml"
    NANDLAB_BIN="$root/target/release/nandlab"
fi
export NANDLAB_BIN
mkdir -p "$out"
for mount in discard nodiscard; do
    trace="$out/single-erase-4G-k50-$mount-$seed.nlt"
    [ -f "$trace" ] && continue
    "$NANDLAB_BIN" capture --size 4G --mount-opts "$mount" --out "$trace" -- \
        "$NANDLAB_BIN" fsload uav-single --replacements 64700 --seed "$seed"
done
csv="$out/paper_proportions.csv"
echo "label,device_state,device_discard,policy,gc_page_copies,erases,host_pages_written,discard_received,discard_issued,discard_cancelled,translation_pages_written" >"$csv"
for state in fresh aged; do
    aged=$([ "$state" = aged ] && echo true || echo false)
    for mode in exact ignored dftl; do
        for policy in off online delay-d; do
            mount=$([ "$policy" = off ] && echo nodiscard || echo discard)
            "$NANDLAB_BIN" replay "$out/single-erase-4G-k50-$mount-$seed.nlt" --preset femu-32g --fit \
                --discard "$policy" --set discard.delay_ms=5000 --set "ftl.discard=\"$mode\"" \
                --set "precondition.enabled=$aged" --seed "$seed" --json - 2>/dev/null |
                python3 -c '
import json, sys
report, (state, mode, policy) = json.load(sys.stdin), sys.argv[1:]
name = {"off": "Disabled", "online": "Enabled", "delay-d": "Delay-D"}[policy]
m, d = report["measured"], report["discard"]
print(",".join(str(v) for v in (f"{state}-{mode}-{name}", state, mode, name, m["gc_page_copies"], m["erases"], m["host_pages_written"],
      d["received_commands"], d["issued_commands"], d["cancelled_commands"], m["translation_pages_written"])))
' "$state" "$mode" "$policy" >>"$csv"
        done
    done
done
cat "$csv"
