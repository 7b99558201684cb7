#!/usr/bin/env python3
"""Generates Sources/AFSerialization/HTTP/CharsetTables.swift: the WHATWG Encoding
Standard's labels and its single-byte indexes, for afs_response_reader_text.

The single-byte indexes are taken from Python's codecs where they agree with WHATWG; the
places where the WHATWG indexes differ from Python's tables are applied explicitly below
(each with its reason), and the script prints every byte it changed, so a review can check
them against https://encoding.spec.whatwg.org/ (index-*.txt). Bytes 0x00-0x7F are ASCII in
every single-byte encoding; the table holds 0x80-0xFF, 0 meaning "no code point" (decoded
as U+FFFD).

    python3 scripts/gen-charset-tables.py   # rewrites the Swift file
"""
import codecs
import os
import sys

# WHATWG name -> Python codec.
SINGLE_BYTE = [
    ("IBM866", "cp866"),
    ("ISO-8859-2", "iso8859_2"),
    ("ISO-8859-3", "iso8859_3"),
    ("ISO-8859-4", "iso8859_4"),
    ("ISO-8859-5", "iso8859_5"),
    ("ISO-8859-6", "iso8859_6"),
    ("ISO-8859-7", "iso8859_7"),
    ("ISO-8859-8", "iso8859_8"),
    ("ISO-8859-8-I", "iso8859_8"),
    ("ISO-8859-10", "iso8859_10"),
    ("ISO-8859-13", "iso8859_13"),
    ("ISO-8859-14", "iso8859_14"),
    ("ISO-8859-15", "iso8859_15"),
    ("ISO-8859-16", "iso8859_16"),
    ("KOI8-R", "koi8_r"),
    ("KOI8-U", "koi8_u"),
    ("macintosh", "mac_roman"),
    ("windows-874", "cp874"),
    ("windows-1250", "cp1250"),
    ("windows-1251", "cp1251"),
    ("windows-1252", "cp1252"),
    ("windows-1253", "cp1253"),
    ("windows-1254", "cp1254"),
    ("windows-1255", "cp1255"),
    ("windows-1256", "cp1256"),
    ("windows-1257", "cp1257"),
    ("windows-1258", "cp1258"),
    ("x-mac-cyrillic", "mac_cyrillic"),
]

# Where WHATWG's index differs from Python's codec.
OVERRIDES = {
    # KOI8-U in WHATWG is the KOI8-RU variant: 0xAE and 0xBE are Ukrainian/Belarusian short U.
    "KOI8-U": {0xAE: 0x045E, 0xBE: 0x040E},
    # index-x-mac-cyrillic is Apple's later table (Ukrainian GHE WITH UPTURN, euro sign).
    "x-mac-cyrillic": {0xA2: 0x0490, 0xB6: 0x0491, 0xFF: 0x20AC},
    # index-windows-1255 has HEBREW POINT HOLAM HASER FOR VAV at 0xCA.
    "windows-1255": {0xCA: 0x05BA},
}
# The windows-* indexes (and windows-874) map the bytes 0x80-0x9F that Microsoft's tables
# leave undefined to the C1 control of the same value (what Windows itself does).
C1_FILL = {n for n, _ in SINGLE_BYTE if n.startswith("windows-")}

# The WHATWG label table (encoding.spec.whatwg.org, "Names and labels").
LABELS = {
    "UTF-8": "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8",
    "IBM866": "866 cp866 csibm866 ibm866",
    "ISO-8859-2": "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    "ISO-8859-3": "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    "ISO-8859-4": "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    "ISO-8859-5": "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 iso_8859-5:1988",
    "ISO-8859-6": "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 iso-8859-6-e "
                  "iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987",
    "ISO-8859-7": "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 iso88597 "
                  "iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    "ISO-8859-8": "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 iso88598 "
                  "iso_8859-8 iso_8859-8:1988 visual",
    "ISO-8859-8-I": "csiso88598i iso-8859-8-i logical",
    "ISO-8859-10": "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    "ISO-8859-13": "iso-8859-13 iso8859-13 iso885913",
    "ISO-8859-14": "iso-8859-14 iso8859-14 iso885914",
    "ISO-8859-15": "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    "ISO-8859-16": "iso-8859-16",
    "KOI8-R": "cskoi8r koi koi8 koi8-r koi8_r",
    "KOI8-U": "koi8-ru koi8-u",
    "macintosh": "csmacintosh mac macintosh x-mac-roman",
    "windows-874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
    "windows-1250": "cp1250 windows-1250 x-cp1250",
    "windows-1251": "cp1251 windows-1251 x-cp1251",
    "windows-1252": "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 "
                    "iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
    "windows-1253": "cp1253 windows-1253 x-cp1253",
    "windows-1254": "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 iso_8859-9:1989 "
                    "l5 latin5 windows-1254 x-cp1254",
    "windows-1255": "cp1255 windows-1255 x-cp1255",
    "windows-1256": "cp1256 windows-1256 x-cp1256",
    "windows-1257": "cp1257 windows-1257 x-cp1257",
    "windows-1258": "cp1258 windows-1258 x-cp1258",
    "x-mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
    # Multi-byte encodings: known labels, not decoded by this library (AFS_E_ENCODING).
    "GBK": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk",
    "gb18030": "gb18030",
    "Big5": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "EUC-JP": "cseucpkdfmtjapanese euc-jp x-euc-jp",
    "ISO-2022-JP": "csiso2022jp iso-2022-jp",
    "Shift_JIS": "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    "EUC-KR": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 "
              "ksc_5601 windows-949",
    "replacement": "csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr replacement",
    "UTF-16BE": "unicodefffe utf-16be",
    "UTF-16LE": "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le",
    "x-user-defined": "x-user-defined",
}


def table(name, codec):
    out = []
    changed = []
    for b in range(0x80, 0x100):
        try:
            cp = ord(codecs.decode(bytes([b]), codec))
        except UnicodeDecodeError:
            cp = 0
        if cp == 0 and name in C1_FILL and b <= 0x9F:
            cp = b
            changed.append((b, "undefined", cp))
        if b in OVERRIDES.get(name, {}):
            new = OVERRIDES[name][b]
            if new != cp:
                changed.append((b, "U+%04X" % cp if cp else "undefined", new))
            cp = new
        out.append(cp)
    return out, changed


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = [n for n, _ in SINGLE_BYTE]
    lines = [
        "// Generated by scripts/gen-charset-tables.py: do not edit.",
        "// The WHATWG Encoding Standard's labels and single-byte indexes (bytes 0x80-0xFF; 0: no",
        "// code point). Built from Python's codecs with WHATWG's differences applied (see the script).",
        "",
        "enum CharsetTables {",
        "    /// The single-byte encodings, in the order of `singleByte`.",
        "    static let singleByteNames: [String] = [",
    ]
    lines += ['        "%s",' % n for n in names]
    lines += ["    ]", "", "    static let singleByte: [[UInt16]] = ["]
    for n, codec in SINGLE_BYTE:
        t, changed = table(n, codec)
        for b, old, new in changed:
            print("%-15s 0x%02X: %s -> U+%04X" % (n, b, old, new), file=sys.stderr)
        lines.append("        // %s (Python %s)" % (n, codec))
        lines.append("        [")
        for i in range(0, 128, 8):
            lines.append("            " + ", ".join("0x%04X" % c for c in t[i:i + 8]) + ",")
        lines.append("        ],")
    lines += ["    ]", "", "    /// label -> encoding name, sorted by label.", "    static let labels: [(String, String)] = ["]
    pairs = sorted((label, enc) for enc, ls in LABELS.items() for label in ls.split())
    assert len({p[0] for p in pairs}) == len(pairs), "duplicate label"
    lines += ['        ("%s", "%s"),' % p for p in pairs]
    lines += ["    ]", "}", ""]
    path = os.path.join(root, "Sources/AFSerialization/HTTP/CharsetTables.swift")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("wrote %s (%d labels, %d single-byte tables)" % (os.path.relpath(path, root), len(pairs), len(names)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
