"""Parameter sweeps on Dask: one simulation per grid point and seed, run on a
local cluster by default or on a Dask cluster given by its scheduler address.

    import nandlab.sweep
    table = nandlab.sweep.sweep(
        {"ftl.gc_policy": ["greedy", "fifo"], "device.over_provisioning": [0.07, 0.28]},
        preset="small", seeds=[1, 2],
    )
    table.groupby("ftl.gc_policy")["waf"].mean()

Each point is an independent, seeded ``nandlab.run``; the local cluster runs
one worker process per core this process may use and finds idle
(:func:`local_workers`; ``workers`` to choose), so CPU-bound points scale with
the cores, and where only one core's share is free the points run one after
another in this process, never slower than a serial loop. The table comes back in grid order whatever order the points
finish in, so a sweep is reproducible from its arguments. A real cluster is
named by its scheduler address (``scheduler="tcp://HOST:8786"``); every worker
needs the same nandlab installed. The same from the shell::

    python -m nandlab.sweep --preset small --grid ftl.gc_policy=greedy,fifo \\
        --grid device.over_provisioning=0.07,0.28 --seeds 1,2 --out waf.parquet
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import sys
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import ConfigError, _native, validate
from . import run as run_simulation

__all__ = ["sweep", "points", "row", "main", "local_workers", "SweepError"]

Point = Tuple[Tuple[Tuple[str, Any], ...], int]


class SweepError(RuntimeError):
    """A point of the sweep failed; the message names the point and seed, ``__cause__`` is the error."""


def points(grid: Mapping[str, Sequence[Any]], seeds: Iterable[int]) -> List[Point]:
    """Every (assignments, seed) of the grid, in a fixed order: the last key varies fastest, seeds innermost."""
    keys = list(grid)
    for key in keys:
        if isinstance(grid[key], (str, bytes)) or not isinstance(grid[key], Sequence) or len(grid[key]) == 0:
            raise ValueError(f"grid[{key!r}] must be a non-empty list of values")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must not be empty")
    combos = itertools.product(*(grid[key] for key in keys))
    return [(tuple(zip(keys, values)), seed) for values in combos for seed in seeds]


def _literal(value: Any) -> str:
    """A value as `--set` takes it (TOML, with bare words as strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def _overrides(base_set: Tuple[str, ...], assignments: Tuple[Tuple[str, Any], ...]) -> List[str]:
    return list(base_set) + [f"{key}={_literal(value)}" for key, value in assignments]


def row(report: dict) -> Dict[str, Any]:
    """The figures of one report that a sweep table keeps (counting and, if present, timed)."""
    measured = report["measured"]
    erases = report["erase_counts"]
    figures: Dict[str, Any] = {
        "waf": measured["waf"],
        "host_pages_written": measured["host_pages_written"],
        "flash_pages_programmed": measured["flash_pages_programmed"],
        "gc_page_copies": measured["gc_page_copies"],
        "erases": measured["erases"],
        "erase_count_mean": erases["mean"],
        "erase_count_max": erases["max"],
        "lifetime_host_gb_to_first_worn": report["lifetime"]["host_gb_to_first_worn"],
        "lifetime_tbw": report["lifetime"]["tbw"],
        "lifetime_years_to_first_worn": report["lifetime"]["years_to_first_worn"],
    }
    timed = report.get("timed")
    if timed:
        write = timed["latency"].get("write") or {}
        read = timed["latency"].get("read") or {}
        figures.update(
            iops=timed["iops"],
            write_mb_s=timed["write_mb_s"],
            read_mb_s=timed["read_mb_s"],
            write_p99_us=write.get("p99_us"),
            read_p99_us=read.get("p99_us"),
            gc_die_time_share=timed["gc_die_time_share"],
            simulated_s=timed["simulated_s"],
        )
    return figures


def _run_point(point: Point, config: Any, preset: Optional[str], base_set: Tuple[str, ...], timing: bool) -> dict:
    assignments, seed = point
    started = time.perf_counter()
    report = run_simulation(config, preset=preset, set=_overrides(base_set, assignments), seed=seed, timing=timing)
    result = dict(assignments)
    result["seed"] = seed
    result.update(row(report))
    result["wall_s"] = time.perf_counter() - started
    return result


def _cgroup_cpus() -> Optional[float]:
    """The CPUs the cgroup's quota allows (cgroup v2 ``cpu.max``, else v1's CFS quota), or None."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as file:
            quota, period = file.read().split()[:2]
    except (OSError, ValueError):
        try:
            with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as file:
                quota = file.read().strip()
            with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as file:
                period = file.read().strip()
        except OSError:
            return None
    if quota in ("max", "-1"):
        return None
    try:
        return int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None


def local_workers() -> int:
    """Worker processes a local sweep gains from: the cores this process may run on
    (``os.sched_getaffinity``), capped by a cgroup CPU quota, less the load already on them
    (the one-minute load average), rounded, at least 1. Extra processes on cores others keep
    busy only share those cores' time: two workers at a load of 2.5 on two cores took longer
    than one, so such a sweep runs serially."""
    try:
        cores = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        cores = float(os.cpu_count() or 1)
    quota = _cgroup_cpus()
    if quota is not None:
        cores = min(cores, quota)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return max(1, int(min(cores, cores - load) + 0.5))


def _client(scheduler: Any, workers: Optional[int]):
    """A Dask client and what to close after the sweep: an existing client (nothing to close), a
    client of a scheduler address (close the client), or a local cluster of `workers` single-threaded
    processes, :func:`local_workers` by default (close both). Processes, not threads: a point holds
    the GIL while it builds its configuration and its report, and separate processes share no allocator."""
    from dask.distributed import Client, LocalCluster

    if scheduler is not None and workers is not None:
        raise ValueError("workers sizes the local cluster; a cluster given by scheduler has its own workers")
    if isinstance(scheduler, Client):
        return scheduler, []
    if scheduler:
        client = Client(scheduler)
        return client, [client]
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    cluster = LocalCluster(
        processes=True,
        n_workers=workers,
        threads_per_worker=1,
        dashboard_address=None,
    )
    client = Client(cluster)
    return client, [client, cluster]


def sweep(
    grid: Mapping[str, Sequence[Any]],
    config: Any = None,
    *,
    preset: Optional[str] = None,
    set: Iterable[str] = (),  # noqa: A002 - mirrors nandlab.run and the CLI's --set
    seeds: Iterable[int] = (1,),
    timing: bool = False,
    scheduler: Union[None, str, Any] = None,
    workers: Optional[int] = None,
    progress: bool = True,
):
    """Runs ``nandlab.run`` at every grid point and seed and returns a pandas DataFrame.

    ``grid`` maps configuration keys (as ``--set`` names them) to the values to try;
    ``config``, ``preset`` and ``set`` are the base of every point, as in ``nandlab.run``;
    ``timing`` adds the timed figures. ``scheduler`` is ``None`` (a local Dask cluster of
    ``workers`` single-threaded processes, default :func:`local_workers`; with one, no cluster:
    the points run in this process, one after another), a scheduler address such as
    ``"tcp://10.0.0.5:8786"``, or a ``dask.distributed.Client``.
    Rows come in grid order, one per point and seed: the grid's keys, ``seed``, the
    figures of :func:`row` and ``wall_s``. A point whose configuration is invalid
    raises ``nandlab.ConfigError`` naming the key before anything else runs.
    """
    import pandas

    todo = points(grid, seeds)
    base_set = tuple(set)
    # Fail fast, in this process, on a configuration the grid makes invalid.
    for assignments in dict.fromkeys(assignments for assignments, _ in todo):
        validate(config, preset=preset, set=_overrides(base_set, assignments))
    if scheduler is None and workers is None:
        workers = local_workers()
    if scheduler is None and workers == 1:
        results = []
        for done, (assignments, seed) in enumerate(todo, start=1):
            try:
                point = (assignments, seed)
                results.append(_run_point(point, config=config, preset=preset, base_set=base_set, timing=timing))
            except Exception as error:
                raise SweepError(f"point {dict(assignments)}, seed {seed}: {error}") from error
            if progress:
                print(f"sweep: {done}/{len(todo)} points", file=sys.stderr, flush=True)
        return pandas.DataFrame(results)
    client, owned = _client(scheduler, workers)
    try:
        futures = client.map(
            _run_point, todo, config=config, preset=preset, base_set=base_set, timing=timing, pure=False
        )
        index = {future.key: position for position, future in enumerate(futures)}
        results: List[Optional[dict]] = [None] * len(todo)
        from dask.distributed import as_completed

        for done, future in enumerate(as_completed(futures), start=1):
            position = index[future.key]
            try:
                results[position] = future.result()
            except Exception as error:
                assignments, seed = todo[position]
                raise SweepError(f"point {dict(assignments)}, seed {seed}: {error}") from error
            if progress:
                print(f"sweep: {done}/{len(todo)} points", file=sys.stderr, flush=True)
    finally:
        for resource in owned:
            resource.close()
    return pandas.DataFrame(results)


def _grid_argument(text: str) -> Tuple[str, List[Any]]:
    key, sep, values = text.partition("=")
    if not sep or not key or not values:
        raise argparse.ArgumentTypeError(f"--grid {text!r}: expected KEY=V1,V2,...")
    return key.strip(), [_parse_scalar(value.strip()) for value in values.split(",")]


def _parse_scalar(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nandlab.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("config", nargs="?", help="TOML configuration file (may start from a preset)")
    parser.add_argument("--preset", help="embedded preset to start from")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="base override")
    parser.add_argument(
        "--grid", action="append", type=_grid_argument, required=True, metavar="KEY=V1,V2", help="a swept key"
    )
    parser.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    parser.add_argument(
        "--timing", nargs="?", const="on", default="off", choices=["on", "off"],
        help="on: timed simulation (throughput, latency); a bare --timing means on",
    )
    parser.add_argument("--scheduler", help="Dask scheduler address (default: a local cluster)")
    parser.add_argument(
        "--workers", type=int,
        help="worker processes of the local cluster (default: the idle cores this process may use; 1: serial)",
    )
    parser.add_argument("--out", help="write the table: .csv, .parquet or .json")
    args = parser.parse_args(argv)
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds {args.seeds!r}: expected comma-separated integers")
    keys = [key for key, _ in args.grid]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        parser.error(f"--grid {', '.join(repeated)} given more than once: give each key once, with all its values")
    if args.out and not args.out.endswith(_OUT_SUFFIXES):
        parser.error(f"--out {args.out}: use a .csv, .parquet or .json file name")
    grid = dict(args.grid)
    print(f"sweep: {len(points(grid, seeds))} points, seeds {seeds}", file=sys.stderr)
    try:
        table = sweep(grid, args.config, preset=args.preset, set=args.set, seeds=seeds, timing=args.timing == "on",
                      scheduler=args.scheduler, workers=args.workers)
    except (SweepError, ConfigError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.out:
        _write(table, args.out)
        print(f"sweep: wrote {args.out}", file=sys.stderr)
    else:
        print(table.to_string(index=False))
    return 0


_OUT_SUFFIXES = (".csv", ".parquet", ".json")


def _write(table, path: str) -> None:
    """Writes through nandlab's one output path: a file is replaced whole
    (a failed write never leaves a truncated table nor destroys the file it
    would replace, and its mode is kept), a device or FIFO written in place."""
    if path.endswith(".parquet"):
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        data = buffer.getvalue()
    elif path.endswith(".csv"):
        data = table.to_csv(index=False).encode()
    else:
        data = table.to_json(orient="records", indent=1).encode()
    _native.write_output(path, data)

if __name__ == "__main__":
    sys.exit(main())
