#!/usr/bin/env bash
# Regenerates one results file behind the figures of README.md and docs/*.md:
# runs its command (e.g. `nandlab reproduce informed-cleaning --repeats 5`)
# into a scratch folder, copies the data files it keeps into docs/, and writes
# docs/results/NAME.json with the derived figures and the provenance (command,
# date, commit, machine, load). Then scripts/check-claims.sh says which quoted
# figures no longer agree.
#
# Usage: scripts/regenerate-results.sh NAME   (list: the names, which need root)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ $# -ne 1 ]; then
    echo "usage: scripts/regenerate-results.sh NAME|list" >&2
    exit 2
fi
if [ "$1" = list ]; then
    exec python3 scripts/results.py list
fi
if [ -z "${NANDLAB_BIN:-}" ]; then
    cargo build --release -q -p nandlab-cli
fi
python3 scripts/results.py regenerate "$1"
python3 scripts/check_claims.py || echo "regenerate-results: update the quoted figures above to the new results (docs/reporting.md)" >&2
