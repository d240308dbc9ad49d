#!/usr/bin/env python3
"""Results files behind the figures of README.md and docs/*.md.

Each generator runs one command (usually `nandlab reproduce NAME`) into a
scratch folder, copies the data files it names into the repository (e.g.
docs/telomere/figure9.csv) and writes docs/results/NAME.json: the figures
derived from those data (medians and ranges over seeds, ratios), the
"paper vs nandlab" rows of the run's summary.md, and the provenance
(command, date, commit, machine, load). docs/reporting.md, "Claims as code",
says how the docs point at them.

    python3 scripts/results.py regenerate NAME   # run and write (scripts/regenerate-results.sh)
    python3 scripts/results.py verify NAME       # run and compare with the committed files
    python3 scripts/results.py list              # the generators, fast ones first

`verify` is what the claims checker runs for the fast, deterministic
generators: the data files and the derived figures must come out byte for byte
the same (the provenance is not compared). Python 3 standard library only.
"""

import csv
import glob
import re
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "results")


def nandlab():
    return os.environ.get("NANDLAB_BIN", os.path.join(ROOT, "target", "release", "nandlab"))


def spread(values):
    """Median, minimum and maximum; fractions rounded to 6 significant digits
    so that the JSON does not carry float noise, whole numbers kept exact."""
    values = list(values)

    def short(value):
        return value if float(value).is_integer() else float(f"{value:.6g}")

    return {
        "median": short(statistics.median(values)),
        "min": short(min(values)),
        "max": short(max(values)),
        "n": len(values),
    }


def slug(text):
    """A JSON key a claim marker can name without quoting: `α = 0.10 Telomere SiP` → `α=0.10_Telomere_SiP`."""
    return re.sub(r"_?=_?", "=", re.sub(r"[^\w.=+-]+", "_", text).strip("_"))


def read_csv(path):
    with open(path, encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def comparisons(summary_path):
    """The "paper vs nandlab" rows of a summary.md (columns quantity, paper,
    nandlab, verdict, note)."""
    rows = []
    if not os.path.exists(summary_path):
        return rows
    with open(summary_path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    for index, line in enumerate(lines):
        if line.startswith("| quantity | paper | nandlab | verdict |"):
            for row in lines[index + 2 :]:
                if not row.startswith("|"):
                    break
                cells = [cell.strip() for cell in row.strip("|").split(" | ")]
                if len(cells) >= 4:
                    rows.append({"quantity": cells[0], "paper": cells[1], "nandlab": cells[2], "verdict": cells[3]})
    return rows


def provenance(command, started):
    def run(*argv):
        try:
            return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            return ""

    commit = run("git", "rev-parse", "--short=12", "HEAD")
    # `-dirty` when the code that made the results had uncommitted changes; docs/
    # (results files and data just written, e.g. by the generator run before) is not that code.
    if run("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs"):
        commit += "-dirty"
    cpu = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            cpu = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "")
    load = ""
    if os.path.exists("/proc/loadavg"):
        with open("/proc/loadavg", encoding="utf-8") as handle:
            load = " ".join(handle.read().split()[:3])
    return {
        "command": command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wall_s": round(time.time() - started, 1),
        "commit": commit,
        "machine": f"{cpu or platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        "load_average": load,
    }


class Generator:
    """One results file: the runs that make it, the data files kept, the figures derived."""

    def __init__(self, name, runs, keep, derive, fast, root=False):
        self.name = name
        self.runs = runs  # [(label, argv after `nandlab`)]: each runs into OUT/label
        self.keep = keep  # {repository path: "label/file"}
        self.derive = derive  # fn(out folder) -> dict of derived figures
        self.fast = fast
        self.root = root

    def command(self):
        return " ; ".join("nandlab " + " ".join(placed(argv, f"OUT/{label}")) for label, argv in self.runs)

    def produce(self, out, run=True):
        for label, argv in self.runs if run else []:
            target = os.path.join(out, label)
            os.makedirs(target, exist_ok=True)
            result = subprocess.run([nandlab(), *placed(argv, target)], cwd=ROOT, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise RuntimeError(f"{self.name}: `nandlab {' '.join(argv)}` failed:\n{result.stderr[-2000:]}")
        document = {"derived": self.derive(out)}
        document["comparisons"] = {
            label: comparisons(os.path.join(out, label, "summary.md")) for label, _ in self.runs
        }
        return document


def placed(argv, target):
    """The run's arguments writing into `target`: `{out}` in an argument is
    replaced by it (`--json {out}/run.json`); without one, `--out TARGET`."""
    if any("{out}" in arg for arg in argv):
        return [arg.replace("{out}", target) for arg in argv]
    return [*argv, "--out", target]


def derive_none(_out):
    return {}


def derive_priority(out):
    """docs/priority-cleaning.md's tables: per write share, the means (ms)
    unaware and aware and the change (%), for the single workload and for
    the two jobs; and the figures its prose quotes from them."""

    def pairs(name, label="priority-cleaning"):
        rows = read_csv(os.path.join(out, label, name))
        by_share = {}
        for row in rows:
            by_share.setdefault(int(row["write_percent"]), {})[row["priority_aware"]] = row
        return [(share, by_share[share]["false"], by_share[share]["true"]) for share in sorted(by_share)]

    def change(unaware, aware):
        return round(100 * (float(aware) / float(unaware) - 1), 6)

    single, jobs = pairs("priority_cleaning.csv"), pairs("priority_jobs.csv")
    single_table = [
        [
            float(off["priority_mean_ms"]),
            float(on["priority_mean_ms"]),
            change(off["priority_mean_ms"], on["priority_mean_ms"]),
            float(off["normal_mean_ms"]),
            float(on["normal_mean_ms"]),
        ]
        for _, off, on in single
    ]
    jobs_table = [
        [
            float(off[f"{job}_{stat}"]) if which == "off" else float(on[f"{job}_{stat}"])
            for job, stat in (("priority_job", "mean_ms"),)
            for which in ("off", "on")
        ]
        + [change(off["priority_job_mean_ms"], on["priority_job_mean_ms"])]
        + [
            float(row[f"{job}_{stat}"])
            for job, stat in (("priority_job", "p99_ms"), ("bulk_job", "mean_ms"), ("bulk_job", "p99_ms"))
            for row in (off, on)
        ]
        for _, off, on in jobs
    ]
    priority_gain = [-change(off["priority_mean_ms"], on["priority_mean_ms"]) for _, off, on in single]
    normal_change = [abs(change(off["normal_mean_ms"], on["normal_mean_ms"])) for _, off, on in single]
    job_gain = [-change(off["priority_job_mean_ms"], on["priority_job_mean_ms"]) for _, off, on in jobs]
    over_seeds = {}
    for name, mean, p99 in (
        ("single_workload", "priority_mean_ms", "priority_p99_ms"),
        ("jobs", "priority_job_mean_ms", "priority_job_p99_ms"),
    ):
        csv_name = "priority_cleaning.csv" if name == "single_workload" else "priority_jobs.csv"
        runs = [pairs(csv_name, priority_label(seed)) for seed in SEEDS_PRIORITY]
        gains = [[-change(off[mean], on[mean]) for _, off, on in run] for run in runs]
        p99_changes = [[change(off[p99], on[p99]) for _, off, on in run] for run in runs]
        shares = [share for share, _, _ in runs[0]]
        over_seeds[name] = {
            "priority_mean_gain_percent": {str(s): spread(g[i] for g in gains) for i, s in enumerate(shares)},
            "priority_p99_change_percent": {str(s): spread(c[i] for c in p99_changes) for i, s in enumerate(shares)},
            "priority_mean_gain_percent_all_points": spread(value for g in gains for value in g),
            "priority_p99_change_percent_all_points": spread(value for c in p99_changes for value in c),
        }
        if name == "single_workload":
            normal = [abs(change(off["normal_mean_ms"], on["normal_mean_ms"])) for run in runs for _, off, on in run]
            over_seeds[name]["normal_mean_change_percent_largest"] = max(normal)
    return {
        "seeds": list(SEEDS_PRIORITY),
        "over_seeds": over_seeds,
        "write_percent": [share for share, _, _ in single],
        "single_workload_table": single_table,
        "priority_mean_gain_percent": {"min": min(priority_gain), "max": max(priority_gain)},
        "normal_mean_change_percent_largest": max(normal_change),
        "jobs_write_percent": [share for share, _, _ in jobs],
        "jobs_table": jobs_table,
        "priority_job_mean_gain_percent": {"min": min(job_gain), "max": max(job_gain)},
        "priority_job_p99_change_percent": {
            str(share): change(off["priority_job_p99_ms"], on["priority_job_p99_ms"]) for share, off, on in jobs
        },
    }


def derive_timing_examples(out):
    """docs/timing.md's two examples (femu-32g aged, QD 32): what `nandlab
    run --timing on` prints for random writes and for random reads."""

    def report(label):
        with open(os.path.join(out, label, "run.json"), encoding="utf-8") as handle:
            return json.load(handle)

    write, read = report("writes"), report("reads")
    write_latency, read_latency = write["timed"]["latency"]["write"], read["timed"]["latency"]["read"]
    derived = {
        "writes": {
            "iops": write["timed"]["iops"],
            "write_mb_s": write["timed"]["write_mb_s"],
            "mean_us": write_latency["mean_us"],
            "p50_us": write_latency["p50_us"],
            "p99_ms": write_latency["p99_us"] / 1000,
            "p999_ms": write_latency["p999_us"] / 1000,
            "die_busy_percent": 100 * write["timed"]["die_utilization"],
            "gc_share_of_die_time_percent": 100 * write["timed"]["gc_die_time_share"],
            "waf": write["measured"]["waf"],
        },
        "reads": {
            "iops": read["timed"]["iops"],
            "mean_us": read_latency["mean_us"],
            "p50_us": read_latency["p50_us"],
            "p99_us": read_latency["p99_us"],
            "die_busy_percent": 100 * read["timed"]["die_utilization"],
            "gc_share_of_die_time_percent": 100 * read["timed"]["gc_die_time_share"],
        },
    }
    # The figures of the doc's example block, in the order it quotes them.
    quoted = {
        "writes": ["iops", "write_mb_s", "mean_us", "p50_us", "p99_ms", "p999_ms", "die_busy_percent"]
        + ["gc_share_of_die_time_percent", "waf"],
        "reads": ["iops", "mean_us", "p50_us", "p99_us", "die_busy_percent"],
    }
    derived["example_block"] = [derived[run][key] for run, keys in quoted.items() for key in keys]
    return derived


def derive_fig9(out):
    """Figure 9 per α and method (exact C^g, and the throughput with C^g
    rounded to 1 ms); docs/telomere.md's table as rows [α, (WAF), storage %,
    throughput %, (throughput % rounded: Telomere only), cost pp]; and the
    terms of the first task set eq. (20) rejected, from the rounded run's
    summary.md, as rows [U^b %, t_e/min(T), reads, writes, GC, total]."""
    rows = read_csv(os.path.join(out, "fig9", "figure9.csv"))
    fields = {}
    for row in rows:
        fields[slug(f"{row['point']} {row['policy']}")] = {
            key: float(row[key])
            for key in ("storage_utilization_percent", "throughput_utilization_percent", "storage_cost_percent")
        }
    rounded = read_csv(os.path.join(out, "fig9-ms", "figure9.csv"))
    throughput_ms = {
        slug(f"{row['point']} {row['policy']}"): float(row["throughput_utilization_percent"]) for row in rounded
    }
    table = []
    for row in rows:
        key = slug(f"{row['point']} {row['policy']}")
        waf = re.search(r"WAF (\d+\.\d+)", row["policy"])
        telomere = row["policy"].startswith("Telomere")
        table.append(
            [float(row["point"].split("=")[1])]
            + ([float(waf.group(1))] if waf else [])
            + [float(row["storage_utilization_percent"]), float(row["throughput_utilization_percent"])]
            + ([throughput_ms[key]] if telomere else [])
            + [float(row["storage_cost_percent"])]
        )
    terms = rejected_terms(os.path.join(out, "fig9-ms", "summary.md"))
    return {
        "exact_gc_cost": fields,
        "throughput_percent_with_gc_rounded_to_1_ms": throughput_ms,
        "doc_table": table,
        "rejected_task_set_terms_gc_rounded_to_1_ms": terms,
        "rejected_task_set_terms_table": list(terms.values()),
    }


def rejected_terms(summary_path):
    """The table of the first task set eq. (20) rejected per method in a
    Figure 9 summary.md: {method: [U^b %, t_e/min(T), reads, writes, GC, total]}."""
    table = summary_table(summary_path, "| method | U^b | seed |")
    terms = ("t_e/min(T)", "reads", "writes", "GC", "total")
    return {
        slug(method): [float(cells["U^b"].rstrip(" %"))] + [float(cells[term]) for term in terms]
        for method, cells in table.items()
    }


def derive_fig7_8(number):
    """Figure 7 (per granularity) or 8 (per task count): docs/telomere.md's
    table as rows [SiP storage %, SharP storage %, SiP cost pp, SharP cost pp,
    throughput %] in the CSV's order of points (SiP and SharP share the
    throughput test); Figure 8 also the throughput drop from 500 to 100 tasks."""

    def derive(out):
        rows = read_csv(os.path.join(out, f"fig{number}", f"figure{number}.csv"))
        points = {}
        for row in rows:
            points.setdefault(row["point"], {})[row["policy"]] = row
        table = []
        for by_policy in points.values():
            sip, sharp = by_policy["Telomere SiP"], by_policy["Telomere SharP"]
            if sip["throughput_utilization_percent"] != sharp["throughput_utilization_percent"]:
                raise RuntimeError(f"figure {number}: SiP and SharP throughput differ at {sip['point']}")
            table.append(
                [float(sip["storage_utilization_percent"]), float(sharp["storage_utilization_percent"])]
                + [float(sip["storage_cost_percent"]), float(sharp["storage_cost_percent"])]
                + [float(sip["throughput_utilization_percent"])]
            )
        derived = {"doc_table": table}
        if number == 8:
            throughput = {point: float(by["Telomere SiP"]["throughput_utilization_percent"]) for point, by in points.items()}
            derived["throughput_drop_points_500_to_100_tasks"] = throughput["500 tasks"] - throughput["100 tasks"]
        return derived

    return derive


FIG10_METHODS = ("Telomere HB", "Telomere RBER", "Telomere noWL", "Pagemap RBER", "Pagemap noWL")


def derive_fig10(out):
    """Telomere Fig. 10 over seeds 1-10 (one run, `--repeats 10`): the spread
    of RBER (p90/p10) per method, median [range] over the seeds; on how many
    seeds the paper's order holds taken one by one; and each method's mean
    erase count per decile of block health (cycles to death under eq. (27),
    healthiest first), median over the seeds."""
    folder = os.path.join(out, "telomere-fig10")
    per_method, by_seed = {}, {}
    for row in read_csv(os.path.join(folder, "fig10_summary.csv")):
        ratio = float(row["rber_p90"]) / float(row["rber_p10"])
        per_method.setdefault(slug(row["method"]), []).append(ratio)
        by_seed.setdefault(row["seed"], {})[row["method"]] = ratio
    holds = 0
    for spreads in by_seed.values():
        values = [spreads.get(method, float("inf")) for method in FIG10_METHODS]
        holds += max(values[:2]) <= min(values[2:])
    blocks = {}
    for row in read_csv(os.path.join(folder, "fig10_rber.csv")):
        blocks.setdefault((row["seed"], row["method"]), []).append((int(row["cycles_to_death"]), int(row["erases"])))
    deciles = {}
    for (_seed, method), values in blocks.items():
        values.sort(key=lambda pair: -pair[0])
        count = len(values)
        for decile in range(10):
            chunk = values[decile * count // 10 : (decile + 1) * count // 10]
            mean = sum(erases for _, erases in chunk) / len(chunk)
            deciles.setdefault(slug(method), {}).setdefault(decile, []).append(mean)
    return {
        "seeds": sorted(int(seed) for seed in by_seed),
        "rber_spread_p90_over_p10": {method: spread(values) for method, values in per_method.items()},
        "verdict_on_the_median": comparisons(os.path.join(folder, "summary.md"))[0]["verdict"],
        "order_holds_on_seeds": holds,
        "mean_erases_by_health_decile": {
            method: {str(decile + 1): spread(means) for decile, means in sorted(by_decile.items())}
            for method, by_decile in deciles.items()
        },
    }


def derive_informed(out):
    rows = read_csv(os.path.join(out, "informed-cleaning", "informed_cleaning.csv"))
    by_load = {}
    for row in rows:
        saved = 1 - float(row["cleaning_time_with_s"]) / float(row["cleaning_time_without_s"])
        entry = by_load.setdefault(row["transactions"], {"moved_ratio": [], "cleaning_time_saved_percent": []})
        entry["moved_ratio"].append(float(row["moved_ratio"]))
        entry["cleaning_time_saved_percent"].append(100 * saved)
    medians_moved = [statistics.median(v["moved_ratio"]) for v in by_load.values()]
    medians_saved = [statistics.median(v["cleaning_time_saved_percent"]) for v in by_load.values()]
    return {
        "per_transactions": {
            load: {key: spread(values) for key, values in entry.items()} for load, entry in by_load.items()
        },
        "median_per_load": {"moved_ratio": spread(medians_moved), "cleaning_time_saved_percent": spread(medians_saved)},
        "all_captures": {
            key: spread(value for entry in by_load.values() for value in entry[key])
            for key in ("moved_ratio", "cleaning_time_saved_percent")
        },
        "repeats": len(next(iter(by_load.values()))["moved_ratio"]),
        # Whole passes of its capture each counting replay's workload aging ran.
        "aging_passes": {
            information: spread(int(row[f"aging_passes_{information}"]) for row in rows)
            for information in ("without", "with")
        },
    }


def derive_stripe(out):
    rows = read_csv(os.path.join(out, "stripe-merging", "real_workloads.csv"))
    gains, ratios = {}, {}
    for row in rows:
        gain = 100 * (1 - float(row["merge_mean_ms"]) / float(row["eager_mean_ms"]))
        gains.setdefault(row["load"], {}).setdefault(slug(row["workload"]), []).append(gain)
        ratio = float(row["merge_mean_ms"]) / float(row["eager_mean_ms"])
        ratios.setdefault(row["load"], {}).setdefault(slug(row["workload"]), []).append(ratio)
    return {
        "gain_percent": {workload: spread(values) for workload, values in gains["saturated"].items()},
        "gain_percent_by_load": {
            load: {workload: spread(values) for workload, values in by_workload.items()}
            for load, by_workload in gains.items()
        },
        "merge_over_eager_mean_by_load": {
            load: {workload: spread(values) for workload, values in by_workload.items()}
            for load, by_workload in ratios.items()
        },
        "fio_oltp_gain_percent_by_buffer_pages": {
            str(pages): spread(stripe_gain(out, "fio-oltp", pages, 4)) for pages in (256, 1024, 4096)
        },
        "fio_oltp_gain_percent_by_queue_depth": {
            str(depth): spread(stripe_gain(out, "fio-oltp", 1024, depth)) for depth in (1, 4, 32)
        },
    }


def stripe_gain(out, workload, buffer_pages, queue_depth):
    """Gain of stripe merging over eager flushing (1 − merging / eager mean
    response time, %) for each capture of `workload`, replayed as
    `reproduce stripe-merging` does but with the buffer and queue depth given."""
    traces = os.path.join(out, "stripe-merging", "traces")
    gains = []
    for trace in sorted(glob.glob(os.path.join(traces, f"{workload}-*.nlt"))):
        means = []
        for flush in ("eager", "stripe-merge"):
            argv = [nandlab(), "replay", trace, "--fit", "--preset", "small", "--timing", "on", "--arrival", "closed"]
            for assignment in (
                "timing.stripe_pages=256",
                f"timing.write_buffer_pages={buffer_pages}",
                f'timing.flush="{flush}"',
                f"timing.queue_depth={queue_depth}",
            ):
                argv += ["--set", assignment]
            argv += ["--seed", "1", "--json", "-"]
            result = subprocess.run(argv, capture_output=True, text=True, check=True)
            means.append(json.loads(result.stdout)["timed"]["latency"]["all"]["mean_us"])
        gains.append(100 * (1 - means[1] / means[0]))
    if not gains:
        raise RuntimeError(f"no {workload} captures in {traces}")
    return gains


def delay_d_ratios(csv_path):
    """Delay-D's headline ratios from delay_d.csv: DISCARDs issued by Enabled
    over Delay-D in single-erase, and GC copies of Disabled over Delay-D on the
    aged device (exact DISCARD), median [range] over the captures that
    have a ratio."""
    rows = read_csv(csv_path)

    def pick(scenario, state, discard, policy, field):
        return {
            row["repeat"]: float(row[field])
            for row in rows
            if (row["scenario"], row["device_state"], row["device_discard"], row["policy"])
            == (scenario, state, discard, policy)
        }

    enabled = pick("single-erase", "fresh", "exact", "Enabled", "discard_issued")
    delayed = pick("single-erase", "fresh", "exact", "Delay-D", "discard_issued")
    disabled_copies = pick("single-erase", "aged", "exact", "Disabled", "gc_page_copies")
    enabled_copies = pick("single-erase", "aged", "exact", "Enabled", "gc_page_copies")
    delayed_copies = pick("single-erase", "aged", "exact", "Delay-D", "gc_page_copies")
    def over(numerator, denominator):
        """Per capture, numerator / denominator where the denominator is not
        zero (Delay-D may copy nothing: no ratio), with how many were skipped."""
        ratios = [numerator[r] / denominator[r] for r in numerator if denominator.get(r)]
        result = spread(ratios) if ratios else {"n": 0}
        result["captures_without_ratio"] = len(numerator) - len(ratios)
        return result

    return {
        "single_erase_discards_enabled_over_delay_d": over(enabled, delayed),
        "single_erase_aged_gc_copies_disabled_over_delay_d": over(disabled_copies, delayed_copies),
        "single_erase_aged_gc_copies_enabled_over_delay_d": over(enabled_copies, delayed_copies),
        "repeats": len(enabled),
    }


def derive_delay_d(out):
    """The headline ratios, and the tables of docs/delay-d.md: GC copies on
    the aged device per scenario, device DISCARD mode and policy, and the
    DISCARD counts and run times on the fresh device (`exact`), each as
    median [min, max] over the captures."""
    path = os.path.join(out, "delay-d", "delay_d.csv")
    rows = read_csv(path)
    tables = {"aged_gc_copies": {}, "aged_translation_writes": {}, "fresh_exact": {}}
    fresh_fields = [
        "discard_received",
        "discard_issued",
        "discard_merged",
        "discard_cancelled",
        "nvme_run_s",
        "sata_run_s",
        "map_cache_misses",
    ]
    groups = {}
    for row in rows:
        groups.setdefault((row["scenario"], row["device_state"], row["device_discard"], row["policy"]), []).append(row)
    for (scenario, state, mode, policy), members in sorted(groups.items()):
        if state == "aged":
            copies = [float(r["gc_page_copies"]) for r in members]
            tables["aged_gc_copies"].setdefault(scenario, {}).setdefault(mode, {})[policy] = spread(copies)
            if mode == "dftl":
                writes = [float(r["translation_pages_written"]) for r in members]
                tables["aged_translation_writes"].setdefault(scenario, {})[policy] = spread(writes)
        elif mode == "exact":
            tables["fresh_exact"].setdefault(scenario, {})[policy] = {
                field: spread(float(r[field]) for r in members) for field in fresh_fields
            }
    return {**delay_d_ratios(path), **tables}


def derive_delay_d_proportions(out):
    """docs/delay-d.md's paper-proportion table: per file-system size, device
    state and device DISCARD mode, each policy's GC copies and the two
    Figure 3a ratios (Disabled and Enabled over Delay-D, per capture; no
    ratio where Delay-D copied nothing), median [min, max]; and per size the
    host pages written and Delay-D's DISCARD counts (aged, exact)."""
    rows = read_csv(os.path.join(out, "delay-d-proportions", "paper_proportions.csv"))
    cells = {}
    for row in rows:
        cell = cells.setdefault(row["size"], {}).setdefault(row["device_state"], {}).setdefault(row["device_discard"], {})
        cell.setdefault(row["policy"], {})[row["repeat"]] = row
    derived = {}
    for size, states in cells.items():
        for state, modes in states.items():
            for mode, policies in modes.items():
                figures = {
                    policy: spread(float(r["gc_page_copies"]) for r in captures.values())
                    for policy, captures in policies.items()
                }
                for policy in ("Disabled", "Enabled"):
                    ratios = [
                        float(policies[policy][repeat]["gc_page_copies"]) / float(delay_d["gc_page_copies"])
                        for repeat, delay_d in policies["Delay-D"].items()
                        if float(delay_d["gc_page_copies"]) > 0
                    ]
                    result = spread(ratios) if ratios else {"n": 0}
                    result["captures_without_ratio"] = len(policies["Delay-D"]) - len(ratios)
                    figures[f"{policy.lower()}_over_delay_d"] = result
                derived.setdefault(size, {}).setdefault(state, {})[mode] = figures
        delay_d = states["aged"]["exact"]["Delay-D"].values()
        derived[size]["delay_d_counts"] = {
            field: spread(float(r[field]) for r in delay_d)
            for field in ("host_pages_written", "discard_received", "discard_issued", "discard_cancelled")
        }
    return {"sizes": list(cells), "per_size": derived}


RAW_UAV = "crates/lab/tests/data/uav-single-ext4-1g-discard.tracefs.gz"
RAW_FSYNC = "crates/trace/tests/data/ext4-loop-discard-fsync.tracefs.gz"
RAW_POLICIES = ("online", "delay-d", "off")
RAW_MODES = ("exact", "ignored", "dftl")
# The device both raw captures replay on: `small`, aged by random fill (every
# logical page valid, then random overwrites), where the policies' order is a
# property of DISCARD alone (crates/lab/tests/raw_uav_single.rs).
RAW_AGED = ["--preset", "small", "--set", 'precondition.kind="random-fill"', "-q", "--json", "{out}/run.json"]


def delay_d_raw_runs():
    """docs/delay-d.md's replays of the two stored raw tracefs captures: the
    UAV single-erase one (1 GiB) under each policy and device DISCARD mode,
    and with Delay-D issuing only at the trace's end; the fsync one with
    1,200 blocks per plane under each policy."""
    runs = [
        (f"uav-{mode}-{policy}", ["replay", RAW_UAV, "--device-size", "1G", "--discard", policy, "--set", f'ftl.discard="{mode}"', *RAW_AGED])
        for mode in RAW_MODES
        for policy in RAW_POLICIES
    ]
    runs.append(("uav-delay-d-at-end", ["replay", RAW_UAV, "--device-size", "1G", "--discard", "delay-d", "--set", "discard.delay_ms=86400000", *RAW_AGED]))
    runs += [
        (f"fsync-{policy}", ["replay", RAW_FSYNC, "--fit", "--discard", policy, "--set", "device.blocks_per_plane=1200", *RAW_AGED])
        for policy in RAW_POLICIES
    ]
    return runs


def derive_delay_d_raw(out):
    """Per run: GC page copies, translation-page writes, the journal commits
    the replay found and the DISCARD counters (docs/delay-d.md, "Counters")."""

    def figures(label):
        with open(os.path.join(out, label, "run.json"), encoding="utf-8") as handle:
            report = json.load(handle)
        return {
            "gc_page_copies": report["measured"]["gc_page_copies"],
            "translation_pages_written": report["measured"]["translation_pages_written"],
            "journal_commits": report["host"]["journal_commits"],
            "discard": report["discard"],
        }

    return {label: figures(label) for label, _ in delay_d_raw_runs()}


def derive_dhrd(out):
    """docs/dhrd.md's table over the runs of seeds 1-5 (timings on a shared
    machine move from run to run): each figure of `dhrd_run` as median, min
    and max over the runs, and each run's own figures."""
    runs = {str(seed): dhrd_run(os.path.join(out, dhrd_label(seed))) for seed in SEEDS_DHRD}

    def over_runs(first):
        return {
            key: over_runs({seed: run[key] for seed, run in first.items()})
            if isinstance(next(iter(first.values()))[key], dict)
            else spread(run[key] for run in first.values())
            for key in next(iter(first.values()))
        }

    return {"seeds": list(SEEDS_DHRD), "over_runs": over_runs(runs), "runs": runs}


def dhrd_run(folder):
    """In-process DHRD against the O_DIRECT file (`SSD`) in one run, per
    thread count: the DHRD / SSD ratios (random 4 KiB reads, writes, mixed
    66:34, sequential 1 MiB reads), random writes at 4 threads over 1, and
    the first I/O after start."""
    rows = read_csv(os.path.join(folder, "dhrd.csv"))

    def iops(configuration, threads, workload):
        return next(
            float(row["iops"])
            for row in rows
            if row["configuration"] == configuration and row["threads"] == str(threads) and row["workload"] == workload
        )

    workloads = {
        "random_read": "random read 4 KiB",
        "random_write": "random write 4 KiB",
        "mixed": "mixed 66:34 4 KiB",
        "sequential_read": "sequential read 1 MiB",
    }
    per_threads = {}
    for threads in (1, 4):
        entry = {
            "dhrd_random_read_iops": round(iops("DHRD (read_at)", threads, workloads["random_read"])),
            "file_random_read_iops": round(iops("SSD file (O_DIRECT)", threads, workloads["random_read"])),
        }
        for key, workload in workloads.items():
            ratio = iops("DHRD (read_at)", threads, workload) / iops("SSD file (O_DIRECT)", threads, workload)
            entry[f"{key}_dhrd_over_file"] = round(ratio, 3)
        per_threads[f"{threads}_threads"] = entry
    with open(os.path.join(folder, "first_io.json"), encoding="utf-8") as handle:
        first_io = json.load(handle)
    return {
        "one_thread": per_threads["1_threads"],
        "four_threads": per_threads["4_threads"],
        "random_write_4_threads_over_1": {
            configuration: round(
                iops(configuration, 4, workloads["random_write"]) / iops(configuration, 1, workloads["random_write"]), 3
            )
            for configuration in ("DHRD (read_at)", "SSD file (O_DIRECT)")
        },
        "first_io": first_io,
    }


SEEDS_PRIORITY = range(1, 6)
SEEDS_DHRD = range(1, 6)


def dhrd_label(seed):
    """The run folder of dhrd's seed: seed 1's data files and charts are kept."""
    return "dhrd" if seed == 1 else f"seed{seed}"


def priority_label(seed):
    """The run folder of priority-cleaning's seed: seed 1's data files are kept."""
    return "priority-cleaning" if seed == 1 else f"seed{seed}"


def kept(folder, label, names):
    """Data files `names` of the run `label`, kept as docs/FOLDER/NAME."""
    return {f"docs/{folder}/{name}": f"{label}/{name}" for name in names}


# Per placement (mixed, separated), the columns of journal_separation.csv
# the docs' per-class tables quote, as median [min, max] over the captures.
JOURNAL_PLACEMENT_COLUMNS = (
    "pblk_wa", "gc_wa", "padding_share", "gc_copies_data", "gc_copies_journal",
    "padded_data_queue", "padded_journal_queue", "throughput_mb_s",
)


def derive_journal(out, label="journal-separation"):
    """Journal separation, per point, ρ and victim: pblk's WA mixed and
    separated, the WA, GC-only WA and throughput ratios (separated / mixed,
    per capture), median [min, max] over the captures; the journal's share
    of the writes and the journal lengths one measured pass writes; per
    placement the per-class columns; the aging each point's replays reached
    (least device writes and journal wraps, passes, all steady)."""
    rows = read_csv(os.path.join(out, label, "journal_separation.csv"))
    groups = {}
    for mixed in (row for row in rows if row["separated"] == "false"):
        key = (mixed["point"], mixed["over_provisioning"], mixed["victim"], mixed["sample"])
        separated = next(
            row for row in rows
            if row["separated"] == "true"
            and (row["point"], row["over_provisioning"], row["victim"], row["sample"]) == key
        )
        entry = groups.setdefault(slug(f"{mixed['point']} rho={mixed['over_provisioning']} {mixed['victim']}"), {
            "wa_mixed": [], "wa_separated": [], "wa_ratio": [], "gc_wa_ratio": [], "throughput_ratio": [],
            "journal_share": [], "journal_wraps_per_pass": [],
            "aging_device_writes": [], "aging_journal_wraps": [], "aging_passes": [], "steady": [],
            "mixed": {column: [] for column in JOURNAL_PLACEMENT_COLUMNS},
            "separated": {column: [] for column in JOURNAL_PLACEMENT_COLUMNS},
        })
        entry["wa_mixed"].append(float(mixed["pblk_wa"]))
        entry["wa_separated"].append(float(separated["pblk_wa"]))
        entry["wa_ratio"].append(float(separated["pblk_wa"]) / float(mixed["pblk_wa"]))
        entry["gc_wa_ratio"].append(float(separated["gc_wa"]) / float(mixed["gc_wa"]))
        entry["throughput_ratio"].append(float(separated["throughput_mb_s"]) / float(mixed["throughput_mb_s"]))
        entry["journal_share"].append(float(mixed["journal_share"]))
        entry["journal_wraps_per_pass"].append(float(mixed["journal_wraps"]))
        for placement, row in (("mixed", mixed), ("separated", separated)):
            entry["aging_device_writes"].append(float(row["aging_device_writes"]))
            entry["aging_journal_wraps"].append(float(row["aging_journal_wraps"]))
            entry["aging_passes"].append(float(row["aging_passes"]))
            entry["steady"].append(row["steady"] == "true")
            for column in JOURNAL_PLACEMENT_COLUMNS:
                entry[placement][column].append(float(row[column]))
    derived = {}
    for name, entry in groups.items():
        figures = {
            key: spread(entry[key])
            for key in ("wa_mixed", "wa_separated", "wa_ratio", "gc_wa_ratio", "throughput_ratio",
                        "journal_share", "journal_wraps_per_pass")
        }
        for placement in ("mixed", "separated"):
            figures[placement] = {column: spread(values) for column, values in entry[placement].items()}
        figures["aging"] = {
            "least_device_writes": min(entry["aging_device_writes"]),
            "least_journal_wraps": min(entry["aging_journal_wraps"]),
            "passes": spread(entry["aging_passes"]),
            "all_steady": all(entry["steady"]),
        }
        derived[name] = figures
    captures = len({row["sample"] for row in rows})
    return {"per_point": derived, "captures": captures}


def summary_table(summary_path, header_start):
    """The rows of the markdown table of a summary.md whose header line starts
    with `header_start`: {first cell: {column: cell}}."""
    with open(summary_path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    columns = [cell.strip() for cell in lines[start].strip("|").split("|")]
    table = {}
    for row in lines[start + 2 :]:
        if not row.startswith("|"):
            break
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        table[cells[0]] = dict(zip(columns, cells))
    return table


def cell_numbers(cell):
    """A summary cell's numbers: `1707 [1689–1727]` → [1707, 1689, 1727];
    a range whose ends agree, or a single value, is one number; `-` none."""
    numbers = [float(text) for text in re.findall(r"\d+(?:\.\d+)?", cell)]
    return numbers[:1] if len(set(numbers)) == 1 else numbers


# Table 3: the columns of docs/telomere-simulation.md's results table, in order.
TABLE3_COLUMNS = (
    "writes/s t = 10-90 s",
    "writes/s after reads",
    "lowest second",
    "reads/s after reads",
    "deadline misses",
    "GC copies",
)


def derive_table3(out):
    """Telomere Table 3 / Figures 13-14 over seeds 1-5: per method the
    summary's figures (median [min–max] over the seeds, one number when all
    agree), the seconds at which a run stopped, and docs/telomere-simulation.md's
    table as rows in its reading order: the nonzero figures of TABLE3_COLUMNS
    (a 0 is printed as a plain 0, not a figure) and, after the misses, the
    worst lateness in s."""
    folder = os.path.join(out, "telomere-table3")
    table = summary_table(os.path.join(folder, "summary.md"), "| method | rejected | writes/s")
    methods, doc_rows = {}, []
    for method, cells in table.items():
        figures = {column: cell_numbers(cells[column]) for column in TABLE3_COLUMNS}
        figures["worst_lateness_ms"] = cell_numbers(cells["worst lateness ms"])
        methods[slug(method)] = figures
        row = []
        for column in TABLE3_COLUMNS:
            row += [value for value in figures[column] if value != 0]
            if column == "deadline misses" and any(figures[column]):
                row.append(max(figures["worst_lateness_ms"]) / 1000)
        doc_rows.append(row)
    stops = {}
    for row in read_csv(os.path.join(folder, "table3_methods.csv")):
        stopped = re.search(r"stopped at t = (\d+(?:\.\d+)?) s", row["failure"])
        if stopped:
            stops.setdefault(slug(row["method"]), []).append(float(stopped.group(1)))
    return {
        "seeds": sorted({int(row["seed"]) for row in read_csv(os.path.join(folder, "table3_methods.csv"))}),
        "methods": methods,
        "doc_table": doc_rows,
        "stopped_at_s": {method: {"per_seed": times, **spread(times)} for method, times in stops.items()},
    }


def derive_fig10_sweep(out):
    """Telomere Section 6.2's sweep over λ (`--samples 5`: task sets of seeds
    1-5 per λ): per λ and method, host pages written before 2 % of the blocks
    die (millions) and the RBER spread p90/p10, median [min, max] over the
    seeds; docs/telomere-simulation.md's table as rows [λ, then per method
    pages median, min, max, spread median, min, max]."""
    rows = read_csv(os.path.join(out, "telomere-fig10", "fig10_sweep.csv"))
    cells = {}
    for row in rows:
        cell = cells.setdefault(row["utilization"], {}).setdefault(row["method"], {"pages": [], "spread": []})
        cell["pages"].append(float(row["host_pages_written"]) / 1e6)
        cell["spread"].append(float(row["rber_spread"]))
    per_lambda, doc_rows = {}, []
    for utilization, by_method in cells.items():
        entry = {slug(method): {key: spread(values) for key, values in cell.items()} for method, cell in by_method.items()}
        per_lambda[utilization] = entry
        row = [float(utilization)]
        for method in FIG10_METHODS:
            for key in ("pages", "spread"):
                figures = entry[slug(method)][key]
                row += [figures["median"], figures["min"], figures["max"]]
        doc_rows.append(row)
    return {"seeds": sorted({int(row["seed"]) for row in rows}), "per_lambda": per_lambda, "doc_table": doc_rows}


def derive_admit_examples(out):
    """docs/telomere.md's worked examples through `nandlab admit`: the EDF
    load of eq. (20) (blocking + read + write + GC) of the admitted set, which
    the storage-only examples print but do not decide on."""

    def load(label):
        with open(os.path.join(out, label, "admit.json"), encoding="utf-8") as handle:
            terms = json.load(handle)["report"]["verdict"]["throughput"]
        return round(sum(terms[term] for term in ("blocking", "read", "write", "gc")), 6)

    return {"edf_load": {label: load(label) for label in ("section4_2", "figure5")}}


def admit_example(label):
    """`nandlab admit` of a worked example's task file on the P = 8 device, storage test deciding."""
    return (
        label,
        [
            "admit",
            f"crates/admission/tasksets/{label}.toml",
            "--preset",
            "crates/admission/devices/paper-example-p8.toml",
            "--granularity",
            "1",
            "--tests",
            "storage",
            "--json",
            "{out}/admit.json",
        ],
    )


# What a run of `reproduce journal` keeps in docs/journal-separation/.
JOURNAL_FILES = [
    "journal_separation.csv",
    "summary.md",
    "wa_ratio_op11.svg",
    "throughput_ratio_op11.svg",
    "wa_ratio_op25.svg",
    "throughput_ratio_op25.svg",
]


def journal_slice(name, label, points, victims):
    """A slice of `reproduce journal --paper-scale` that
    docs/journal-separation.md quotes: fio on 1 GiB ext4 (data=ordered), each
    capture writing 4 file-system sizes (`capture_writes=4`, not the paper
    scale's 10), derived as the quick matrix is."""
    argv = ["reproduce", "journal", "--paper-scale", "--seed", "1", "--set", f"points={points}",
            "--set", f"victims={victims}", "--set", "capture_writes=4"]
    return Generator(
        name,
        [(label, argv)],
        kept(f"journal-separation/{label}", label, JOURNAL_FILES),
        lambda out: derive_journal(out, label),
        fast=False,
        root=True,
    )


def telomere_figure(number):
    """Telomere Figure 7 or 8 at the paper's scale: its CSV and the doc's table."""
    label = f"fig{number}"
    argv = ["reproduce", f"telomere-fig{number}", "--paper-scale", "--seed", "1"]
    return Generator(
        f"telomere-fig{number}",
        [(label, argv)],
        kept("telomere", label, [f"figure{number}.csv"]),
        derive_fig7_8(number),
        fast=True,
    )


GENERATORS = [
    telomere_figure(7),
    telomere_figure(8),
    Generator(
        "telomere-fig9",
        [
            ("fig9", ["reproduce", "telomere-fig9", "--paper-scale", "--seed", "1"]),
            ("fig9-ms", ["reproduce", "telomere-fig9", "--paper-scale", "--seed", "1", "--set", "gc_rounding=millisecond"]),
        ],
        kept("telomere", "fig9", ["figure9.csv"]),
        derive_fig9,
        fast=True,
    ),
    Generator(
        "telomere-fig10",
        [("telomere-fig10", ["reproduce", "telomere-fig10", "--seed", "1", "--repeats", "10"])],
        kept("telomere", "telomere-fig10", ["fig10_rber_cdf.svg", "fig10_summary.csv"]),
        derive_fig10,
        fast=True,
    ),
    Generator(
        "telomere-admit-examples",
        [admit_example("section4_2"), admit_example("figure5")],
        {},
        derive_admit_examples,
        fast=True,
    ),
    Generator(
        "telomere-table3",
        [("telomere-table3", ["reproduce", "telomere-table3", "--seed", "1", "--samples", "5"])],
        kept("telomere", "telomere-table3", ["table3_methods.csv"]),
        derive_table3,
        fast=True,
    ),
    Generator(
        "telomere-fig10-sweep",
        [("telomere-fig10", ["reproduce", "telomere-fig10", "--seed", "1", "--samples", "5"])],
        kept("telomere", "telomere-fig10", ["fig10_sweep.csv"]),
        derive_fig10_sweep,
        fast=False,
    ),
    Generator(
        "timing-examples",
        [
            ("writes", ["run", "--timing", "on", "--set", "workload.requests=2000000", "-q", "--json", "{out}/run.json"]),
            (
                "reads",
                [
                    "run",
                    "--timing",
                    "on",
                    "--set",
                    "workload.requests=1000000",
                    "--set",
                    "workload.read_fraction=1.0",
                    "-q",
                    "--json",
                    "{out}/run.json",
                ],
            ),
        ],
        {},
        derive_timing_examples,
        fast=True,
    ),
    Generator(
        "priority-cleaning",
        [(priority_label(seed), ["reproduce", "priority-cleaning", "--seed", str(seed)]) for seed in SEEDS_PRIORITY],
        kept("priority-cleaning", "priority-cleaning", ["priority_cleaning.csv", "priority_jobs.csv"]),
        derive_priority,
        fast=True,
    ),
    Generator(
        "informed-cleaning",
        [("informed-cleaning", ["reproduce", "informed-cleaning", "--seed", "1", "--repeats", "5"])],
        kept("informed-cleaning", "informed-cleaning", ["informed_cleaning.csv", "informed_cleaning.svg", "summary.md"]),
        derive_informed,
        fast=False,
        root=True,
    ),
    Generator(
        "journal-separation",
        [("journal-separation", ["reproduce", "journal", "--seed", "1", "--repeats", "3"])],
        kept("journal-separation/quick", "journal-separation", JOURNAL_FILES),
        derive_journal,
        fast=False,
        root=True,
    ),
    # The fio fsync=8/32 sweep, and the journal-size sweep (16/32/64/256 MiB
    # journals at fsync=1), greedy victims.
    journal_slice("journal-fsync-sweep", "fsync-sweep", "fio fsync=8 data=ordered,fio fsync=32 data=ordered", "greedy"),
    journal_slice("journal-size-sweep", "journal-size", "fio fsync=1 data=ordered", "greedy"),
    Generator(
        "stripe-merging",
        [("stripe-merging", ["reproduce", "stripe-merging", "--seed", "1"])],
        kept("stripe-merging", "stripe-merging", [
                "real_workloads.csv",
                "real_workloads.svg",
                "merge_response_time.csv",
                "merge_response_time.svg",
                "write_size_throughput.csv",
                "write_size_throughput.svg",
                "summary.md",
            ]),
        derive_stripe,
        fast=False,
        root=True,
    ),
    Generator(
        "dhrd",
        [(dhrd_label(seed), ["reproduce", "dhrd", "--seed", str(seed)]) for seed in SEEDS_DHRD],
        kept("dhrd", "dhrd", ["dhrd.csv", "first_io.json", "speedup_1_threads.svg", "speedup_4_threads.svg", "summary.md"]),
        derive_dhrd,
        fast=False,
    ),
    Generator(
        "delay-d",
        [("delay-d", ["reproduce", "delay-d", "--seed", "1", "--repeats", "3"])],
        kept("delay-d", "delay-d", [
                "delay_d.csv",
                "delay_sweep.csv",
                "delay_sweep.svg",
                "figure3a_gc_copies_aged.svg",
                "figure3a_gc_copies_aged_ignored.svg",
                "figure3a_gc_copies_aged_dftl.svg",
                "figure3b_run_time.svg",
                "run_time_sata.svg",
                "table2_discards.svg",
                "summary.md",
            ]),
        derive_delay_d,
        fast=False,
        root=True,
    ),
    Generator("delay-d-raw", delay_d_raw_runs(), {}, derive_delay_d_raw, fast=True),
    Generator(
        "delay-d-proportions",
        [("delay-d-proportions", ["reproduce", "delay-d-proportions", "--seed", "1", "--set", "sizes=4G,8G"])],
        kept("delay-d", "delay-d-proportions", [
                "paper_proportions.csv",
                "paper_proportions_fresh.svg",
                "paper_proportions_aged.svg",
            ]),
        derive_delay_d_proportions,
        fast=False,
        root=True,
    ),
]


def find(name):
    for generator in GENERATORS:
        if generator.name == name:
            return generator
    raise SystemExit(f"no generator {name!r}; `python3 scripts/results.py list` names them")


def results_path(name):
    return os.path.join(RESULTS, f"{name}.json")


def regenerate(generator, existing=None):
    """Runs the generator (or, with `existing`, takes the outputs of an
    earlier run of the same commands in that folder) and writes its files."""
    started = time.time()
    with tempfile.TemporaryDirectory(prefix=f"nandlab-{generator.name}-") as scratch:
        out = existing or scratch
        document = generator.produce(out, run=existing is None)
        # The provenance (commit, `-dirty`) before the data files are copied
        # into the tree, so that they do not mark it dirty themselves.
        document = {"provenance": provenance(generator.command(), started), **document}
        for target, source in generator.keep.items():
            os.makedirs(os.path.dirname(os.path.join(ROOT, target)), exist_ok=True)
            shutil.copyfile(os.path.join(out, source), os.path.join(ROOT, target))
    if existing:
        document["provenance"]["outputs_of_an_earlier_run"] = existing
    os.makedirs(RESULTS, exist_ok=True)
    with open(results_path(generator.name), "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    print(f"wrote {os.path.relpath(results_path(generator.name), ROOT)} and {len(generator.keep)} data file(s)")


def verify(generator):
    """Runs the generator into a scratch folder; returns the differences with
    the committed files (empty: it reproduces them exactly)."""
    differences = []
    with tempfile.TemporaryDirectory(prefix=f"nandlab-{generator.name}-") as out:
        document = generator.produce(out)
        for target, source in generator.keep.items():
            with open(os.path.join(out, source), "rb") as fresh, open(os.path.join(ROOT, target), "rb") as kept:
                if fresh.read() != kept.read():
                    differences.append(f"{target} differs from a fresh `{generator.command()}`")
    try:
        with open(results_path(generator.name), encoding="utf-8") as handle:
            committed = json.load(handle)
    except FileNotFoundError:
        return differences + [f"{os.path.relpath(results_path(generator.name), ROOT)} is missing"]
    committed.pop("provenance", None)
    if json.dumps(committed, sort_keys=True) != json.dumps(json.loads(json.dumps(document)), sort_keys=True):
        differences.append(f"docs/results/{generator.name}.json differs from a fresh `{generator.command()}`")
    return differences


def main(argv):
    if len(argv) < 2 or argv[1] not in ("regenerate", "verify", "list", "verify-fast"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "list":
        width = max(len(generator.name) for generator in GENERATORS)
        for generator in sorted(GENERATORS, key=lambda g: not g.fast):
            flags = ("fast, re-run by check-claims" if generator.fast else "slow") + (", root" if generator.root else "")
            print(f"{generator.name:{width}} {flags:32} {generator.command()}")
        return 0
    if argv[1] == "verify-fast":
        differences = [d for g in GENERATORS if g.fast for d in verify(g)]
        for difference in differences:
            print(difference)
        return 1 if differences else 0
    if len(argv) != 3:
        print("usage: results.py regenerate|verify NAME", file=sys.stderr)
        return 2
    generator = find(argv[2])
    if argv[1] == "regenerate":
        regenerate(generator, os.environ.get("RESULTS_FROM"))
        return 0
    differences = verify(generator)
    for difference in differences:
        print(difference)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
