#!/usr/bin/env python3
"""Python response benchmark of AFSerialization: one command, one table.

    python3 Benchmarks/python/bench_response.py [--size-mb 10] [--repeat 5]

Decodes the response benchmark's JSON document (``Benchmarks/response/make_document.py``:
about 10 MB of API-style records, 437,000 values) into plain Python objects:

1. ``JSONResponseSerializer.response_object`` as shipped: one library call validates and
   decodes the body (status, MIME type, strict JSON, every error with its offset) straight
   into one pickle, which Python loads with a class-refusing unpickler (see
   ``afserialization.response``);
2. the same call building the objects by walking the library's tree through ctypes (the
   path of plist, HTTP and compound serializers and ``Value.to_python``), with the release
   of the tree it leaves behind;
3. ``afs_response_object`` alone: the library's validation and parse, tree freed unread
   (no Python objects: the floor of row 1's library share);
4. ``json.loads`` and 5. ``orjson.loads`` on the same bytes.

Each time is the best of ``--repeat`` runs (fewer for the slow walk), with a garbage
collection before each run and the collector enabled during it, as the C benchmark's peers
run; no other decoded document is alive while timing. Rows 1 and 2 are checked first to
give the same objects as ``json.loads`` (the document has no integer beyond int64 and no
``-0``, where the library, like Foundation, gives floats).
The package is imported from this checkout's ``bindings/python`` (the library:
$AFSERIALIZATION_LIBRARY, else build/lib).
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bindings" / "python"))

import afserialization as afs  # noqa: E402
from afserialization import _ffi, response  # noqa: E402


def make_document(size: int) -> bytes:
    """The C benchmark's document generator (fixed seed), at ``size`` bytes."""
    path = REPO / "Benchmarks" / "response" / "make_document.py"
    spec = importlib.util.spec_from_file_location("make_document", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        module.main(f.name, size)
        return Path(f.name).read_bytes()


def best(runs: int, fn: Callable[[], Any]) -> Tuple[float, None]:
    """(seconds, None) of the fastest of ``runs`` calls; each result is dropped before the
    next run starts."""
    fastest = float("inf")
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        fastest = min(fastest, time.perf_counter() - start)
        del result
    return fastest, None


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=10, help="document size (10)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per case, best kept (5)")
    args = parser.parse_args(argv)

    missing = sorted(getattr(_ffi.lib, "missing", frozenset()) & getattr(_ffi, "RESPONSE_FUNCTIONS", frozenset()))
    if missing:
        print(f"{_ffi.library_path} lacks the response C API ({', '.join(missing)})",
              file=sys.stderr)
        return 1
    data = make_document(int(args.size_mb * 1e6))
    rs = afs.JSONResponseSerializer()
    ct = "application/json; charset=utf-8"
    rows: List[Tuple[str, float, str]] = []

    def shipped() -> Any:
        return rs.response_object(200, ct, data)

    def walk() -> Any:
        response._DECODE_AS_PICKLE = False
        try:
            return rs.response_object(200, ct, data)
        finally:
            response._DECODE_AS_PICKLE = True

    # Checked before timing, and dropped: a live 437,000-object tree would make every
    # collection inside the timed runs slower (for all contenders alike, orjson the most).
    reference = json.loads(data)
    values = _count(reference)
    checks = ["same objects as json.loads" if fn() == reference else "DIFFERS from json.loads"
              for fn in (shipped, walk)]
    del reference

    t, _ = best(args.repeat, shipped)
    rows.append(("response_object (one call, one pickle loaded)", t, checks[0]))
    t, _ = best(max(1, min(args.repeat, 3)), walk)
    rows.append(("response_object, tree walked through ctypes", t, checks[1]))

    raw = _ffi.lib.raw

    def library_only() -> None:
        out = _ffi.c_value_p()
        status = raw.afs_response_object(rs._h.get(), 200, ct.encode(), data, len(data),
                                         ctypes.byref(out), ctypes.byref(_ffi.afs_error()))
        raw.afs_value_free(out)
        assert status == 0

    t, _ = best(args.repeat, library_only)
    rows.append(("afs_response_object alone (tree freed unread)", t, "no Python objects"))

    t, _ = best(args.repeat, lambda: json.loads(data))
    rows.append(("json.loads", t, ""))
    try:
        import orjson
    except ImportError:
        rows.append(("orjson.loads", float("nan"), "NOT RUN: orjson is not installed"))
    else:
        t, _ = best(args.repeat, lambda: orjson.loads(data))
        rows.append(("orjson.loads", t, ""))

    base = rows[3][1]
    header = ("case", "ms", "MB/s", "vs json.loads", "note")
    table = [(name, f"{t * 1e3:.1f}", f"{len(data) / t / 1e6:.1f}", f"{t / base:.2f}x", note)
             for name, t, note in rows]
    widths = [max(len(r[i]) for r in table + [header]) for i in range(5)]
    print(f"AFSerialization Python response benchmark: {len(data) / 1e6:.1f} MB JSON document, "
          f"{values:,} values, best of {args.repeat} (walk: best of "
          f"{max(1, min(args.repeat, 3))}); library {afs.library_version}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in table:
        print("  ".join(c.ljust(w) if i in (0, 4) else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    print("note: 'vs json.loads': time relative to json.loads (lower is faster)")
    return 0


def _count(obj: Any) -> int:
    n, stack = 0, [obj]
    while stack:
        x = stack.pop()
        n += 1
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return n


if __name__ == "__main__":
    sys.exit(main())
