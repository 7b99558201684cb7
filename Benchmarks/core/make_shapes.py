"""Writes the core benchmark's two generated JSON shapes (about 10 MB each, fixed seed):

  small_objects.json  an array of many small records, as a log or event API returns them
                      (short keys, short strings, small integers, doubles, bools, nulls)
  long_strings.json   an array of long text strings (1-64 KiB, mostly ASCII prose with some
                      accented, CJK and emoji text and a few escapes), as a document store returns

  make_shapes.py DIR"""
import json
import random
import sys

SIZE = 10_000_000


def small_objects(rng):
    levels = ["debug", "info", "warn", "error"]
    out, total, i = [], 2, 0
    while total < SIZE:
        o = {"id": i, "ts": 1700000000 + rng.randrange(10**6), "lvl": rng.choice(levels),
             "ok": rng.random() < 0.9, "ms": round(rng.uniform(0, 500), 3), "user": None if rng.random() < 0.3 else rng.randrange(10**5)}
        total += len(json.dumps(o, separators=(",", ":"))) + 1
        out.append(o)
        i += 1
    return out


def long_strings(rng):
    words = ("the of and to in is that for it as with was on be by this are or from at which but not have "
             "an they were can all has more one their will its about would also other these into than").split()
    extra = ["caf\u00e9", "na\u00efve", "\u65e5\u672c\u8a9e", "\u043f\u0440\u0438\u0432\u0435\u0442", "\U0001F600",
             "\"quoted\"", "back\\slash", "line\nbreak", "tab\there", "path/to/file"]
    out, total = [], 2
    while total < SIZE:
        n = rng.randrange(1024, 65536)
        parts, k = [], 0
        while k < n:
            w = rng.choice(extra) if rng.random() < 0.02 else rng.choice(words)
            parts.append(w)
            k += len(w) + 1
        s = " ".join(parts)
        total += len(json.dumps(s, ensure_ascii=False).encode()) + 1
        out.append(s)
    return out


def main(d):
    rng = random.Random(15)
    for name, make in (("small_objects", small_objects), ("long_strings", long_strings)):
        data = json.dumps(make(rng), separators=(",", ":"), ensure_ascii=False).encode()
        with open(f"{d}/{name}.json", "wb") as f:
            f.write(data)
    # The decode+walk memory shapes (issue 19): 16 MB of [1,1,...] and a 16 MB object of
    # short keys.
    with open(f"{d}/walk_array_16MB.json", "wb") as f:
        f.write(b"[" + b",".join([b"1"] * (8_000_000 - 1)) + b"]")
    with open(f"{d}/walk_object_16MB.json", "wb") as f:
        f.write(("{" + ",".join(f'"k{i}":{i % 7}' for i in range(1_350_000)) + "}").encode())


if __name__ == "__main__":
    main(sys.argv[1])
