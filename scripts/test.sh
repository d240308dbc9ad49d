#!/usr/bin/env bash
# Runs every test of nandlab: the claims check (every figure of README.md and docs/*.md against its
# results file, scripts/check-claims.sh), formatting and lints (rustfmt, clippy with warnings as
# errors, ruff),
# the Rust workspace, a short coverage-guided fuzzing campaign, then the Python package (built into a
# virtual environment at .venv by maturin). Needs only the Rust toolchain (with rustfmt and clippy),
# a C++ compiler (g++, for libFuzzer) and python3; everything else is installed on the way. Any
# formatting or lint finding fails the run.
#
# One build profile, `checked` (Cargo.toml: release optimisation with debug assertions and overflow
# checks), serves the tests, the `nandlab` binary they run and the Python package, so nothing is
# compiled twice. Experiment-scale tests are marked `#[ignore = "slow: ..."]`; NANDLAB_SLOW_TESTS=1
# runs them too (CI does). Each stage prints how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=checked
timings=()
stage() {
    local name=$1 started=$SECONDS
    shift
    echo "== $name"
    "$@"
    timings+=("$(printf '%5d s  %s' $((SECONDS - started)) "$name")")
}

# cargo-nextest (where installed) runs each test in its own process, so tests that wait on a
# daemon, a loop device or a sleep overlap on two cores; it does not run doc tests.
rust_tests() {
    # The experiment tests that capture a file system run `nandlab fsload` from this build.
    export NANDLAB_BIN="$PWD/target/$profile/nandlab"
    local slow=0
    [ "${NANDLAB_SLOW_TESTS:-0}" = 1 ] && slow=1
    if cargo nextest --version >/dev/null 2>&1; then
        local ignored=default
        [ $slow = 1 ] && ignored=all
        cargo nextest run --cargo-profile "$profile" --workspace --exclude nandlab-py \
            --run-ignored "$ignored" --no-fail-fast --final-status-level slow
        cargo test --profile "$profile" --workspace --exclude nandlab-py --doc
    elif [ $slow = 1 ]; then
        cargo test --profile "$profile" --workspace --exclude nandlab-py -- --include-ignored
    else
        cargo test --profile "$profile" --workspace --exclude nandlab-py
    fi
}

python_env() {
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    .venv/bin/pip install --quiet --upgrade pip
    .venv/bin/pip install --quiet -r frontends/python/requirements-dev.txt
}

python_tests() {
    # shellcheck disable=SC1091
    . .venv/bin/activate
    # The README's one-step install, in this run's profile (maturin reads MATURIN_PEP517_ARGS), so
    # the extension reuses the tests' build; it installs the `nandlab` console script that the
    # experiments capturing a file system run as `nandlab fsload`.
    MATURIN_PEP517_ARGS="--profile $profile" pip install --quiet ./frontends/python
    # Tests that compare Python with the command line run this build's binary.
    NANDLAB_BIN="$PWD/target/$profile/nandlab" python -m pytest -q frontends/python/tests
}

stage "Claims: every figure of README.md and docs/*.md against its results file (docs/reporting.md)" \
    ./scripts/check-claims.sh --self-test
stage "Rust: formatting (rustfmt.toml)" cargo fmt --all --check
stage "Rust: clippy, warnings as errors" cargo clippy --workspace --all-targets --quiet -- -D warnings
stage "Python: environment (.venv) and ruff" python_env
stage "Python: ruff" .venv/bin/ruff check frontends/python
stage "Rust: every crate's tests (profile $profile)" rust_tests
stage "Claims: the fast generators reproduce their results files exactly" \
    env NANDLAB_BIN="$PWD/target/$profile/nandlab" ./scripts/check-claims.sh --rerun
stage "Fuzzing: a 15-second coverage-guided campaign of every target (docs/fuzzing.md)" scripts/fuzz.sh all 0.25
stage "Python: pip install ./frontends/python (profile $profile) and pytest" python_tests

echo "== stage times"
printf '%s\n' "${timings[@]}"
