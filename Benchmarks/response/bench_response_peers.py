"""Python peers of the response benchmark: json.loads and orjson.loads on the same bytes,
best of RUNS. Prints "name<TAB>implementation<TAB>bytes<TAB>seconds" rows.
    bench_response_peers.py FILE [RUNS]"""
import gc
import json
import sys
import time


def best(fn, data, runs):
    t = float("inf")
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        out = fn(data)
        t = min(t, time.perf_counter() - t0)
        del out
    return t


def main(path, runs=7):
    with open(path, "rb") as f:
        data = f.read()
    print(f"json_decode_10MB\tjson.loads\t{len(data)}\t{best(json.loads, data, runs):.6f}", flush=True)
    try:
        import orjson
    except ImportError:
        print("orjson is not installed (pip install orjson)", file=sys.stderr)
        return
    print(f"json_decode_10MB\torjson.loads\t{len(data)}\t{best(orjson.loads, data, runs):.6f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 7)
