"""replay, read_trace, experiments and reproduce: the nandlab-lab library from Python."""

import gzip
import json
import os
import pathlib
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import time
import zlib

import nandlab
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

# MSR Cambridge CSV: timestamp (100 ns ticks), host, disk, type, offset (bytes), size (bytes), response.
MSR_START = 128166372003061629


def write_msr(path: pathlib.Path, requests: int, seed: int = 7) -> None:
    """A random 4-32 KiB read/write mix over 16 MiB, one request per millisecond."""
    import random

    rng = random.Random(seed)
    lines = []
    for index in range(requests):
        op = "Write" if rng.random() < 0.7 else "Read"
        offset = rng.randrange(0, 16 << 20, 4096)
        lines.append(f"{MSR_START + index * 10_000},hm,0,{op},{offset},{4096 * rng.choice([1, 2, 4, 8])},100")
    path.write_text("\n".join(lines) + "\n")


BLKPARSE = textwrap.dedent(
    """\
      8,0    3        1     0.000000000   697  D  WS 2048 + 8 [kworker/u8:1]
      8,0    3        2     0.000100000   697  D  WSM 4096 + 16 [ext4lazyinit]
      8,0    1        3     0.000200000  1234  D  FWFS 8192 + 8 [jbd2/sda1-8]
      8,0    1        4     0.000300000  1234  D  FN [jbd2/sda1-8]
      8,0    2        5     0.001000000   800  D  R 2048 + 8 [cat]
      8,0    2        6     0.002000000   800  D  D 4096 + 16 [fstrim]
    """
)


def cli_binary() -> pathlib.Path:
    return pathlib.Path(os.environ.get("NANDLAB_BIN", ROOT / "target" / "release" / "nandlab"))


def test_replay_is_the_cli_replay(tmp_path):
    trace = tmp_path / "hm_0.csv"
    write_msr(trace, 3000)
    report = nandlab.replay(trace, preset="small", seed=5, progress=False)
    assert report["host"]["writes"] + report["host"]["reads"] == 3000
    assert report["measured"]["host_pages_written"] > 0
    assert report["measured"]["waf"] >= 1.0
    binary = cli_binary()
    if not binary.exists():
        pytest.fail(f"build the CLI first: {binary} is missing (cargo build --release)")
    out = tmp_path / "report.json"
    subprocess.run(
        [binary, "replay", trace, "--preset", "small", "--seed", "5", "--json", out], check=True, capture_output=True
    )
    from_cli = json.loads(out.read_text())
    assert from_cli.pop("wall_s") > 0 and report.pop("wall_s") > 0
    # The CLI's document adds how fast the replay ran (wall clock, so not part of the comparison).
    assert from_cli.pop("replay_speed")["requests"] == 3000
    assert from_cli == report


def test_replay_options_change_what_they_should(tmp_path):
    trace = tmp_path / "trace.blktrace.txt"
    trace.write_text(BLKPARSE)
    counted = nandlab.replay(trace, preset="small", discard="off", progress=False)
    assert counted["discard"]["received_commands"] == 1 and counted["discard"]["issued_commands"] == 0
    assert counted["host"]["journal_commits"] >= 1
    assert "timed" not in counted or counted["timed"] is None
    timed = nandlab.replay(trace, preset="small", discard="online", timing=True, progress=False)
    assert timed["discard"]["issued_commands"] == 1
    assert timed["timed"]["simulated_s"] > 0
    fifo = nandlab.replay(trace, {"preset": "small", "ftl": {"gc_policy": "fifo"}}, progress=False)
    assert fifo["config"]["ftl"]["gc_policy"] == "fifo"


def test_replay_errors_are_python_exceptions(tmp_path):
    with pytest.raises(FileNotFoundError):
        nandlab.replay(tmp_path / "missing.csv", preset="small", progress=False)
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{MSR_START},hm,0,Write,4096,4096,100\n{MSR_START},hm,0,Scribble,0,512,1\n")
    with pytest.raises(nandlab.TraceError, match=r"bad.csv:2"):
        nandlab.replay(bad, preset="small", progress=False)
    good = tmp_path / "good.csv"
    write_msr(good, 10)
    with pytest.raises(nandlab.ConfigError, match="discard"):
        nandlab.replay(good, preset="small", discard="sometimes", progress=False)
    with pytest.raises(nandlab.ConfigError, match="ftl.gc_polcy"):
        nandlab.replay(good, preset="small", set=["ftl.gc_polcy=fifo"], progress=False)
    # A raw trace gives no size: --fit scales to the highest sector it touches, with fewer parallel units
    # (or one grown unit) where the preset's would leave too few spare blocks.
    fitted = nandlab.replay(good, preset="small", fit=True, progress=False)
    assert 0 < fitted["device"]["logical_bytes"] < 1 << 30
    report = nandlab.replay(good, preset="small", device_size=1 << 30, progress=False)
    assert report["device"]["logical_bytes"] <= 1 << 30 and report["device"]["logical_bytes"] > 1 << 29


def test_read_trace_gives_typed_columns(tmp_path):
    trace = tmp_path / "trace.blktrace.txt"
    trace.write_text(BLKPARSE)
    frame = nandlab.read_trace(trace, progress=False)
    assert len(frame) == 6
    assert str(frame["time_ns"].dtype) == "uint64"
    assert str(frame["start_sector"].dtype) == "uint64" and str(frame["sectors"].dtype) == "uint64"
    assert str(frame["op"].dtype) == "category"
    assert list(frame["op"]) == ["write", "write", "write", "flush", "read", "discard"]
    assert list(frame["time_ns"]) == [0, 100_000, 200_000, 300_000, 1_000_000, 2_000_000]
    assert list(frame["start_sector"][:3]) == [2048, 4096, 8192]
    assert list(frame["sectors"]) == [8, 16, 8, 0, 8, 16]
    assert list(frame["process"][:3]) == ["kworker/u8:1", "ext4lazyinit", "jbd2/sda1-8"]
    assert list(frame["meta"]) == [False, True, False, False, False, False]
    assert frame["fua"][2] and frame["preflush"][2] and frame["sync"][0]
    assert frame["journal_commit"][2], "an ordered write by jbd2 is a commit"
    assert frame["stream"].isna().all()
    assert frame.attrs["header"]["sector_size_bytes"] == 512


def test_read_trace_matches_what_replay_counts(tmp_path):
    trace = tmp_path / "hm_0.csv"
    write_msr(trace, 2000, seed=11)
    frame = nandlab.read_trace(trace, progress=False)
    report = nandlab.replay(trace, preset="small", progress=False)
    counts = frame["op"].value_counts()
    assert counts["write"] == report["host"]["writes"] and counts["read"] == report["host"]["reads"]
    assert (frame["time_ns"].diff().dropna() == 1_000_000).all(), "10^4 ticks of 100 ns"


def test_experiments_lists_the_registry():
    experiments = nandlab.experiments()
    names = [experiment["name"] for experiment in experiments]
    assert len(names) == len(set(names)) and "delay-d" in names and "stripe-merging" in names
    for experiment in experiments:
        assert set(experiment) == {"name", "description", "keys", "needs_root", "rough_seconds"}
        assert experiment["description"] and experiment["rough_seconds"] > 0
    by_name = {experiment["name"]: experiment for experiment in experiments}
    assert by_name["delay-d"]["needs_root"] and not by_name["priority-cleaning"]["needs_root"]
    assert "wear.x_mean" in by_name["telomere-fig10"]["keys"]


def test_reproduce_a_fast_experiment(tmp_path):
    done = nandlab.reproduce("telomere-table3", out=tmp_path / "t3", seed=2)
    assert done["summary"] == tmp_path / "t3" / "summary.md"
    assert done["summary"].read_text().startswith("#")
    assert "## Provenance" in done["summary"].read_text()
    assert done["html"] == tmp_path / "t3" / "report.html"
    assert "<svg" in done["html"].read_text()
    assert any(path.suffix == ".csv" for path in (tmp_path / "t3").iterdir())
    assert done["seconds"] > 0
    with pytest.raises(ValueError, match="available"):
        nandlab.reproduce("fig99", out=tmp_path / "x")
    with pytest.raises(ValueError, match="takes no --set keys"):
        nandlab.reproduce("telomere-fig8", out=tmp_path / "x", set=["a=1"])


def coloured_pixels(png: pathlib.Path) -> int:
    """Pixels of an 8-bit RGB(A) PNG that are clearly coloured (not white, grey or black): only the
    figures' series are, so this counts what Chromium drew of them."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, offset = {}, 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        chunks.setdefault(kind, []).append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][0][:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
    stride = width * channels
    previous, count, at = bytearray(stride), 0, 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1 : at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        for i in range(0, stride, channels):
            if max(line[i : i + 3]) - min(line[i : i + 3]) > 60:
                count += 1
        previous = line
    return count


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_headless_chromium_renders_the_figures_of_report_html(tmp_path):
    done = nandlab.reproduce("priority-cleaning", out=tmp_path / "pc")
    screenshot = tmp_path / "report.png"
    script = str(ROOT / "scripts/screenshot-report.sh")
    # The top of the page holds the figure; a small window keeps the pure-Python PNG decoding quick.
    env = dict(os.environ, SCREENSHOT_SIZE="1000,1000")
    subprocess.run([script, str(done["html"]), str(screenshot)], check=True, env=env)
    assert coloured_pixels(screenshot) > 2000, "the figure's coloured series are drawn"
    html = done["html"].read_text()
    assert "paper: priority, aware" in html, "the paper's reference is drawn with a legend entry"


def write_long_trace(path: pathlib.Path, members: int) -> None:
    """A gzip file of `members` identical members, each 20 000 sequential 64 KiB writes over 16 MiB:
    millions of requests on disk in a few megabytes, read back as one stream. Every request has the
    same timestamp, so the members repeat without time going backwards (which readers refuse)."""
    lines = "".join(f"{MSR_START},hm,0,Write,{(index * 65536) % (16 << 20)},65536,1\n" for index in range(20_000))
    member = gzip.compress(lines.encode(), compresslevel=6)
    with open(path, "wb") as out:
        for _ in range(members):
            out.write(member)


CHILD = """
import sys, nandlab
print("replaying", flush=True)
try:
    timed = sys.argv[2] == "timed"
    aging = sys.argv[2] == "aging"
    preset = "femu-32g" if aging else "small"
    # Aging that never counts as steady runs its 10 device writes (80 M pages): seconds even at full speed.
    never_steady = ["precondition.kind='random-fill'", "precondition.steady_tolerance=1e-12"] if aging else []
    arrival = "closed" if timed else "trace"
    nandlab.replay(sys.argv[1], preset=preset, set=never_steady, timing=timed, arrival=arrival, progress=True)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(3)
print("finished", flush=True)
"""


@pytest.mark.parametrize("mode", ["counted", "timed", "aging"])
def test_ctrl_c_stops_a_long_replay_within_a_second(tmp_path, mode):
    """`aging`: Ctrl-C during the synthetic aging of a 32 GiB device (10 device writes before the trace)."""
    trace = tmp_path / "long.csv.gz"
    write_long_trace(trace, members=1 if mode == "aging" else 2000)  # 40 M requests: minutes of work
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(trace), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "replaying"
        time.sleep(1.5)
        assert child.poll() is None, "the replay is still running when Ctrl-C comes"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=10)
        waited = time.monotonic() - sent
    finally:
        child.kill()
    assert "KeyboardInterrupt" in out, err
    assert child.returncode == 3
    assert waited < 1.0, f"stopped {waited:.2f} s after SIGINT"


def test_advise_ranks_the_mechanisms_of_a_raw_capture_as_a_data_frame():
    capture = ROOT / "crates/lab/tests/data/uav-single-ext4-1g-discard.tracefs.gz"
    frame = nandlab.advise(capture, preset="small", fit=True, progress=False)
    assert len(frame) >= 4
    assert {"discard off", "discard online", "discard delay-d", "discard periodic"} <= set(frame["name"])
    assert (frame["years_to_first_worn"] > 0).all() and frame["p99_write_us"].notna().all()
    assert frame.attrs["advice"]["traits"]["journal_commits"] > 0
    best = frame.iloc[0]
    replayed = nandlab.replay(capture, preset="small", fit=True, timing=True, set=best["overrides"], progress=False)
    assert replayed["measured"]["gc_page_copies"] == best["gc_page_copies"]
    with pytest.raises(nandlab.ConfigError, match="gb_per_day"):
        nandlab.advise(capture, preset="small", fit=True, gb_per_day=0, progress=False)
