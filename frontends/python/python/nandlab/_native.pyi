import os
import pathlib
from types import TracebackType
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, Union

__version__: str

class ConfigError(ValueError): ...
class SimulationError(RuntimeError): ...
class TraceError(ValueError): ...
class ExperimentError(RuntimeError): ...

# The same classes under their own names, which pickle uses (errors from sweep worker processes).
NandlabConfigError = ConfigError
NandlabSimulationError = SimulationError
NandlabTraceError = TraceError
NandlabExperimentError = ExperimentError

def run_json(
    preset: Optional[str] = ...,
    config_json: Optional[str] = ...,
    config_toml: Optional[str] = ...,
    origin: Optional[str] = ...,
    overrides: List[str] = ...,
    seed: Optional[int] = ...,
    timing: bool = ...,
) -> str: ...
def validate(
    preset: Optional[str] = ...,
    config_json: Optional[str] = ...,
    config_toml: Optional[str] = ...,
    origin: Optional[str] = ...,
    overrides: List[str] = ...,
) -> None: ...
def presets() -> List[Tuple[str, str]]: ...
def replay_json(
    trace: str,
    preset: Optional[str] = ...,
    config_json: Optional[str] = ...,
    config_toml: Optional[str] = ...,
    origin: Optional[str] = ...,
    overrides: List[str] = ...,
    seed: Optional[int] = ...,
    discard: Optional[str] = ...,
    timing: bool = ...,
    arrival_mode: str = ...,
    fit: bool = ...,
    device_size: Optional[int] = ...,
    format: Optional[str] = ...,
    device: Optional[str] = ...,
    open_channel: bool = ...,
    age_with: Optional[str] = ...,
    progress: Optional[Callable[[int], None]] = ...,
) -> str:
    """The report of ``nandlab replay --json`` as JSON text; ``progress(done)`` is called at most every 50 ms."""
def read_trace_columns(
    path: str,
    format: Optional[str] = ...,
    device: Optional[str] = ...,
    progress: Optional[Callable[[int], None]] = ...,
) -> Dict[str, Any]:
    """Columns of a trace: little-endian ``bytes`` per numeric column, code tables for text, ``header_json``."""
def experiments() -> List[Dict[str, Any]]:
    """The registry: name, description, keys, needs_root, rough_seconds."""
def reproduce(
    name: str,
    out: str,
    seed: int = ...,
    paper_scale: bool = ...,
    samples: Optional[int] = ...,
    overrides: List[str] = ...,
) -> Tuple[pathlib.Path, pathlib.Path, float]:
    """Runs an experiment into ``out``; (summary path, report.html path, seconds)."""
def preset_toml(name: str) -> str: ...
def advise_json(
    trace: str,
    preset: Optional[str] = ...,
    config_json: Optional[str] = ...,
    config_toml: Optional[str] = ...,
    origin: Optional[str] = ...,
    overrides: List[str] = ...,
    seed: Optional[int] = ...,
    fit: bool = ...,
    device_size: Optional[int] = ...,
    gb_per_day: Optional[float] = ...,
    format: Optional[str] = ...,
    device: Optional[str] = ...,
    progress: Optional[Callable[[int], None]] = ...,
) -> str:
    """``nandlab advise --json``: every mechanism that applies, ranked."""
def command_line(argv: List[str]) -> int:
    """Runs the ``nandlab`` command line (program name first); returns its exit status."""
def write_output(path: Union[str, "os.PathLike[str]"], data: bytes) -> None:
    """Writes ``data`` as every nandlab output: a file replaced whole (mode kept), a device or FIFO in place."""

_Path = Union[str, "os.PathLike[str]"]
_Size = Union[int, str]

class Dhrd:
    """A durable hybrid RAM disk: reads from RAM, writes acknowledged once durable on the backing file."""

    def __init__(
        self,
        backing: _Path,
        size: Optional[_Size] = ...,
        *,
        chunk_bytes: Optional[_Size] = ...,
        durability: str = ...,
        copy_rate_bytes_per_s: Optional[int] = ...,
    ) -> None: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def chunk_bytes(self) -> int: ...
    @property
    def backing(self) -> pathlib.Path: ...
    @property
    def durability(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def initialized(self) -> bool: ...
    def read_at(self, offset: int, length: int) -> bytes: ...
    def read_into(self, offset: int, buffer: Any) -> int: ...
    def write_at(self, offset: int, data: Union[bytes, bytearray, memoryview]) -> None: ...
    def discard(self, offset: int, length: int) -> None: ...
    def flush(self) -> None: ...
    def fsync(self) -> None: ...
    def init_progress(self) -> Dict[str, Any]: ...
    def wait_initialized(self, timeout_s: Optional[float] = ...) -> bool: ...
    def chunk_state(self, index: int) -> Optional[str]: ...
    def verify_mirror(self) -> int: ...
    def stats(self) -> Dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Dhrd: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...
