"""Alamofire's response rules on every response serializer (keywords and properties:
``empty_response_codes``, ``accepts_structured_suffix``, ``strips_xssi_prefix``;
``response_object(..., method=...)``), problem documents, and date values both ways
(``datetime.datetime`` in parameters, in decoded property lists, through the pickle
transfer and the node-by-node paths)."""
from __future__ import annotations

import datetime
import json
import plistlib

import pytest

import afserialization as afs
from afserialization import response as response_module

UTC = datetime.timezone.utc
KINDS = [afs.HTTPResponseSerializer, afs.JSONResponseSerializer, afs.PropertyListResponseSerializer,
         afs.ImageResponseSerializer]


@pytest.fixture(params=[True, False], ids=["pickle", "walk"])
def transfer(request, monkeypatch):
    monkeypatch.setattr(response_module, "_DECODE_AS_PICKLE", request.param)
    return request.param


@pytest.mark.parametrize("cls", KINDS, ids=lambda c: c.__name__)
def test_keywords_and_properties_on_every_serializer(cls):
    with cls(empty_response_codes=[204, 205], accepts_structured_suffix=True, strips_xssi_prefix=True) as s:
        assert s.empty_response_codes == (204, 205)
        assert s.accepts_structured_suffix is True and s.strips_xssi_prefix is True
        c = s.copy()
        assert c.empty_response_codes == (204, 205)
        s.empty_response_codes = None
        assert s.empty_response_codes is None
        with pytest.raises(TypeError):
            s.strips_xssi_prefix = 1
        with pytest.raises(afs.InvalidArgumentError):
            s.empty_response_codes = [42]
        c.close()


def test_empty_responses(transfer):
    with afs.JSONResponseSerializer() as s:
        assert s.response_object(200, "application/json", b"") is None   # AFNetworking's rule
        s.empty_response_codes = (204, 205)
        assert s.response_object(204, "application/json", b"") is None
        assert s.response_object(200, "application/json", b"", method="HEAD") is None
        with pytest.raises(afs.InvalidJSONError, match="not one of the empty-response codes"):
            s.response_object(200, "application/json", b"")
        with pytest.raises(afs.InvalidJSONError):
            s.response_object(200, "application/json", b"", method="GET")
        assert s.response_object(200, "application/json", b"[1]", method="GET") == [1]
    with afs.PropertyListResponseSerializer(empty_response_codes=[204]) as p:
        with pytest.raises(afs.InvalidPlistError):
            p.response_object(200, "application/x-plist", b"")
    with afs.HTTPResponseSerializer(empty_response_codes=[204]) as h:
        assert h.response_object(200, None, b"") is None


def test_compound_sets_the_rules_on_its_members(transfer):
    with afs.CompoundResponseSerializer([afs.JSONResponseSerializer(), afs.PropertyListResponseSerializer()],
                                        empty_response_codes=[204], strips_xssi_prefix=True) as c:
        assert all(m.empty_response_codes == (204,) for m in c.members)
        assert c.response_object(200, "application/json", b")]}'\n{\"a\": 1}") == {"a": 1}
        with pytest.raises(afs.InvalidPlistError):
            c.response_object(200, "application/x-plist", b"")


def test_structured_suffixes_and_problem_documents(transfer):
    body = json.dumps({"type": "about:blank", "title": "Teapot", "status": 418}).encode()
    with afs.JSONResponseSerializer() as s:
        with pytest.raises(afs.UnacceptableContentTypeError):
            s.response_object(200, "application/vnd.github+json", b"{}")
        with pytest.raises(afs.UnacceptableStatusError) as e:
            s.response_object(418, "application/problem+json", body)
        assert e.value.document["title"] == "Teapot" and e.value.status_code == 418
        s.accepts_structured_suffix = True
        assert s.response_object(200, "application/vnd.github+json", b"{}") == {}
        with pytest.raises(afs.UnacceptableContentTypeError):
            s.response_object(200, "application/vnd.github+xml", b"{}")


def test_xssi(transfer):
    with afs.JSONResponseSerializer(strips_xssi_prefix=True) as s:
        for prefix in (b")]}'", b")]}',", b")]}'\n", b")]}',\r\n"):
            assert s.response_object(200, "application/json", prefix + b'{"a":[1]}') == {"a": [1]}
        with pytest.raises(afs.InvalidJSONError, match="byte offset 8"):
            s.response_object(200, "application/json", b")]}'\n[1,]")
    with afs.JSONResponseSerializer() as s:
        with pytest.raises(afs.InvalidJSONError):
            s.response_object(200, "application/json", b")]}'\n[1]")


def test_method_must_be_text():
    with afs.JSONResponseSerializer() as s:
        with pytest.raises(TypeError):
            s.response_object(200, "application/json", b"[1]", method=1)


# -- dates ---------------------------------------------------------------------------------

def test_dates_in_values_both_ways():
    d = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    naive = datetime.datetime(2024, 5, 6, 7, 8, 9)
    with afs.Value({"d": d, "n": naive, "l": [d], "s": frozenset([d])}) as v:
        back = v.to_python()
    assert back == {"d": d, "n": naive.replace(tzinfo=UTC), "l": [d], "s": frozenset([d])}
    assert back["d"].tzinfo is UTC
    assert afs.ValueKind.DATE == 9


def test_dates_in_request_bodies():
    d = datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)
    with afs.JSONRequestSerializer() as s:
        assert json.loads(s.request("POST", "http://example.com/", {"when": d}).body) == {"when": "2020-01-02T03:04:05Z"}
    with afs.HTTPRequestSerializer() as s:
        assert s.request("GET", "http://example.com/", {"when": d}).url.endswith("when=2020-01-02T03%3A04%3A05Z")
    for fmt in ("xml", "binary"):
        with afs.PropertyListRequestSerializer(format=fmt) as s:
            body = s.request("POST", "http://example.com/", {"when": d}).body
        assert plistlib.loads(body) == {"when": d.replace(tzinfo=None)}


def test_dates_in_decoded_plists(transfer):
    d = datetime.datetime(2020, 1, 2, 3, 4, 5, 500000)
    with afs.PropertyListResponseSerializer() as s:
        got = s.response_object(200, "application/x-plist", plistlib.dumps({"d": d}, fmt=plistlib.FMT_BINARY))
    assert got == {"d": d.replace(tzinfo=UTC)}


def test_the_unpickler_allows_only_the_date_function():
    import pickle
    from afserialization import _transfer
    assert _transfer.loads(_transfer.dumps([datetime.datetime(2000, 1, 1, tzinfo=UTC)])) == [
        datetime.datetime(2000, 1, 1, tzinfo=UTC)]
    with pytest.raises(pickle.UnpicklingError):
        _transfer.loads(pickle.dumps(datetime.date(2000, 1, 1)))
