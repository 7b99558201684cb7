"""Writes the benchmark's JSON document (about 10 MB) to PATH: an API-style array of
records mixing short and long strings (ASCII, accented, CJK, emoji, escapes), integers,
doubles, bools, nulls and nesting. Deterministic (fixed seed)."""
import json
import random
import sys

rng = random.Random(6)
words = ["alpha", "beta", "gamma", "delta", "caf\u00e9", "na\u00efve", "\u65e5\u672c\u8a9e", "\u043f\u0440\u0438\u0432\u0435\u0442",
         "emoji \U0001F600", "tab\there", "quote \"q\"", "slash/back\\slash", "line\nbreak", "x" * 12]


def text(n):
    return " ".join(rng.choice(words) for _ in range(n))


def record(i):
    return {
        "id": i,
        "uuid": "%08x-%04x-%04x-%04x-%012x" % tuple(rng.getrandbits(b) for b in (32, 16, 16, 16, 48)),
        "name": text(2),
        "email": "user%d@example.com" % i,
        "active": rng.random() < 0.5,
        "score": round(rng.uniform(-1000, 1000), rng.randrange(0, 8)),
        "ratio": rng.random(),
        "big": rng.getrandbits(62),
        "tags": [rng.choice(words) for _ in range(rng.randrange(0, 6))],
        "address": {"street": text(3), "city": rng.choice(words), "zip": "%05d" % rng.randrange(100000),
                    "geo": {"lat": rng.uniform(-90, 90), "lng": rng.uniform(-180, 180)}},
        "friends": [{"id": rng.randrange(10**6), "name": text(2)} for _ in range(rng.randrange(0, 4))],
        "bio": text(rng.randrange(5, 40)),
        "manager": None if rng.random() < 0.7 else {"id": rng.randrange(1000)},
        "history": [rng.randrange(-100, 100) for _ in range(rng.randrange(0, 12))],
    }


def main(path, size=10_000_000):
    records = []
    total = 2
    i = 0
    while total < size:
        r = record(i)
        total += len(json.dumps(r, ensure_ascii=False).encode()) + 1
        records.append(r)
        i += 1
    data = json.dumps({"count": len(records), "next": None, "results": records}, ensure_ascii=False).encode()
    with open(path, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
