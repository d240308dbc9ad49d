#!/usr/bin/env bash
# Runs every test of nandlab: the claims check (every figure of README.md and docs/*.md against its
# results file, scripts/check-claims.sh), the import check (no circle among any crate's files, no
# library crate on a front end, scripts/check-imports.py), formatting and lints (rustfmt, clippy
# with warnings as errors, ruff), the Rust workspace, the Python package (built into a virtual
# environment at .venv by maturin) and a short coverage-guided fuzzing campaign. Needs only the Rust
# toolchain (with rustfmt and clippy), a C++ compiler (g++, for libFuzzer) and python3; everything
# else is installed on the way. Any formatting or lint finding fails the run.
#
# One build profile, `checked` (Cargo.toml: release optimisation with debug assertions and overflow
# checks), serves clippy, the tests, the `nandlab` binary they run and the Python package, and the
# tests resolve features over the whole workspace (the Python extension included), so no crate is
# compiled twice: clippy shares the build scripts and proc macros, the extension everything but PyO3.
# What needs one core, or mostly waits, runs in the background beside what needs two: the claims
# self-test and the Python environment beside clippy; the Python tests, the claims re-run and the
# fuzz build beside the Rust tests. Experiment-scale tests are marked `#[ignore = "slow: ..."]`;
# NANDLAB_SLOW_TESTS=1 runs them too (CI does). Each stage prints its wall time and the CPU time of
# its processes, and a table of them closes the run.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=checked
timings=()
run_started=$SECONDS
cpu_file=$(mktemp)
# The output of each command run in the background (`background`, below), in a folder of its own.
logs=$(mktemp -d)
claims_log=$logs/claims python_env_log=$logs/python-env rerun_log=$logs/rerun
fuzz_build_log=$logs/fuzz-build python_log=$logs/python
trap finish EXIT

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
    touch "$log.reported"
    echo "== $name: $seconds s wall, $cpu_seconds s CPU"
    timings+=("$(printf '%6d s %6d s  %s' "$seconds" "$cpu_seconds" "$name")")
    return "$status"
}

# `background_wait_all LOG NAME [LOG NAME]...`: waits for each in turn, and fails (after all
# ended) when any failed.
background_wait_all() {
    local failed=0
    while [ $# -ge 2 ]; do
        background_wait "$1" "$2" || failed=1
        shift 2
    done
    return $failed
}

# A stage that fails ends the run: the commands still running in the background end first, so that
# none outlives it (still writing into target/), and their output is shown.
finish() {
    local status=$? log
    [ -z "$(jobs -rp)" ] || echo "== waiting for the commands still running in the background" >&2
    wait
    for log in "$logs"/*; do
        case $(basename "$log") in *.*) continue ;; esac
        [ -e "$log.reported" ] || { echo "== output of a command run in the background ($(basename "$log"))" && cat "$log"; }
    done
    rm -rf "$cpu_file" "$cpu_file".* "$logs"
    exit $status
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
    ./scripts/check-claims.sh
stage "Imports: no circle among the files of any crate, no library crate on a front end (docs/architecture.md)" \
    ./scripts/check-imports.py --self-test
stage "MQSim race: its agreement check fails on disagreeing results (fabricated; no MQSim)" \
    python3 scripts/bench_vs_mqsim.py --self-test
stage "Rust: formatting (rustfmt.toml)" cargo fmt --all --check
# The claims self-test runs on one core and the environment mostly downloads and unpacks: both run
# beside clippy, which leaves a core idle as it checks one crate after another.
background "$claims_log" ./scripts/check-claims.sh --self-test
background "$python_env_log" python_env
stage "Rust: clippy, warnings as errors (profile $profile)" \
    cargo clippy --profile "$profile" --workspace --all-targets --quiet -- -D warnings
background_wait_all "$claims_log" "Claims: the check's self-test (every checked figure changed must fail), in the background during clippy" \
    "$python_env_log" "Python: environment (.venv), in the background during clippy"
stage "Python: ruff" .venv/bin/ruff check frontends/python
stage "Rust: build every crate's tests (profile $profile)" rust_build
if [ -n "${NANDLAB_PACKAGES_READY:-}" ]; then
    stage "CI: wait for the Debian packages the tests use (.ci/run installs them meanwhile)" packages_wait
fi
# Everything after the build is independent of everything else but the fuzz campaign (which needs
# the fuzz build): it all starts at once, so that the two cores stay busy while tests wait on
# devices, daemons and child processes. The fuzz targets build at the lowest priority, taking only
# the CPU time the rest leaves. (The Python package's build and the Rust tests' share target/, so
# cargo runs one after the other.)
background "$fuzz_build_log" nice -n 19 scripts/fuzz.sh build
background "$python_log" python_tests
background "$rerun_log" env NANDLAB_BIN="$PWD/target/$profile/nandlab" ./scripts/check-claims.sh --rerun
stage "Rust: every crate's tests (profile $profile), with the three below in the background" rust_tests
background_wait_all "$rerun_log" "Claims: the fast generators reproduce their results files exactly, in the background during the tests" \
    "$python_log" "Python: pip install ./frontends/python (profile $profile) and pytest, in the background during the tests" \
    "$fuzz_build_log" "Fuzzing: build the targets, in the background during the tests"
stage "Fuzzing: a 15-second coverage-guided campaign of every target (docs/fuzzing.md)" scripts/fuzz.sh all 0.25

cpu_now
echo "== stage times"
printf '%8s %8s  %s\n' wall CPU stage
printf '%s\n' "${timings[@]}"
printf '%6d s %6d s  %s\n' $((SECONDS - run_started)) "$cpu" "all"
