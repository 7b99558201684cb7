#!/usr/bin/env python3
"""Generates Sources/AFSerialization/URL/IDNATables.swift: the Unicode data that IDNA host
conversion needs (UTS #46 mapping, NFC, Bidi classes, joining types, marks), as compact
string tables that the library decodes on first use.

Sources:
- the UTS #46 mapping table and the joining types from Python's `idna` package
  (`python3 -m pip install idna`; it names the Unicode version of its tables);
- canonical decompositions, combining classes, general categories and Bidi classes from
  Python's `unicodedata` (use the newest Python at hand: its Unicode version is printed
  into the table; characters newer than it get Bidi class L and combining class 0).

Usage: python3 scripts/gen-idna-tables.py [OUTPUT]   (default: the path above)
Re-run after upgrading `idna` or Python; the output is deterministic.
"""
import os
import sys
import unicodedata

try:
    import idna
    import idna.idnadata
    import idna.uts46data
except ImportError:
    sys.exit("gen-idna-tables: needs the idna package (python3 -m pip install idna)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "Sources/AFSerialization/URL/IDNATables.swift")
MAX = 0x110000

LICENSE = """UNICODE LICENSE V3

COPYRIGHT AND PERMISSION NOTICE

Copyright © 1991-2025 Unicode, Inc.

NOTICE TO USER: Carefully read the following legal agreement. BY
DOWNLOADING, INSTALLING, COPYING OR OTHERWISE USING DATA FILES, AND/OR
SOFTWARE, YOU UNEQUIVOCALLY ACCEPT, AND AGREE TO BE BOUND BY, ALL OF THE
TERMS AND CONDITIONS OF THIS AGREEMENT. IF YOU DO NOT AGREE, DO NOT
DOWNLOAD, INSTALL, COPY, DISTRIBUTE OR USE THE DATA FILES OR SOFTWARE.

Permission is hereby granted, free of charge, to any person obtaining a
copy of data files and any associated documentation (the "Data Files") or
software and any associated documentation (the "Software") to deal in the
Data Files or Software without restriction, including without limitation
the rights to use, copy, modify, merge, publish, distribute, and/or sell
copies of the Data Files or Software, and to permit persons to whom the
Data Files or Software are furnished to do so, provided that either (a)
this copyright and permission notice appear with all copies of the Data
Files or Software, or (b) this copyright and permission notice appear in
associated Documentation.

THE DATA FILES AND SOFTWARE ARE PROVIDED "AS IS", WITHOUT WARRANTY OF ANY
KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT OF
THIRD PARTY RIGHTS.

IN NO EVENT SHALL THE COPYRIGHT HOLDER OR HOLDERS INCLUDED IN THIS NOTICE
BE LIABLE FOR ANY CLAIM, OR ANY SPECIAL INDIRECT OR CONSEQUENTIAL DAMAGES,
OR ANY DAMAGES WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS,
WHETHER IN AN ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION,
ARISING OUT OF OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THE DATA
FILES OR SOFTWARE.

Except as contained in this notice, the name of a copyright holder shall
not be used in advertising or otherwise to promote the sale, use or other
dealings in these Data Files or Software without prior written
authorization of the copyright holder.

SPDX-License-Identifier: Unicode-3.0"""


def runs(value_of):
    """(start, value) for each run of equal values over all code points."""
    out = []
    prev = object()
    for cp in range(MAX):
        v = value_of(cp)
        if v != prev:
            out.append((cp, v))
            prev = v
    return out


def uts46():
    """Entries 'start STATUS [mapping]': V valid (deviations too: nontransitional
    processing), M mapped, I ignored, X disallowed. A run lasts until the next start."""
    entries = []
    for e in idna.uts46data.uts46data:
        cp, status = e[0], e[1]
        mapping = e[2] if len(e) > 2 else None
        if status == "D":
            status = "V"
        if status == "3":  # older tables: UseSTD3ASCIIRules=false makes these valid/mapped
            status = "M" if mapping is not None else "V"
        if status != "M":
            mapping = None
        if entries and entries[-1][1] == status and status != "M":
            continue
        entries.append((cp, status, mapping))
    parts = []
    for cp, status, mapping in entries:
        s = "%x%s" % (cp, status)
        if mapping is not None:
            s += " ".join("%x" % ord(c) for c in mapping)
        parts.append(s)
    return ",".join(parts), len(entries)


def ccc():
    r = runs(lambda cp: unicodedata.combining(chr(cp)))
    return ",".join("%x:%x" % (cp, v) for cp, v in r), len(r)


def decompositions():
    """'cp=a b' (a primary composite: composes back) or 'cp~a b' (does not compose)."""
    parts = []
    for cp in range(MAX):
        if 0xAC00 <= cp <= 0xD7A3:
            continue  # Hangul syllables are algorithmic
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):
            continue
        seq = [int(x, 16) for x in d.split()]
        composes = (len(seq) == 2 and unicodedata.normalize("NFC", "".join(map(chr, seq))) == chr(cp))
        parts.append("%x%s%s" % (cp, "=" if composes else "~", " ".join("%x" % x for x in seq)))
    return ",".join(parts), len(parts)


def marks():
    r = runs(lambda cp: 1 if unicodedata.category(chr(cp)).startswith("M") else 0)
    return ",".join("%x:%d" % (cp, v) for cp, v in r), len(r)


BIDI = {"L": "L", "R": "R", "AL": "A", "AN": "N", "EN": "E", "ES": "S", "CS": "C",
        "ET": "T", "ON": "O", "BN": "B", "NSM": "M"}


def bidi():
    """Bidi classes by letter: L R A(L) N(AN) E(N) S(ES) C(S) T(ET) O(N) B(N) M(NSM),
    X for every other class (never allowed in a Bidi label)."""
    def cls(cp):
        b = unicodedata.bidirectional(chr(cp))
        if b == "":
            return "L"
        return BIDI.get(b, "X")
    r = runs(cls)
    return ",".join("%x%s" % (cp, v) for cp, v in r), len(r)


def joining():
    jt = idna.idnadata.joining_types
    table = jt() if callable(jt) else jt
    r = runs(lambda cp: chr(table[cp]) if cp in table else "U")
    return ",".join("%x%s" % (cp, v) for cp, v in r), len(r)


def chunks(s, width=100):
    return [s[i:i + width] for i in range(0, len(s), width)]


def swift_string(name, doc, s):
    lines = ["    /// " + d for d in doc]
    lines.append("    static let %s: String = \"\"\"" % name)
    cs = chunks(s)
    for k, c in enumerate(cs):
        lines.append("        " + c + ("\\" if k < len(cs) - 1 else ""))
    lines.append("        \"\"\"")
    return "\n".join(lines)


def main():
    idna_unicode = getattr(idna.idnadata, "__version__", "?")
    tables = [
        ("uts46", ["UTS #46 mapping: `start` (hex) then V valid, M mapped (then the mapping's code",
                   "points), I ignored, X disallowed; a run lasts until the next start."], uts46()),
        ("combiningClass", ["Canonical combining class runs: `start:class` (hex)."], ccc()),
        ("decomposition", ["Canonical decompositions (one level, Hangul excluded): `cp=a b` composes back",
                           "(primary composite), `cp~a b` does not."], decompositions()),
        ("mark", ["General_Category=Mark runs: `start:1` starts marks, `start:0` ends them."], marks()),
        ("bidi", ["Bidi class runs: L R A(L) N(AN) E(N) S(ES) C(S) T(ET) O(N) B(N) M(NSM); X any other."], bidi()),
        ("joining", ["Joining type runs (RFC 5892 ContextJ): D L R T C, U for none."], joining()),
    ]
    out = []
    out.append("// GENERATED by scripts/gen-idna-tables.py — do not edit; re-run the script instead.")
    out.append("// UTS #46 mapping and joining types: Unicode %s (Python idna %s);" % (idna_unicode, idna.__version__))
    out.append("// normalization, categories and Bidi classes: Unicode %s (Python unicodedata)." % unicodedata.unidata_version)
    out.append("//")
    out.append("// These tables are derived from the Unicode Character Database and the IDNA Mapping")
    out.append("// Table (Unicode data files), distributed under this license:")
    out.append("//")
    for line in LICENSE.splitlines():
        out.append(("// " + line).rstrip())
    out.append("")
    out.append("/// Unicode data for IDNA (see `IDNA`), decoded once on first use by `IDNAData`.")
    out.append("enum IDNATables {")
    out.append("    static let idnaUnicodeVersion = \"%s\"" % idna_unicode)
    out.append("    static let ucdUnicodeVersion = \"%s\"" % unicodedata.unidata_version)
    for name, doc, (s, n) in tables:
        out.append("")
        out.append(swift_string(name, doc + ["%d entries." % n], s))
    out.append("}")
    out.append("")
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    print("gen-idna-tables: wrote %s (%d bytes)" % (OUT, os.path.getsize(OUT)))


if __name__ == "__main__":
    main()
