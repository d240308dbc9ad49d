#!/usr/bin/env bash
# Runs every test of nandlab: the Rust workspace, then the Python package
# (built into a virtual environment at .venv by maturin). Needs only the Rust
# toolchain and python3; everything else is installed on the way.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Rust: build the CLI (release) and run every crate's tests"
cargo build --release -p nandlab-cli
cargo test --workspace --exclude nandlab-py

echo "== Python: build the package with maturin and run pytest"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
pip install --quiet --upgrade pip
pip install --quiet -r frontends/python/requirements-dev.txt
(cd frontends/python && maturin develop --release --quiet)
NANDLAB_BIN="$PWD/target/release/nandlab" python -m pytest -q frontends/python/tests
