"""``nandlab`` on the command line: the console script and ``python -m nandlab``.

The command line is the Rust one (``nandlab --help``), run inside this process
by the native module, so the package needs no separate binary.
"""

from __future__ import annotations

import os
import signal
import sys

from . import _native
from ._lab import use_console_script_for_captures


def main() -> None:
    """Run ``nandlab`` with this process's arguments and exit with its status."""
    # Ctrl-C ends the command as it ends the Rust binary: Python's own handler
    # would only set a flag that nobody reads while the command runs.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    use_console_script_for_captures()
    sys.exit(_native.command_line([_program_name(), *sys.argv[1:]]))


def _program_name() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return "nandlab" if name in ("", "__main__.py", "-m") else name


if __name__ == "__main__":
    main()
