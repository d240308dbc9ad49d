"""The Python front end: same results as the CLI, clear errors."""

import json
import os
import pathlib
import subprocess

import nandlab
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SMALL = ["workload.requests=20000"]


def cli_binary() -> pathlib.Path:
    return pathlib.Path(os.environ.get("NANDLAB_BIN", ROOT / "target" / "release" / "nandlab"))


def test_run_returns_a_report():
    report = nandlab.run(preset="small", set=SMALL, seed=4)
    assert report["seed"] == 4
    measured = report["measured"]
    assert measured["host_pages_written"] == 20000
    assert measured["waf"] >= 1.0
    assert report["precondition"]["steady"] is True


def test_run_results_carry_the_lifetime_forecast():
    report = nandlab.run(preset="small", set=SMALL + ["lifetime.host_gb_per_day=10"], seed=4)
    lifetime = report["lifetime"]
    assert lifetime["rated_pe_cycles"] == 3000
    assert lifetime["host_gb_to_first_worn"] > 0
    assert lifetime["host_gb_to_share_worn"] >= lifetime["host_gb_to_first_worn"]
    assert abs(lifetime["years_to_first_worn"] - lifetime["host_gb_to_first_worn"] / 10 / 365.25) < 1e-9


def deterministic(report: dict) -> dict:
    """The report without ``wall_s``, the one field two runs of one configuration and seed differ in."""
    return {key: value for key, value in report.items() if key != "wall_s"}


def cli_report(tmp_path, *extra) -> dict:
    """`nandlab run --preset small --seed 9` with the SMALL overrides and `extra` flags, as JSON."""
    binary = cli_binary()
    if not binary.exists():
        pytest.fail(f"build the CLI first: {binary} is missing (cargo build --release)")
    out = tmp_path / "report.json"
    overrides = [a for s in SMALL for a in ("--set", s)]
    subprocess.run(
        [binary, "run", "--preset", "small", "--seed", "9", *extra, *overrides, "--json", out],
        check=True,
        capture_output=True,
    )
    return json.loads(out.read_text())


def test_same_results_as_cli(tmp_path):
    assert deterministic(cli_report(tmp_path)) == deterministic(nandlab.run(preset="small", set=SMALL, seed=9))


def test_dict_and_file_configs(tmp_path):
    config = {"preset": "small", "ftl": {"gc_policy": "fifo"}, "workload": {"requests": 5000}}
    from_dict = nandlab.run(config, seed=2)
    assert from_dict["config"]["ftl"]["gc_policy"] == "fifo"
    path = tmp_path / "c.toml"
    path.write_text('preset = "small"\n[ftl]\ngc_policy = "fifo"\n[workload]\nrequests = 5000\n')
    assert deterministic(nandlab.run(path, seed=2)) == deterministic(from_dict)


def test_errors_name_the_key():
    with pytest.raises(nandlab.ConfigError, match="ftl.gc_polcy"):
        nandlab.run(preset="small", set=["ftl.gc_polcy=fifo"])
    with pytest.raises(nandlab.ConfigError, match="device.channels"):
        nandlab.run({"preset": "small", "device": {"channels": 0}})
    with pytest.raises(nandlab.ConfigError, match="unknown preset"):
        nandlab.run(preset="nope")


def test_presets_listed():
    names = nandlab.presets()
    assert {"femu-32g", "telomere-1tb", "cosmos", "small"} <= set(names)
    assert "channels" in nandlab.preset_toml("femu-32g")


def test_timed_run_has_a_timed_section():
    counting = nandlab.run(preset="small", set=SMALL, seed=4)
    assert counting.get("timed") is None
    timed = nandlab.run(preset="small", set=SMALL, seed=4, timing=True)
    assert timed["timed"]["iops"] > 0
    assert timed["timed"]["requests"] > 0
    assert timed["timed"]["simulated_s"] > 0
    assert timed["measured"]["host_pages_written"] == 20000


def test_timed_run_same_as_cli(tmp_path):
    from_cli = cli_report(tmp_path, "--timing", "on")
    assert deterministic(from_cli) == deterministic(nandlab.run(preset="small", set=SMALL, seed=9, timing=True))


def test_parquet_outputs_match_the_json_document(tmp_path):
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    document = cli_report(tmp_path, "--parquet", tmp_path / "run.parquet", "--series-parquet", tmp_path / "waf.parquet")
    row = pandas.read_parquet(tmp_path / "run.parquet")
    assert len(row) == 1 and row["schema_version"][0] == document["schema_version"] == 1
    assert row["measured.waf"][0] == document["measured"]["waf"]
    assert row["measured.gc_page_copies"][0] == document["measured"]["gc_page_copies"]
    series = pandas.read_parquet(tmp_path / "waf.parquet")
    assert list(series.columns) == ["host_pages_written", "waf_window", "waf_cumulative"]
    assert series["host_pages_written"].tolist() == [p["host_pages_written"] for p in document["waf_series"]]
    to_stdout = subprocess.run(
        [cli_binary(), "run", "--preset", "small", "--set", "workload.requests=2000", "--parquet", "-"],
        check=True,
        capture_output=True,
    )
    assert to_stdout.stdout[:4] == b"PAR1" and to_stdout.stdout[-4:] == b"PAR1"


def test_jobs_report_per_job_results_that_add_up():
    report = nandlab.run(
        preset="small",
        set=[
            *SMALL,
            "job=name=logger,pattern=sequential,range_end=0.1,priority=true,requests=3000",
            "job=name=bulk,range_start=0.1,request_pages=4,queue_depth=4,requests=9000",
        ],
        seed=3,
    )
    jobs = {job["name"]: job for job in report["jobs"]}
    assert set(jobs) == {"logger", "bulk"}
    for key in ("requests", "host_pages_written", "flash_pages_programmed", "gc_page_copies"):
        assert jobs["logger"][key] + jobs["bulk"][key] == report["measured"][key]
    assert abs(jobs["logger"]["flash_write_share"] + jobs["bulk"]["flash_write_share"] - 1) < 1e-9
    assert "jobs" not in nandlab.run(preset="small", set=SMALL, seed=3)


def test_run_takes_a_fio_job_file_with_the_cli_jobs_and_warnings(tmp_path):
    job_file = ROOT / "examples" / "fio-two-jobs.fio"
    with pytest.warns(UserWarning, match=r"fio-two-jobs\.fio:5: `ioengine`: device-only"):
        report = nandlab.run(job_file, preset="small")
    writer, reader = report["config"]["job"]
    assert (writer["name"], writer["queue_depth"], writer["rate_iops"]) == ("writer", 16, 2000)
    assert (reader["name"], reader["queue_depth"], reader["rate_iops"]) == ("reader", 4, 500)
    assert [job["host_pages_written"] for job in report["jobs"]] == [4096, 0]
    assert [job["host_pages_read"] for job in report["jobs"]] == [0, 2048]
    cli = subprocess.run(
        [str(cli_binary()), "run", str(job_file), "--preset", "small", "--json", "-"],
        check=True,
        capture_output=True,
    )
    assert deterministic(json.loads(cli.stdout)) == deterministic(report)
    bad = tmp_path / "bad.fio"
    bad.write_text("[writer]\nrw=randwrite\nbs=512\n")
    with pytest.raises(nandlab.ConfigError, match=r"bad\.fio:3: `bs=512`"):
        nandlab.run(bad, preset="small")
