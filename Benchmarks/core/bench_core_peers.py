"""Python peers of the core benchmark, on the inputs bench_core wrote to DIR.

Prints one "name<TAB>peer<TAB>bytes<TAB>seconds" line per run (best of a few)."""
import json
import sys
import time
import urllib.parse


def best(fn, reps=3):
    t = float("inf")
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def emit(name, peer, nbytes, seconds):
    print(f"{name}\t{peer}\t{nbytes}\t{seconds:.6f}", flush=True)


def main(d):
    for name in ("escape_ascii_64MiB", "escape_mixed_64MiB"):
        with open(f"{d}/{name}.txt", "rb") as f:
            data = f.read()
        t, _ = best(lambda: urllib.parse.quote(data, safe="/?~"), reps=1)
        emit(name, "urllib.parse.quote", len(data), t)

    pairs = {}
    with open(f"{d}/flat_pairs.tsv", encoding="utf-8") as f:
        for line in f:
            k, v = line.rstrip("\n").split("\t")
            pairs[k] = v
    t, q = best(lambda: urllib.parse.urlencode(sorted(pairs.items()), quote_via=urllib.parse.quote))
    emit("query_flat_100k", "urllib.parse.urlencode", len(q), t)

    with open(f"{d}/tree.json", "rb") as f:
        tree = json.loads(f.read())
    t, out = best(lambda: json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode())
    emit("json_10MB", "json.dumps", len(out), t)
    try:
        import orjson
    except ImportError:
        print("bench_core_peers.py: orjson is not installed; its rows are left out", file=sys.stderr)
        return
    t, out = best(lambda: orjson.dumps(tree))
    emit("json_10MB", "orjson.dumps", len(out), t)

    # The JSON documents: parsing to Python objects, and writing the benchmark document's.
    for file, name in (("doc.json", "doc_10MB"), ("small_objects.json", "small_objects"),
                       ("long_strings.json", "long_strings")):
        with open(f"{d}/{file}", "rb") as f:
            text = f.read()
        t, _ = best(lambda: orjson.loads(text), reps=7)
        emit(f"parse_{name}", "orjson.loads", len(text), t)
        t, _ = best(lambda: json.loads(text), reps=3)
        emit(f"parse_{name}", "json.loads", len(text), t)
        if file == "doc.json":
            doc = orjson.loads(text)
            t, out = best(lambda: orjson.dumps(doc), reps=7)
            emit("write_doc", "orjson.dumps", len(out), t)
            t, out = best(lambda: json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode(), reps=3)
            emit("write_doc", "json.dumps", len(out), t)


def walk_rss(path):
    """json.loads of FILE and a walk of every value; prints the body's size and the peak
    resident memory above the interpreter's (KiB; the body included), as bench_core
    --walk-rss does for the library."""
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with open(path, "rb") as f:
        text = f.read()
    stack, nodes = [json.loads(text)], 0
    while stack:
        v = stack.pop()
        nodes += 1
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{len(text)}\t{peak - before}\t{nodes}")


if __name__ == "__main__":
    if sys.argv[1] == "--walk-rss":
        walk_rss(sys.argv[2])
    else:
        main(sys.argv[1])
