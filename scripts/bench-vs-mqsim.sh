#!/usr/bin/env bash
# The timed race of nandlab against MQSim, like for like (docs/validation.md,
# "Racing MQSim"): both simulators on the same 1.1 M-request trace, device,
# latencies, channel transfer time, GC policy and empty start; their results
# must agree within stated margins before they are timed, then alternating
# rounds give the speed ratio (scripts/bench_vs_mqsim.py).
#
# Usage: scripts/bench-vs-mqsim.sh MQSIM_CHECKOUT [WORK_DIR] [--runs N] [--device-writes K]
#   (MQSIM_CHECKOUT: your own checkout of github.com/CMU-SAFARI/MQSim, built
#   with `make` when not yet built; nothing of MQSim is part of nandlab.)
exec "$(dirname "$0")/vs-mqsim.sh" --race "$@"
