#!/usr/bin/env bash
# Checks every figure quoted in README.md and docs/*.md against the results
# file its marker names, every repository path the docs name, and (with
# --rerun) that the fast deterministic generators reproduce their results
# files exactly. The rules: docs/reporting.md, "Claims as code".
#
# Usage: scripts/check-claims.sh [--rerun] [--self-test]
#   --rerun      also re-run the fast generators (needs target/release/nandlab
#                or NANDLAB_BIN; about a minute)
#   --self-test  also prove the check can fail: every digit of every checked
#                README figure and the last digit of every checked docs figure,
#                changed in turn, and one changed figure of README.md and of a
#                doc in a copy of the repository, must each fail naming the line
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rerun=0
self_test=0
for arg in "$@"; do
    case "$arg" in
        --rerun) rerun=1 ;;
        --self-test) self_test=1 ;;
        *) echo "check-claims: unknown option $arg (want --rerun, --self-test)" >&2; exit 2 ;;
    esac
done

python3 scripts/check_claims.py

if [ "$self_test" = 1 ]; then
    python3 scripts/check_claims.py --self-test
    # The whole check, run in a copy of the repository where one figure is
    # changed (the first checked one of README.md, then of a doc, each in a
    # fresh copy), must fail and name that file and line.
    trap 'rm -rf "${copy:-}"' EXIT
    for doc in README.md docs/validation.md; do
        copy=$(mktemp -d)
        git ls-files -z | xargs -0 cp --parents -t "$copy"
        cp -r --parents docs/results "$copy" 2>/dev/null || true
        line=$(grep -n -m1 '<!-- claim:' "$doc" | cut -d: -f1)
        # Change the first digit of the figure right before that line's first marker.
        python3 - "$copy/$doc" "$line" <<'PY'
import re, sys
path, number = sys.argv[1], int(sys.argv[2])
lines = open(path, encoding="utf-8").read().split("\n")
line = lines[number - 1]
match = re.search(r"(\d)(?=[\d.,]*\s?(?:%|x|ms|s)?<!-- claim:)", line)
digit = match.group(1)
lines[number - 1] = line[: match.start()] + ("8" if digit == "9" else str(int(digit) + 1)) + line[match.end() :]
open(path, "w", encoding="utf-8").write("\n".join(lines))
PY
        if output=$(python3 "$copy/scripts/check_claims.py" 2>&1); then
            rm -rf "$copy"
            echo "check-claims self-test: a changed figure on $doc:$line passed the check" >&2
            exit 1
        fi
        rm -rf "$copy"
        if ! grep -q "^$doc:$line:" <<<"$output"; then
            echo "check-claims self-test: the failure does not name $doc:$line:" >&2
            echo "$output" >&2
            exit 1
        fi
        echo "check-claims self-test: a copy with one figure changed fails, naming $doc:$line"
    done
fi

if [ "$rerun" = 1 ]; then
    python3 scripts/results.py verify-fast
    echo "check-claims: the fast generators reproduce their results files exactly"
fi
