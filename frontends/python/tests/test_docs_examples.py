"""The Python examples of README.md and docs/*.md run as written, as scripts.

Every ```python block runs in a fresh interpreter in a scratch folder that
holds `t.nlt`, a raw tracefs capture of a real ext4 (the file the README's
commands capture). A block that cannot run here says why in a
`<!-- not-runnable: REASON -->` line just above it.
"""

import gzip
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
RAW_EXT4_CAPTURE = ROOT / "crates/trace/tests/data/ext4-loop-discard-fsync.tracefs.gz"
BLOCK = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)\n```", re.S)
NOT_RUNNABLE = re.compile(r"<!-- not-runnable: (?P<reason>\S.*?) -->")


def python_blocks():
    """(document:line, code, reason it is not runnable or None) of every ```python block."""
    blocks = []
    for document in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = document.read_text(encoding="utf-8")
        for block in BLOCK.finditer(text):
            line = text.count("\n", 0, block.start("code"))
            skipped = NOT_RUNNABLE.search(block.group("before"))
            where = f"{document.relative_to(ROOT)}:{line}"
            blocks.append(pytest.param(block.group("code"), skipped and skipped.group("reason"), id=where))
    return blocks


def test_the_docs_have_python_examples():
    assert len(python_blocks()) >= 2


@pytest.mark.parametrize("code, not_runnable", python_blocks())
def test_a_python_example_runs_as_a_script(code, not_runnable, tmp_path):
    if not_runnable:
        pytest.skip(not_runnable)
    with gzip.open(RAW_EXT4_CAPTURE) as raw, open(tmp_path / "t.nlt", "wb") as trace:
        shutil.copyfileobj(raw, trace)
    script = tmp_path / "example.py"
    script.write_text(code + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"the example failed:\n{code}\n--- stderr:\n{done.stderr[-4000:]}"
