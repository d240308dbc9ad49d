"""nandlab's one output path from Python (issue 28): a FIFO's reader gets the
bytes, a symbolic link stays a link, a replaced 0600 file stays 0600."""

import os
import stat
import threading

from nandlab import _native


def test_a_fifo_reader_gets_the_bytes(tmp_path):
    fifo = tmp_path / "table.json"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    _native.write_output(str(fifo), b"[1, 2]\n")
    reader.join(timeout=30)
    assert received == [b"[1, 2]\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_stays_and_a_0600_target_keeps_its_mode(tmp_path):
    target = tmp_path / "table.csv"
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    _native.write_output(link, b"a,b\n1,2\n")
    assert link.is_symlink()
    assert target.read_bytes() == b"a,b\n1,2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(path.name for path in tmp_path.iterdir()) == ["link.csv", "table.csv"]
