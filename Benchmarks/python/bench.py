#!/usr/bin/env python3
"""Python-side benchmark of AFSerialization: one command, one table.

    python3 Benchmarks/python/bench.py [--size-mib 1024] [--repeat 3] [--dir /tmp]

1. Draining a multipart body with a 1 GiB file part from Python with
   ``BodyStream.readinto`` (64 KiB and 1 MiB buffers), side by side with a C ``read(2)``
   loop on the same file (compiled here with ``gcc -O2``; the hardware limit) and with
   requests-toolbelt's ``MultipartEncoder.read``. The file is written once and read once
   before timing, so every contender reads it from the page cache.
   Targets: readinto >= 0.8 of read(2), and >= 3x toolbelt.
2. ``query_string`` on a flat dict of 10,000 string pairs against
   ``urllib.parse.urlencode`` (including the conversion of the dict into the library's
   values). Target: faster.

Each time is the best of ``--repeat`` runs. The package is imported from this checkout's
``bindings/python`` (the library: $AFSERIALIZATION_LIBRARY, else build/lib).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Callable, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bindings" / "python"))

import afserialization as afs  # noqa: E402
from afserialization import _ffi  # noqa: E402

READ_LOOP_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    size_t size = (size_t)atol(argv[2]);
    char *buffer = malloc(size);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror("open"); return 1; }
    long long total = 0;
    ssize_t n;
    while ((n = read(fd, buffer, size)) > 0) total += n;
    close(fd);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%lld %.9f\n", total, (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return n < 0;
}
"""

KIB = 1024
MIB = 1024 * KIB


def best(runs: int, fn: Callable[[], Tuple[int, float]]) -> Tuple[int, float]:
    """(bytes, seconds) of the fastest of ``runs`` calls."""
    results = [fn() for _ in range(runs)]
    return min(results, key=lambda r: r[1])


def make_file(path: Path, size: int) -> None:
    block = os.urandom(8 * MIB)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
    with open(path, "rb") as f:  # into the page cache
        while f.readinto(bytearray(8 * MIB)):
            pass


def c_read_loop(binary: Path, path: Path, buffer: int) -> Tuple[int, float]:
    out = subprocess.run([str(binary), str(path), str(buffer)], check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), float(out[1])


def python_readinto(path: Path, buffer_size: int) -> Tuple[int, float]:
    serializer = afs.HTTPRequestSerializer()
    start = time.perf_counter()
    with serializer.multipart_form("POST", "http://127.0.0.1/upload") as form:
        form.append_field("title", "benchmark")
        form.append_file(path, "file", "big.bin", "application/octet-stream")
        with form.finish() as request:
            stream = request.body_stream
            buffer = bytearray(buffer_size)
            readinto = stream.readinto
            total = 0
            while True:
                n = readinto(buffer)
                if not n:
                    break
                total += n
    return total, time.perf_counter() - start


def toolbelt(path: Path, chunk: int) -> Tuple[int, float]:
    from requests_toolbelt import MultipartEncoder
    start = time.perf_counter()
    with open(path, "rb") as f:
        encoder = MultipartEncoder(fields={"title": "benchmark",
                                           "file": ("big.bin", f, "application/octet-stream")})
        total = 0
        while True:
            data = encoder.read(chunk)
            if not data:
                break
            total += len(data)
    return total, time.perf_counter() - start


def timed(fn: Callable[[], object], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="file part size (1024)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case, best kept (3)")
    parser.add_argument("--dir", default=None, help="where to write the file (a temp dir)")
    args = parser.parse_args(argv)

    rows: List[Tuple[str, str, str, str, str]] = []
    notes: List[str] = []
    size = args.size_mib * MIB
    has_multipart = not (getattr(_ffi.lib, "missing", frozenset()) & getattr(_ffi, "MULTIPART_FUNCTIONS", frozenset()))
    work = Path(tempfile.mkdtemp(prefix="afs-bench-", dir=args.dir))
    try:
        data = work / "big.bin"
        print(f"writing a {args.size_mib} MiB file in {work} ...", file=sys.stderr)
        make_file(data, size)
        gcc = shutil.which("gcc") or shutil.which("cc")
        c_rates = {}
        c_rate = None
        if gcc:
            source = work / "read_loop.c"
            source.write_text(READ_LOOP_C)
            binary = work / "read_loop"
            subprocess.run([gcc, "-O2", "-o", str(binary), str(source)], check=True)
            for buffer in (64 * KIB, 256 * KIB, MIB):
                n, t = best(args.repeat, lambda: c_read_loop(binary, data, buffer))
                rate = n / t
                c_rates[buffer] = rate
                if buffer == 64 * KIB:
                    c_rate = rate
                rows.append((f"C read(2) loop, {buffer // KIB} KiB buffer (the file alone)",
                             f"{t:.3f} s", f"{rate / 1e9:.2f} GB/s", "1.00x", ""))
        else:
            notes.append("no gcc: the C read(2) loop was not run")

        tb_rate = None
        try:
            import requests_toolbelt  # noqa: F401
        except ImportError:
            rows.append(("requests-toolbelt MultipartEncoder.read(64 KiB)", "n/a", "", "",
                         "NOT RUN: requests-toolbelt is not installed"))
        else:
            n, t = best(args.repeat, lambda: toolbelt(data, 64 * KIB))
            tb_rate = n / t
            rows.append(("requests-toolbelt MultipartEncoder.read(64 KiB)", f"{t:.3f} s",
                         f"{tb_rate / 1e9:.2f} GB/s",
                         f"{tb_rate / c_rate:.2f}x" if c_rate else "", ""))

        if has_multipart:
            for buffer in (64 * KIB, 256 * KIB, MIB):
                n, t = best(args.repeat, lambda: python_readinto(data, buffer))
                assert n > size, f"drained {n} bytes, expected the whole body (> {size})"
                rate = n / t
                verdicts = []
                same = c_rates.get(buffer)
                if same:
                    ok = rate >= 0.8 * same
                    verdicts.append(f"{'OK' if ok else 'MISSED'}: >= 0.8x read(2)")
                if tb_rate:
                    ok = rate >= 3 * tb_rate
                    verdicts.append(f"{'OK' if ok else 'MISSED'}: {rate / tb_rate:.1f}x toolbelt"
                                    f" (>= 3x)")
                rows.append((f"Python BodyStream.readinto, {buffer // KIB} KiB buffer",
                             f"{t:.3f} s", f"{rate / 1e9:.2f} GB/s",
                             f"{rate / same:.2f}x" if same else "", "; ".join(verdicts)))
        else:
            missing = sorted(getattr(_ffi.lib, "missing", frozenset()) & getattr(_ffi, "MULTIPART_FUNCTIONS", frozenset()))
            rows.append(("Python BodyStream.readinto", "n/a", "", "",
                         f"NOT RUN: {_ffi.library_path} lacks the multipart API "
                         f"({len(missing)} functions, e.g. {missing[0]})"))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    pairs = {f"key{i}": f"value {i}/é&x" for i in range(10_000)}
    loops = 20
    for _ in range(2):  # warm-up
        afs.query_string(pairs)
        urllib.parse.urlencode(pairs)
    ours = min(timed(lambda: afs.query_string(pairs), loops) for _ in range(args.repeat))
    ref = min(timed(lambda: urllib.parse.urlencode(pairs), loops) for _ in range(args.repeat))
    rows.append(("afserialization.query_string(10,000 string pairs)", f"{ours * 1e3:.2f} ms",
                 "", "", f"{'OK' if ours < ref else 'MISSED'}: {ref / ours:.2f}x faster than "
                         "urlencode"))
    rows.append(("urllib.parse.urlencode(10,000 string pairs)", f"{ref * 1e3:.2f} ms", "", "",
                 ""))
    transport = "JSON text, one FFI call" if afs.values._PARAMS_AS_PICKLE else \
        "node by node (the library's JSON reader is a stand-in)"
    notes.append(f"parameters cross into the library as: {transport}")

    header = ("case", "time", "throughput", "vs read(2)", "target")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
    title = (f"AFSerialization Python benchmark: {args.size_mib} MiB file part, best of "
             f"{args.repeat}; library {afs.library_version} at {_ffi.library_path}")
    print(title)
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    notes.insert(0, "'vs read(2)': against the C loop with the same buffer size (64 KiB for "
                    "toolbelt); the multipart body is the file plus a field and the part headers")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
