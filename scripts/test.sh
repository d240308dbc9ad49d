#!/usr/bin/env bash
# Runs every test of nandlab: formatting and lints (rustfmt, clippy with
# warnings as errors, ruff), the Rust workspace, then the Python package
# (built into a virtual environment at .venv by maturin), with a short
# coverage-guided fuzzing campaign between them. Needs only the Rust
# toolchain (with rustfmt and clippy), a C++ compiler (g++, for libFuzzer)
# and python3; everything else is installed on the way. Any formatting or
# lint finding fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Rust: formatting (rustfmt.toml) and clippy, warnings as errors"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== Rust: build the CLI (release) and run every crate's tests"
cargo build --release -p nandlab-cli
cargo test --workspace --exclude nandlab-py

echo "== Fuzzing: a 15-second coverage-guided campaign of every target (docs/fuzzing.md)"
scripts/fuzz.sh all 0.25

echo "== Python: build the package with maturin and run pytest"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
pip install --quiet --upgrade pip
pip install --quiet -r frontends/python/requirements-dev.txt
echo "== Python: ruff"
ruff check frontends/python
(cd frontends/python && maturin develop --release --quiet)
NANDLAB_BIN="$PWD/target/release/nandlab" python -m pytest -q frontends/python/tests
