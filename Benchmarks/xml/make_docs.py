"""Writes the two 10 MB benchmark documents: many small elements (attributes, a namespace,
short text) and long text runs (few elements, long character data with entity references)."""
import random
import sys

out = sys.argv[1]
rnd = random.Random(24)
parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="urn:bench" xmlns:x="urn:x">\n']
size = 0
i = 0
while size < 10_000_000:
    s = f'  <item id="{i}" x:kind="k{i % 7}"><name>item {i}</name><price cur="EUR">{rnd.randint(1, 99999) / 100}</price><ok/></item>\n'
    parts.append(s)
    size += len(s)
    i += 1
parts.append("</feed>\n")
open(f"{out}/small-elements.xml", "w").write("".join(parts))
words = ["lorem", "ipsum", "dolor", "sit", "amet", "caf\u00e9", "na\u00efve", "&amp;", "&lt;tag&gt;", "\u4e2d\u6587"]
parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<book>\n']
size = 0
while size < 10_000_000:
    para = " ".join(rnd.choice(words) for _ in range(20000))
    s = f"<p>{para}</p>\n"
    parts.append(s)
    size += len(s.encode())
parts.append("</book>\n")
open(f"{out}/long-text.xml", "w", encoding="utf-8").write("".join(parts))
