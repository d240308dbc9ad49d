"""nandlab.Dhrd: unaligned reads and writes, durability across reopen, initialization, errors."""

import array
import os
import random

import nandlab
import pytest

SIZE = 4 << 20  # 4 MiB
CHUNK = 64 << 10  # 64 KiB: many chunk boundaries in a small device

# (offset, length): odd offsets and lengths, some crossing one or several chunk boundaries.
WRITES = [
    (1, 1),
    (3, 4093),
    (CHUNK - 5, 11),
    (3 * CHUNK - 7, 2 * CHUNK + 13),
    (SIZE - 9, 9),
    (12345, 777),
]
# Unaligned reads: offset 1, odd lengths, across chunk boundaries, up to the last byte.
READS = [(1, 1), (1, 4095), (1, CHUNK + 1), (CHUNK - 3, 7), (3 * CHUNK - 9, 2 * CHUNK + 17), (SIZE - 11, 11), (0, SIZE)]


def pattern(seed: int, length: int) -> bytes:
    return random.Random(seed).randbytes(length)


def write_model(disk: nandlab.Dhrd, model: bytearray) -> None:
    for seed, (offset, length) in enumerate(WRITES):
        data = pattern(seed, length)
        disk.write_at(offset, data)
        model[offset : offset + length] = data


@pytest.fixture
def backing(tmp_path):
    return tmp_path / "disk.img"


def test_unaligned_writes_read_back(backing):
    model = bytearray(SIZE)
    with nandlab.Dhrd(backing, SIZE, chunk_bytes=CHUNK) as disk:
        assert disk.size_bytes == SIZE and disk.chunk_bytes == CHUNK
        write_model(disk, model)
        for offset, length in READS:
            assert disk.read_at(offset, length) == bytes(model[offset : offset + length]), (offset, length)
        assert disk.read_at(SIZE, 0) == b""


def test_data_survives_reopen_and_ram_equals_backing(backing):
    model = bytearray(SIZE)
    with nandlab.Dhrd(backing, "4MiB", chunk_bytes="64KiB") as disk:
        write_model(disk, model)
        disk.flush()
    assert backing.stat().st_size == SIZE
    with nandlab.Dhrd(backing, chunk_bytes=CHUNK) as disk:  # size taken from the file
        assert disk.size_bytes == SIZE
        assert disk.wait_initialized(timeout_s=30)
        assert disk.initialized
        progress = disk.init_progress()
        assert progress["complete"] and progress["chunks_initialized"] == progress["chunks_total"] == SIZE // CHUNK
        assert progress["copier_error"] is None and progress["finished_after_s"] >= 0
        assert disk.verify_mirror() == SIZE // CHUNK  # every chunk: RAM image == backing file
        for offset, length in READS:
            assert disk.read_at(offset, length) == bytes(model[offset : offset + length]), (offset, length)
    assert backing.read_bytes() == bytes(model)


@pytest.mark.parametrize("durability", ["direct", "dsync", "write-back"])
def test_durability_modes_round_trip(backing, durability):
    model = bytearray(SIZE)
    with nandlab.Dhrd(backing, SIZE, chunk_bytes=CHUNK, durability=durability) as disk:
        assert disk.durability == durability
        write_model(disk, model)
        disk.fsync()
        assert disk.read_at(1, SIZE - 1) == bytes(model[1:])
    assert backing.read_bytes() == bytes(model)


def test_requests_served_while_initializing(backing):
    model = bytearray(pattern(99, SIZE))
    backing.write_bytes(model)
    # A throttled copier (about 0.5 s for 4 MiB) leaves chunks uninitialized for a while.
    with nandlab.Dhrd(backing, SIZE, chunk_bytes=CHUNK, copy_rate_bytes_per_s=8 << 20) as disk:
        assert not disk.init_progress()["complete"]
        assert disk.chunk_state(SIZE // CHUNK - 1) == "uninitialized"
        assert disk.chunk_state(SIZE // CHUNK) is None
        write_model(disk, model)
        for offset, length in READS:
            assert disk.read_at(offset, length) == bytes(model[offset : offset + length]), (offset, length)
        assert disk.stats()["init_reads_from_backing"] > 0
        assert disk.wait_initialized()
        assert disk.chunk_state(SIZE // CHUNK - 1) == "initialized"
        assert disk.verify_mirror() == SIZE // CHUNK
        assert disk.read_at(0, SIZE) == bytes(model)


def test_read_into_writable_buffers(backing):
    model = bytearray(SIZE)
    with nandlab.Dhrd(backing, SIZE, chunk_bytes=CHUNK) as disk:
        write_model(disk, model)
        buffer = bytearray(CHUNK + 3)
        assert disk.read_into(CHUNK - 1, buffer) == CHUNK + 3
        assert buffer == model[CHUNK - 1 : 2 * CHUNK + 2]
        target = bytearray(b"#" * 20)
        assert disk.read_into(1, memoryview(target)[5:12]) == 7
        assert target == b"#" * 5 + model[1:8] + b"#" * 8
        words = array.array("H", [0] * 100)
        assert disk.read_into(3, words) == 200
        assert words.tobytes() == model[3:203]
        with pytest.raises(TypeError, match="writable"):
            disk.read_into(0, b"read-only")


def test_write_accepts_bytes_like_and_discard_zeroes(backing):
    with nandlab.Dhrd(backing, SIZE, chunk_bytes=CHUNK) as disk:
        disk.write_at(5, bytearray(b"abc"))
        disk.write_at(8, memoryview(b"xdefx")[1:4])
        assert disk.read_at(4, 8) == b"\0abcdef\0"
        disk.write_at(CHUNK - 1, b"\xff" * 3)
        disk.discard(CHUNK, 1)
        assert disk.read_at(CHUNK - 1, 3) == b"\xff\0\xff"
        with pytest.raises(TypeError):
            disk.write_at(0, 12)  # an int is not data (bytes(12) would be 12 zeros)
        stats = disk.stats()
        assert stats["writes"] == 3 and stats["written_bytes"] == 9
        assert stats["discards"] == 1 and stats["size_bytes"] == SIZE
        assert stats["durability"] == "direct" and isinstance(stats["direct_io"], bool)


def test_out_of_range_and_bad_arguments(backing):
    with nandlab.Dhrd(backing, SIZE, chunk_bytes=CHUNK) as disk:
        with pytest.raises(ValueError, match="outside the device"):
            disk.read_at(SIZE - 1, 2)
        with pytest.raises(ValueError, match="outside the device"):
            disk.read_at(SIZE + 1, 0)
        with pytest.raises(ValueError, match="outside the device"):
            disk.read_at(0, 1 << 62)  # rejected before allocating
        with pytest.raises(ValueError, match="outside the device"):
            disk.write_at(SIZE - 2, b"abc")
        with pytest.raises(ValueError, match="outside the device"):
            disk.read_into(SIZE - 4, bytearray(5))
        with pytest.raises(OverflowError):
            disk.read_at(-1, 1)
        # Another open of the same backing file is refused while this one is open.
        with pytest.raises(OSError, match="in use"):
            nandlab.Dhrd(backing)
        assert disk.read_at(0, 1) == b"\0"


def test_open_errors(tmp_path, backing):
    with pytest.raises(FileNotFoundError):
        nandlab.Dhrd(tmp_path / "missing-dir" / "disk.img", SIZE)
    with pytest.raises(ValueError, match="size must be given"):
        nandlab.Dhrd(backing)
    with pytest.raises(ValueError, match="multiple of 4096"):
        nandlab.Dhrd(backing, 4097)
    with pytest.raises(ValueError, match="invalid byte size"):
        nandlab.Dhrd(backing, "4 parsecs")
    with pytest.raises(ValueError, match="chunk_bytes"):
        nandlab.Dhrd(backing, SIZE, chunk_bytes=3000)
    with pytest.raises(ValueError, match="durability"):
        nandlab.Dhrd(backing, SIZE, durability="fast")
    with pytest.raises(TypeError, match="size"):
        nandlab.Dhrd(backing, 4.5)
    nandlab.Dhrd(backing, SIZE).close()
    with pytest.raises(ValueError, match="device size is 8192"):
        nandlab.Dhrd(backing, 8192)


def test_close_releases_the_backing_file(backing):
    disk = nandlab.Dhrd(backing, SIZE, chunk_bytes=CHUNK)
    disk.write_at(1, b"kept")
    assert not disk.closed
    disk.close()
    disk.close()  # idempotent
    assert disk.closed and "closed" in repr(disk)
    with pytest.raises(ValueError, match="closed"):
        disk.read_at(0, 1)
    with pytest.raises(ValueError, match="closed"):
        with disk:
            pass
    with nandlab.Dhrd(backing) as again:
        assert again.read_at(1, 4) == b"kept"
        assert os.fspath(again.backing) == os.fspath(backing)


def test_exported():
    assert "Dhrd" in nandlab.__all__
    assert nandlab.Dhrd is nandlab._native.Dhrd
    assert nandlab.Dhrd.read_at.__doc__ and nandlab.Dhrd.__doc__
