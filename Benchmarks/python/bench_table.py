#!/usr/bin/env python3
"""The Python bindings against the standard library, one table, one run.

    python3 Benchmarks/python/bench_table.py [--repeat 5] [--loops 20000] [--size-mib 256]

Each row times an afserialization call and the standard-library code a Python user would
write instead, in the same process, best of ``--repeat`` runs of ``--loops`` calls (CPU
time of the thread, so that other work on a shared machine does not count), and
prints their ratio (afs / stdlib: at most 1.00x is the target) and the number of ctypes
calls into the library the afs side makes (counted in a child process whose ctypes
functions count their calls; ``string_at`` copies out of the library are counted apart):

1. ``JSONRequestSerializer.request("POST", url, small_dict)`` and reading its body and
   headers, against ``json.dumps(...).encode()`` plus the header dict;
2. ``HTTPRequestSerializer.request("GET", url, small_dict).url`` against a sorted
   ``urlencode(..., quote_via=quote)`` appended to the URL;
3. ``query_string(small_dict)`` against the sorted ``urlencode``;
4. ``percent_escape("swift & python/é")`` against ``urllib.parse.quote(s, safe="")``;
5. ``JSONResponseSerializer.response_object(200, "application/json", body)`` on an
   80-byte body against ``json.loads``;
6. the same on the 10 MB response-benchmark document (best of 3, garbage collected
   before each run) against ``json.loads`` (target: 1.5x faster, validation included),
   with ``orjson.loads`` printed beside it when installed;
7. ``BodyStream.readinto`` with 64 KiB buffers over a ``--size-mib`` file part against a C
   ``read(2)`` loop on the same file (target: at least 0.8x its throughput).

The serializers are made once, before timing (as an application keeps them). The package
is imported from this checkout's ``bindings/python`` (the library:
$AFSERIALIZATION_LIBRARY, else build/lib).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import timeit
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import quote, urlencode

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bindings" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

URL = "https://example.com/users"
SMALL = {"name": "Zoë", "admin": False, "age": 42, "tags": ["a", "b"], "score": 1.5}
ESCAPE = "swift & python/é"
BODY_80 = json.dumps({"id": 1, "name": "Zoë", "admin": False, "tags": ["a", "b"],
                      "score": 1.5}, ensure_ascii=False, separators=(",", ":")
                     ).encode()
BODY_80 = BODY_80[:-1] + b',"pad":"' + b"x" * (80 - len(BODY_80) - 9) + b'"}'
assert len(BODY_80) == 80, len(BODY_80)


def install_call_counter() -> Dict[str, int]:
    """Makes every ctypes function of every CDLL loaded from now on count its calls (by
    name), and ctypes.string_at count as "string_at". Call before importing the package."""
    import ctypes
    counts: Dict[str, int] = {}
    original_init = ctypes.CDLL.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        base = self._FuncPtr

        class Counting(base):  # type: ignore[misc, valid-type]
            _flags_ = base._flags_
            _restype_ = base._restype_

            def __call__(self, *a: Any) -> Any:
                name = getattr(self, "__name__", "?")
                counts[name] = counts.get(name, 0) + 1
                return super().__call__(*a)
        self._FuncPtr = Counting

    ctypes.CDLL.__init__ = init  # type: ignore[method-assign]
    original_string_at = ctypes.string_at

    def string_at(*a: Any) -> Any:
        counts["string_at"] = counts.get("string_at", 0) + 1
        return original_string_at(*a)
    ctypes.string_at = string_at  # type: ignore[assignment]
    return counts


def make_rows(afs: Any) -> List[Tuple[str, Callable[[], Any], str, Callable[[], Any]]]:
    js = afs.JSONRequestSerializer()
    hs = afs.HTTPRequestSerializer()
    rs = afs.JSONResponseSerializer()
    defaults = dict(js.headers.items())

    def json_request() -> Any:
        r = js.request("POST", URL, SMALL)
        return r.body, r.headers.items()

    def json_stdlib() -> Any:
        h = dict(defaults)
        h["Content-Type"] = "application/json"
        return json.dumps(SMALL, ensure_ascii=False).encode(), h

    return [
        ('JSONRequestSerializer().request("POST", url, small_dict) + body, headers',
         json_request, "json.dumps + header dict", json_stdlib),
        ('HTTPRequestSerializer().request("GET", url, small_dict).url',
         lambda: hs.request("GET", URL, SMALL).url,
         "sorted urlencode(quote_via=quote) + URL",
         lambda: URL + "?" + urlencode(sorted(SMALL.items()), quote_via=quote)),
        ("query_string(small_dict)", lambda: afs.query_string(SMALL),
         "sorted urlencode", lambda: urlencode(sorted(SMALL.items()), quote_via=quote)),
        (f'percent_escape("{ESCAPE}")', lambda: afs.percent_escape(ESCAPE),
         'urllib.parse.quote(s, safe="")', lambda: quote(ESCAPE, safe="")),
        (f"JSONResponseSerializer().response_object(200, ..., {len(BODY_80)}-byte body)",
         lambda: rs.response_object(200, "application/json", BODY_80),
         "json.loads", lambda: json.loads(BODY_80)),
    ]


def count_calls() -> None:
    """Child process: prints {row: {function: calls}} for one call of each row."""
    counts = install_call_counter()
    import afserialization as afs
    rows = make_rows(afs)
    out = {}
    for name, fn, _, _ in rows:
        fn()  # warm-up: first-use lookups are not per-call costs
        counts.clear()
        fn()
        out[name] = dict(counts)
    doc = document()
    rs = afs.JSONResponseSerializer()
    rs.response_object(200, "application/json", doc)
    counts.clear()
    rs.response_object(200, "application/json", doc)
    out["10 MB"] = dict(counts)
    print(json.dumps(out))


def document() -> bytes:
    from bench_response import make_document
    return make_document(10_000_000)


#: Times are CPU time of this thread (``time.thread_time``): on a shared machine, time
#: spent waiting for a core would otherwise land on whichever contender was running.
CLOCK = time.thread_time


def best_us(fn: Callable[[], Any], loops: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=loops, repeat=repeat, timer=CLOCK)) / loops * 1e6


def best_s(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = CLOCK()
        result = fn()
        times.append(CLOCK() - start)
        del result
    return min(times)


def calls_text(counts: Dict[str, int]) -> str:
    lib_calls = sum(n for k, n in counts.items() if k.startswith("afs_"))
    copies = counts.get("string_at", 0)
    return f"{lib_calls}" + (f" (+{copies} string_at)" if copies else "")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per row, best kept (5)")
    parser.add_argument("--loops", type=int, default=20000, help="calls per run (20000)")
    parser.add_argument("--size-mib", type=int, default=256,
                        help="file part for the readinto row (256; 0 skips the row)")
    parser.add_argument("--count-calls", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.count_calls:
        count_calls()
        return 0

    child = subprocess.run([sys.executable, __file__, "--count-calls"], capture_output=True,
                           text=True, env=os.environ)
    if child.returncode != 0:
        print(child.stderr, file=sys.stderr)
        return 1
    counts = json.loads(child.stdout)

    import afserialization as afs
    from afserialization import _ffi

    header = ("work", "afs", "standard library", "stdlib", "afs/stdlib", "ctypes calls",
              "target")
    table: List[Tuple[str, ...]] = []
    limits: List[Optional[int]] = [3, 3, None, None, 2]  # the call budgets
    for (name, fn, ref_name, ref), limit in zip(make_rows(afs), limits):
        fn(), ref()
        ours = best_us(fn, args.loops, args.repeat)
        theirs = best_us(ref, args.loops, args.repeat)
        ratio = ours / theirs
        n = sum(v for k, v in counts[name].items() if k.startswith("afs_"))
        verdict = f"{'OK' if ratio <= 1.0 else 'MISSED'}: <= 1.00x"
        if limit is not None:
            verdict += f"; calls {'OK' if n <= limit else 'MISSED'} (<= {limit})"
        table.append((name, f"{ours:.2f} us", ref_name, f"{theirs:.2f} us", f"{ratio:.2f}x",
                      calls_text(counts[name]), verdict))

    doc = document()
    rs = afs.JSONResponseSerializer()
    assert rs.response_object(200, "application/json", doc) == json.loads(doc)
    ours = best_s(lambda: rs.response_object(200, "application/json", doc), 3)
    theirs = best_s(lambda: json.loads(doc), 3)
    speedup = theirs / ours
    table.append((f"response_object on the {len(doc) / 1e6:.1f} MB document", f"{ours * 1e3:.1f} ms",
                  "json.loads", f"{theirs * 1e3:.1f} ms", f"{ours / theirs:.2f}x",
                  calls_text(counts["10 MB"]),
                  f"{'OK' if speedup >= 1.5 else 'MISSED'}: {speedup:.2f}x faster (>= 1.5x)"))
    try:
        import orjson
    except ImportError:
        table.append(("  (orjson.loads for reference)", "", "", "", "", "", "orjson not installed"))
    else:
        t = best_s(lambda: orjson.loads(doc), 3)
        table.append(("  (orjson.loads for reference, no validation rules)", f"{t * 1e3:.1f} ms",
                      "json.loads", f"{theirs * 1e3:.1f} ms", f"{t / theirs:.2f}x", "", ""))
    del doc

    if args.size_mib and not (getattr(_ffi.lib, "missing", frozenset()) & getattr(_ffi, "MULTIPART_FUNCTIONS", frozenset())):
        import shutil
        import tempfile
        import bench
        work = Path(tempfile.mkdtemp(prefix="afs-bench-"))
        try:
            data = work / "big.bin"
            bench.make_file(data, args.size_mib * bench.MIB)
            gcc = shutil.which("gcc") or shutil.which("cc")
            if gcc:
                source = work / "read_loop.c"
                source.write_text(bench.READ_LOOP_C)
                binary = work / "read_loop"
                subprocess.run([gcc, "-O2", "-o", str(binary), str(source)], check=True)
                n, t = bench.best(3, lambda: bench.c_read_loop(binary, data, 64 * bench.KIB))
                c_rate = n / t
                n, t = bench.best(3, lambda: bench.python_readinto(data, 64 * bench.KIB))
                rate = n / t
                table.append((f"BodyStream.readinto, 64 KiB reads, {args.size_mib} MiB part",
                              f"{rate / 1e9:.2f} GB/s", "C read(2) loop, 64 KiB",
                              f"{c_rate / 1e9:.2f} GB/s", f"{rate / c_rate:.2f} of it", "",
                              f"{'OK' if rate >= 0.8 * c_rate else 'MISSED'}: >= 0.80"))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    widths = [max(len(r[i]) for r in table + [header]) for i in range(len(header))]
    print(f"AFSerialization Python bindings against the standard library: best of "
          f"{args.repeat} x {args.loops} calls, thread CPU time; library {afs.library_version} at "
          f"{_ffi.library_path}; Python {sys.version.split()[0]}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print("note: ctypes calls are calls into libafserialization per afs call (counted in a "
          "child process); string_at copies a result out of the library")
    print("note: the serializers are made once before timing; the stdlib side of row 1 "
          "copies the serializer's default headers into the dict it returns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
