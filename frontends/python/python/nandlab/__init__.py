"""nandlab: a fast, deterministic NAND flash SSD simulator.

The simulation runs in the Rust core; this package is a thin front end::

    import nandlab
    report = nandlab.run(preset="small", set=["ftl.gc_policy=fifo"], seed=3)
    print(report["measured"]["waf"])

``run`` returns the same document as ``nandlab run --json`` (``timing=True``:
``nandlab run --timing on --json``).

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
import os
from typing import Any, Iterable, Mapping, Optional, Union

from . import _native
from ._native import ConfigError, Dhrd, SimulationError

__all__ = ["run", "validate", "presets", "preset_toml", "Dhrd", "ConfigError", "SimulationError", "__version__"]
__version__: str = _native.__version__

ConfigSource = Union[Mapping[str, Any], str, "os.PathLike[str]", None]


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
    ``"preset"`` key. ``preset`` starts from an embedded preset (default
    ``femu-32g`` when no config is given), ``set`` applies ``key=value``
    overrides as the CLI's ``--set`` does, and ``seed`` overrides the seed.
    ``timing=True`` runs the measured workload through the timing model (as
    ``nandlab run --timing on``) and the report gains a ``timed`` section
    (throughput, IOPS, latencies); without it the report has no ``timed`` key.
    """
    arguments = _config_arguments(config, preset, set)
    return json.loads(_native.run_json(**arguments, seed=seed, timing=bool(timing)))


def validate(config: ConfigSource = None, *, preset: Optional[str] = None, set: Iterable[str] = ()) -> None:  # noqa: A002
    """Check a configuration (arguments as in :func:`run`) without running it; raises ``ConfigError``."""
    _native.validate(**_config_arguments(config, preset, set))


def _config_arguments(config: ConfigSource, preset: Optional[str], overrides: Iterable[str]) -> dict:
    """The native functions' configuration arguments for a dict, a TOML path or nothing."""
    arguments: dict = {"preset": preset, "overrides": list(overrides)}
    if isinstance(config, Mapping):
        arguments["config_json"] = json.dumps(config)
    elif config is not None:
        path = os.fspath(config)
        with open(path, encoding="utf-8") as toml_file:
            arguments["config_toml"] = toml_file.read()
        arguments["origin"] = path
    return arguments


def presets() -> dict:
    """Embedded presets: name -> one-line description."""
    return dict(_native.presets())


def preset_toml(name: str) -> str:
    """The TOML text of an embedded preset."""
    return _native.preset_toml(name)
