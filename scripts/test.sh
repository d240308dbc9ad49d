#!/usr/bin/env bash
# Runs every test of nandlab: the claims check (every figure of README.md and docs/*.md against its
# results file, scripts/check-claims.sh), the import check (no circle among any crate's files, no
# library crate on a front end, scripts/check-imports.py), formatting and lints (rustfmt, clippy
# with warnings as errors, ruff), the Rust workspace, a short coverage-guided fuzzing campaign, then
# the Python package (built into a virtual environment at .venv by maturin). Needs only the Rust
# toolchain (with rustfmt and clippy), a C++ compiler (g++, for libFuzzer) and python3; everything
# else is installed on the way. Any formatting or lint finding fails the run.
#
# One build profile, `checked` (Cargo.toml: release optimisation with debug assertions and overflow
# checks), serves clippy, the tests, the `nandlab` binary they run and the Python package, and the
# tests resolve features over the whole workspace (the Python extension included), so no crate is
# compiled twice: clippy shares the build scripts and proc macros, the extension everything but PyO3.
# The Python environment is installed in the background meanwhile. Experiment-scale tests are marked
# `#[ignore = "slow: ..."]`; NANDLAB_SLOW_TESTS=1 runs them too (CI does). Each stage prints its wall
# time and the CPU time of its processes, and a table of them closes the run.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=checked
timings=()
run_started=$SECONDS
cpu_file=$(mktemp)
python_env_log=$(mktemp)
fuzz_build_log=$(mktemp)
trap 'rm -f "$cpu_file" "$cpu_file".* "$python_env_log" "$python_env_log".* "$fuzz_build_log" "$fuzz_build_log".*' EXIT

# User plus system CPU seconds of the finished child processes of this shell, into $cpu (`times`
# must run in this shell itself, not in a command substitution's).
cpu_now() {
    times >"$cpu_file"
    cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$cpu_file")
}

# Runs a stage in a subshell of its own, whose `times` count only the stage's processes (not a
# background command that ends meanwhile).
stage() {
    local name=$1 started=$SECONDS wall used
    shift
    echo "== $name"
    (
        cpu_file=$cpu_file.stage
        "$@"
        cpu_now
        echo "$cpu" >"$cpu_file"
    )
    wall=$((SECONDS - started))
    used=$(cat "$cpu_file.stage")
    echo "   $wall s wall, $used s CPU"
    timings+=("$(printf '%6d s %6d s  %s' "$wall" "$used" "$name")")
}

# The tests' build, apart from their run, which may first wait for the packages CI installs.
rust_build() {
    cargo test --profile "$profile" --workspace --no-run --quiet
}

# .ci/run installs the Debian packages the tests use in the background, while the checks and the
# build run, and names in NANDLAB_PACKAGES_READY the file that gets the install's exit status.
packages_wait() {
    local ready=$NANDLAB_PACKAGES_READY waited=0
    while [ ! -s "$ready" ]; do
        # Bounded: an install killed before it wrote its status must not hang the run.
        if [ $waited -ge 1800 ]; then
            echo "the Debian package install wrote no status in 30 min ($ready); its output:" >&2
            cat "$ready.log" >&2 || true
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    cat "$ready.log"
    return "$(cat "$ready")"
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
        cargo nextest run --cargo-profile "$profile" --workspace \
            --run-ignored "$ignored" --no-fail-fast --final-status-level slow
        cargo test --profile "$profile" --workspace --doc
    elif [ $slow = 1 ]; then
        cargo test --profile "$profile" --workspace -- --include-ignored
    else
        cargo test --profile "$profile" --workspace
    fi
}

# A chain, as its caller tests its status (which switches `set -e` off inside).
python_env() {
    { [ -x .venv/bin/python ] || python3 -m venv .venv; } &&
        .venv/bin/pip install --quiet --upgrade pip &&
        .venv/bin/pip install --quiet -r frontends/python/requirements-dev.txt
}

# A command run in the background, beside the stages: `background LOG COMMAND...` starts it (output
# into LOG), `background_wait LOG NAME` waits for it, prints its output and adds its wall and CPU
# time to the table under NAME, and fails as it failed.
declare -A background_pids
background() {
    local log=$1
    shift
    (
        cpu_file=$log.cpu
        started=$SECONDS
        status=0
        "$@" >"$log" 2>&1 || status=$?
        cpu_now
        echo "$status $((SECONDS - started)) $cpu" >"$log.done"
    ) &
    background_pids[$log]=$!
}

background_wait() {
    local log=$1 name=$2 status seconds cpu_seconds
    wait "${background_pids[$log]}"
    read -r status seconds cpu_seconds <"$log.done"
    cat "$log"
    echo "== $name: $seconds s wall, $cpu_seconds s CPU"
    timings+=("$(printf '%6d s %6d s  %s' "$seconds" "$cpu_seconds" "$name")")
    return "$status"
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
stage "Imports: no circle among the files of any crate, no library crate on a front end (docs/architecture.md)" \
    ./scripts/check-imports.py --self-test
stage "MQSim race: its agreement check fails on disagreeing results (fabricated; no MQSim)" \
    python3 scripts/bench_vs_mqsim.py --self-test
stage "Rust: formatting (rustfmt.toml)" cargo fmt --all --check
# The environment mostly downloads and unpacks: it is installed while clippy compiles.
background "$python_env_log" python_env
stage "Rust: clippy, warnings as errors (profile $profile)" \
    cargo clippy --profile "$profile" --workspace --all-targets --quiet -- -D warnings
background_wait "$python_env_log" "Python: environment (.venv), in the background during clippy"
stage "Python: ruff" .venv/bin/ruff check frontends/python
stage "Rust: build every crate's tests (profile $profile)" rust_build
if [ -n "${NANDLAB_PACKAGES_READY:-}" ]; then
    stage "CI: wait for the Debian packages the tests use (.ci/run installs them meanwhile)" packages_wait
fi
# The fuzz targets build at the lowest priority while the tests run: it takes only the CPU time the
# tests leave, as they wait on devices, daemons and child processes.
background "$fuzz_build_log" nice -n 19 scripts/fuzz.sh build
stage "Rust: every crate's tests (profile $profile)" rust_tests
background_wait "$fuzz_build_log" "Fuzzing: build the targets, in the background during the tests"
stage "Claims: the fast generators reproduce their results files exactly" \
    env NANDLAB_BIN="$PWD/target/$profile/nandlab" ./scripts/check-claims.sh --rerun
stage "Fuzzing: a 15-second coverage-guided campaign of every target (docs/fuzzing.md)" scripts/fuzz.sh all 0.25
stage "Python: pip install ./frontends/python (profile $profile) and pytest" python_tests

cpu_now
echo "== stage times"
printf '%8s %8s  %s\n' wall CPU stage
printf '%s\n' "${timings[@]}"
printf '%6d s %6d s  %s\n' $((SECONDS - run_started)) "$cpu" "all"
