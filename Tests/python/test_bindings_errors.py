"""The exception classes: one per afs_status, the mapping from C errors, os_errno,
pickling, and the statuses that cannot be provoked from Python."""
import errno
import pickle

import pytest

import afserialization as afs
from afserialization import _ffi, errors

EXPECTED = {
    1: "InvalidArgumentError", 2: "InvalidUTF8Error", 3: "BadURLError",
    4: "InvalidMethodError", 5: "InvalidHeaderError", 6: "InvalidJSONError",
    7: "InvalidPlistError", 8: "EncodingError", 9: "QueryCallbackError", 10: "FileError",
    11: "StreamIOError", 12: "LengthMismatchError", 13: "StateError", 14: "UnsupportedError",
    15: "NoMemoryError", 16: "UnacceptableStatusError", 17: "UnacceptableContentTypeError",
    18: "InvalidXMLError", 19: "InvalidImageError", 20: "UntrustedError",
    21: "BadResponseError", 22: "LimitError", 23: "InvalidMultipartError",
}
BUILTIN = {15: MemoryError, 18: ValueError, 19: ValueError, 20: ValueError, 21: ValueError,
           22: ValueError, 23: ValueError}


def test_one_class_per_status():
    assert [s.value for s in afs.Status] == list(range(24))
    for code, name in EXPECTED.items():
        cls = errors.error_class(code)
        assert cls.__name__ == name and cls is getattr(afs, name)
        assert issubclass(cls, afs.SerializationError) and cls.status == code
        assert cls.__doc__.startswith(afs.Status(code).c_name)
        if code in BUILTIN:
            assert issubclass(cls, BUILTIN[code])
    assert errors.error_class(99) is afs.SerializationError


def test_c_error_struct_becomes_the_typed_exception():
    err = _ffi.afs_error()
    err.code = 10
    err.os_errno = errno.ENOENT
    err.message = "cannot open \"x\"".encode()
    e = err.to_exception()
    assert type(e) is afs.FileError and e.code is afs.Status.FILE
    assert e.message == 'cannot open "x"' and e.os_errno == errno.ENOENT
    assert str(e).startswith('AFS_E_FILE: cannot open "x" [errno 2: ')
    unknown = errors.make_error(42, "future status")
    assert type(unknown) is afs.SerializationError and unknown.code == 42
    assert str(unknown) == "status 42: future status"


def test_exceptions_pickle():
    for e in (afs.BadURLError(3, "bad", 0), afs.HandleClosedError("the thing"),
              afs.ValueOutOfRangeError("too big"), afs.UnsupportedTypeError("no"),
              afs.MissingFunctionError("afs_x", "/lib.so")):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and back.message == e.message and back.code == e.code


def test_python_side_classes_are_also_builtin_exceptions():
    assert issubclass(afs.HandleClosedError, ValueError)
    assert issubclass(afs.HandleClosedError, afs.StateError)
    assert issubclass(afs.UnsupportedTypeError, TypeError)
    assert issubclass(afs.ValueOutOfRangeError, OverflowError)
    assert issubclass(afs.MissingFunctionError, AttributeError)


def test_a_library_without_a_declared_function_is_refused(monkeypatch):
    # A declaration the library does not export: loading fails at once, naming it (no
    # partial library with stubs).
    monkeypatch.setattr(_ffi, "_DECLARATIONS", _ffi._DECLARATIONS + [("afs_not_there", None, [], None)])
    with pytest.raises(afs.MissingFunctionError, match="afs_not_there is not exported by"):
        _ffi.Library(_ffi.library_path)


def test_every_contract_function_is_declared_once():
    names = [d[0] for d in _ffi._DECLARATIONS]
    assert len(names) == len(set(names))
    import re
    from pathlib import Path
    header = (Path(__file__).resolve().parents[2] / "include" / "afserialization.h").read_text()
    declared_in_header = set(re.findall(r"AFS_API[^;{]*?\b(afs_[a-z0-9_]+)\s*\(", header))
    assert len(declared_in_header) > 80
    assert sorted(declared_in_header - set(names)) == [], "in the header but not bound"
    assert sorted(set(names) - declared_in_header) == [], "bound but not in the header"
    for name in names:
        f = getattr(_ffi.lib.raw, name)
        assert f.argtypes is not None and hasattr(f, "restype"), name


# Each status the Python API can provoke, with the call that provokes it (the multipart and
# stream ones are in test_bindings_multipart.py: FileError, StreamIOError,
# LengthMismatchError, StateError, UnsupportedError).
PROVOKE = {
    "InvalidArgumentError": lambda s: s.request("GET", "http://h/", [1]),
    "InvalidUTF8Error": lambda s: s.request("GET", "http://h/", {"a": "\udc80"}),
    "BadURLError": lambda s: s.request("GET", "http://h/\tx"),
    "InvalidMethodError": lambda s: s.request("G(E)T", "http://h/"),
    "InvalidHeaderError": lambda s: s.headers.__setitem__("X", "a\nb"),
    "InvalidJSONError": lambda s: afs.JSONRequestSerializer().request("POST", "http://h/",
                                                                      {"a": float("inf")}),
    "InvalidPlistError": lambda s: afs.PropertyListRequestSerializer().request(
        "POST", "http://h/", {"a": None}),
    "EncodingError": "encoding",
    "QueryCallbackError": "callback",
}


@pytest.mark.parametrize("name", sorted(PROVOKE))
def test_provoked_statuses(name):
    s = afs.HTTPRequestSerializer()
    how = PROVOKE[name]
    if how == "encoding":
        s.string_encoding = "ascii"
        s.query_serializer = lambda request, params: "a=é"

        def how(s):
            return s.request("POST", "http://h/", {"a": 1})
    elif how == "callback":
        s.query_serializer = lambda request, params: 1 / 0

        def how(s):
            return s.request("GET", "http://h/", {"a": 1})
    with pytest.raises(getattr(afs, name)) as e:
        how(s)
    assert e.value.code == getattr(afs, name).status
    assert e.value.message  # the library says what and where
