"""One crossing each way (the pickle subset of header section 10), its safety, and the
polish that came with it: copies, errors that name causes and cycles, help(), the CLI."""
import copy
import io
import json
import math
import pickle
import pydoc
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import pytest

import afserialization as afs
from afserialization import _ffi, _transfer, response, values
from afserialization.__main__ import main

REPO = Path(__file__).resolve().parents[2]


# -- the format ---------------------------------------------------------------------------------


def test_every_python_type_of_the_subset_reaches_the_library_in_one_piece():
    params = {"s": "Zoë", "b": b"\x00\xff", "i": -(1 << 63), "f": 2.5, "t": True, "n": None,
              "l": [1, [2]], "tu": (3, 4), "set": {5}, "fs": frozenset(["x"]), "d": {"k": "v"}}
    v = afs.Value(params)
    out = v.to_python()
    assert out["s"] == "Zoë" and out["b"] == b"\x00\xff" and out["i"] == -(1 << 63)
    assert out["l"] == [1, [2]] and out["tu"] == [3, 4]       # tuples become arrays (lists)
    assert out["set"] == frozenset([5]) and out["fs"] == frozenset(["x"])
    assert out["d"] == {"k": "v"} and out["n"] is None and out["t"] is True


def test_pickle_and_walk_give_the_same_python_objects(monkeypatch):
    tree = {"a": [1, 1.0, True, "1", b"1", None], "set": {1, "1", b"1"}, "nested": {"x": {2.5}},
            "merged": afs.Value({"m": [0]}).to_python()}
    v = afs.Value(tree)
    assert v.to_python() == v._to_python_by_walking()
    c = afs.Value._adopt(_ffi.lib.afs_value_parse_json(b'{"k":[1,2]}', 11))
    assert c.to_python() == c._to_python_by_walking() == {"k": [1, 2]}


def test_a_set_python_would_merge_comes_back_as_a_list():
    s = afs.Value._adopt(_ffi.lib.afs_value_new_set())
    for member in (afs.Value(1), afs.Value(1.0), afs.Value(True)):
        _ffi.lib.afs_value_append(s._h.get(), _ffi.lib.afs_value_copy(member._h.get()))
    assert s.to_python() == [1, 1.0, True]


def test_the_library_refuses_pickles_that_name_code():
    for obj in (OrderedDict(a=1), bytearray(b"x"), io.BytesIO()):
        try:
            data = pickle.dumps(obj, 5)
        except TypeError:
            continue
        with pytest.raises(afs.InvalidArgumentError, match="outside the accepted subset"):
            _ffi.lib.afs_value_from_pickle(data, len(data))
    with pytest.raises(afs.InvalidArgumentError, match=r"GLOBAL .*os\.system"):
        evil = b"cos\nsystem\n(S'echo owned'\ntR."
        _ffi.lib.afs_value_from_pickle(evil, len(evil))


def test_python_never_loads_a_class_from_the_library():
    with pytest.raises(pickle.UnpicklingError, match="collections.OrderedDict"):
        _transfer.loads(pickle.dumps(OrderedDict(a=1), 5))
    with pytest.raises(pickle.UnpicklingError):
        _transfer.loads(b"cos\nsystem\n(S'echo owned'\ntR.")
    assert _transfer.loads(pickle.dumps({"a": [1, (2,), {3}]}, 5)) == {"a": [1, (2,), {3}]}


def test_other_types_still_work_node_by_node():
    assert afs.query_string(OrderedDict(b=1, a=bytearray(b"x"))) == "a=x&b=1"
    assert afs.query_string({"m": memoryview(b"y")}) == "m=y"


def test_a_request_is_one_call_and_reads_back_whole():
    r = afs.JSONRequestSerializer().request("POST", "https://example.com/u", {"name": "Zoë"})
    assert r.method == "POST" and r.url == "https://example.com/u"
    assert r.body == '{"name":"Zoë"}'.encode()
    assert r.headers["content-type"] == "application/json"
    r.headers["X-A"] = "1"
    assert r.headers["X-A"] == "1" and ("X-A", "1") in r.headers.items()
    r.headers["X-A"] = None            # None removes, as in C and on serializers
    assert "X-A" not in r.headers
    with pytest.raises(KeyError):
        del r.headers["X-A"]


def test_json_response_is_parsed_once_by_the_library():
    rs = afs.JSONResponseSerializer()
    body = b'{"a": [1, 2.5, "x", null], "big": 18446744073709551616, "neg": -0}'
    doc = rs.response_object(200, "application/json", body)
    assert doc["a"] == [1, 2.5, "x", None]
    assert isinstance(doc["big"], float) and doc["big"] == 2.0 ** 64   # as Foundation reads it
    assert math.copysign(1, doc["neg"]) == -1
    keys = [list(d) for d in rs.response_object(200, "application/json", b'[{"k":1},{"k":2}]')]
    assert keys[0][0] is keys[1][0]   # keys are shared str objects, as json.loads shares them
    assert not hasattr(response, "_drop_nulls") and not hasattr(response, "_JSON_DECODER")


# -- copies ------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [afs.HTTPRequestSerializer, afs.JSONRequestSerializer,
                                  afs.PropertyListRequestSerializer])
def test_serializer_copies_are_independent(make):
    s = make()
    for c in (copy.copy(s), copy.deepcopy(s), s.copy()):
        c.headers["X-Copy"] = "1"
        assert "X-Copy" not in s.headers and type(c) is type(s)


def test_response_serializer_copies_are_independent():
    rs = afs.JSONResponseSerializer()
    for c in (copy.copy(rs), copy.deepcopy(rs)):
        c.acceptable_status_codes = [200]
        assert rs.acceptable_status_codes == (range(200, 300),)


def test_request_copies_are_independent():
    r = afs.HTTPRequestSerializer().request("POST", "https://h/", {"a": "1"})
    for c in (copy.copy(r), copy.deepcopy(r), r.copy()):
        c.headers["X-Copy"] = "1"
        assert "X-Copy" not in r.headers and c.body == r.body


def test_value_copies_are_independent():
    v = afs.Value({"a": [1]})
    c = copy.deepcopy(v)
    v.close()
    assert c.to_python() == {"a": [1]} and copy.copy(c).to_python() == {"a": [1]}


def test_what_cannot_be_copied_says_so(tmp_path):
    s = afs.HTTPRequestSerializer()
    with s.multipart_form("POST", "https://h/") as form:
        with pytest.raises(TypeError, match="cannot be copied"):
            copy.copy(form)
        with pytest.raises(TypeError, match="cannot be copied"):
            copy.deepcopy(form)
        form.append_field("a", "b")
        with form.finish() as request:
            assert isinstance(request, afs.MultipartRequest)
            with pytest.raises(afs.UnsupportedError, match="body stream"):
                copy.copy(request)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(s)


# -- errors ------------------------------------------------------------------------------------


def test_append_field_none_names_the_parameter():
    with afs.HTTPRequestSerializer().multipart_form("POST", "https://h/") as form:
        with pytest.raises(afs.UnsupportedTypeError, match="value must be str or bytes-like"):
            form.append_field("n", None)  # type: ignore[arg-type]


@pytest.mark.parametrize("transport", [True, False])
def test_deep_and_cyclic_parameters_put_the_cause_first(monkeypatch, transport):
    monkeypatch.setattr(values, "_PARAMS_AS_PICKLE", transport)
    deep = {}
    node = deep
    for _ in range(600):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(afs.InvalidArgumentError) as e:
        afs.query_string(deep)
    message = str(e.value)
    assert "nested deeper than 512 levels" in message.split("(at")[0]
    assert len(message) < 300 and "levels)" in message
    cyclic = {"a": [1]}
    cyclic["a"].append(cyclic)
    with pytest.raises(afs.InvalidArgumentError) as e:
        afs.query_string(cyclic)
    assert "cycle" in str(e.value).split("(at")[0] and "params['a'][1]" in str(e.value)


# -- help and types ------------------------------------------------------------------------------


def test_help_of_an_enum_shows_members_not_int():
    text = pydoc.render_doc(afs.ValueKind, renderer=pydoc.plaintext)
    assert "DICT" in text and "bit_length" not in text and len(text.splitlines()) < 120
    assert afs.ValueKind.DICT + 1 == 9 and int(afs.Status.BAD_URL) == 3


def test_query_string_none_is_empty_as_documented():
    assert afs.query_string(None) == ""
    assert "None" in afs.query_string.__doc__


# -- the CLI -----------------------------------------------------------------------------------


def test_cli_options_after_items_and_json_item_errors(capsysbinary):
    assert main(["POST", "http://h/", "a:=1", "--json", "-I"]) == 0
    out, _ = capsysbinary.readouterr()
    assert out.endswith(b'{"a":1}')
    assert main(["-I", "POST", "http://h/", "n:=[1,"]) == 1
    _, err = capsysbinary.readouterr()
    assert b"item 'n:=[1,'" in err


def test_cli_version_and_program_name():
    env = {"PYTHONPATH": str(REPO / "bindings" / "python"),
           "AFSERIALIZATION_LIBRARY": _ffi.library_path}
    r = subprocess.run([sys.executable, "-m", "afserialization", "--version"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.startswith("afserialization ")
    r = subprocess.run([sys.executable, "-m", "afserialization"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 2 and "-m afserialization" in r.stderr


def test_cli_exits_quietly_on_a_broken_pipe(tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * (4 << 20))
    env = {"PYTHONPATH": str(REPO / "bindings" / "python"),
           "AFSERIALIZATION_LIBRARY": _ffi.library_path}
    p = subprocess.Popen([sys.executable, "-m", "afserialization", "-I", "-f", "POST", "http://h/",
                          f"f@{big}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == 141 and b"Traceback" not in err, err
