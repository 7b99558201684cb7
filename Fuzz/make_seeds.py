#!/usr/bin/env python3
"""Writes the hand-made seeds of Fuzz/corpus/ (text inputs; the script-driven targets'
seeds are byte scripts, made here too), and the hand-made inputs of Fuzz/regressions/ that
showed a bug. Run from the repository root; existing files are overwritten, others are
left alone."""
import datetime
import os
import plistlib

def put(target, name, data, tree="corpus"):
    d = os.path.join("Fuzz", tree, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

# percent_escape: text bytes.
put("percent_escape", "ascii", "hello world/path?x=1&y=2")
put("percent_escape", "reserved", ":#[]@!$&'()*+,;=?/")
put("percent_escape", "percent", "%20%2B+")
put("percent_escape", "emoji", "\U0001F474\U0001F3FF and \u00e9\u65e5\u672c")
put("percent_escape", "long_mixed", "abcdefghijklmnop" * 4 + "\u00e9" + "qrstuvwx" * 3 + " ")
put("percent_escape", "bad_continuation", b"ab\xc3\x28cd")
put("percent_escape", "overlong", b"\xe0\x80\xaf")
put("percent_escape", "surrogate", b"x\xed\xa0\x80")
put("percent_escape", "above_max", b"\xf4\x90\x80\x80")
put("percent_escape", "truncated_end", b"0123456789abcdef\xf0\x9f\x91")
put("percent_escape", "lone_continuation_in_block", b"abcdefg\x80hijklmno")

# json_parse: JSON text.
put("json_parse", "object", '{"a":1,"b":[true,false,null],"c":{"d":"e\\u00e9\\ud83d\\ude00"}}')
put("json_parse", "numbers", "[1.0,-0,0.1,1e16,1e-7,-9223372036854775808,9223372036854775808,1e308,5e-324,2.2250738585072011e-308]")
put("json_parse", "escapes", '"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f"')
put("json_parse", "nested", "[" * 10 + "]" * 10)
put("json_parse", "too_deep", "[" * 513 + "]" * 513)
put("json_parse", "duplicate", '  {"dup":1,"dup":2}  ')
put("json_parse", "trailing_comma", '{"a":1,}')
put("json_parse", "bom", b"\xef\xbb\xbf{}")
put("json_parse", "bad_utf8", b'"\xc3\x28"')
put("json_parse", "lone_surrogate", '"\\ud800"')
put("json_parse", "huge_number", "1e400")
put("json_parse", "long_mantissa", "0.1000000000000000055511151231257827021181583404541015625")
put("json_parse", "pretty", '{\n  "k" : [\n    1,\n    "v"\n  ],\n  "e" : {\n\n  }\n}')

# plist_read: property lists as plistlib writes them, and hand-written XML.
tree = {
    "string": "text & <tags> \u00e9\U0001F600",
    "int": -5, "big": 2**63 + 1, "small": -2**63, "real": 0.1, "neg0": -0.0,
    "true": True, "false": False, "data": bytes(range(40)),
    "date": datetime.datetime(2020, 1, 2, 3, 4, 5),
    "array": [1, "two", [3.5, []], {}], "dict": {"nested": {"deeper": [b""]}},
}
put("plist_read", "plistlib.xml", plistlib.dumps(tree, fmt=plistlib.FMT_XML))
put("plist_read", "plistlib.bplist", plistlib.dumps(tree, fmt=plistlib.FMT_BINARY))
put("plist_read", "uid.bplist", plistlib.dumps({"$top": plistlib.UID(3), "$objects": ["$null", 1]}, fmt=plistlib.FMT_BINARY))
put("plist_read", "scalar.bplist", plistlib.dumps("just a string", fmt=plistlib.FMT_BINARY))
put("plist_read", "many_refs.bplist", plistlib.dumps([list(range(300))] * 3, fmt=plistlib.FMT_BINARY))
put("plist_read", "handwritten.xml", """<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment -->
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>
  <key>cdata</key><string><![CDATA[<not a tag> & ]]></string>
  <key>refs</key><string>&#65;&#x42;&amp;&lt;&gt;&quot;&apos;&#13;</string>
  <key>hex</key><integer> 0x7f </integer>
  <key>reals</key><array><real>nan</real><real>+infinity</real><real>-inf</real><real>1e+16</real></array>
  <key>data</key><data>
    AAECAw==
  </data>
  <key>date</key><date>2001-01-01T00:00:00Z</date>
  <?pi ignored?>
</dict></plist>
""")
put("plist_read", "bare_value.xml", "<array><true/><false/><string/></array>")
put("plist_read", "entity_decl.xml", '<!DOCTYPE plist [<!ENTITY a "aaaa">]><plist><string>&a;</string></plist>')

# multipart_stream: byte scripts (see the order of decisions in Fuzz/multipart_stream.swift;
# `FUZZ_TRACE=1 .build-fuzz/multipart_stream FILE` shows what one does).
put("multipart_stream", "empty", b"")
put("multipart_stream", "one_of_each_kind", bytes([
    0x01, 0x01, 0x05,                                   # no parameters, POST, 5 parts
    0x01, 0x00, 0x03, 0x61, 0x62, 0x63,                 # field "f0" = "abc"
    0x01, 0x01, 0x01, 0x02, 0x78, 0x79, 0x00, 0x00, 0x01, 0x01,  # file data "xy" as a.png
    0x01, 0x02, 0x01, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x51,  # X-Custom: a, body "Q"
    0x01, 0x03, 0x02, 0x01, 0x01,                       # the 4099-byte temporary file
    0x01, 0x04, 0x00, 0x64, 0x01, 0x01, 0x01, 0x07, 0x01, 0x01, 0x01,  # honest 100-byte callback
    0x00, 0x00,                                         # no throttling, the long boundary
    0x08,                                               # 8 operations:
    0x01, 0x00, 0x80, 0x40, 0x00,                       #   a: read(65)
    0x01, 0x0A, 0x01, 0x10, 0x00,                       #   a: seek(16)
    0x00, 0x00, 0xF0,                                   #   b: read the rest
    0x01, 0x0D,                                         #   a: rewind
    0x01, 0x0E,                                         #   a: write(to:)
    0x01, 0x00, 0x05, 0x05,                             #   a: read(6)
    0x00, 0x0B, 0x01, 0xFF, 0x00,                       #   b: seek(255)
    0x01, 0x00, 0xC8, 0x00, 0x10, 0x00, 0x00,           #   a: read(4097)
]))
put("multipart_stream", "dishonest_callbacks", bytes([
    0x01, 0x01, 0x06,
    0x01, 0x04, 0x00, 0x20, 0x00, 0x00, 0x01, 0x00, 0x02, 0x11, 0x10, 0x01, 0x01, 0x01,  # declares 32, yields 16, 3 per call
    0x01, 0x04, 0x00, 0x08, 0x00, 0x01, 0x01, 0x01, 0x12, 0x05, 0x01, 0x01, 0x01,        # declares 8, yields 14
    0x01, 0x04, 0x00, 0x40, 0x00, 0x02, 0x01, 0x01, 0x13, 0x20, 0x01, 0x01, 0x01,        # fails after 32 of 64
    0x01, 0x04, 0x00, 0x04, 0x00, 0x03, 0x01, 0x01, 0x14, 0x01, 0x01, 0x01,              # returns more than asked
    0x01, 0x04, 0x00, 0x10, 0x00, 0x04, 0x01, 0x01, 0x15, 0x01, 0x01, 0x01,              # rewind fails
    0x01, 0x05, 0x00, 0x30, 0x01, 0x00, 0x01, 0x16, 0x01, 0x01, 0x01,                    # honest, no rewind
    0x00, 0x00,
    0x0C,
    0x01, 0x00, 0x09, 0x09,                             # a: read(10)
    0x01, 0x00, 0xF0,                                   # a: read the rest (fails)
    0x01, 0x0A, 0x01, 0x50, 0x00,                       # a: seek(80)
    0x01, 0x00, 0x27, 0x0F,                             # a: read(16)
    0x01, 0x0D,                                         # a: rewind
    0x00, 0x00, 0xF0,                                   # b: read the rest
    0x00, 0x0A, 0x01, 0x00, 0x00,                       # b: seek(0)
    0x01, 0x0E,                                         # a: write(to:)
    0x01, 0x0B, 0x01, 0xA0, 0x01,                       # a: seek(416)
    0x01, 0x00, 0xF0,                                   # a: read the rest
    0x00, 0x0F,                                         # b: write(to:)
    0x01, 0x0D,                                         # a: rewind
]))
put("multipart_stream", "parameters_throttled_x_boundary", bytes([
    0x00, 0x02,                                         # parameters, 2 entries:
    0x01, 0x00, 0x0A, 0x02, 0x02, 0x07, 0x05, 0x06, 0x01, 0x04,  #   "a": [5, " "]
    0x01, 0x05, 0x01, 0x01,                             #   "+": true
    0x01, 0x01,                                         # POST, 1 part
    0x01, 0x00, 0x02, 0x68, 0x69,                       # field "f0" = "hi"
    0x03, 0x07, 0x00,                                   # packets of 8 bytes
    0x03,                                               # boundary "x"
    0x06,
    0x01, 0x00, 0x10, 0x0F,                             # a: read(16) (gives 8)
    0x01, 0x00, 0x10, 0x0F,
    0x01, 0x00, 0x10, 0x0F,
    0x01, 0x0E,                                         # a: write(to:)
    0x01, 0x0D,                                         # a: rewind
    0x01, 0x00, 0xF0,                                   # a: read the rest (8 at a time)
]))

# Trees (TreeGen in Fuzz/Support/FuzzSupport.swift): a value is a selector byte (mod 16:
# 0 null, 1 bool, 2-3 int, 4-5 double, 6-8 string, 9 data, 10-11 array, 12-14 dictionary,
# 15 set; 0xFF first: a chain of 500 + n containers), then its parts; a string is a count
# of pieces and one byte per piece (0-119: one of FuzzSupport's interesting pieces).
DICT_OF_SCALARS = bytes([
    0x0C, 0x05,                       # dictionary of 5:
    0x01, 0x00, 0x01, 0x01,           #   "a": true
    0x01, 0x01, 0x02, 0x06, 0x7F,     #   "Z": 127
    0x01, 0x0D, 0x04, 0x01, 0x04,     #   "/": 0.1
    0x01, 0x12, 0x06, 0x02, 0x11, 0x14,  # "\\": "\"\r"
    0x01, 0x04, 0x0A, 0x02, 0x00, 0x0C, 0x00,  # " ": [null, {}]
])
NESTED = bytes([0x0A, 0x03, 0x0A, 0x00, 0x0C, 0x00, 0x0F, 0x02, 0x02, 0x06, 0x05, 0x06, 0x01, 0x02])  # [[], {}, set(5, "0")]
UNWRITABLE_JSON = bytes([0x0A, 0x02, 0x09, 0x02, 0xFF, 0x00, 0x04, 0x04, 0x00])  # [data, nan]

put("json_write", "dict_of_scalars_sorted", bytes([0x02]) + DICT_OF_SCALARS)
put("json_write", "pretty_fragments_nested", bytes([0x05]) + bytes([0x0A, 0x03, 0x0A, 0x00, 0x0C, 0x00, 0x00]))
put("json_write", "unwritable_data_nan", bytes([0x00]) + UNWRITABLE_JSON)
put("json_write", "chain_512_dicts", bytes([0x00, 0xFF, 0x0C, 0x01]))
put("json_write", "chain_513_arrays", bytes([0x00, 0xFF, 0x0D, 0x00]))
put("json_write", "scalar_top_without_fragments", bytes([0x00, 0x06, 0x01, 0x00]))

put("plist_write", "dict_of_scalars", bytes([0x00]) + DICT_OF_SCALARS)
put("plist_write", "chain_512_arrays", bytes([0x00, 0xFF, 0x0C, 0x00]))
put("plist_write", "chain_513_dicts", bytes([0x00, 0xFF, 0x0D, 0x01]))
put("plist_write", "xml_forbidden_character", bytes([0x00, 0x06, 0x01, 0x19]))
put("plist_write", "null_and_set", bytes([0x03]) + NESTED + bytes([0x00]))
put("plist_write", "data_and_doubles", bytes([0x00, 0x0A, 0x03, 0x09, 0x28] + list(range(40)) + [0x04, 0x01, 0x01, 0x05, 0x04, 0x03]))

# query_string: a style byte (mod 3: brackets, no brackets, indexed; +4 literal bools;
# +8 spaces as '+'; 0x30: keep a non-dictionary top level), then a tree.
put("query_string", "brackets_numeric_percent", bytes([0x00]) + DICT_OF_SCALARS)
put("query_string", "indexed_literal_plus", bytes([0x0E]) + DICT_OF_SCALARS)
put("query_string", "no_brackets_nested_set", bytes([0x01, 0x0C, 0x02, 0x01, 0x00]) + NESTED
    + bytes([0x01, 0x01, 0x0F, 0x02, 0x01, 0x01, 0x06, 0x01, 0x05]))  # {"a": [[], {}, set(5, "0")], "Z": set(true, "+")}
put("query_string", "not_a_dictionary", bytes([0x30]) + NESTED)

# value_api: a script of operations (Fuzz/value_api.swift), one byte each for the operation
# (mod 16), a handle (two bytes: 1 = not NULL, then the slot) and the arguments. The first
# three were use-after-free bugs of the C layer (regressions; Tests/c/test_values.c).
OWNED_ARRAY, DATA_AB = bytes([0x00, 0x01]), bytes([0x03, 0x01, 0x02, 0x41, 0x42])
put("value_api", "borrowed_container_with_its_root_as_value", OWNED_ARRAY + DATA_AB + bytes([
    0x07, 0x01, 0x00, 0x01, 0x01, 0x01,  # append(array, "AB"): the data handle is consumed
    0x0A, 0x01, 0x00, 0x00, 0x01,        # borrow array[0]
    0x07, 0x01, 0x01, 0x01, 0x01, 0x00,  # append(borrowed member, array): refused, array consumed
    0x00, 0x00, 0x0D, 0x01, 0x00,        # a new dictionary, walked
]), tree="regressions")
put("value_api", "failed_append_keeps_borrowed_members", bytes([
    0x00, 0x00,                                            # a dictionary
    0x02, 0x02, 0x01,                                      # true
    0x05, 0x01, 0x00, 0x01, 0x00, 0x01, 0x01, 0x01, 0x01,  # dict_set(dict, "", true)
    0x0A, 0x01, 0x00, 0x00, 0x01, 0x00,                    # borrow dict[0]
    0x02, 0x02, 0x00,                                      # false
    0x07, 0x01, 0x00, 0x01, 0x01, 0x02,                    # append(dict, false): refused
    0x0D, 0x01, 0x01,                                      # walk the borrowed member
]), tree="regressions")
put("value_api", "chain_of_529_arrays", bytes([0x02, 0x03, 0x09, 0x01, 0x00, 0x00, 0x1D, 0x0F, 0x01, 0x00]))
put("value_api", "string_value_as_its_own_key", bytes([
    0x00, 0x00,                                # a dictionary
    0x01, 0x01, 0x01, 0x00, 0x01,              # the string "a", passed with its length
    0x05, 0x01, 0x00, 0x01, 0x00, 0x01, 0x01, 0x01, 0x01, 0x00,  # dict_set(dict, its text, "a")
    0x0F, 0x01, 0x00,                          # the query string
]), tree="regressions")

# Adversarial complexity (issue 19): inputs crafted against the data structures, so the
# fuzzers start from them (the XCTest ComplexityTests time them at n and 8n).
import pickle
put("json_parse", "same_prefix_keys",
    "{" + ",".join('"aaaaaaa%08d":%d' % (i, i) for i in range(500)) + "}")
put("json_parse", "same_prefix_keys_repeated",
    "{" + ",".join('"aaaaaaa%08d":%d' % (i % 300, i) for i in range(500)) + "}")
put("pickle_read", "set_of_frozensets", pickle.dumps({"a": {frozenset({i}) for i in range(300)}}, 5))
put("pickle_read", "set_of_nested_frozensets",
    pickle.dumps({frozenset({frozenset({i}), "x"}) for i in range(200)}, 5))
# chunked_body: byte scripts (kind, parts with mode and step sizes, read sizes, digest, coding).
put("chunked_body", "multipart_unknown", bytes([0, 3, 5]) + b"hello" + bytes([1, 2, 2, 10, 0, 7]) + b"abcdefg"
    + bytes([3, 4, 1, 0]) + bytes([0, 0, 2, 5, 0, 200, 0]) + bytes([0, 0, 1, 0, 0]))
put("chunked_body", "source_gzip_sha256", bytes([1, 20]) + b"unknown length body." + bytes([0, 1, 40, 0])
    + bytes([2, 7, 0, 9, 1]) + bytes([0, 0]) + bytes([0, 0, 1]))
put("chunked_body", "memory_zstd_md5", bytes([2, 12]) + b"in memory!!!" + bytes([0, 0, 0]) + bytes([1, 3, 0])
    + bytes([0, 2, 0, 2, 2]))
put("chunked_body", "long_br", bytes([1, 0, 0, 0x40, 0x0d, 3, 9, 1, 100, 0]) + bytes([1, 100, 0]) + bytes([1, 1, 0, 3, 1]))
