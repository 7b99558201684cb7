"""Python objects as parameters: every accepted type, limits, errors with paths, and the
two transports (JSON text and node by node) giving the same trees."""
import math
from collections import OrderedDict
from types import MappingProxyType

import pytest

import afserialization as afs
from afserialization import values


@pytest.fixture(params=["json", "nodes"])
def transport(request, monkeypatch):
    """Runs a test with each transport: JSON text parsed by the library, and node by node."""
    monkeypatch.setattr(values, "_PARAMS_AS_PICKLE", request.param == "json")
    return request.param


def qs(params):
    return afs.query_string(params)


def test_scalars(transport):
    assert qs({"s": "x", "t": True, "f": False, "i": -5, "d": 2.5, "n": None}) == \
        "d=2.5&f=0&i=-5&n&s=x&t=1"


def test_bool_is_not_int(transport):
    s = afs.HTTPRequestSerializer()
    s.bool_style = "literal"
    r = s.request("GET", "http://h/", {"b": True, "i": 1})
    assert r.url == "http://h/?b=true&i=1"


def test_containers(transport):
    assert qs({"l": [1, "a"], "t": (2,), "set": {3}, "fs": frozenset(["z"]),
               "d": {"k": [{"x": 1}]}}) == \
        "d%5Bk%5D%5B%5D%5Bx%5D=1&fs=z&l%5B%5D=1&l%5B%5D=a&set=3&t%5B%5D=2"


def test_other_mappings_and_sequences():
    assert qs(OrderedDict(b=1, a=2)) == "a=2&b=1"
    assert qs(MappingProxyType({"a": range(2)})) == "a%5B%5D=0&a%5B%5D=1"


def test_bytes_like_values(transport):
    assert qs({"b": b"\xff", "ba": bytearray(b"a b"), "mv": memoryview(b"/")}) == \
        "b=%FF&ba=a%20b&mv=/"


def test_int64_limits(transport):
    lo, hi = -(1 << 63), (1 << 63) - 1
    assert qs({"a": lo, "b": hi}) == f"a={lo}&b={hi}"
    with pytest.raises(afs.ValueOutOfRangeError) as e:
        qs({"a": [0, hi + 1]})
    assert isinstance(e.value, OverflowError) and isinstance(e.value, afs.InvalidArgumentError)
    assert "params['a'][1]" in str(e.value) and str(hi + 1) in str(e.value)
    with pytest.raises(OverflowError):
        qs({"a": lo - 1})


def test_special_floats_reach_the_library():
    assert qs({"n": math.nan, "i": math.inf, "m": -math.inf}) == "i=inf&m=-inf&n=nan"


def test_unsupported_types_name_the_path():
    with pytest.raises(afs.UnsupportedTypeError) as e:
        qs({"a": {"b": [1, object()]}})
    assert isinstance(e.value, TypeError)
    assert "params['a']['b'][1]" in str(e.value) and "object" in str(e.value)
    with pytest.raises(TypeError, match="keys must be str"):
        qs({1: "x"})
    with pytest.raises(TypeError):
        qs({"g": (x for x in [1])})


def test_lone_surrogates_are_invalid_utf8(transport):
    with pytest.raises(afs.InvalidUTF8Error) as e:
        qs({"k": ["ok", "bad\udc80"]})
    assert "params['k'][1]" in str(e.value)
    with pytest.raises(afs.InvalidUTF8Error):
        qs({"bad\ud800": 1})


def test_nul_in_strings_is_kept(transport):
    assert qs({"a": "x\0y"}) == "a=x%00y"


def test_both_transports_agree_on_a_rich_tree(monkeypatch):
    tree = {"name": "Zoë / ☃", "n": [1, -2, 3.25, 1e-7, 123456789012345.0, True, None],
            "nested": {"deep": {"deeper": ["x", {"y": "z"}]}, "empty": {}, "list": []},
            "ints": list(range(-3, 3)), "big": (1 << 62), "t": ("a", "b")}
    monkeypatch.setattr(values, "_PARAMS_AS_PICKLE", False)
    by_nodes = qs(tree)
    monkeypatch.setattr(values, "_PARAMS_AS_PICKLE", True)
    assert qs(tree) == by_nodes


def test_deep_nesting(transport):
    tree = leaf = {}
    for _ in range(400):
        leaf["a"] = {}
        leaf = leaf["a"]
    leaf["a"] = 1
    assert qs(tree) == "a" + "%5Ba%5D" * 400 + "=1"


def test_nesting_beyond_512_levels_is_refused():
    tree = []
    for _ in range(5000):
        tree = [tree]
    with pytest.raises(afs.InvalidArgumentError, match="deeper than 512"):
        qs({"a": tree})


def test_value_handle_lifecycle():
    v = afs.Value({"a": [1, 2]})
    assert v.kind is afs.ValueKind.DICT
    assert afs.query_string(v) == afs.query_string({"a": [1, 2]})
    s = afs.HTTPRequestSerializer()
    assert s.request("GET", "http://h/", v).url == "http://h/?a%5B%5D=1&a%5B%5D=2"
    assert "dict" in repr(v)
    v.close()
    v.close()  # idempotent
    assert v.closed and "closed" in repr(v)
    with pytest.raises(afs.HandleClosedError):
        v.kind
    with pytest.raises(ValueError):  # HandleClosedError is a ValueError
        afs.query_string(v)
    with afs.Value([1]) as w:
        assert w.kind is afs.ValueKind.ARRAY
    assert w.closed


def test_value_kinds():
    kinds = [(None, "NULL"), (True, "BOOL"), (1, "INT"), (1.5, "DOUBLE"), ("s", "STRING"),
             (b"d", "DATA"), ((1,), "ARRAY"), (frozenset([1]), "SET"), ({}, "DICT")]
    for obj, kind in kinds:
        with afs.Value(obj) as v:
            assert v.kind.name == kind, obj


def test_value_cannot_be_nested():
    with afs.Value(1) as v, pytest.raises(TypeError):
        afs.Value({"a": v})


def test_value_from_json():
    with afs.Value.from_json('{"b":[1,2.5,"x"],"a":null}') as v:
        assert v.kind is afs.ValueKind.DICT
        assert afs.query_string(v) == "a&b%5B%5D=1&b%5B%5D=2.5&b%5B%5D=x"
    with pytest.raises(afs.InvalidJSONError) as e:
        afs.Value.from_json(b'{"a":}')
    assert "5" in e.value.message  # the byte offset
