#!/usr/bin/env bash
# Builds a profile-guided (PGO) release of the CLI at target/pgo/release/nandlab.
# Optional: the default build (`cargo build --release`) does not depend on it.
#
# Three steps: build the CLI instrumented (-Cprofile-generate), run it on a
# training workload (`nandlab bench`, counting and timed, on `femu-32g` and
# `small`), merge the profiles with llvm-profdata and build again with
# -Cprofile-use. llvm-profdata must come from the same LLVM major version as
# rustc (`rustc -vV`): the rustup component `llvm-tools` has it
# (`rustup component add llvm-tools`), Debian's llvm-NN package too
# (/usr/lib/llvm-NN/bin/llvm-profdata). LLVM_PROFDATA=path overrides the search.
# Results are unchanged by PGO (it only changes code layout and inlining);
# the gain measured here is in docs/architecture.md, "Speed".
set -euo pipefail
cd "$(dirname "$0")/.."

llvm_major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
host=$(rustc -vV | sed -n 's/^host: //p')
sysroot=$(rustc --print sysroot)

profdata_major() {
    "$1" --version 2>/dev/null | sed -n 's/.*LLVM version \([0-9]*\).*/\1/p' | head -n 1
}

find_profdata() {
    local candidate
    for candidate in ${LLVM_PROFDATA:-} "$sysroot/lib/rustlib/$host/bin/llvm-profdata" \
        "/usr/lib/llvm-$llvm_major/bin/llvm-profdata" "$(command -v "llvm-profdata-$llvm_major" || true)" \
        "$(command -v llvm-profdata || true)"; do
        if [ -x "$candidate" ] && [ "$(profdata_major "$candidate")" = "$llvm_major" ]; then
            echo "$candidate"
            return
        fi
    done
    echo "error: no llvm-profdata of LLVM $llvm_major (rustc's); run 'rustup component add llvm-tools'," \
        "install Debian's llvm-$llvm_major, or set LLVM_PROFDATA" >&2
    exit 1
}

profdata=$(find_profdata)
target_dir="$PWD/target/pgo"
profiles="$target_dir/profiles"
rm -rf "$profiles"
mkdir -p "$profiles"

echo "== PGO 1/3: instrumented build"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$profiles" \
    cargo build --release -p nandlab-cli --target-dir "$target_dir"

echo "== PGO 2/3: training runs"
cli="$target_dir/release/nandlab"
"$cli" bench --writes 3000000 --repeat 1 >/dev/null
"$cli" bench --timing --writes 600000 --repeat 1 >/dev/null
"$cli" bench --preset small --writes 1000000 --repeat 1 >/dev/null
"$cli" bench --preset small --timing --writes 200000 --repeat 1 >/dev/null
"$profdata" merge -o "$profiles/merged.profdata" "$profiles"

echo "== PGO 3/3: optimised build"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$profiles/merged.profdata" \
    cargo build --release -p nandlab-cli --target-dir "$target_dir"
echo "built $cli"
