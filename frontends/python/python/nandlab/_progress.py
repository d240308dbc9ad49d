"""Progress bars for long native calls: tqdm when installed, nothing otherwise."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional


@contextlib.contextmanager
def progress_callback(enabled: bool, description: str, unit: str) -> Iterator[Optional[Callable[[int], None]]]:
    """A callable ``update(done)`` that moves a tqdm bar to ``done``, or ``None``.

    ``None`` when ``enabled`` is false or tqdm is not installed: the native
    call then only checks for Ctrl-C. The bar is closed however the call ends.
    """
    if not enabled:
        yield None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:
        yield None
        return
    # Like the CLI: no bar for calls that end within a second.
    bar = tqdm(desc=description, unit=unit, unit_scale=True, leave=False, delay=1.0)

    def update(done: int) -> None:
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        bar.close()
