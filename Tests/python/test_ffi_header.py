"""Every Python ctypes declaration (``afserialization._ffi``) checked against the C header.

The header is parsed by clang (``-Xclang -ast-dump=json``, the clang of the Swift
toolchain): for each ``afs_*`` function, the argument count and every argument's and the
result's C type are compared with the ``argtypes``/``restype`` of its Python declaration;
callback typedefs with their ``CFUNCTYPE`` prototypes; ``struct afs_error`` with the ctypes
``Structure`` (field offsets and sizes); and every enumerator of the header with the value
the Python package uses for it. Types are compared by what the ABI sees (size, signedness,
pointer, pointee), so ``size_t``/``uint64_t`` (both ``c_ulong`` on LP64) agree while
``size_t``/``int`` do not.

The last tests feed deliberately wrong tables to the same checker and require it to report
them: a wrong argument type, a dropped argument, a wrong result type, a wrong enum value.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from afserialization import _ffi, errors, reader, response, serializers, values, xmlparse

HEADER = Path(__file__).resolve().parents[2] / "include" / "afserialization.h"
CLANG = os.environ.get("CLANG") or shutil.which("clang")

pytestmark = pytest.mark.skipif(CLANG is None, reason="needs clang (the Swift toolchain has one)")


# --------------------------------------------------------------------------------------
# The header, as clang sees it


class Header:
    def __init__(self, ast: Dict[str, Any]) -> None:
        self.functions: Dict[str, Tuple[str, List[str]]] = {}   # name -> (result, [args])
        self.typedef_functions: Dict[str, Tuple[str, List[str]]] = {}
        self.enumerators: Dict[str, int] = {}
        self.enum_typedefs: set = set()
        self.opaque: set = set()
        self.records: Dict[str, List[Tuple[str, str]]] = {}
        for node in ast.get("inner", []):
            kind, name = node.get("kind"), node.get("name", "")
            if kind == "FunctionDecl" and name.startswith("afs_"):
                params = [p["type"]["qualType"] for p in node.get("inner", []) if p["kind"] == "ParmVarDecl"]
                result = node["type"]["qualType"].split("(")[0].strip()
                self.functions[name] = (result, params)
            elif kind == "EnumDecl":
                value = -1
                for c in node.get("inner", []):
                    if c.get("kind") != "EnumConstantDecl":
                        continue
                    explicit = _constant(c)
                    value = explicit if explicit is not None else value + 1
                    self.enumerators[c["name"]] = value
            elif kind == "TypedefDecl" and name.startswith("afs_"):
                t = node["type"]["qualType"]
                if t.startswith("enum "):
                    self.enum_typedefs.add(name)
                elif t.startswith("struct ") and not _is_complete(ast, t[len("struct "):]):
                    self.opaque.add(name)
                proto = _function_proto(node)
                if proto is not None:
                    self.typedef_functions[name] = proto
            elif kind == "RecordDecl" and name.startswith("afs_") and node.get("completeDefinition"):
                self.records[name] = [(f["name"], f["type"]["qualType"]) for f in node.get("inner", [])
                                      if f.get("kind") == "FieldDecl"]


def _constant(node: Dict[str, Any]) -> Optional[int]:
    for inner in node.get("inner", []):
        if "value" in inner:
            return int(inner["value"])
        found = _constant(inner)
        if found is not None:
            return found
    return None


def _is_complete(ast: Dict[str, Any], tag: str) -> bool:
    return any(n.get("kind") == "RecordDecl" and n.get("name") == tag and n.get("completeDefinition")
               for n in ast.get("inner", []))


def _function_proto(node: Dict[str, Any]) -> Optional[Tuple[str, List[str]]]:
    """(result, [params]) of a pointer-to-function typedef, from its type tree."""
    stack = list(node.get("inner", []))
    while stack:
        t = stack.pop(0)
        if t.get("kind") == "FunctionProtoType":
            types = [i["type"]["qualType"] for i in t.get("inner", [])]
            return types[0], types[1:]
        stack.extend(t.get("inner", []))
    return None


@pytest.fixture(scope="module")
def header() -> Header:
    out = subprocess.run([CLANG, "-x", "c", "-std=c99", "-fsyntax-only", "-Xclang", "-ast-dump=json",
                          str(HEADER)], check=True, capture_output=True).stdout
    return Header(json.loads(out))


# --------------------------------------------------------------------------------------
# What the ABI sees, for both sides


_C_SCALARS = {
    "char": (1, True), "signed char": (1, True), "unsigned char": (1, False),
    "int": (4, True), "unsigned int": (4, False), "unsigned": (4, False),
    "int64_t": (8, True), "uint64_t": (8, False), "uint8_t": (1, False),
    "size_t": (ctypes.sizeof(ctypes.c_size_t), False),
}


def _parse(c_type: str) -> Tuple[str, int]:
    """(base type, pointer depth) with qualifiers dropped: `const char *const *` -> ("char", 2)."""
    t = re.sub(r"\bconst\b", "", c_type)
    depth = t.count("*")
    base = " ".join(t.replace("*", " ").split())
    base = re.sub(r"^(struct|enum) ", "", base)
    return base, depth


def c_abi(c_type: str, h: Header) -> Any:
    """A comparable description of a C type (a set of them where ctypes has two spellings)."""
    base, depth = _parse(c_type)
    if depth == 0:
        if base == "void":
            return "void"
        if base in ("bool", "_Bool"):
            return "bool"
        if base == "double":
            return "double"
        if base in h.enum_typedefs:
            return ("int", 4)                       # a C enum: 4 bytes, passed as int
        if base in h.typedef_functions:
            r, ps = h.typedef_functions[base]
            return ("fn", c_abi(r, h), tuple(c_abi(p, h) for p in ps))
        if base in _C_SCALARS:
            size, _signed = _C_SCALARS[base]
            return ("int", size) if _signed else ("uint", size)
        raise AssertionError(f"unknown C type {c_type!r}")
    if base in h.opaque:
        inner: Any = ("handle", base)             # a handle type is the pointer itself
        depth -= 1
    elif base in ("char", "void", "uint8_t"):
        # A byte pointer: c_char_p (bytes in, a NUL-terminated string out) or c_void_p (freed
        # or read with a length) are the same pointer to the ABI.
        inner = frozenset({"charp", "voidp"})
        depth -= 1
    elif base in h.records:
        inner = ("struct", base)
    else:
        inner = c_abi(base, h)
    for _ in range(depth):
        inner = ("ptr", inner)
    return inner


def _freeze(x: Any) -> Any:
    return frozenset(x) if isinstance(x, set) else x


def py_abi(t: Any) -> Any:
    """The same description of a ctypes type."""
    if t is None:
        return "void"
    if t is ctypes.c_bool:
        return "bool"
    if t is ctypes.c_double:
        return "double"
    if t is ctypes.c_char_p:
        return "charp"
    if t is ctypes.c_void_p:
        return "voidp"
    if t in _ffi._OPAQUE_TYPES:
        return ("handle", t._type_.__name__)
    if isinstance(t, type) and issubclass(t, ctypes._SimpleCData) and t._type_ in "bBhHiIlLqQ":
        signed = t(-1).value == -1
        return ("int" if signed else "uint", ctypes.sizeof(t))
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        if t._type_ in (ctypes.c_ubyte, ctypes.c_char):
            return "voidp"  # POINTER(c_uint8): a byte pointer, as uint8_t * is on the C side
        inner = py_abi(t._type_)
        return ("ptr", _freeze({inner}) if inner in ("charp", "voidp") else inner)
    if isinstance(t, type) and issubclass(t, ctypes.Structure):
        return ("struct", t.__name__)
    if isinstance(t, type) and issubclass(t, ctypes._CFuncPtr):
        return ("fn", py_abi(t._restype_), tuple(py_abi(a) for a in t._argtypes_))
    raise AssertionError(f"unknown ctypes type {t!r}")


def matches(c: Any, p: Any) -> bool:
    if isinstance(c, (set, frozenset)):
        return any(matches(x, p) for x in c)
    if isinstance(c, tuple) and isinstance(p, tuple) and len(c) == len(p) and c[0] == p[0]:
        if c[0] == "fn":
            return matches(c[1], p[1]) and len(c[2]) == len(p[2]) and all(
                matches(a, b) for a, b in zip(c[2], p[2]))
        return all(matches(a, b) if isinstance(a, (tuple, set, frozenset)) else a == b for a, b in zip(c[1:], p[1:]))
    if isinstance(p, (set, frozenset)):
        return any(matches(c, x) for x in p)
    return c == p


# --------------------------------------------------------------------------------------
# The checker


def check_declarations(h: Header, declarations: List[Tuple[str, Any, Any, Any]]) -> List[str]:
    problems: List[str] = []
    declared = {d[0]: d for d in declarations}
    for name in sorted(set(h.functions) - set(declared)):
        problems.append(f"{name}: in the header, not declared in _ffi")
    for name in sorted(set(declared) - set(h.functions)):
        problems.append(f"{name}: declared in _ffi, not in the header")
    for name, (c_result, c_params) in sorted(h.functions.items()):
        if name not in declared:
            continue
        _, restype, argtypes, _ = declared[name]
        if len(argtypes) != len(c_params):
            problems.append(f"{name}: {len(argtypes)} arguments in _ffi, {len(c_params)} in the header")
            continue
        if not matches(c_abi(c_result, h), py_abi(restype)):
            problems.append(f"{name}: result {c_result!r} but _ffi has {restype!r}")
        for i, (c, p) in enumerate(zip(c_params, argtypes)):
            if not matches(c_abi(c, h), py_abi(p)):
                problems.append(f"{name}: argument {i + 1} is {c!r} but _ffi has {p!r}")
    return problems


def check_error_struct(h: Header, struct: Any) -> List[str]:
    fields = h.records["afs_error"]
    names = [f[0] for f in struct._fields_]
    if names != [f[0] for f in fields]:
        return [f"afs_error fields {names} != header {[f[0] for f in fields]}"]
    problems = []
    for (fname, ctype), (_, ptype) in zip(fields, struct._fields_):
        m = re.match(r"char ?\[(\d+)\]", ctype)
        if m:
            if not (issubclass(ptype, ctypes.Array) and ptype._type_ is ctypes.c_char
                    and ptype._length_ == int(m.group(1))):
                problems.append(f"afs_error.{fname}: {ctype} but {ptype!r}")
        elif not matches(c_abi(ctype, h), py_abi(ptype)):
            problems.append(f"afs_error.{fname}: {ctype} but {ptype!r}")
    return problems


def python_enumerators() -> Dict[str, int]:
    """The value the package uses for each header enumerator."""
    out: Dict[str, int] = {}
    for s in errors.Status:
        out[s.c_name] = int(s)
    for k in values.ValueKind:
        out["AFS_VALUE_" + k.name] = int(k)
    out["AFS_SERIALIZER_HTTP"] = serializers.HTTPRequestSerializer._KIND
    out["AFS_SERIALIZER_JSON"] = serializers.JSONRequestSerializer._KIND
    out["AFS_SERIALIZER_PLIST"] = serializers.PropertyListRequestSerializer._KIND
    for prefix, enum in (("AFS_ENCODING_", serializers.StringEncoding), ("AFS_ARRAY_", serializers.ArrayStyle),
                         ("AFS_BOOL_", serializers.BoolStyle), ("AFS_SPACE_", serializers.SpaceStyle),
                         ("AFS_PLIST_", serializers.PropertyListFormat),
                         ("AFS_JSON_", serializers.JSONWritingOptions)):
        for m in enum:
            if m.name != "NONE":
                out[prefix + m.name] = int(m)
    out["AFS_RESPONSE_HTTP"] = response.HTTPResponseSerializer._KIND
    out["AFS_RESPONSE_JSON"] = response.JSONResponseSerializer._KIND
    out["AFS_RESPONSE_PLIST"] = response.PropertyListResponseSerializer._KIND
    out["AFS_RESPONSE_XML"] = xmlparse.XMLResponseSerializer._KIND
    out["AFS_RESPONSE_IMAGE"] = response.ImageResponseSerializer._KIND
    out["AFS_JSON_READING_FRAGMENTS_ALLOWED"] = int(response.JSONReadingOptions.FRAGMENTS_ALLOWED)
    for m in reader.ReaderState:
        out["AFS_READER_" + m.name] = int(m)
    from afserialization import security
    for m in security.PinningMode:
        out["AFS_PINNING_" + m.name] = int(m)
    from afserialization import transforms
    out.update({k: int(v) for k, v in transforms.ENUMERATORS.items()})
    from afserialization import decoders
    for name in ("KEEP_BAD_ESCAPES", "REFUSE_DEEP", "PLUS_AS_SPACE"):
        out["AFS_QUERY_" + name] = getattr(decoders, "QUERY_" + name)
    return out


def check_enumerators(h: Header, py: Dict[str, int]) -> List[str]:
    problems = []
    for name, value in sorted(h.enumerators.items()):
        if name not in py:
            problems.append(f"{name} = {value}: no Python value")
        elif py[name] != value:
            problems.append(f"{name}: header {value}, Python {py[name]}")
    for name in sorted(set(py) - set(h.enumerators)):
        problems.append(f"{name}: Python only, not in the header")
    return problems


# --------------------------------------------------------------------------------------
# The real table


def test_every_declaration_matches_the_header(header: Header) -> None:
    assert len(header.functions) > 100
    assert check_declarations(header, _ffi._DECLARATIONS) == []


def test_callback_prototypes_match_the_header(header: Header) -> None:
    prototypes = {"afs_query_fn": _ffi.QUERY_FN, "afs_read_fn": _ffi.READ_FN,
                  "afs_rewind_fn": _ffi.REWIND_FN, "afs_release_fn": _ffi.RELEASE_FN,
                  "afs_progress_fn": _ffi.PROGRESS_FN, "afs_progress_cancel_fn": _ffi.PROGRESS_CANCEL_FN,
                  "afs_body_fn": _ffi.BODY_FN}
    assert set(prototypes) == set(header.typedef_functions)
    for name, proto in prototypes.items():
        assert matches(c_abi(name, header), py_abi(proto)), name


def test_error_struct_matches_the_header(header: Header) -> None:
    assert check_error_struct(header, _ffi.afs_error) == []
    assert ctypes.sizeof(_ffi.afs_error) == 4 + 4 + 512


def test_every_enumerator_matches_the_header(header: Header) -> None:
    assert len(header.enumerators) > 40
    assert check_enumerators(header, python_enumerators()) == []


def test_nts_and_version_come_from_the_library() -> None:
    assert _ffi.AFS_NTS == ctypes.c_size_t(-1).value
    text = HEADER.read_text()
    major, minor, patch = (int(re.search(rf"#define AFS_VERSION_{p} (\d+)", text).group(1))
                           for p in ("MAJOR", "MINOR", "PATCH"))
    assert _ffi.lib.afs_version_number() == major * 10000 + minor * 100 + patch


# --------------------------------------------------------------------------------------
# The checker fails on deliberate mistakes


def _changed(name: str, change: Any) -> List[Tuple[str, Any, Any, Any]]:
    table = []
    for d in _ffi._DECLARATIONS:
        table.append(change(d) if d[0] == name else d)
    return table


def test_checker_reports_a_wrong_argument_type(header: Header) -> None:
    # size_t len -> int len: the slip the issue describes.
    table = _changed("afs_value_new_string",
                     lambda d: (d[0], d[1], [d[2][0], ctypes.c_int, d[2][2]], d[3]))
    assert check_declarations(header, table) == [
        "afs_value_new_string: argument 2 is 'size_t' but _ffi has <class 'ctypes.c_int'>"]


def test_checker_reports_a_dropped_argument(header: Header) -> None:
    table = _changed("afs_form_append_part", lambda d: (d[0], d[1], list(d[2][:-2]) + [d[2][-1]], d[3]))
    assert check_declarations(header, table) == [
        "afs_form_append_part: 6 arguments in _ffi, 7 in the header"]


def test_checker_reports_a_wrong_result_and_handle_type(header: Header) -> None:
    table = _changed("afs_body_stream_read", lambda d: (d[0], ctypes.c_int, d[2], d[3]))
    table = [(d[0], d[1], [_ffi.c_request_p] + list(d[2][1:]), d[3]) if d[0] == "afs_form_finish" else d
             for d in table]
    problems = check_declarations(header, table)
    assert len(problems) == 2
    assert problems[0].startswith("afs_body_stream_read: result 'int64_t'")
    assert problems[1].startswith("afs_form_finish: argument 1 is 'afs_form *'")


def test_checker_reports_a_wrong_enum_value(header: Header) -> None:
    py = python_enumerators()
    py["AFS_PLIST_BINARY"] = 201
    del py["AFS_E_NO_MEMORY"]
    assert check_enumerators(header, py) == ["AFS_E_NO_MEMORY = 15: no Python value",
                                             "AFS_PLIST_BINARY: header 200, Python 201"]


def test_checker_reports_a_wrong_error_layout(header: Header) -> None:
    class afs_error(ctypes.Structure):
        _fields_ = [("code", ctypes.c_int), ("os_errno", ctypes.c_int), ("message", ctypes.c_char * 256)]

    problems = check_error_struct(header, afs_error)
    assert len(problems) == 1 and problems[0].startswith("afs_error.message: char[512] but ")
    assert "c_char_Array_256" in problems[0]
