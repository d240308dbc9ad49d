"""`nandlab` on PATH after `pip install ./frontends/python`: the console script and `python -m nandlab`."""

import os
import pathlib
import subprocess
import sys

NANDLAB = pathlib.Path(sys.executable).parent / "nandlab"


def nandlab(*args, program=(str(NANDLAB),)):
    return subprocess.run([*program, *args], capture_output=True, text=True, timeout=300, check=False)


def test_the_package_installs_the_nandlab_command_beside_the_interpreter():
    assert os.access(NANDLAB, os.X_OK), f"{NANDLAB}: no console script (pyproject.toml [project.scripts])"
    done = nandlab("--version")
    assert done.returncode == 0 and done.stdout.startswith("nandlab "), done.stderr


def test_python_dash_m_nandlab_is_the_same_command_line():
    done = nandlab("presets", program=(sys.executable, "-m", "nandlab"))
    assert done.returncode == 0, done.stderr
    assert "femu-32g" in done.stdout and "small" in done.stdout


def test_the_console_script_keeps_the_binarys_exit_statuses_and_messages():
    refused = nandlab("run", "--preset", "no-such-preset")
    assert refused.returncode == 2
    assert "unknown preset `no-such-preset`" in refused.stderr
    usage = nandlab("run", "--no-such-flag")
    assert usage.returncode == 2 and "--no-such-flag" in usage.stderr
    ran = nandlab("run", "--preset", "small", "--json", "-")
    assert ran.returncode == 0, ran.stderr
    assert '"waf"' in ran.stdout
