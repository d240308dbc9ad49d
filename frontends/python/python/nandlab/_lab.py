"""Trace replay, traces as data frames and the paper experiments (crate nandlab-lab)."""

from __future__ import annotations

import json
import os
import pathlib
import sys
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional

from . import _native
from ._config import ConfigSource, config_arguments
from ._progress import progress_callback

if TYPE_CHECKING:
    import pandas

def replay(
    trace: "str | os.PathLike[str]",
    config: ConfigSource = None,
    *,
    preset: Optional[str] = None,
    set: Optional[Iterable[str]] = None,  # noqa: A002 - mirrors the CLI's --set
    discard: Optional[str] = None,
    timing: bool = False,
    fit: bool = False,
    device_size: Optional[int] = None,
    seed: Optional[int] = None,
    arrival: str = "trace",
    format: Optional[str] = None,  # noqa: A002 - mirrors the CLI's --format
    trace_device: Optional[str] = None,
    open_channel: bool = False,
    age_with: "Optional[str | os.PathLike[str]]" = None,
    progress: bool = True,
) -> dict:
    """Replay a block trace on the simulated SSD; return the report as a dict.

    The report is the document ``nandlab replay TRACE --json`` writes, with the
    same arguments: ``config``, ``preset``, ``set`` and ``seed`` as in
    :func:`nandlab.run`; ``discard`` one of ``"off"``, ``"online"``,
    ``"delay-d"``, ``"periodic"`` (default: the configuration's
    ``discard.policy``); ``timing=True`` runs the trace through the timing
    model (``--timing on``; ``arrival="closed"`` keeps ``timing.queue_depth``
    requests outstanding instead of issuing at trace timestamps);
    ``device_size`` (bytes, ``--device-size``) scales the device to the traced
    device's size; ``fit=True`` does so from ``device_size``, else the trace
    header's size, else the highest sector the trace touches (raw traces give
    no size).
    ``format`` names the trace format (detected when omitted), ``trace_device``
    (``--trace-device``) picks one device of a multi-device trace, ``open_channel=True`` replays on
    the open-channel device under the pblk-like host FTL
    (``--device-mode open-channel``, i.e. ``ftl.kind = "open-channel"``).
    The device is aged first as the configuration's ``[precondition]`` says
    — by default workload aging: the trace itself, or ``age_with``
    (``--age-with``), replayed from an empty device until the WAF settles —
    and the aging's GC debt paid before measuring; the report's
    ``precondition`` section says which aging ran, what it cost and the
    debt paid (``debt_paid``).

    The replay runs without the GIL. ``progress=True`` shows a tqdm bar of
    requests read when tqdm is installed. Ctrl-C stops the replay within a
    fraction of a second and raises ``KeyboardInterrupt``, during a synthetic
    aging phase too. Raises
    ``ConfigError`` (bad key or device too small for the trace),
    ``TraceError`` (the message names file and line), ``OSError`` (the file
    cannot be read) or ``SimulationError``.
    """
    arguments = config_arguments(config, preset, set or ())
    with progress_callback(progress, "replay", " requests") as update:
        report = _native.replay_json(
            os.fspath(trace),
            **arguments,
            seed=seed,
            discard=discard,
            timing=bool(timing),
            arrival_mode=arrival,
            fit=bool(fit),
            device_size=None if device_size is None else int(device_size),
            format=format,
            device=trace_device,
            open_channel=bool(open_channel),
            age_with=None if age_with is None else os.fspath(age_with),
            progress=update,
        )
    return json.loads(report)


def advise(
    trace: "str | os.PathLike[str]",
    config: ConfigSource = None,
    *,
    preset: Optional[str] = None,
    set: Optional[Iterable[str]] = None,  # noqa: A002 - mirrors the CLI's --set
    seed: Optional[int] = None,
    fit: bool = False,
    device_size: Optional[int] = None,
    gb_per_day: Optional[float] = None,
    format: Optional[str] = None,  # noqa: A002 - mirrors the CLI's --format
    trace_device: Optional[str] = None,
    progress: bool = True,
) -> "pandas.DataFrame":
    """Which mechanism saves this trace's flash? ``nandlab advise`` as a DataFrame.

    Replays the trace in timed mode on the workload-aged device under every
    DISCARD policy, then hot/cold streams, journal separation (when the trace
    has a journal) and priority-aware cleaning (when it has priority
    requests), each with the best DISCARD policy. One row per configuration,
    best first (years to first wear-out, then WAF, then GC copies): ``name``,
    ``years_to_first_worn``, ``waf``, ``gc_page_copies``, ``erases``,
    ``p99_read_us``, ``p99_write_us``, ``overrides`` (the ``set`` keys that
    re-run the row with :func:`replay`) and ``lifetime_warnings``.
    ``gb_per_day`` sets the write rate of the lifetime forecast (default: the
    trace's own). Other arguments as in :func:`replay`. The whole document
    (trace traits, seed) is in ``DataFrame.attrs["advice"]``.
    """
    import pandas as pd

    arguments = config_arguments(config, preset, set or ())
    with progress_callback(progress, "advise", " requests") as update:
        advice = json.loads(
            _native.advise_json(
                os.fspath(trace),
                **arguments,
                seed=seed,
                fit=bool(fit),
                device_size=None if device_size is None else int(device_size),
                gb_per_day=None if gb_per_day is None else float(gb_per_day),
                format=format,
                device=trace_device,
                progress=update,
            )
        )
    frame = pd.DataFrame(advice["ranked"])
    frame.attrs["advice"] = advice
    return frame


def read_trace(
    path: "str | os.PathLike[str]",
    *,
    format: Optional[str] = None,  # noqa: A002 - mirrors the CLI's --format
    trace_device: Optional[str] = None,
    progress: bool = True,
) -> "pandas.DataFrame":
    """Read a block trace into a pandas DataFrame, one row per request.

    Any format ``nandlab replay`` reads (native ``.nlt``, tracefs text,
    blkparse text, MSR/UMass CSV, fio iolog; gzip-compressed too). Addresses
    are in 512-byte sectors whatever the trace's sector size. Columns:

    ``time_ns`` (uint64, since the first request), ``op`` (category: read,
    write, discard, flush), ``start_sector`` and ``sectors`` (uint64; zero
    sectors for a flush), ``process`` (category; empty when the trace does not
    say), ``flags`` (category of ``rwbs`` letters: P reflush, F ua, S ync,
    M eta, ``-`` for none), ``sync``, ``fua``, ``preflush``, ``meta`` (bool),
    ``stream`` (nullable UInt8 write-stream tag), ``in_journal`` (bool: inside
    the file system's journal, known from a capture's header) and
    ``journal_commit`` (bool: the replay counts it as a jbd2 commit).

    ``format`` and ``trace_device`` are ``replay``'s.
    ``DataFrame.attrs["header"]`` holds the trace header (sector size, device
    size, source format, journal extents). Reading runs without the GIL and
    stops with ``KeyboardInterrupt`` on Ctrl-C.
    """
    import numpy as np
    import pandas as pd

    with progress_callback(progress, "read_trace", " requests") as update:
        columns = _native.read_trace_columns(os.fspath(path), format=format, device=trace_device, progress=update)

    def numbers(name: str, dtype: str) -> "np.ndarray":
        return np.frombuffer(columns[name], dtype=dtype).copy()

    def category(codes_name: str, dtype: str, names_name: str) -> "pandas.Categorical":
        codes = numbers(codes_name, dtype).astype(np.int32)
        return pd.Categorical.from_codes(codes, categories=pd.Index(columns[names_name]).astype(object))

    bits = numbers("flags", "u1")
    stream = pd.array(numbers("stream", "u1"), dtype="UInt8")
    stream[~numbers("stream_known", "u1").astype(bool)] = pd.NA
    frame = pd.DataFrame(
        {
            "time_ns": numbers("time_ns", "<u8"),
            "op": category("op", "u1", "op_names"),
            "start_sector": numbers("start_sector", "<u8"),
            "sectors": numbers("sectors", "<u8"),
            "process": category("process", "<u4", "process_names"),
            "flags": category("flags", "u1", "flag_names").remove_unused_categories(),
            "sync": (bits & 1).astype(bool),
            "fua": (bits & 2).astype(bool),
            "preflush": (bits & 4).astype(bool),
            "meta": (bits & 8).astype(bool),
            "stream": stream,
            "in_journal": numbers("in_journal", "u1").astype(bool),
            "journal_commit": numbers("journal_commit", "u1").astype(bool),
        }
    )
    frame.attrs["header"] = json.loads(columns["header_json"])
    return frame


def experiments() -> List[Dict[str, Any]]:
    """The paper experiments ``reproduce`` runs: one dict per experiment with
    ``name``, ``description``, ``keys`` (the ``set`` keys it takes),
    ``needs_root`` (it captures traces of a real ext4 on loop devices unless
    they are cached in ``OUT/traces``) and ``rough_seconds`` (wall time at the
    quick scale on a 2-core machine)."""
    return _native.experiments()


def use_console_script_for_captures() -> None:
    """Let experiments that capture a real file system find ``nandlab fsload``.

    They run it as a separate process: ``NANDLAB_BIN`` when set, else
    ``nandlab`` on ``PATH``. An interpreter whose environment is not activated
    has this package's console script beside it, not on ``PATH``.
    """
    beside = os.path.join(os.path.dirname(sys.executable), "nandlab")
    if "NANDLAB_BIN" not in os.environ and os.access(beside, os.X_OK):
        os.environ["NANDLAB_BIN"] = beside


def reproduce(
    name: str,
    out: "str | os.PathLike[str]",
    *,
    seed: int = 1,
    paper_scale: bool = False,
    samples: Optional[int] = None,
    set: Optional[Iterable[str]] = None,  # noqa: A002 - mirrors the CLI's --set
) -> Dict[str, Any]:
    """Run a paper experiment as ``nandlab reproduce NAME --out OUT`` does.

    Writes data (CSV/JSON), plots (SVG), ``summary.md`` and the
    self-contained ``report.html`` into ``out`` (``all``: every experiment
    into ``out/NAME``, then ``out/report.md`` and ``out/report.html``).
    Returns ``{"name", "out", "summary", "html", "seconds"}``: ``out``,
    ``summary`` and ``html`` as ``pathlib.Path``, ``seconds`` the wall time. Runs without the GIL; Ctrl-C raises
    ``KeyboardInterrupt`` once the experiment reaches its next check (each
    replayed request or sweep point; the DHRD benchmark and Telomere
    simulations finish their current step first). Raises ``ValueError`` for
    an unknown name or ``set`` key and ``ExperimentError`` when the
    experiment fails (e.g. a capture without root).

    Experiments whose ``experiments()`` entry says ``needs_root`` capture a
    real file system on loop devices: run them as root. Their workloads run
    as ``nandlab fsload`` processes: ``NANDLAB_BIN`` when set, else this
    package's ``nandlab`` console script.
    """
    use_console_script_for_captures()
    summary, html, seconds = _native.reproduce(
        name,
        os.fspath(out),
        seed=seed,
        paper_scale=bool(paper_scale),
        samples=samples,
        overrides=list(set or ()),
    )
    return {
        "name": name,
        "out": pathlib.Path(out),
        "summary": pathlib.Path(summary),
        "html": pathlib.Path(html),
        "seconds": seconds,
    }
