#!/usr/bin/env python3
"""Writes a large nandlab native trace (docs/trace-format.md) of uniform random
4 KiB writes, for measuring that `nandlab replay` runs in memory set by the
device, not by the trace (docs/architecture.md, "Replay and sweeps"):

    python3 scripts/large-native-trace.py /work/big.nlt --requests 100000000 --pages 7456540

Needs numpy (in frontends/python/requirements-dev.txt through pandas). The
records are encoded in chunks with numpy, so 100 M requests take about a
minute and 4-5 bytes each on disk; the file is deterministic for a seed.
"""

import argparse
import json
import struct

import numpy

MAGIC = b"NLTRACE\0"
VERSION = 1
END_MARKER = 0xFF
WRITE_KIND = 1  # Op::Write, no flags, no stream tag
SECTORS_PER_PAGE = 8  # 4 KiB pages in 512-byte sectors
CHUNK = 4_000_000


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag(values: numpy.ndarray) -> numpy.ndarray:
    return ((values << 1) ^ (values >> 63)).astype(numpy.uint64)


def varints(values: numpy.ndarray) -> numpy.ndarray:
    """LEB128 of each value (at most 5 bytes each: values below 2^35), as one
    (n, 5) byte matrix and a mask of the bytes that belong to the encoding."""
    groups = numpy.stack([(values >> numpy.uint64(7 * i)) & numpy.uint64(0x7F) for i in range(5)], axis=1)
    lengths = numpy.ones(len(values), dtype=numpy.int64)
    for i in range(1, 5):
        lengths += values >= numpy.uint64(1 << (7 * i))
    columns = numpy.arange(5)
    used = columns[None, :] < lengths[:, None]
    continued = columns[None, :] < (lengths - 1)[:, None]
    return (groups.astype(numpy.uint8) | (continued * 0x80).astype(numpy.uint8)), used


def records(starts: numpy.ndarray, previous_end: int, gap_ns: int) -> bytes:
    """The records of writes at `starts` (sectors), `gap_ns` apart, each referring to process name #1."""
    ends = starts + SECTORS_PER_PAGE
    previous = numpy.concatenate(([previous_end], ends[:-1])).astype(numpy.int64)
    delta, delta_used = varints(zigzag(starts.astype(numpy.int64) - previous))
    n = len(starts)
    # The kind and the time delta (zigzag(gap_ns) = 2 * gap_ns), the same bytes in every record.
    prefix = numpy.frombuffer(bytes([WRITE_KIND]) + varint(2 * gap_ns), dtype=numpy.uint8)
    fixed = numpy.tile(prefix, (n, 1))
    length_and_name = numpy.tile(numpy.array([SECTORS_PER_PAGE, 1], dtype=numpy.uint8), (n, 1))
    matrix = numpy.concatenate((fixed, delta, length_and_name), axis=1)
    mask = numpy.concatenate((numpy.ones(fixed.shape, bool), delta_used, numpy.ones((n, 2), bool)), axis=1)
    return matrix[mask].tobytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--pages", type=int, required=True, help="logical pages the writes fall in")
    parser.add_argument("--gap-ns", type=int, default=1000, help="time between requests (default 1 us)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    generator = numpy.random.default_rng(args.seed)
    header = json.dumps({"sector_size_bytes": 512, "device_size_bytes": args.pages * 4096}).encode()
    with open(args.path, "wb") as out:
        out.write(MAGIC + struct.pack("<HHI", VERSION, 0, len(header)) + header)
        # The first record defines process name #1 ("bench"); all others refer to it.
        first = generator.integers(0, args.pages) * SECTORS_PER_PAGE
        out.write(bytes([WRITE_KIND]) + varint(0) + varint(2 * int(first)) + varint(SECTORS_PER_PAGE))
        out.write(varint(0) + varint(5) + b"bench")
        previous_end = int(first) + SECTORS_PER_PAGE
        left = args.requests - 1
        while left > 0:
            n = min(CHUNK, left)
            starts = generator.integers(0, args.pages, size=n, dtype=numpy.int64) * SECTORS_PER_PAGE
            out.write(records(starts, previous_end, args.gap_ns))
            previous_end = int(starts[-1]) + SECTORS_PER_PAGE
            left -= n
        out.write(bytes([END_MARKER]) + varint(args.requests))


if __name__ == "__main__":
    main()
