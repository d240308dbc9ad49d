#!/usr/bin/env python3
"""nandlab against MQSim, timed like for like (run by scripts/bench-vs-mqsim.sh).

    python3 scripts/bench_vs_mqsim.py MQSIM_BINARY NANDLAB_BINARY WORK_DIR [--runs N] [--device-writes K]
    python3 scripts/bench_vs_mqsim.py --self-test

The race: one MQSim-format trace, a sequential fill of every logical page
(1 ms apart) then K device writes of uniform random single-page writes
(10 ms apart; K = 44 by default: 1,105,920 requests), on the device of
scripts/vs_mqsim.py for both simulators (its configuration files, shared):
the same geometry, over-provisioning, latencies, channel transfer time per
page (20.48 us), greedy GC at 10 free blocks, static allocation, no write
cache, and an empty start, so both age the device the same way, by the
trace's own fill and overwrites. nandlab runs its timed mode (MQSim has no
other); each writes its report to a file.

Before any timing, one run of each must agree (AGREEMENT below); otherwise
the script prints why and exits 1 without timing. Then N rounds run the two
back to back, alternating which goes first, each round's results checked
identical to the first run's (a simulator may only get faster with the same
answer); wall and CPU time (user + system, from wait4) of each process. The
ratio is MQSim's time over nandlab's per round: median and range, also per
flash operation (programs + reads + erases), since MQSim's GC does more of
them. Written to WORK_DIR/vs-mqsim-race.json and printed.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import vs_mqsim as device

# What "agree" means, and why these margins:
# * host requests and host pages written: equal, both served the whole trace;
# * the unqueued write (nandlab's median write, MQSim's minimum response
#   time) within 2 % of t_prog + transfer: the same program latency and
#   channel transfer per page (MQSim adds ~1.5 us of host link and command
#   cycles, docs/validation.md);
# * flash programs and erases within 25 %: MQSim runs up to 10 GCs per plane
#   at once and so takes worse victims (docs/validation.md, "Against MQSim":
#   +26 % steady WAF); a set-up that differs in geometry, over-provisioning
#   or GC threshold moves these further.
AGREEMENT = {
    "unqueued_write_tolerance": 0.02,
    "flash_work_tolerance": 0.25,
}


def disagreements(mqsim, nandlab, margins=None):
    """Why the two results do not agree (empty: they agree). mqsim and
    nandlab are the dictionaries results() returns."""
    margins = margins or AGREEMENT
    found = []
    for key in ("requests", "host_pages_written"):
        if mqsim[key] != nandlab[key]:
            found.append(f"{key}: MQSim {mqsim[key]:,.0f}, nandlab {nandlab[key]:,.0f} (must be equal)")
    unqueued = (device.PROGRAM_NS + device.TRANSFER_NS) / 1000
    for name, value in (
        ("MQSim minimum", mqsim["unqueued_write_us"]),
        ("nandlab median", nandlab["unqueued_write_us"]),
    ):
        if abs(value / unqueued - 1) > margins["unqueued_write_tolerance"]:
            found.append(
                f"unqueued write: {name} {value:.2f} us, t_prog + transfer {unqueued:.2f} us"
                f" (within {margins['unqueued_write_tolerance']:.0%})"
            )
    for key in ("programs", "erases"):
        if abs(mqsim[key] / max(nandlab[key], 1) - 1) > margins["flash_work_tolerance"]:
            found.append(
                f"{key}: MQSim {mqsim[key]:,.0f}, nandlab {nandlab[key]:,.0f}"
                f" (within {margins['flash_work_tolerance']:.0%})"
            )
    return found


def mqsim_summary(work, name):
    """MQSim's results of the run name, in the keys disagreements() reads."""
    raw = device.mqsim_results(work, name)
    return {
        "requests": raw["requests"],
        # Single-page writes only: every request writes one host page.
        "host_pages_written": raw["requests"],
        "programs": raw["programs"],
        "erases": raw["erases"],
        "flash_reads": raw["flash_reads"],
        "unqueued_write_us": raw["min_us"],
        "mean_write_us": raw["mean_us"],
        "max_write_us": raw["max_us"],
    }


def nandlab_summary(path):
    """nandlab's results from its JSON report at path."""
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    measured, write = report["measured"], report["timed"]["latency"]["write"]
    return {
        "requests": measured["requests"],
        "host_pages_written": measured["host_pages_written"],
        "programs": measured["flash_pages_programmed"],
        "erases": measured["erases"],
        "flash_reads": measured["flash_pages_read"],
        "unqueued_write_us": write["p50_us"],
        "mean_write_us": write["mean_us"],
        "max_write_us": write["max_us"],
    }


def timed_run(command, cwd):
    """Runs command (output into cwd/stdout.log) and returns its wall and CPU
    (user + system) seconds, or raises when it fails."""
    with open(os.path.join(cwd, "stdout.log"), "wb") as log:
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{command[0]} exited with {process.returncode} (output in {cwd}/stdout.log)")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}


class Race:
    """The two simulators' commands on one trace, each in a folder of its own."""

    def __init__(self, mqsim, nandlab, work, trace):
        self.folders = {name: os.path.join(work, name) for name in ("mqsim", "nandlab")}
        for folder in self.folders.values():
            os.makedirs(folder, exist_ok=True)
        self.report = os.path.join(self.folders["nandlab"], "report.json")
        self.commands = {
            "mqsim": device.mqsim_command(mqsim, self.folders["mqsim"], "race", trace),
            "nandlab": device.nandlab_command(nandlab, self.folders["nandlab"], trace, True, self.report),
        }

    def run(self, simulator):
        """One timed run: its times and results."""
        times = timed_run(self.commands[simulator], self.folders[simulator])
        results = mqsim_summary(self.folders["mqsim"], "race") if simulator == "mqsim" else nandlab_summary(self.report)
        return times, results


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def load_average():
    return list(os.getloadavg())


def machine():
    """The CPU model, CPUs and kernel the race ran on."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), model)
    except OSError:
        pass
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release()}


def race(mqsim, nandlab, work, runs, device_writes):
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, f"race-fill-{device_writes}dw.mqsim")
    fill = device.fill_requests()
    device.write_trace(
        trace, fill + device.random_write_requests(len(fill) * 1_000_000, device_writes * device.LOGICAL)
    )
    contest = Race(mqsim, nandlab, work, trace)
    first = {simulator: contest.run(simulator) for simulator in ("mqsim", "nandlab")}
    results = {simulator: outcome[1] for simulator, outcome in first.items()}
    document = {
        "provenance": device.provenance(mqsim, nandlab, "scripts/bench-vs-mqsim.sh MQSIM_CHECKOUT"),
        "machine": machine(),
        "trace": {"requests": len(fill) + device_writes * device.LOGICAL, "device_writes_after_fill": device_writes},
        "agreement_margins": AGREEMENT,
        "results": results,
    }
    problems = disagreements(results["mqsim"], results["nandlab"])
    if problems:
        document["disagreements"] = problems
        write_document(work, document)
        print("the two simulators disagree, so they are not timed:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    rounds = []
    for index in range(runs):
        order = ("mqsim", "nandlab") if index % 2 == 0 else ("nandlab", "mqsim")
        measured = {"load_before": load_average()}
        for simulator in order:
            times, outcome = contest.run(simulator)
            if outcome != results[simulator]:
                raise RuntimeError(f"{simulator}'s results changed between runs: {outcome} after {results[simulator]}")
            measured[simulator] = times
        rounds.append(measured)
    document["rounds"] = rounds
    document["ratio"] = ratios(rounds, results)
    write_document(work, document)
    print_table(document)
    return 0


def ratios(rounds, results):
    """MQSim's time over nandlab's per round (median, range), also per flash operation."""
    operations = {
        simulator: results[simulator]["programs"] + results[simulator]["flash_reads"] + results[simulator]["erases"]
        for simulator in results
    }
    work = operations["nandlab"] / operations["mqsim"]
    made = {}
    for clock in ("wall_s", "cpu_s"):
        per_round = [measured["mqsim"][clock] / measured["nandlab"][clock] for measured in rounds]
        made[clock] = spread(per_round)
        made[f"{clock}_per_flash_operation"] = spread([ratio * work for ratio in per_round])
        for simulator in ("mqsim", "nandlab"):
            made[f"{simulator}_{clock}"] = spread([measured[simulator][clock] for measured in rounds])
    made["load_average_1min"] = spread([measured["load_before"][0] for measured in rounds])
    return made


def write_document(work, document):
    with open(os.path.join(work, "vs-mqsim-race.json"), "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2)
        handle.write("\n")


def print_table(document):
    mqsim, nandlab = document["results"]["mqsim"], document["results"]["nandlab"]
    print(f"{'':24} {'MQSim':>14} {'nandlab':>14}")
    for key in mqsim:
        print(f"{key:24} {mqsim[key]:>14,.2f} {nandlab[key]:>14,.2f}")
    ratio = document["ratio"]
    for clock in ("wall_s", "cpu_s"):
        print(
            f"{clock:24} {ratio[f'mqsim_{clock}']['median']:>14.2f} {ratio[f'nandlab_{clock}']['median']:>14.2f}"
            "  (median over rounds)"
        )
    for key in ("wall_s", "cpu_s", "wall_s_per_flash_operation", "cpu_s_per_flash_operation"):
        value = ratio[key]
        print(f"ratio MQSim / nandlab, {key}: {value['median']:.1f}x ({value['min']:.1f}-{value['max']:.1f})")
    load = ratio["load_average_1min"]
    print(f"{len(document['rounds'])} rounds, load average (1 min) {load['min']:.1f}-{load['max']:.1f}")


def self_test():
    """The agreement check passes on agreeing results and fails on each kind
    of disagreement (fabricated results: no simulator runs)."""
    unqueued = (device.PROGRAM_NS + device.TRANSFER_NS) / 1000
    nandlab = {
        "requests": 1000,
        "host_pages_written": 1000,
        "programs": 3000,
        "erases": 50,
        "unqueued_write_us": unqueued,
    }
    agreeing = dict(nandlab, programs=3600, erases=60, unqueued_write_us=unqueued + 1.5)
    assert disagreements(agreeing, nandlab) == [], disagreements(agreeing, nandlab)
    cases = {
        "requests": dict(agreeing, requests=999),
        "host_pages_written": dict(agreeing, host_pages_written=2000),
        "unqueued write": dict(agreeing, unqueued_write_us=unqueued * 0.6),  # 12.3 us a page, not 20.48
        "programs": dict(agreeing, programs=4000),
        "erases": dict(agreeing, erases=30),
    }
    for expected, mqsim in cases.items():
        found = disagreements(mqsim, nandlab)
        assert len(found) == 1 and found[0].startswith(expected), (expected, found)
    slow_nandlab = dict(nandlab, unqueued_write_us=unqueued * 1.05)
    assert disagreements(agreeing, slow_nandlab)[0].startswith("unqueued write: nandlab")
    print("bench_vs_mqsim self-test: the agreement check passes agreeing results and fails", len(cases) + 1, "others")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mqsim")
    parser.add_argument("nandlab")
    parser.add_argument("work")
    parser.add_argument("--runs", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument(
        "--device-writes", type=int, default=44, help="random device writes after the fill (default 44)"
    )
    args = parser.parse_args(argv[1:])
    if args.runs < 1 or args.device_writes < 1:
        parser.error("--runs and --device-writes must be at least 1")
    paths = (os.path.abspath(path) for path in (args.mqsim, args.nandlab, args.work))
    return race(*paths, args.runs, args.device_writes)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
