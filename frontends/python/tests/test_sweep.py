"""nandlab.sweep: grid order, agreement with single runs, fail-fast configuration errors, the CLI."""

import nandlab
import pytest
from nandlab import sweep as sweeps

pytest.importorskip("dask.distributed")
pandas = pytest.importorskip("pandas")

BASE = ["workload.requests=3000", "precondition.max_device_writes=2"]


def test_points_are_in_grid_order_with_seeds_innermost():
    grid = {"a": [1, 2], "b": ["x", "y"]}
    assert sweeps.points(grid, [7, 8]) == [
        ((("a", 1), ("b", "x")), 7),
        ((("a", 1), ("b", "x")), 8),
        ((("a", 1), ("b", "y")), 7),
        ((("a", 1), ("b", "y")), 8),
        ((("a", 2), ("b", "x")), 7),
        ((("a", 2), ("b", "x")), 8),
        ((("a", 2), ("b", "y")), 7),
        ((("a", 2), ("b", "y")), 8),
    ]
    with pytest.raises(ValueError):
        sweeps.points({"a": []}, [1])
    with pytest.raises(ValueError):
        sweeps.points({"a": "greedy"}, [1])


def test_a_local_sweep_equals_single_runs_in_grid_order():
    grid = {"ftl.gc_policy": ["greedy", "fifo"], "device.over_provisioning": [0.1, 0.3]}
    table = sweeps.sweep(grid, preset="small", set=BASE, seeds=[1, 2], progress=False)
    assert len(table) == 8
    assert list(table["ftl.gc_policy"]) == ["greedy"] * 4 + ["fifo"] * 4
    assert list(table["seed"]) == [1, 2] * 4
    for record in table.to_dict("records"):
        overrides = BASE + [
            f'ftl.gc_policy="{record["ftl.gc_policy"]}"',
            f'device.over_provisioning={record["device.over_provisioning"]}',
        ]
        single = nandlab.run(preset="small", set=overrides, seed=record["seed"])
        assert record["waf"] == single["measured"]["waf"]
        assert record["gc_page_copies"] == single["measured"]["gc_page_copies"]
    # More spare space, lower WAF: the sweep keeps the physics.
    greedy = table[table["ftl.gc_policy"] == "greedy"].groupby("device.over_provisioning")["waf"].mean()
    assert greedy[0.3] < greedy[0.1]


def test_timed_sweeps_carry_timed_figures():
    table = sweeps.sweep({"timing.queue_depth": [1, 8]}, preset="small", set=BASE, timing=True, progress=False)
    assert list(table["timing.queue_depth"]) == [1, 8]
    assert (table["iops"] > 0).all()
    assert table["iops"][1] > table["iops"][0], "a deeper queue keeps more dies busy"


def test_an_invalid_point_fails_before_anything_runs():
    with pytest.raises(nandlab.ConfigError, match="ftl.gc_policy"):
        sweeps.sweep({"ftl.gc_policy": ["greedy", "lru"]}, preset="small", set=BASE, progress=False)


def test_the_command_line_writes_parquet_and_csv(tmp_path):
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "sweep.parquet"
    args = ["--preset", "small", "--grid", "ftl.gc_policy=greedy,fifo", "--seeds", "3"]
    assert sweeps.main(args + [*(a for s in BASE for a in ("--set", s)), "--out", str(out)]) == 0
    table = pandas.read_parquet(out)
    assert list(table["ftl.gc_policy"]) == ["greedy", "fifo"] and list(table["seed"]) == [3, 3]
    csv = tmp_path / "sweep.csv"
    assert sweeps.main(args + [*(a for s in BASE for a in ("--set", s)), "--out", str(csv)]) == 0
    assert pandas.read_csv(csv)["waf"].tolist() == table["waf"].tolist()


def test_a_bad_out_extension_fails_before_anything_runs(monkeypatch, capsys):
    monkeypatch.setattr(sweeps, "sweep", lambda *args, **kwargs: pytest.fail("the sweep must not run"))
    with pytest.raises(SystemExit) as exit:
        sweeps.main(["--preset", "small", "--grid", "ftl.gc_policy=greedy", "--out", "waf.xlsx"])
    assert exit.value.code == 2 and "waf.xlsx" in capsys.readouterr().err


def test_a_repeated_grid_key_is_an_error_not_dropped(monkeypatch, capsys):
    monkeypatch.setattr(sweeps, "sweep", lambda *args, **kwargs: pytest.fail("the sweep must not run"))
    with pytest.raises(SystemExit) as exit:
        sweeps.main(["--preset", "small", "--grid", "ftl.gc_policy=greedy", "--grid", "ftl.gc_policy=fifo"])
    assert exit.value.code == 2 and "ftl.gc_policy" in capsys.readouterr().err


def test_a_cluster_given_by_address_gives_the_same_table():
    from dask.distributed import LocalCluster

    grid = {"ftl.gc_policy": ["greedy", "fifo"]}
    local = sweeps.sweep(grid, preset="small", set=BASE, seeds=[1, 2], progress=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = sweeps.sweep(
            grid, preset="small", set=BASE, seeds=[1, 2], scheduler=cluster.scheduler_address, progress=False
        )
    columns = [column for column in local.columns if column != "wall_s"]
    assert local[columns].equals(remote[columns])


def test_a_device_too_tight_to_fill_fails_before_anything_runs():
    # At 4 % spare space the small device's planes have no room for GC once full.
    with pytest.raises(nandlab.ConfigError, match="device.over_provisioning"):
        sweeps.sweep({"device.over_provisioning": [0.3, 0.04]}, preset="small", set=BASE, progress=False)


def test_a_point_failing_while_running_is_named(monkeypatch):
    real = sweeps._run_point

    def failing(point, **kwargs):
        if dict(point[0])["ftl.gc_policy"] == "fifo":
            raise nandlab.SimulationError("simulated failure")
        return real(point, **kwargs)

    monkeypatch.setattr(sweeps, "_run_point", failing)
    with pytest.raises(sweeps.SweepError, match="'ftl.gc_policy': 'fifo'}, seed 1") as failure:
        sweeps.sweep({"ftl.gc_policy": ["greedy", "fifo"]}, preset="small", set=BASE, progress=False)
    assert isinstance(failure.value.__cause__, nandlab.SimulationError)


def test_a_multi_process_sweep_equals_a_serial_one():
    grid = {"ftl.gc_policy": ["greedy", "cost-benefit"], "workload.trim_fraction": [0.0, 0.2]}
    seeds = [4, 5]
    parallel = sweeps.sweep(grid, preset="small", set=BASE, seeds=seeds, workers=2, progress=False)
    serial = pandas.DataFrame(
        [
            sweeps._run_point(point, config=None, preset="small", base_set=tuple(BASE), timing=False)
            for point in sweeps.points(grid, seeds)
        ]
    )
    columns = [column for column in serial.columns if column != "wall_s"]
    assert list(parallel.columns) == list(serial.columns)
    pandas.testing.assert_frame_equal(parallel[columns], serial[columns])


@pytest.mark.parametrize(
    "cores, quota, load, workers",
    [(2, None, 0.1, 2), (2, None, 2.5, 1), (2, None, 0.7, 1), (2, 1.0, 0.0, 1), (8, 3.5, 1.0, 3), (1, None, 0.0, 1)],
)
def test_a_local_cluster_gets_the_idle_cores_it_may_use(monkeypatch, cores, quota, load, workers):
    monkeypatch.setattr(sweeps.os, "sched_getaffinity", lambda _: set(range(cores)), raising=False)
    monkeypatch.setattr(sweeps, "_cgroup_cpus", lambda: quota)
    monkeypatch.setattr(sweeps.os, "getloadavg", lambda: (load, load, load))
    assert sweeps.local_workers() == workers


def test_one_idle_core_runs_the_points_serially_without_a_cluster(monkeypatch):
    def no_cluster(*_):
        raise AssertionError("a one-worker sweep starts no cluster")

    monkeypatch.setattr(sweeps, "local_workers", lambda: 1)
    monkeypatch.setattr(sweeps, "_client", no_cluster)
    grid = {"ftl.gc_policy": ["greedy", "fifo"]}
    table = sweeps.sweep(grid, preset="small", set=BASE, seeds=[1, 2], progress=False)
    single = [nandlab.run(preset="small", set=BASE + [f'ftl.gc_policy="{policy}"'], seed=seed)["measured"]["waf"]
              for policy in ["greedy", "fifo"] for seed in [1, 2]]
    assert list(table["waf"]) == single


def test_workers_size_only_the_local_cluster():
    with pytest.raises(ValueError, match="workers"):
        sweeps.sweep({"ftl.gc_policy": ["greedy"]}, preset="small", set=BASE, workers=0, progress=False)
    with pytest.raises(ValueError, match="scheduler"):
        sweeps.sweep(
            {"ftl.gc_policy": ["greedy"]}, preset="small", set=BASE, scheduler="tcp://127.0.0.1:1", workers=2,
            progress=False,
        )


def test_errors_keep_their_class_across_processes():
    # A worker process sends its exception back pickled; the class must come back as itself.
    import pickle

    for error_class in (nandlab.ConfigError, nandlab.SimulationError, nandlab.TraceError, nandlab.ExperimentError):
        restored = pickle.loads(pickle.dumps(error_class("message")))
        assert type(restored) is error_class and str(restored) == "message"
