"""Response serializers: AFNetworking's response tests re-expressed (AFHTTPResponseSerialization,
AFJSONSerialization's response part, AFPropertyListResponseSerializer,
AFCompoundResponseSerializer), plist bodies written by plistlib, Unicode, big integers, the
error document, the two JSON decoders agreeing (JSONTestSuite), lifecycle and wrong types."""
import array
import datetime
import gc
import json
import math
import plistlib
import random
import threading
from pathlib import Path

import pytest

import afserialization as afs
from afserialization import _ffi, response

REPO = Path(__file__).resolve().parents[2]
JSON_TEST_SUITE = REPO / "Tests" / "data" / "JSONTestSuite" / "test_parsing"  # vendored, with its LICENSE



@pytest.fixture(params=["json-module", "walk"])
def decoder(request, monkeypatch):
    """Runs a JSON test with each way of building the Python objects (module docstring of
    afserialization.response): the json module after the library accepted the body, and the
    walk over the library's tree."""
    monkeypatch.setattr(response, "_DECODE_AS_PICKLE", request.param == "json-module")
    return request.param


def decode(rs, body, content_type="application/json", status=200):
    return rs.response_object(status, content_type, body)


def same(a, b):
    """Equal, with the same types at every place (1 is not 1.0 nor True; -0.0 keeps its
    sign; NaN equals NaN). Iterative: documents nest up to 512 levels."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, float):
            if not ((math.isnan(x) and math.isnan(y)) or
                    (x == y and math.copysign(1, x) == math.copysign(1, y))):
                return False
        elif x != y:
            return False
    return True


# -- AFHTTPResponseSerializationTests -------------------------------------------------------


def test_http_accepts_every_2xx_code():
    with afs.HTTPResponseSerializer() as rs:
        for code in range(200, 300):
            rs.validate(code, "text/html", b"x")
            assert rs.response_object(code, None, b"body") == b"body"


def test_http_refuses_every_4xx_and_5xx_code():
    rs = afs.HTTPResponseSerializer()
    for code in list(range(400, 600)) + [100, 199, 300, 304]:
        with pytest.raises(afs.UnacceptableStatusError) as info:
            rs.validate(code, "text/html", b"x")
        assert info.value.status_code == code and info.value.document is None
    with pytest.raises(afs.UnacceptableStatusError, match=r"Request failed: not found \(404\)"):
        rs.validate(404, None, b"")
    with pytest.raises(afs.UnacceptableStatusError, match=r"client error \(499\)"):
        rs.validate(499, None, b"")


def test_http_defaults_and_body_as_bytes():
    rs = afs.HTTPResponseSerializer()
    assert rs.acceptable_status_codes == (range(200, 300),)
    assert rs.acceptable_content_types is None
    assert rs.response_object(200, "application/octet-stream", b"\0\xff") == b"\0\xff"
    assert rs.response_object(204, None, b"") is None
    assert rs.response_object(200, None, None) is None


def test_http_error_document_is_the_body():
    with pytest.raises(afs.UnacceptableStatusError) as info:
        afs.HTTPResponseSerializer().response_object(410, "text/html", b"<h1>Gone</h1>")
    assert info.value.document == b"<h1>Gone</h1>" and "gone (410)" in info.value.message


def test_status_ranges():
    rs = afs.HTTPResponseSerializer()
    rs.acceptable_status_codes = [range(200, 300), 404, range(500, 503)]
    assert rs.acceptable_status_codes == (range(200, 300), range(404, 405), range(500, 503))
    for ok in (200, 299, 404, 500, 502):
        rs.validate(ok, None, b"")
    for bad in (199, 300, 403, 405, 499, 503):
        with pytest.raises(afs.UnacceptableStatusError):
            rs.validate(bad, None, b"")
    rs.acceptable_status_codes = 201
    assert rs.acceptable_status_codes == (range(201, 202),)
    rs.validate(201, None, b"")
    with pytest.raises(afs.UnacceptableStatusError):
        rs.validate(200, None, b"")
    rs.acceptable_status_codes = range(210, 200, -1)  # any step-1 order: one inclusive range
    assert rs.acceptable_status_codes == (range(201, 211),)
    rs.acceptable_status_codes = range(200, 206, 2)  # other steps: code by code
    assert rs.acceptable_status_codes == (range(200, 201), range(202, 203), range(204, 205))
    with pytest.raises(afs.UnacceptableStatusError):
        rs.validate(201, None, b"")
    rs.acceptable_status_codes = (c for c in [301, 302])
    assert rs.acceptable_status_codes == (range(301, 302), range(302, 303))
    rs.acceptable_status_codes = None
    assert rs.acceptable_status_codes is None
    for code in (0, 99, 404, 999, -5):
        rs.validate(code, None, b"")
    with pytest.raises(ValueError, match="use None"):
        rs.acceptable_status_codes = []
    with pytest.raises(ValueError, match="empty"):
        rs.acceptable_status_codes = [range(300, 200)]
    with pytest.raises(OverflowError):
        rs.acceptable_status_codes = [1 << 40]
    assert rs.acceptable_status_codes is None  # unchanged by the failures


# -- AFJSONSerializationTests (response part) ---------------------------------------------


@pytest.mark.parametrize("mime", ["application/json", "text/json", "text/javascript",
                                  "APPLICATION/JSON", "application/json; charset=utf-8",
                                  " text/json ;charset=UTF-8"])
def test_json_accepts_its_mime_types(mime, decoder):
    rs = afs.JSONResponseSerializer()
    rs.validate(200, mime, b"{}")
    assert decode(rs, b'{"key":"value"}', mime) == {"key": "value"}


def test_json_refuses_a_nonstandard_mime_type(decoder):
    rs = afs.JSONResponseSerializer()
    for mime in ("nonstandard/json", "text/html", "application/x-plist"):
        with pytest.raises(afs.UnacceptableContentTypeError, match=mime):
            decode(rs, b'{"key":"value"}', mime)
    with pytest.raises(afs.UnacceptableContentTypeError, match=r"\(none\)"):
        decode(rs, b"{}", None)
    assert rs.acceptable_content_types == {"application/json", "text/json", "text/javascript"}
    rs.acceptable_content_types = ["nonstandard/json"]
    assert decode(rs, b"[1]", "nonstandard/json") == [1]
    rs.acceptable_content_types = None
    assert decode(rs, b"[2]", "any/thing") == [2]


def test_json_empty_and_single_space_bodies_give_no_object(decoder):
    rs = afs.JSONResponseSerializer()
    assert decode(rs, b"") is None
    assert decode(rs, b"", None) is None  # no Content-Type with an empty body passes
    assert decode(rs, b" ") is None
    assert decode(rs, bytearray(b" ")) is None
    with pytest.raises(afs.InvalidJSONError):
        decode(rs, b"  ")


def test_json_invalid_body_names_the_offset(decoder):
    rs = afs.JSONResponseSerializer()
    with pytest.raises(afs.InvalidJSONError, match="byte offset 0") as info:
        decode(rs, b"<html></html>")
    assert info.value.code == afs.Status.INVALID_JSON
    with pytest.raises(afs.InvalidJSONError, match="byte offset 8"):
        decode(rs, b'{"a": 1,}')
    with pytest.raises(afs.InvalidJSONError, match="offset"):
        decode(rs, b'{"a": NaN}')
    with pytest.raises(afs.InvalidJSONError):
        decode(rs, b'"fragment"')  # fragments need FRAGMENTS_ALLOWED


def test_json_fragments(decoder):
    rs = afs.JSONResponseSerializer(reading_options="fragments_allowed")
    assert rs.reading_options == afs.JSONReadingOptions.FRAGMENTS_ALLOWED
    assert decode(rs, b'"text"') == "text"
    assert same(decode(rs, b"12"), 12) and same(decode(rs, b"1.5"), 1.5)
    assert decode(rs, b"true") is True and decode(rs, b"null") is None
    rs.reading_options = ["mutable_containers", afs.JSONReadingOptions.FRAGMENTS_ALLOWED]
    assert rs.reading_options == 5 and decode(rs, b"false") is False
    rs.reading_options = 0
    with pytest.raises(afs.InvalidJSONError):
        decode(rs, b"12")
    with pytest.raises(afs.InvalidArgumentError):
        rs.reading_options = 8
    with pytest.raises(ValueError):
        rs.reading_options = "no_such_option"
    assert rs.reading_options == 0


def test_json_removes_keys_with_null_values(decoder):
    body = (b'{"key":"value","nullkey":null,"array":[{"subnullkey":null,"k":1},null,[null,2],'
            b'{"deep":{"deeper":[null,{"x":null}]}}],"empty":{}}')
    rs = afs.JSONResponseSerializer(removes_keys_with_null_values=True)
    assert rs.removes_keys_with_null_values is True
    assert decode(rs, body) == {"key": "value",
                                "array": [{"k": 1}, [2], {"deep": {"deeper": [{}]}}],
                                "empty": {}}
    assert decode(rs, b"[null, null]") == []
    rs.removes_keys_with_null_values = False
    assert decode(rs, body)["nullkey"] is None
    with pytest.raises(TypeError):
        rs.removes_keys_with_null_values = 1


def test_json_unicode_and_surrogates(decoder):
    rs = afs.JSONResponseSerializer()
    body = '{"é":"caf\\u00e9","emoji":"\\ud83d\\ude00 😀","nul":"a\\u0000b","k\\u0000":1}'
    assert decode(rs, body.encode()) == {"é": "café", "emoji": "\U0001F600 \U0001F600",
                                         "nul": "a\0b", "k\0": 1}
    assert decode(rs, b"\xef\xbb\xbf[1]") == [1]  # a leading byte-order mark is skipped
    for bad in (b'["\\ud83d"]', b'["\\ude00"]', b'["\\ud83d\\u0041"]', b'["\xed\xa0\x80"]',
                b'["\xff"]', b'["a\x01"]'):
        with pytest.raises(afs.InvalidJSONError, match="offset"):
            decode(rs, bad)


def test_json_numbers_as_foundation_reads_them(decoder):
    rs = afs.JSONResponseSerializer(reading_options="fragments_allowed")
    cases = {
        b"9223372036854775807": 9223372036854775807,
        b"-9223372036854775808": -9223372036854775808,
        b"9223372036854775808": 9223372036854775808.0,
        b"-9223372036854775809": -9223372036854775809.0,
        b"123456789012345678901234567890": 1.2345678901234568e29,
        b"-0": -0.0, b"0": 0, b"-0.0": -0.0, b"1.0": 1.0, b"1e2": 100.0, b"1E-400": 0.0,
        b"0.1": 0.1, b"2.2250738585072014e-308": 2.2250738585072014e-308,
        b"0." + b"0" * 400 + b"1e400": 0.1,  # more digits than a double holds
    }
    for text, expected in cases.items():
        assert same(decode(rs, text), expected), text
        assert same(decode(rs, b"[" + text + b"]"), [expected]), text
    with pytest.raises(afs.InvalidJSONError, match="too large"):
        decode(rs, b"1e400")
    with pytest.raises(afs.InvalidJSONError, match="too large"):
        decode(rs, b"9" * 5000)
    assert decode(rs, b"[" + b"1" * 300 + b"]") == [float("1" * 300)]


def test_json_repeated_keys_keep_the_first_position_and_the_last_value(decoder):
    rs = afs.JSONResponseSerializer()
    assert list(decode(rs, b'{"a":1,"b":2,"a":3}').items()) == [("a", 3), ("b", 2)]


def test_json_nesting_limit(decoder):
    rs = afs.JSONResponseSerializer()
    assert decode(rs, b"[" * 512 + b"]" * 512) is not None
    with pytest.raises(afs.InvalidJSONError, match="512"):
        decode(rs, b"[" * 513 + b"]" * 513)


def test_json_copy_keeps_everything(decoder):
    rs = afs.JSONResponseSerializer(reading_options="fragments_allowed",
                                    removes_keys_with_null_values=True)
    rs.acceptable_status_codes = [200, 404]
    rs.acceptable_content_types = {"a/b"}
    c = rs.copy()
    rs.close()
    assert isinstance(c, afs.JSONResponseSerializer)
    assert (c.reading_options, c.removes_keys_with_null_values, c.acceptable_status_codes,
            c.acceptable_content_types) == (afs.JSONReadingOptions.FRAGMENTS_ALLOWED, True,
                                            (range(200, 201), range(404, 405)), {"a/b"})
    assert decode(c, b'[1, null]', "a/b", 404) == [1]
    with pytest.raises(afs.UnacceptableStatusError) as info:
        c.response_object(201, "a/b", b"[1, null]")
    assert info.value.document == [1]
    assert c.response_object(404, "a/b", b"null") is None


# -- the error document ---------------------------------------------------------------------


def test_error_document_on_404(decoder):
    rs = afs.JSONResponseSerializer()
    body = b'{"error": "no such user", "id": 7, "details": [null]}'
    with pytest.raises(afs.UnacceptableStatusError) as info:
        rs.response_object(404, "application/json; charset=utf-8", body)
    e = info.value
    assert e.message == "Request failed: not found (404)"
    assert e.status_code == 404 and e.code == afs.Status.UNACCEPTABLE_STATUS
    assert e.document == {"error": "no such user", "id": 7, "details": [None]}
    import pickle
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), back.document, back.status_code, back.message) == \
        (afs.UnacceptableStatusError, e.document, 404, e.message)


def test_error_without_a_document(decoder):
    rs = afs.JSONResponseSerializer()
    with pytest.raises(afs.UnacceptableStatusError) as info:
        rs.response_object(500, "application/json", b"<html>oops</html>")
    assert info.value.document is None and "could not be decoded" in info.value.message
    with pytest.raises(afs.UnacceptableStatusError) as info:
        rs.response_object(503, "application/json", b"")
    assert info.value.document is None
    with pytest.raises(afs.UnacceptableStatusError, match="unacceptable content-type") as info:
        rs.response_object(404, "text/html", b"<html/>")  # the status wins; nothing decoded
    assert info.value.document is None


# -- AFPropertyListResponseSerializerTests ----------------------------------------------------

PLIST_OBJECT = {
    "string": "héllo \U0001F600 <&> \t",
    "int": 42, "negative": -7, "int64 max": 2**63 - 1, "int64 min": -2**63,
    "real": 3.25, "tiny": 5e-324, "bools": [True, False],
    "data": b"\x00\x01\xff" * 10, "empty data": b"",
    "nested": {"array": [1, [2, [3, {"deep": "yes"}]]], "empty": {}, "list": []},
    "": "empty key",
}


@pytest.mark.parametrize("fmt", [plistlib.FMT_XML, plistlib.FMT_BINARY], ids=["xml", "binary"])
def test_plist_bodies_written_by_plistlib(fmt):
    rs = afs.PropertyListResponseSerializer()
    body = plistlib.dumps(PLIST_OBJECT, fmt=fmt)
    got = rs.response_object(200, "application/x-plist", body)
    assert same(got, plistlib.loads(body))
    assert same(rs.response_object(200, "application/x-plist", plistlib.dumps([1, "a"], fmt=fmt)),
                [1, "a"])
    big = rs.response_object(200, "application/x-plist", plistlib.dumps([2**64 - 1], fmt=fmt))
    assert same(big, [float(2**64 - 1)])  # beyond int64: a double, as Foundation reads it
    when = datetime.datetime(2024, 1, 2, 3, 4, 5)
    assert rs.response_object(200, "application/x-plist",
                              plistlib.dumps({"d": when}, fmt=fmt)) == {
        "d": when.replace(tzinfo=datetime.timezone.utc)}  # a date value since issue 24


def test_plist_random_documents_match_plistlib():
    rng = random.Random(5)

    def value(depth):
        r = rng.random()
        if depth > 3 or r < 0.5:
            return rng.choice([rng.randrange(-2**63, 2**63), rng.random() * 1e6, True, False,
                               "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(5)),
                               bytes(rng.randrange(256) for _ in range(rng.randrange(9)))])
        if r < 0.75:
            return [value(depth + 1) for _ in range(rng.randrange(5))]
        return {f"k{i}": value(depth + 1) for i in range(rng.randrange(5))}

    rs = afs.PropertyListResponseSerializer()
    for _ in range(30):
        obj = {"root": value(0)}
        for fmt in (plistlib.FMT_XML, plistlib.FMT_BINARY):
            body = plistlib.dumps(obj, fmt=fmt)
            assert same(rs.response_object(200, "application/x-plist", body), obj)


def test_plist_mime_types_empty_and_invalid_bodies():
    rs = afs.PropertyListResponseSerializer()
    assert rs.acceptable_content_types == {"application/x-plist"}
    with pytest.raises(afs.UnacceptableContentTypeError, match="application/json"):
        rs.response_object(200, "application/json", plistlib.dumps({}))
    assert rs.response_object(200, "application/x-plist", b"") is None
    assert rs.response_object(200, "application/x-plist", b" ") is None
    assert rs.response_object(204, None, b"") is None
    with pytest.raises(afs.InvalidPlistError, match="offset"):
        rs.response_object(200, "application/x-plist", b"invalid")
    with pytest.raises(afs.InvalidPlistError, match="offset"):
        rs.response_object(200, "application/x-plist", b"bplist00\0\0")


# -- AFCompoundResponseSerializerTests -------------------------------------------------------


def test_compound_tries_members_in_order():
    json_rs, plist_rs = afs.JSONResponseSerializer(), afs.PropertyListResponseSerializer()
    c = afs.CompoundResponseSerializer([json_rs, plist_rs])
    assert c.response_object(200, "application/json", b'{"a":1}') == {"a": 1}
    assert c.response_object(200, "application/x-plist", plistlib.dumps({"b": 2})) == {"b": 2}
    with pytest.raises(afs.UnacceptableContentTypeError, match="text/html"):
        c.response_object(200, "text/html", b"<html/>")  # none accepts: the first's outcome
    # an HTTP member first takes everything as bytes
    first = afs.CompoundResponseSerializer([afs.HTTPResponseSerializer(), json_rs])
    assert first.response_object(200, "application/json", b"[1]") == b"[1]"
    last = afs.CompoundResponseSerializer([json_rs, afs.HTTPResponseSerializer()])
    assert last.response_object(200, "application/json", b"[1]") == [1]
    assert last.response_object(200, "text/html", b"<html/>") == b"<html/>"
    # a compound member contributes its members, in order
    nested = afs.CompoundResponseSerializer([c, afs.HTTPResponseSerializer()])
    assert [type(m) for m in nested.members] == [afs.JSONResponseSerializer,
                                                 afs.PropertyListResponseSerializer,
                                                 afs.HTTPResponseSerializer]
    assert nested.response_object(200, "text/plain", b"x") == b"x"


def test_compound_error_document_comes_from_the_member_that_accepts_the_type():
    c = afs.CompoundResponseSerializer([afs.PropertyListResponseSerializer(),
                                        afs.JSONResponseSerializer()])
    with pytest.raises(afs.UnacceptableStatusError) as info:
        c.response_object(500, "application/json", b'{"error": "boom"}')
    assert "internal server error (500)" in info.value.message
    assert info.value.document == {"error": "boom"} and info.value.status_code == 500


def test_compound_settings_apply_to_every_member():
    c = afs.CompoundResponseSerializer([afs.JSONResponseSerializer(),
                                        afs.PropertyListResponseSerializer()])
    assert c.acceptable_status_codes == (range(200, 300),)
    with pytest.raises(ValueError, match="differ"):
        c.acceptable_content_types
    assert c.removes_keys_with_null_values is False and c.reading_options == 0
    c.acceptable_status_codes = [range(200, 300), 404]
    c.acceptable_content_types = {"application/json", "application/x-plist"}
    c.removes_keys_with_null_values = True
    c.reading_options = "fragments_allowed"
    assert c.acceptable_content_types == {"application/json", "application/x-plist"}
    for m in c.members:
        assert m.acceptable_status_codes == (range(200, 300), range(404, 405))
        assert m.acceptable_content_types == {"application/json", "application/x-plist"}
    assert c.response_object(404, "application/json", b'[1, null]') == [1]
    assert c.response_object(200, "application/json", b'"s"') == "s"
    copy = c.copy()
    c.close()
    assert copy.response_object(404, "application/json", b'[null]') == []
    changed = copy.members[0]
    changed.removes_keys_with_null_values = False  # a copy: the compound keeps its own
    assert copy.removes_keys_with_null_values is True


# -- bodies of every bytes-like kind -----------------------------------------------------------


def test_bytes_like_bodies(decoder):
    rs = afs.JSONResponseSerializer()
    body = b'{"a": [1, 2, "x"]}'
    expected = {"a": [1, 2, "x"]}
    mutable = bytearray(b"xx" + body)
    for data in (body, bytearray(body), memoryview(body), memoryview(bytearray(body)),
                 memoryview(b"xx" + body)[2:], memoryview(mutable)[2:],
                 memoryview(b"x".join(bytes([c]) for c in body))[::2]):
        assert rs.response_object(200, "application/json", data) == expected
    mutable.append(0)  # no buffer export left behind
    words = array.array("B", body)
    assert rs.response_object(200, "application/json", words) == expected
    assert rs.response_object(200, "application/json", memoryview(b"")) is None


# -- lifecycle -------------------------------------------------------------------------------


def test_lifecycle():
    rs = afs.JSONResponseSerializer()
    assert not rs.closed and "JSONResponseSerializer" in repr(rs)
    rs.close()
    rs.close()  # idempotent
    assert rs.closed and "closed" in repr(rs)
    for use in (lambda: rs.response_object(200, "application/json", b"[]"),
                lambda: rs.validate(200, None, b""), lambda: rs.copy(),
                lambda: setattr(rs, "acceptable_status_codes", 200),
                lambda: setattr(rs, "removes_keys_with_null_values", True)):
        with pytest.raises(afs.HandleClosedError):
            use()
    with pytest.raises(ValueError):  # HandleClosedError is a ValueError, as for files
        rs.validate(200, None, b"")
    with afs.PropertyListResponseSerializer() as p:
        assert p.response_object(200, "application/x-plist", plistlib.dumps([1])) == [1]
    assert p.closed
    c = afs.CompoundResponseSerializer([afs.JSONResponseSerializer()])
    members = c._members
    with c:
        pass
    assert c.closed and all(m.closed for m in members)
    with pytest.raises(afs.HandleClosedError):
        c.members
    with pytest.raises(afs.HandleClosedError):
        afs.CompoundResponseSerializer([rs])  # a closed member
    # garbage collection frees without close()
    for _ in range(100):
        afs.CompoundResponseSerializer([afs.JSONResponseSerializer(), afs.HTTPResponseSerializer()])
    gc.collect()


def test_decoded_values_are_freed_in_every_path():
    """The C tree of every outcome is freed: resident memory stays flat over many decodes
    that return, raise with a document, or raise without one."""
    rs = afs.JSONResponseSerializer()
    body = json.dumps({"items": [{"id": i, "name": "x" * 50} for i in range(200)]}).encode()

    def rss_kib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4

    def run(n):
        for _ in range(n):
            rs.response_object(200, "application/json", body)
            with pytest.raises(afs.UnacceptableStatusError):
                rs.response_object(404, "application/json", body)
            with pytest.raises(afs.InvalidJSONError):
                rs.response_object(200, "application/json", body[:-1])
    for flag in (True, False):
        response._DECODE_AS_PICKLE = flag
        try:
            run(50)
            gc.collect()
            before = rss_kib()
            run(300)
            gc.collect()
            grown = rss_kib() - before
        finally:
            response._DECODE_AS_PICKLE = True
        # 900 decodes of a 17 kB document (~1200 C nodes each): a leak would add ~100 MB
        assert grown < 16 * 1024, f"resident memory grew {grown} KiB (json module: {flag})"


# -- wrong types -----------------------------------------------------------------------------


def test_wrong_types_raise_type_error():
    rs = afs.JSONResponseSerializer()
    for call in (lambda: rs.response_object("200", "application/json", b"[]"),
                 lambda: rs.response_object(200.0, "application/json", b"[]"),
                 lambda: rs.response_object(True, "application/json", b"[]"),
                 lambda: rs.response_object(200, 5, b"[]"),
                 lambda: rs.response_object(200, "application/json", "[]"),
                 lambda: rs.response_object(200, "application/json", 5),
                 lambda: rs.response_object(200, "application/json", [1]),
                 lambda: rs.validate(None, None, b""),
                 lambda: setattr(rs, "acceptable_status_codes", "200"),
                 lambda: setattr(rs, "acceptable_status_codes", [200.0]),
                 lambda: setattr(rs, "acceptable_status_codes", [True]),
                 lambda: setattr(rs, "acceptable_status_codes", object()),
                 lambda: setattr(rs, "acceptable_content_types", "application/json"),
                 lambda: setattr(rs, "acceptable_content_types", [b"application/json"]),
                 lambda: setattr(rs, "acceptable_content_types", 5),
                 lambda: setattr(rs, "reading_options", 1.5),
                 lambda: afs.CompoundResponseSerializer([rs, "json"]),
                 lambda: afs.CompoundResponseSerializer(rs),
                 lambda: afs.CompoundResponseSerializer(None)):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(OverflowError):
        rs.response_object(1 << 40, "application/json", b"[]")
    with pytest.raises(afs.InvalidArgumentError, match="NUL"):
        rs.response_object(200, "application/json\0x", b"[]")
    with pytest.raises(afs.InvalidArgumentError):
        rs.acceptable_content_types = ["not a type"]
    with pytest.raises(ValueError, match="use None"):
        rs.acceptable_content_types = []
    with pytest.raises(afs.InvalidArgumentError):
        afs.CompoundResponseSerializer([])
    assert rs.acceptable_content_types == {"application/json", "text/json", "text/javascript"}


# -- the two JSON decoders agree ---------------------------------------------------------------


def _suite_files(prefix):
    return sorted(p for p in JSON_TEST_SUITE.iterdir() if p.name.startswith(prefix))


def test_json_test_suite_both_decoders_agree(monkeypatch):
    """Every y_ and i_ file of JSONTestSuite: the json-module path and the walk give the same
    objects (types, order, -0.0) or the same error, with and without null removal; every n_
    file is refused (but an empty or one-space body, which is no object)."""
    files = _suite_files("y_") + _suite_files("i_") + _suite_files("n_")
    assert len(files) > 300
    accepted = 0
    for removes in (False, True):
        rs = afs.JSONResponseSerializer(reading_options="fragments_allowed",
                                        removes_keys_with_null_values=removes)
        for path in files:
            body = path.read_bytes()
            outcomes = []
            for flag in (True, False):
                monkeypatch.setattr(response, "_DECODE_AS_PICKLE", flag)
                try:
                    outcomes.append(("ok", rs.response_object(200, "application/json", body)))
                except afs.SerializationError as e:
                    outcomes.append(("error", str(e)))
            (kind_a, a), (kind_b, b) = outcomes
            assert kind_a == kind_b and (same(a, b) if kind_a == "ok" else a == b), path.name
            if path.name.startswith("y_"):
                assert kind_a == "ok", (path.name, a)
            if path.name.startswith("n_"):
                if body in (b"", b" "):  # AFNetworking's rule: no object and no error
                    assert (kind_a, a) == ("ok", None), path.name
                else:
                    assert kind_a == "error", path.name
            accepted += kind_a == "ok"
    assert accepted > 200


def test_random_documents_both_decoders_agree(monkeypatch):
    rng = random.Random(6)
    words = ["alpha", "café", "日本語", "emoji \U0001F600", "tab\t", 'q"q', "back\\slash",
             "nul\0", "line\nbreak", "\u2028", ""]

    def number():
        return rng.choice([rng.randrange(-2**70, 2**70), rng.randrange(-1000, 1000),
                           rng.uniform(-1e300, 1e300), rng.random() * 1e-300, -0.0, 0.0,
                           float(rng.randrange(1000)), 2**63 - 1, -2**63, 2**63])

    def value(depth):
        r = rng.random()
        if depth > 5 or r < 0.45:
            return rng.choice([number(), rng.choice(words), True, False, None])
        if r < 0.7:
            return [value(depth + 1) for _ in range(rng.randrange(6))]
        return {rng.choice(words) + str(rng.randrange(3)): value(depth + 1)
                for _ in range(rng.randrange(6))}

    for removes in (False, True):
        rs = afs.JSONResponseSerializer(removes_keys_with_null_values=removes)
        for _ in range(60):
            body = json.dumps([value(0) for _ in range(5)], ensure_ascii=rng.random() < 0.5,
                              indent=rng.choice([None, 1])).encode()
            results = []
            for flag in (True, False):
                monkeypatch.setattr(response, "_DECODE_AS_PICKLE", flag)
                results.append(rs.response_object(200, "application/json", body))
            assert same(results[0], results[1]), body[:200]


# -- threads and Value.to_python ---------------------------------------------------------------


def test_one_serializer_many_threads(decoder):
    rs = afs.JSONResponseSerializer(removes_keys_with_null_values=True)
    body = json.dumps({"items": [{"i": i, "n": None} for i in range(300)]}).encode()
    expected = {"items": [{"i": i} for i in range(300)]}
    errors = []

    def work():
        try:
            for _ in range(20):
                assert rs.response_object(200, "application/json", body) == expected
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_value_to_python():
    tree = {"s": "x\0y", "i": -5, "d": 2.5, "b": True, "n": None, "data": b"\0\1",
            "list": [1, [2, {"k": "v"}]], "k\0ey": {}, "set": {3, "a"}}
    with afs.Value(tree) as v:
        got = v.to_python()
        assert got == {**tree, "set": frozenset({3, "a"})} and type(got["set"]) is frozenset
        assert v.to_python() == got  # walking twice gives the same
    with pytest.raises(afs.HandleClosedError):
        v.to_python()
    # sets whose members are unhashable, or equal in Python, stay lists in set order
    assert afs.Value([{(1, 2)}, {"a"}]).to_python() == [[[1, 2]], frozenset({"a"})]
    lib = _ffi.lib
    c_set = lib.afs_value_new_set()  # 1, 1.0 and true: three members in C, one in Python
    for member in (lib.afs_value_new_int(1), lib.afs_value_new_double(1.0),
                   lib.afs_value_new_bool(True)):
        lib.afs_value_append(c_set, member)
    with afs.Value._adopt(c_set) as v:
        assert [(type(m), m) for m in v.to_python()] == [(int, 1), (float, 1.0), (bool, True)]
    with afs.Value(frozenset()) as empty:
        assert empty.to_python() == frozenset()
    for scalar in ("text", 7, 1.25, False, None, b"raw", 2**63 - 1):
        assert same(afs.Value(scalar).to_python(), scalar)
    deep = [[]]
    for _ in range(500):
        deep = [deep]
    assert afs.Value(deep).to_python() == deep  # iterative: no recursion limit involved
