"""HTTPRequestSerializer, JSONRequestSerializer, PropertyListRequestSerializer: headers,
authorization, URI methods, encodings, request properties, query styles, the custom query
serializer (including one that raises), copies, lifecycle and threads."""
import base64
import gc
import json
import plistlib
import threading

import pytest

import afserialization as afs
from afserialization import _ffi

URL = "http://example.com/path"


@pytest.fixture
def s():
    with afs.HTTPRequestSerializer() as serializer:
        yield serializer


# -- headers ---------------------------------------------------------------------------


def test_default_headers(s):
    assert list(s.headers) == ["Accept-Language", "User-Agent"]
    assert "AFSerialization/" in s.headers["user-agent"]
    assert s.headers["ACCEPT-LANGUAGE"]
    assert len(s.headers) == 2


def test_headers_mapping_is_case_insensitive_and_backed_by_c(s):
    s.headers["X-Token"] = "abc"
    assert s.headers["x-token"] == "abc" and "X-TOKEN" in s.headers
    s.headers["x-token"] = "def"  # replaces in place
    assert s.headers["X-Token"] == "def"
    assert [n.lower() for n in s.headers].count("x-token") == 1
    assert _ffi.lib.afs_serializer_copy_header(s._h.get(), b"X-TOKEN") == "def"
    r = s.request("GET", URL)
    assert r.headers["x-token"] == "def"
    del s.headers["X-TOKEN"]
    assert "X-Token" not in s.headers
    with pytest.raises(KeyError):
        del s.headers["X-Token"]
    with pytest.raises(KeyError):
        s.headers["nope"]
    s.headers["User-Agent"] = None  # None removes, like the C API
    assert "User-Agent" not in s.headers and "User-Agent" not in s.request("GET", URL).headers
    assert s.headers.get("missing") is None
    assert 1 not in s.headers  # type: ignore[comparison-overlap]


def test_headers_setter_replaces_all(s):
    s.headers = {"A": "1", "B": "2"}
    assert dict(s.headers) == {"A": "1", "B": "2"}
    s.headers.update([("C", "3")])
    assert dict(s.headers) == {"A": "1", "B": "2", "C": "3"}
    assert "SerializerHeaders" in repr(s.headers)


def test_headers_enumerate_what_c_set(s):
    # set behind the mapping's back, as C code sharing the serializer would
    _ffi.lib.afs_serializer_set_header(s._h.get(), b"X-From-C", b"a: b")
    _ffi.lib.afs_serializer_set_basic_auth(s._h.get(), b"u", b"p")
    assert list(s.headers) == ["Accept-Language", "User-Agent", "X-From-C", "Authorization"]
    assert s.headers.items()[2:] == [("X-From-C", "a: b"), ("Authorization", "Basic dTpw")]
    assert len(s.headers) == 4 and s.headers.copy()["X-From-C"] == "a: b"
    _ffi.lib.afs_serializer_set_header(s._h.get(), b"x-from-c", None)
    _ffi.lib.afs_serializer_clear_authorization(s._h.get())
    assert list(s.headers) == ["Accept-Language", "User-Agent"]
    s.headers["Empty"] = ""
    assert s.headers.items()[-1] == ("Empty", "") and dict(s.headers)["Empty"] == ""
    del s.headers["Accept-Language"], s.headers["User-Agent"], s.headers["empty"]
    assert list(s.headers) == [] and len(s.headers) == 0 and dict(s.headers) == {}


def test_request_headers_do_not_override_request_ones(s):
    s.headers["Content-Type"] = "text/plain"
    r = s.request("POST", URL, {"a": 1})
    assert r.headers["content-type"] == "text/plain"


def test_invalid_headers(s):
    with pytest.raises(afs.InvalidHeaderError):
        s.headers["Bad Name"] = "x"
    for value in ("a\r\nInjected: 1", "a\nb", "a\rb"):
        with pytest.raises(afs.InvalidHeaderError):
            s.headers["X"] = value
    with pytest.raises(afs.InvalidHeaderError, match="NUL"):
        s.headers["X"] = "a\0b"
    assert "X" not in s.headers


def test_basic_auth(s):
    s.set_basic_auth("Aladdin", "open sesame")
    assert s.headers["Authorization"] == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
    assert "Authorization" in list(s.headers)
    r = s.request("GET", URL)
    assert base64.b64decode(r.headers["authorization"].split()[1]) == b"Aladdin:open sesame"
    s.clear_authorization()
    assert "Authorization" not in s.headers and "Authorization" not in list(s.headers)
    s.set_basic_auth("ü", "")
    assert base64.b64decode(s.headers["Authorization"][6:]).decode() == "ü:"


# -- how parameters land -----------------------------------------------------------------


def test_get_query_insertion(s):
    assert s.request("GET", "http://h/p", {"a": 1}).url == "http://h/p?a=1"
    assert s.request("GET", "http://h/p?x=1", {"a": 1}).url == "http://h/p?x=1&a=1"
    assert s.request("GET", "http://h/p?", {"a": 1}).url == "http://h/p?a=1"
    assert s.request("GET", "http://h/p#f", {"a": 1}).url == "http://h/p?a=1#f"
    r = s.request("HEAD", "http://h/", {"a": 1})
    assert r.body is None and "Content-Type" not in r.headers


def test_post_form_body(s):
    r = s.request("POST", URL, {"b": "x y", "a": [1, 2]})
    assert r.body == b"a%5B%5D=1&a%5B%5D=2&b=x%20y"
    assert r.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert r.url == URL
    empty = s.request("POST", URL)
    assert empty.body == b"" and empty.headers["content-type"].startswith("application/x-www")


def test_uri_methods(s):
    assert s.uri_methods == {"GET", "HEAD", "DELETE"}
    s.uri_methods = ["post", "GET"]
    assert s.uri_methods == {"POST", "GET"}
    assert s.request("POST", URL, {"a": 1}).url == URL + "?a=1"
    assert s.request("delete", URL, {"a": 1}).body == b"a=1"
    s.uri_methods = []
    assert s.request("GET", URL, {"a": 1}).body == b"a=1"
    with pytest.raises(afs.InvalidMethodError):
        s.uri_methods = ["BAD METHOD"]


def test_string_encoding(s):
    assert s.string_encoding is afs.StringEncoding.UTF8
    s.string_encoding = "latin-1"
    assert s.string_encoding is afs.StringEncoding.ISO_8859_1
    s.string_encoding = "ascii"
    assert s.request("POST", URL, {"a": "é"}).body == b"a=%C3%A9"  # escaped queries are ASCII

    def raw(request, params):
        return "a=" + params["a"]
    s.query_serializer = raw
    with pytest.raises(afs.EncodingError):
        s.request("POST", URL, {"a": "é"})
    s.string_encoding = afs.StringEncoding.ISO_8859_1
    assert s.request("POST", URL, {"a": "é"}).body == b"a=\xe9"
    with pytest.raises(ValueError):
        s.string_encoding = "klingon"
    with pytest.raises(afs.InvalidArgumentError):
        s.string_encoding = 9


def test_query_styles(s):
    params = {"a": [1, 2], "b": True, "c": "x y+z"}
    assert s.request("GET", URL, params).url.endswith("?a%5B%5D=1&a%5B%5D=2&b=1&c=x%20y%2Bz")
    s.array_style = afs.ArrayStyle.NO_BRACKETS
    s.bool_style = "literal"
    s.space_style = "plus"
    assert (s.array_style, s.bool_style, s.space_style) == \
        (afs.ArrayStyle.NO_BRACKETS, afs.BoolStyle.LITERAL, afs.SpaceStyle.PLUS)
    assert s.request("GET", URL, params).url.endswith("?a=1&a=2&b=true&c=x+y%2Bz")
    s.set_query_style(array="indexed")
    assert s.request("POST", URL, params).body == b"a%5B0%5D=1&a%5B1%5D=2&b=true&c=x+y%2Bz"
    with pytest.raises(ValueError, match="unknown ArrayStyle"):
        s.array_style = "sideways"
    with pytest.raises(afs.InvalidArgumentError, match="array style"):
        s.set_query_style(array=7)
    assert s.array_style is afs.ArrayStyle.INDEXED  # unchanged after a failure


def test_params_of_the_wrong_shape(s):
    with pytest.raises(afs.InvalidArgumentError):
        s.request("GET", URL, [1, 2])
    with pytest.raises(afs.InvalidArgumentError):
        s.request("POST", URL, "text")


def test_request_properties(s):
    r = s.request("GET", URL)
    assert r.properties == {"timeout_interval": 60.0, "cache_policy": 0,
                            "should_handle_cookies": True, "should_use_pipelining": False,
                            "allows_cellular_access": True, "network_service_type": 0}
    s.timeout_interval = 2.5
    s.cache_policy = 1
    s.should_handle_cookies = False
    s.should_use_pipelining = True
    s.allows_cellular_access = False
    s.network_service_type = 3
    r = s.request("GET", URL)
    assert r.properties == {"timeout_interval": 2.5, "cache_policy": 1,
                            "should_handle_cookies": False, "should_use_pipelining": True,
                            "allows_cellular_access": False, "network_service_type": 3}
    assert (s.timeout_interval, s.cache_policy, s.should_handle_cookies,
            s.should_use_pipelining, s.allows_cellular_access, s.network_service_type) == \
        (2.5, 1, False, True, False, 3)


def test_serialize_a_request_built_by_hand(s):
    s.timeout_interval = 5
    s.headers["X-Default"] = "d"
    base = afs.Request("POST", URL, {"X-Own": "o", "Content-Type": "text/csv"})
    r = s.serialize(base, {"a": "1"})
    assert r.body == b"a=1" and r.headers["content-type"] == "text/csv"
    assert r.headers["X-Own"] == "o" and r.headers["X-Default"] == "d"
    assert r.timeout_interval == 60.0  # the request's own properties are kept
    assert base.body is None and "X-Default" not in base.headers  # a new request
    with pytest.raises(TypeError):
        s.serialize("not a request", {})  # type: ignore[arg-type]


# -- custom query serializer -------------------------------------------------------------


def test_query_serializer(s):
    seen = []

    def custom(request, params):
        seen.append((request.method, request.url, dict(request.headers), params))
        return ";".join(f"{k}:{v}" for k, v in sorted(params.items()))

    s.query_serializer = custom
    assert s.query_serializer is custom
    params = {"b": 2, "a": "x"}
    assert s.request("GET", URL, params).url == URL + "?a:x;b:2"
    assert s.request("POST", URL, params).body == b"a:x;b:2"
    assert seen[0][0] == "GET" and seen[0][1] == URL and seen[0][3] is params
    assert "User-Agent" in seen[0][2]
    s.query_serializer = None
    assert s.request("GET", URL, params).url == URL + "?a=x&b=2"


def test_query_serializer_that_raises_becomes_the_request_error(s):
    class Boom(Exception):
        pass

    def custom(request, params):
        raise Boom("no query today")

    s.query_serializer = custom
    with pytest.raises(afs.QueryCallbackError) as e:
        s.request("GET", URL, {"a": 1})
    assert isinstance(e.value.__cause__, Boom)
    assert e.value.code is afs.Status.QUERY_CALLBACK
    assert "Boom: no query today" in e.value.message
    # nothing left behind: the next request works
    s.query_serializer = lambda request, params: "ok=1"
    assert s.request("GET", URL, {"a": 1}).url == URL + "?ok=1"


def test_query_serializer_keyboard_interrupt_stays_an_interrupt(s):
    def custom(request, params):
        raise KeyboardInterrupt

    s.query_serializer = custom
    with pytest.raises(KeyboardInterrupt):   # Ctrl-C is never turned into a library error
        s.request("GET", URL, {"a": 1})
    s.query_serializer = lambda request, params: "ok=1"
    assert s.request("GET", URL, {"a": 1}).url == URL + "?ok=1"


def test_query_serializer_returning_none_or_junk(s):
    s.query_serializer = lambda request, params: None
    with pytest.raises(afs.QueryCallbackError, match="NULL") as e:
        s.request("GET", URL, {"a": 1})
    assert e.value.__cause__ is None
    s.query_serializer = lambda request, params: 42
    with pytest.raises(afs.QueryCallbackError) as e:
        s.request("GET", URL, {"a": 1})
    assert isinstance(e.value.__cause__, TypeError)
    s.query_serializer = lambda request, params: b"raw=1"
    assert s.request("GET", URL, {"a": 1}).url == URL + "?raw=1"
    s.query_serializer = lambda request, params: "bad url"  # encoded by URL intake
    assert s.request("GET", URL, {"a": 1}).url == URL + "?bad%20url"
    s.query_serializer = lambda request, params: "bad\r\nurl"
    with pytest.raises(afs.BadURLError):
        s.request("GET", URL, {"a": 1})
    with pytest.raises(TypeError):
        s.query_serializer = "not callable"  # type: ignore[assignment]


def test_borrowed_request_is_invalid_after_the_callback(s):
    kept = []

    def custom(request, params):
        kept.append(request)
        return "x=1"

    s.query_serializer = custom
    s.request("GET", URL, {"a": 1})
    with pytest.raises(afs.HandleClosedError, match="during the callback"):
        kept[0].url


def test_query_serializer_survives_garbage_collection(s):
    s.query_serializer = lambda request, params: "gc=1"
    gc.collect()
    assert s.request("GET", URL, {"a": 1}).url == URL + "?gc=1"


# -- copies, lifecycle, threads ----------------------------------------------------------


def test_copy_is_independent_and_keeps_everything(s):
    s.headers["X-A"] = "1"
    s.set_basic_auth("u", "p")
    s.array_style = "indexed"
    s.timeout_interval = 9
    s.uri_methods = ["GET"]
    s.query_serializer = lambda request, params: "copied=1"
    c = s.copy()
    assert type(c) is afs.HTTPRequestSerializer
    assert dict(c.headers) == dict(s.headers)
    assert c.array_style is afs.ArrayStyle.INDEXED and c.timeout_interval == 9
    assert c.uri_methods == {"GET"}
    s.query_serializer = None
    s.close()
    gc.collect()
    assert c.request("GET", URL, {"a": 1}).url == URL + "?copied=1"  # trampoline kept alive
    c.headers["X-B"] = "2"
    assert c.request("DELETE", URL, {"a": 1}).timeout_interval == 9
    import copy
    assert isinstance(copy.copy(c), afs.HTTPRequestSerializer)


def test_close_and_use_after_close():
    s = afs.HTTPRequestSerializer()
    r = s.request("GET", URL)
    s.close()
    s.close()  # idempotent
    assert s.closed and "closed" in repr(s)
    for use in (lambda: s.request("GET", URL), lambda: s.headers["A"],
                lambda: s.set_basic_auth("a", "b"), lambda: setattr(s, "timeout_interval", 1),
                lambda: s.copy(), lambda: s.multipart_form("POST", URL)):
        with pytest.raises(afs.HandleClosedError):
            use()
    assert r.url == URL  # requests outlive their serializer
    with afs.JSONRequestSerializer() as j:
        pass
    assert j.closed


def test_wrong_handle_type_is_a_type_error(s):
    r = s.request("GET", URL)
    with pytest.raises(TypeError, match="LP_afs_serializer"):
        _ffi.lib.afs_serializer_request(r._h.get(), b"GET", b"http://h/", None)
    with pytest.raises(TypeError):
        _ffi.lib.afs_request_url(s._h.get())
    with pytest.raises(TypeError):
        _ffi.lib.afs_value_free(r._h.get())


def test_many_threads_share_a_serializer(s):
    s.query_serializer = lambda request, params: "t=" + str(params["t"])
    errors = []

    def work(t):
        try:
            for i in range(200):
                r = s.request("GET", URL, {"t": t})
                assert r.url == f"{URL}?t={t}"
                if i % 50 == 0:
                    with pytest.raises(afs.BadURLError):
                        s.request("GET", "no scheme", {"t": t})
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors


# -- JSON and property lists -------------------------------------------------------------


def test_json_serializer():
    with afs.JSONRequestSerializer() as j:
        r = j.request("POST", URL, {"a": [1, "x/y", None, True, 2.5], "b": {"c": "é"}})
        assert r.headers["Content-Type"] == "application/json"
        assert r.body == '{"a":[1,"x\\/y",null,true,2.5],"b":{"c":"é"}}'.encode()
        assert json.loads(r.body) == {"a": [1, "x/y", None, True, 2.5], "b": {"c": "é"}}
        g = j.request("GET", URL, {"a": 1})
        assert g.url == URL + "?a=1" and g.body is None
        none = j.request("POST", URL)
        assert none.body is None and "Content-Type" not in none.headers


def test_json_options():
    j = afs.JSONRequestSerializer(options=afs.JSONWritingOptions.SORTED_KEYS
                                  | afs.JSONWritingOptions.WITHOUT_ESCAPING_SLASHES)
    assert j.request("POST", URL, {"b": "/", "a": 1}).body == b'{"a":1,"b":"/"}'
    j.options = ["pretty_printed"]
    assert j.options is afs.JSONWritingOptions.PRETTY_PRINTED
    assert j.request("POST", URL, {"a": []}).body == b'{\n  "a" : [\n\n  ]\n}'
    with pytest.raises(afs.InvalidJSONError, match="not valid JSON"):
        j.request("POST", URL, "fragment")
    j.options = "fragments_allowed"
    assert j.request("POST", URL, "fragment").body == b'"fragment"'
    with pytest.raises(afs.InvalidArgumentError):
        j.options = 64


def test_json_rejects_what_json_cannot_hold():
    j = afs.JSONRequestSerializer()
    for params in ({"a": float("nan")}, {"a": {1, 2}}, {"a": b"data"}):
        with pytest.raises(afs.InvalidJSONError):
            j.request("POST", URL, params)


@pytest.mark.parametrize("fmt", ["xml", "binary"])
def test_plist_serializer(fmt):
    p = afs.PropertyListRequestSerializer(format=fmt)
    assert p.format is afs.PropertyListFormat[fmt.upper()]
    params = {"s": "é", "i": 7, "d": 1.5, "b": True, "data": b"\x00\x01", "l": [1, "x"],
              "nested": {"k": "v"}}
    r = p.request("PUT", URL, params)
    assert r.headers["Content-Type"] == "application/x-plist"
    assert plistlib.loads(r.body) == params
    if fmt == "binary":
        assert r.body.startswith(b"bplist00")
    else:
        assert r.body.startswith(b"<?xml")
    with pytest.raises(afs.InvalidPlistError):
        p.request("POST", URL, {"a": None})
    with pytest.raises(afs.InvalidArgumentError):
        p.format = 300
    with pytest.raises(ValueError):
        p.format = "yaml"


def test_top_level_arrays_and_sets_as_bodies():
    j = afs.JSONRequestSerializer()
    assert j.request("POST", URL, [1, "a", (2.5, None)]).body == b'[1,"a",[2.5,null]]'
    assert j.request("POST", URL, ()).body == b"[]"
    p = afs.PropertyListRequestSerializer()
    assert plistlib.loads(p.request("POST", URL, ["x", 1, b"\x00"]).body) == ["x", 1, b"\x00"]
    with pytest.raises(afs.InvalidPlistError):
        p.request("POST", URL, {"s": frozenset([1])})
