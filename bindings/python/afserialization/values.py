"""Parameters: Python objects as ``afs_value`` trees.

Plain Python objects map onto the library's property-list-like values:

=============================================  ==========================
Python                                         ``afs_value``
=============================================  ==========================
``dict`` / any ``Mapping`` (``str`` keys)      dictionary (order kept)
``list``, ``tuple``, other ``Sequence``        array
``set``, ``frozenset``, other ``Set``          set
``str``                                        string (UTF-8)
``bytes``, ``bytearray``, ``memoryview``       data
``bool`` (checked before ``int``)              bool
``int`` within int64                           integer
``float``                                      double
``None``                                       null
``datetime.datetime`` (naive = UTC)            date
=============================================  ==========================

Anything else raises :class:`~afserialization.UnsupportedTypeError` (a ``TypeError``);
containers nested deeper than 512 levels raise
:class:`~afserialization.InvalidArgumentError`;
an int outside int64 raises :class:`~afserialization.ValueOutOfRangeError` (an
``OverflowError``); a ``str`` holding a lone surrogate reaches the library as the bytes
Python's ``surrogatepass`` gives and fails there with
:class:`~afserialization.InvalidUTF8Error`. Errors say the cause first and then where,
e.g. ``the integer … is outside int64 (at params['a'][2])``; a deep path keeps its first
three and last two steps and says how many levels it has; a container that contains
itself is named a cycle.

Back to Python (:meth:`Value.to_python`, and every decoded response): dictionary ``dict``
(keys in order), array ``list``, string ``str``, data ``bytes``, bool, integer ``int``,
double ``float``, null ``None``, date a UTC ``datetime.datetime``; a set becomes a ``frozenset`` when its members are
hashable and stay distinct in Python (``1``, ``1.0`` and ``True`` are three members of a C
set but one of a Python set), otherwise a ``list`` in the set's order.

Transport: a tree of exact ``dict``/``list``/``tuple``/``str``/``bytes``/``int``/
``float``/``bool``/``None``/``set``/``frozenset`` crosses the FFI boundary once, as one
``pickle.dumps`` buffer that the library reads with its strict reader of that pickle
subset (``afs_value_from_pickle``: no opcode that names a class or a function is read);
anything else (subclasses, other mappings and sequences, ``bytearray``, ``memoryview``,
ints beyond int64, cycles) is built node by node, which names what is wrong and where.
Both give identical trees. Back to Python, a tree crosses once too, as one pickle written
by the library (``afs_value_to_pickle``) and loaded with an unpickler that refuses every
class (see ``afserialization._transfer``).
"""
from __future__ import annotations

import datetime
import enum
import threading
from collections.abc import Mapping, Sequence, Set
from ctypes import byref, c_char_p, c_size_t, c_void_p, cast, string_at
from typing import Any, List, Optional, Tuple

from ._enum import QuietEnumMeta
from . import _ffi, _transfer
from ._ffi import lib
from ._handle import CHandle, HandleOwner
from .errors import (InvalidArgumentError, SerializationError, Status, UnsupportedTypeError,
                     ValueOutOfRangeError)

__all__ = ["Value", "ValueKind", "Params", "tree_to_python"]

#: What ``params`` arguments accept.
Params = Any

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
#: Containers nested deeper than this are refused (the library's JSON reader's limit).
MAX_DEPTH = 512


class ValueKind(enum.IntEnum, metaclass=QuietEnumMeta):
    """``afs_value_kind``."""

    NULL = 0
    BOOL = 1
    INT = 2
    DOUBLE = 3
    STRING = 4
    DATA = 5
    ARRAY = 6
    SET = 7
    DICT = 8
    DATE = 9


class Value(HandleOwner):
    """An ``afs_value`` parameters tree owned by Python.

    Build one from Python objects (``Value({"a": [1, 2]})``) or JSON text
    (:meth:`from_json`) to reuse the same parameters for many requests; every ``params``
    argument also accepts plain Python objects directly. Close it (or use ``with``) to free
    it at once; otherwise it is freed when garbage-collected.
    """

    __slots__ = ("_h",)

    def __init__(self, obj: Params) -> None:
        """Builds the C tree for ``obj`` (see the module docstring for the mapping)."""
        self._h = CHandle(_build_root(obj), lib.raw.afs_value_free, "afs_value")

    @classmethod
    def _adopt(cls, ptr: Any) -> "Value":
        self = cls.__new__(cls)
        self._h = CHandle(ptr, lib.raw.afs_value_free, "afs_value")
        return self

    @classmethod
    def from_json(cls, text: "str | bytes") -> "Value":
        """Parses JSON text (RFC 8259, strict) with the library's reader.

        Raises:
            InvalidJSONError: malformed text; the message names the byte offset.
        """
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        return cls._adopt(lib.afs_value_parse_json(data, len(data)))

    def copy(self) -> "Value":
        """An independent copy of the tree (``afs_value_copy``); ``copy.copy`` and
        ``copy.deepcopy`` give the same."""
        return Value._adopt(lib.afs_value_copy(self._h.get()))

    def __copy__(self) -> "Value":
        return self.copy()

    def __deepcopy__(self, memo: Any) -> "Value":
        return self.copy()

    def __reduce__(self) -> Any:
        raise TypeError("a Value holds a C handle and cannot be pickled; pickle "
                        "value.to_python() instead")

    @property
    def kind(self) -> ValueKind:
        """The kind of the root value."""
        return ValueKind(lib.afs_value_kind_of(self._h.get()))

    def to_python(self) -> Any:
        """The tree as plain Python objects (a new ``dict``/``list``/``str``/``int``/
        ``float``/``bool``/``bytes``/``None`` tree; sets as described in the module
        docstring): one ``afs_value_to_pickle`` call and one load. Calls on one ``Value``
        from several threads take turns (the C tree is one thread at a time)."""
        ptr = self._h.get()
        if _PICKLE_OUT:
            length = c_size_t()
            with self._walk_lock():
                address = lib.raw.afs_value_to_pickle(ptr, byref(length), byref(_ffi.afs_error()))
            if address:
                return _transfer.load_owned(address, length.value, lib.raw.afs_free)
        with self._walk_lock():
            return tree_to_python(cast(ptr, c_void_p).value)

    def _walk_lock(self) -> Any:
        lock = self._h.keepalive.get("walk")
        if lock is None:
            lock = self._h.keepalive.setdefault("walk", threading.Lock())
        return lock

    def _to_python_by_walking(self) -> Any:
        """:meth:`to_python` by walking the C tree with the ``afs_value_*`` accessors (the
        reference the tests compare the pickle path with)."""
        ptr = self._h.get()
        lock = self._h.keepalive.get("walk")
        if lock is None:
            lock = self._h.keepalive.setdefault("walk", threading.Lock())
        with lock:
            return tree_to_python(cast(ptr, c_void_p).value)

    def __repr__(self) -> str:
        if self._h.closed:
            return "<afserialization.Value closed>"
        return f"<afserialization.Value {self.kind.name.lower()}>"


class ParamsRef:
    """The C pointer for a ``params`` argument: a borrowed :class:`Value`'s, or a temporary
    tree built for one call (freed on exit). ``None`` gives NULL (no parameters)."""

    __slots__ = ("_params", "_temp")

    def __init__(self, params: Params) -> None:
        self._params = params
        self._temp: Optional[CHandle] = None

    def __enter__(self) -> Any:
        params = self._params
        if params is None:
            return None
        if isinstance(params, Value):
            return params._h.get()
        self._temp = CHandle(_build_root(params), lib.raw.afs_value_free, "afs_value")
        return self._temp.get()

    def __exit__(self, *exc: Any) -> None:
        if self._temp is not None:
            self._temp.close()


# --------------------------------------------------------------------------------------
# Building


class _PathError(Exception):
    """Internal: carries the path of the failing node up to the root."""


def _describe_path(keys: List[Any]) -> str:
    """``params['a'][2]``; a deep path keeps its first three and last two steps
    (``params['a'][0][0]…[0][0], 600 levels``), and a long key is cut."""
    def step(k: Any) -> str:
        text = repr(k)
        return f"[{text[:40]}…]" if len(text) > 40 else f"[{text}]"
    steps = [step(k) for k in reversed(keys)]
    if len(steps) > 6:
        return f"params{''.join(steps[:3])}…{''.join(steps[-2:])}, {len(steps)} levels"
    return "params" + "".join(steps)


def _with_path(e: SerializationError, keys: List[Any]) -> SerializationError:
    """``e`` with its message followed by where it happened: the cause first."""
    cls = type(e)
    new = cls.__new__(cls)
    SerializationError.__init__(new, int(e.code), f"{e.message} (at {_describe_path(keys)})",
                                e.os_errno)
    return new


def _build_root(obj: Params) -> Any:
    """An owned ``afs_value *`` for ``obj`` (raises on anything unrepresentable)."""
    if _PARAMS_AS_PICKLE:
        data = _transfer.dumps(obj)
        if data is not None:
            try:
                return lib.raw.afs_value_from_pickle(data, len(data), byref(_ffi.afs_error()))
            except SerializationError:
                pass  # refused (a type outside the subset, a cycle...): the node-by-node
                # path below builds what it can and names what is wrong, and where
    return build_by_nodes(obj)


def build_by_nodes(obj: Params) -> Any:
    """An owned ``afs_value *`` for ``obj`` built node by node (any mapping, sequence and
    set; errors name the path)."""
    err = _ffi.afs_error()
    builder = _Builder(byref(err))
    try:
        return builder.build(obj)
    except SerializationError as e:
        keys = getattr(e, "_afs_path", None)
        if keys:
            raise _with_path(e, keys) from None
        raise


class _Builder:
    """Builds a tree node by node with the plain ctypes functions (hot loop)."""

    def __init__(self, eref: Any) -> None:
        raw = lib.raw
        self.eref = eref
        self.active: set = set()  # ids of the containers being filled (cycle detection)
        self.new_string = raw.afs_value_new_string
        self.new_int = raw.afs_value_new_int
        self.new_double = raw.afs_value_new_double
        self.new_bool = raw.afs_value_new_bool
        self.new_null = raw.afs_value_new_null
        self.new_data = raw.afs_value_new_data
        self.new_date = raw.afs_value_new_date
        self.new_dict = raw.afs_value_new_dict
        self.new_array = raw.afs_value_new_array
        self.new_set = raw.afs_value_new_set
        self.dict_set = raw.afs_value_dict_set
        self.append = raw.afs_value_append
        self.free = raw.afs_value_free

    def build(self, obj: Any, depth: int = 0) -> Any:
        if isinstance(obj, str):
            b = obj.encode("utf-8", "surrogatepass")
            return self.new_string(b, len(b), self.eref)
        if isinstance(obj, bool):
            return self.new_bool(obj)
        if isinstance(obj, int):
            if not _INT64_MIN <= obj <= _INT64_MAX:
                raise ValueOutOfRangeError(
                    f"the integer {obj} is outside int64 ({_INT64_MIN}..{_INT64_MAX})")
            return self.new_int(obj)
        if isinstance(obj, float):
            return self.new_double(obj)
        if obj is None:
            return self.new_null()
        if isinstance(obj, (bytes, bytearray, memoryview)):
            data = obj if type(obj) is bytes else bytes(obj)
            return self.new_data(data, len(data))
        if isinstance(obj, datetime.datetime):
            return self.new_date(_transfer.date_seconds(obj))
        if isinstance(obj, Value):
            raise UnsupportedTypeError("a Value cannot be nested inside Python parameters; "
                                       "pass it as the whole params argument")
        is_mapping = isinstance(obj, Mapping)
        is_set = not is_mapping and isinstance(obj, Set)
        if not (is_mapping or is_set or isinstance(obj, Sequence)):
            raise UnsupportedTypeError(
                f"cannot represent {type(obj).__name__} as a parameter (use dict, list, tuple, "
                "set, frozenset, str, bytes, int, float, bool, datetime or None)")
        oid = id(obj)
        if oid in self.active:
            raise InvalidArgumentError(Status.INVALID_ARGUMENT,
                                       f"a cycle: this {type(obj).__name__} contains itself")
        if depth >= MAX_DEPTH:
            raise InvalidArgumentError(Status.INVALID_ARGUMENT,
                                       f"containers nested deeper than {MAX_DEPTH} levels")
        # Containers are handled here, not in helper methods: one Python frame per level.
        container = self.new_dict() if is_mapping else self.new_set() if is_set \
            else self.new_array()
        self.active.add(oid)
        try:
            if is_mapping:
                new_string, dict_set, eref = self.new_string, self.dict_set, self.eref
                for k, v in obj.items():
                    if type(k) is str and type(v) is str:  # the common flat case, inline
                        kb = k.encode("utf-8", "surrogatepass")
                        vb = v.encode("utf-8", "surrogatepass")
                        try:
                            dict_set(container, kb, len(kb), new_string(vb, len(vb), eref), eref)
                            continue
                        except SerializationError:
                            pass  # redone below, where the error gets its path
                    try:
                        if not isinstance(k, str):
                            raise UnsupportedTypeError(
                                f"dictionary keys must be str, not {type(k).__name__} ({k!r})")
                        kb = k.encode("utf-8", "surrogatepass")
                        self.dict_set(container, kb, len(kb), self.build(v, depth + 1), self.eref)
                    except SerializationError as e:
                        _push_path(e, k)
                        raise
            else:
                for i, v in enumerate(obj):
                    try:
                        self.append(container, self.build(v, depth + 1), self.eref)
                    except SerializationError as e:
                        _push_path(e, v if is_set else i)
                        raise
        except BaseException:
            self.free(container)
            raise
        finally:
            self.active.discard(oid)
        return container


def _push_path(e: SerializationError, key: Any) -> None:
    keys = getattr(e, "_afs_path", None)
    if keys is None:
        keys = []
        e._afs_path = keys  # type: ignore[attr-defined]
    keys.append(key)


#: Whether parameters cross into the library as one pickle (``afs_value_from_pickle``,
#: ``afs_serializer_request_pickle``); off, they are built node by node with the
#: ``afs_value_*`` constructors. The tests turn it off to check that both paths build the
#: same C tree; the node-by-node path also words the error of a parameter the pickle
#: reader refuses with its path (``params['a'][1]``).
_PARAMS_AS_PICKLE: bool = True
#: Whether :meth:`Value.to_python` reads one pickle (else it walks the tree node by node).
_PICKLE_OUT: bool = True


# --------------------------------------------------------------------------------------
# Walking a C tree into Python objects

_NULL, _BOOL, _INT, _DOUBLE, _STRING, _DATA, _ARRAY, _SET, _DICT = range(9)
_DATE = 9


class _Accessors:
    """The walking functions, each an address-typed variant (``lib.untyped``): one plain
    ctypes call per accessor, no pointer objects. Strings and keys come back as ``bytes``
    through ``c_char_p`` (NUL-terminated); when the length written to ``*len`` differs, the
    text holds a NUL and is read again through its address and length."""

    __slots__ = ("kind_of", "count", "at", "key_at", "key_address", "get_string",
                 "string_address", "get_data", "get_int", "get_double", "get_bool", "get_date")

    def __init__(self) -> None:
        u = lib.untyped
        self.kind_of = u("afs_value_kind_of")
        self.count = u("afs_value_count")
        self.at = u("afs_value_at")
        self.key_at = u("afs_value_key_at", c_char_p)
        self.key_address = u("afs_value_key_at")
        self.get_string = u("afs_value_get_string", c_char_p)
        self.string_address = u("afs_value_get_string")
        self.get_data = u("afs_value_get_data")
        self.get_int = u("afs_value_get_int")
        self.get_double = u("afs_value_get_double")
        self.get_bool = u("afs_value_get_bool")
        self.get_date = u("afs_value_get_date")


_accessors: Optional[_Accessors] = None


def _get_accessors() -> _Accessors:
    global _accessors
    if _accessors is None:
        _accessors = _Accessors()
    return _accessors


def _set_value(members: List[Any]) -> Any:
    """A decoded set: a ``frozenset`` when that keeps every member, else the ``list``."""
    try:
        result = frozenset(members)
    except TypeError:  # a dict, a list, or a set that stayed a list
        return members
    return result if len(result) == len(members) else members


def tree_to_python(root: int) -> Any:
    """Plain Python objects for the ``afs_value`` at address ``root`` (borrowed: not freed).

    Iterative, so any depth the library accepts converts without recursion: each container
    is created empty, placed into its parent at once (so order is kept), and filled when it
    comes off a work list. Per member it makes one ``afs_value_at``, one
    ``afs_value_kind_of`` and one accessor call (plus ``afs_value_key_at`` in dictionaries);
    repeated keys are decoded once. Sets are turned into ``frozenset`` (or left as lists)
    at the end, innermost first.
    """
    a = _get_accessors()
    kind_of, count, at = a.kind_of, a.count, a.at
    key_at, key_address = a.key_at, a.key_address
    get_string, string_address = a.get_string, a.string_address
    get_int, get_double, get_bool, get_data = a.get_int, a.get_double, a.get_bool, a.get_data
    length = c_size_t()
    lref = byref(length)

    k = kind_of(root)
    if k == _DICT:
        out: Any = {}
    elif k == _ARRAY or k == _SET:
        out = []
    elif k == _STRING:
        s = get_string(root, lref)
        if len(s) != length.value:
            s = string_at(string_address(root, lref), length.value)
        return s.decode()
    elif k == _INT:
        return get_int(root)
    elif k == _DOUBLE:
        return get_double(root)
    elif k == _BOOL:
        return get_bool(root)
    elif k == _DATA:
        address = get_data(root, lref)
        return string_at(address, length.value)
    elif k == _DATE:
        return _transfer._date(a.get_date(root))
    else:
        return None

    sets: List[Tuple[Any, Any, List[Any]]] = []
    if k == _SET:
        sets.append((None, None, out))
    keys: dict = {}
    work: List[Tuple[int, Any]] = [(root, out)]
    pop, push = work.pop, work.append
    while work:
        p, container = pop()
        n = count(p)
        if type(container) is dict:
            for i in range(n):
                kb = key_at(p, i, lref)
                if len(kb) != length.value:  # a NUL inside the key
                    kb = string_at(key_address(p, i, lref), length.value)
                key = keys.get(kb)
                if key is None:
                    key = keys[kb] = kb.decode()
                c = at(p, i)
                k = kind_of(c)
                if k == _STRING:
                    s = get_string(c, lref)
                    if len(s) != length.value:
                        s = string_at(string_address(c, lref), length.value)
                    v: Any = s.decode()
                elif k == _INT:
                    v = get_int(c)
                elif k == _DICT:
                    v = {}
                    push((c, v))
                elif k == _DOUBLE:
                    v = get_double(c)
                elif k == _ARRAY:
                    v = []
                    push((c, v))
                elif k == _BOOL:
                    v = get_bool(c)
                elif k == _NULL:
                    v = None
                elif k == _DATA:
                    v = string_at(get_data(c, lref), length.value)
                elif k == _DATE:
                    v = _transfer._date(a.get_date(c))
                else:  # _SET
                    v = []
                    push((c, v))
                    sets.append((container, key, v))
                container[key] = v
        else:
            append = container.append
            for i in range(n):
                c = at(p, i)
                k = kind_of(c)
                if k == _STRING:
                    s = get_string(c, lref)
                    if len(s) != length.value:
                        s = string_at(string_address(c, lref), length.value)
                    v = s.decode()
                elif k == _INT:
                    v = get_int(c)
                elif k == _DICT:
                    v = {}
                    push((c, v))
                elif k == _DOUBLE:
                    v = get_double(c)
                elif k == _ARRAY:
                    v = []
                    push((c, v))
                elif k == _BOOL:
                    v = get_bool(c)
                elif k == _NULL:
                    v = None
                elif k == _DATA:
                    v = string_at(get_data(c, lref), length.value)
                elif k == _DATE:
                    v = _transfer._date(a.get_date(c))
                else:  # _SET
                    v = []
                    push((c, v))
                    sets.append((container, i, v))
                append(v)
    for parent, slot, members in reversed(sets):
        value = _set_value(members)
        if parent is None:
            out = value
        else:
            parent[slot] = value
    return out
