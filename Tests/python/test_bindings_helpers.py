"""percent_escape, query_string and the library's identity."""
import re

import pytest

import afserialization as afs
from afserialization import _ffi


def test_percent_escape_vectors_from_afnetworking():
    assert afs.percent_escape(":#[]@!$&'()*+,;=?/") == \
        "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D?/"
    assert afs.percent_escape(" ") == "%20"
    assert afs.percent_escape("%20") == "%2520"
    assert afs.percent_escape("👴🏿") == "%F0%9F%91%B4%F0%9F%8F%BF"
    assert afs.percent_escape("AZaz09-._~/?") == "AZaz09-._~/?"
    assert afs.percent_escape("") == ""


def test_percent_escape_takes_bytes_and_rejects_invalid_utf8():
    assert afs.percent_escape("é".encode()) == "%C3%A9"
    with pytest.raises(afs.InvalidUTF8Error) as e:
        afs.percent_escape(b"ab\xff")
    assert e.value.code is afs.Status.INVALID_UTF8 and "2" in e.value.message
    with pytest.raises(afs.InvalidUTF8Error):
        afs.percent_escape("a\udc80")
    with pytest.raises(TypeError):
        afs.percent_escape(12)  # type: ignore[arg-type]


def test_percent_escape_keeps_nul_bytes():
    assert afs.percent_escape("a\0b") == "a%00b"


def test_query_string_default_style():
    params = {"b": [1, 2], "a": "x y", "c": {"z": True, "y": None}, "s": {"b", "a"}}
    assert afs.query_string(params) == \
        "a=x%20y&b%5B%5D=1&b%5B%5D=2&c%5By%5D&c%5Bz%5D=1&s=a&s=b"
    assert afs.query_string({}) == ""
    assert afs.query_string(None) == ""


def test_query_string_scalar_texts():
    assert afs.query_string({"f": 1.0, "g": 0.1, "h": 1e16, "i": -0.0, "d": b"\x00~"}) == \
        "d=%00~&f=1&g=0.1&h=1e%2B16&i=-0"


def test_query_string_needs_a_dictionary():
    with pytest.raises(afs.InvalidArgumentError):
        afs.query_string([1, 2])


def test_query_string_matches_urlencode_quoting_for_flat_strings():
    import urllib.parse
    d = {f"k{i}": f"v {i}/é" for i in range(50)}
    ours = afs.query_string(d)
    ref = "&".join(f"{urllib.parse.quote(k, safe='/?-._~')}={urllib.parse.quote(v, safe='/?-._~')}"
                   for k, v in sorted(d.items()))
    assert ours == ref


def test_library_version_and_path():
    assert re.fullmatch(r"\d+\.\d+\.\d+", afs.library_version)
    assert afs.library_path.endswith(".so") or ".so." in afs.library_path
    assert afs.LIBRARY_ENV == "AFSERIALIZATION_LIBRARY"


def test_status_names_match_the_library():
    for status in afs.Status:
        assert _ffi.lib.afs_status_name(status).decode() == status.c_name
    assert _ffi.lib.afs_status_name(999).decode() == "AFS_E_UNKNOWN"


def test_library_version_is_an_attribute_like_library_path():
    assert isinstance(afs.library_version, str) and isinstance(afs.library_path, str)
    assert afs.library_version == afs.__version__
    with pytest.warns(DeprecationWarning, match="attribute"):
        assert afs.library_version() == afs.__version__  # the earlier function, still works


def test_dir_lists_the_api_only():
    names = dir(afs)
    assert "annotations" not in names
    assert set(afs.__all__) <= set(names)


def test_no_memory_error_is_a_memory_error():
    assert issubclass(afs.NoMemoryError, MemoryError)


def test_append_stream_refuses_text_at_append(tmp_path):
    import io
    path = tmp_path / "t.txt"
    path.write_text("hello")
    form = afs.HTTPRequestSerializer().multipart_form("POST", "http://h/", None)
    with open(path) as text, form:
        for source in (text, io.StringIO("hello"), ["a", "b"]):
            with pytest.raises(TypeError, match="str|text"):
                form.append_stream(source, 5, "f", "t.txt", "text/plain")
        with open(path, "rb") as binary:
            form.append_stream(binary, 5, "f", "t.txt", "text/plain")  # accepted
            with form.finish() as request:
                assert b"hello" in request.body_stream.read()
