"""nandlab: a fast, deterministic NAND flash SSD simulator.

The simulation runs in the Rust core; this package is a thin front end::

    import nandlab
    report = nandlab.run(preset="small", set=["ftl.gc_policy=fifo"], seed=3)
    print(report["measured"]["waf"])

``run`` returns the same document as ``nandlab run --json`` (``timing=True``:
``nandlab run --timing on --json``).

``replay`` replays a block trace (``nandlab replay --json``), ``read_trace``
reads one into a pandas DataFrame, ``experiments`` lists the paper
experiments and ``reproduce`` runs one (``nandlab reproduce NAME --out DIR``)::

    report = nandlab.replay("hm_0.csv", preset="femu-32g", discard="delay-d", fit=True)
    frame = nandlab.read_trace("hm_0.csv")
    nandlab.reproduce("priority-cleaning", out="results/priority-cleaning")

Long calls run without the GIL, show a tqdm bar when tqdm is installed and
stop with ``KeyboardInterrupt`` on Ctrl-C.

``Dhrd`` is the durable hybrid RAM disk of crate nandlab-dhrd as a Python
object::

    with nandlab.Dhrd("disk.img", size="64MiB") as disk:
        disk.write_at(12345, b"hello")
        assert disk.read_at(12345, 5) == b"hello"

Its errors are built-in exceptions: ``OSError`` (with errno) for backing-file
failures, ``ValueError`` for bad arguments and ranges.
"""

from __future__ import annotations

import json
from typing import Iterable, Optional

from . import _native
from ._config import ConfigSource, config_arguments
from ._lab import advise, experiments, read_trace, replay, reproduce
from ._native import ConfigError, Dhrd, ExperimentError, SimulationError, TraceError

__all__ = [
    "run",
    "validate",
    "presets",
    "preset_toml",
    "replay",
    "advise",
    "read_trace",
    "reproduce",
    "experiments",
    "Dhrd",
    "ConfigError",
    "SimulationError",
    "TraceError",
    "ExperimentError",
    "__version__",
]
__version__: str = _native.__version__


def run(
    config: ConfigSource = None,
    *,
    preset: Optional[str] = None,
    set: Iterable[str] = (),  # noqa: A002 - mirrors the CLI's --set
    seed: Optional[int] = None,
    timing: bool = False,
) -> dict:
    """Run one simulation and return its report as a dict.

    ``config`` is a dict in the TOML layout (``{"ftl": {"gc_policy": "fifo"}}``)
    or the path of a TOML file; either may name a base preset with a top-level
    ``"preset"`` key. A path ending in ``.fio`` is a fio job file: its jobs run
    on the device of ``preset`` (docs/fio.md) and its warnings are
    ``UserWarning``. ``preset`` starts from an embedded preset (default
    ``femu-32g`` when no config is given), ``set`` applies ``key=value``
    overrides as the CLI's ``--set`` does, and ``seed`` overrides the seed.
    ``timing=True`` runs the measured workload through the timing model (as
    ``nandlab run --timing on``) and the report gains a ``timed`` section
    (throughput, IOPS, latencies); without it the report has no ``timed`` key.
    """
    arguments = config_arguments(config, preset, set)
    return json.loads(_native.run_json(**arguments, seed=seed, timing=bool(timing)))


def validate(config: ConfigSource = None, *, preset: Optional[str] = None, set: Iterable[str] = ()) -> None:  # noqa: A002
    """Check a configuration (arguments as in :func:`run`) without running it; raises ``ConfigError``."""
    _native.validate(**config_arguments(config, preset, set))


def presets() -> dict:
    """Embedded presets: name -> one-line description."""
    return dict(_native.presets())


def preset_toml(name: str) -> str:
    """The TOML text of an embedded preset."""
    return _native.preset_toml(name)
