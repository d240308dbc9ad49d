#!/usr/bin/env bash
# Runs every test of nandlab: the claims check (scripts/check-claims.sh), formatting and lints (rustfmt, clippy with
# warnings as errors, ruff), the Rust workspace, then the Python package
# (built into a virtual environment at .venv by maturin). Needs only the Rust
# toolchain (with rustfmt and clippy) and python3; everything else is
# installed on the way. Any formatting or lint finding fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Claims: every figure of README.md and docs/*.md against its results file (docs/reporting.md)"
./scripts/check-claims.sh --self-test

echo "== Rust: formatting (rustfmt.toml) and clippy, warnings as errors"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== Rust: build the CLI (release) and run every crate's tests"
cargo build --release -p nandlab-cli
echo "== Claims: the fast generators reproduce their results files exactly"
./scripts/check-claims.sh --rerun
cargo test --workspace --exclude nandlab-py

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
