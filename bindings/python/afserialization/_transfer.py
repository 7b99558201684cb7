"""The transfer format between Python and the library: one crossing each way.

Python objects go to the library as one ``pickle.dumps(obj, protocol=5)`` buffer (the C
pickler: no Python code per node), which the library reads with its strict reader of the
pickle subset (dict, list, tuple, str, bytes, int, float, bool, None, set, frozenset;
every other opcode refused, none that names a class or a function ever read, with one
exception: dates). What the library sends back (decoded documents, request snapshots) is
the same subset, loaded by :func:`loads` through an :class:`pickle.Unpickler` whose
``find_class`` refuses everything but :func:`_date`: whatever the bytes, no other class,
function or persistent id can be named, so loading can only ever build those eleven types
and UTC ``datetime.datetime`` objects.

Dates travel both ways as ``_date(seconds_since_1970)`` (``STACK_GLOBAL`` of this module's
``_date``, a 1-tuple of a float, ``REDUCE``): :func:`dumps` reduces every
``datetime.datetime`` to that (a naive one is taken as UTC, as plistlib does), and the
library reads exactly that call and nothing else.

Internal: names may change without notice.
"""
from __future__ import annotations

import copyreg
import datetime
import io
import os
import pickle
import threading
from ctypes import POINTER, byref, c_char, c_size_t, c_uint8, c_void_p, cast
from types import ModuleType
from typing import Any, Callable, NoReturn, Optional, Tuple

__all__ = ["dumps", "loads", "load_at", "load_owned", "SafeUnpickler", "scratch",
           "speedups", "PURE_PYTHON_ENV"]

#: Set (to anything but "" or "0") to run the package's pure-Python loops instead of the
#: compiled module ``afserialization._speedups`` (for comparison and debugging).
PURE_PYTHON_ENV = "AFSERIALIZATION_PURE_PYTHON"


def _import_speedups() -> Optional[ModuleType]:
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        from . import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _speedups  # type: ignore[no-any-return]


#: The compiled module (``_speedups.c``: the pickle loader and the multipart record loop),
#: or ``None`` when it is not built here or ``AFSERIALIZATION_PURE_PYTHON`` is set: the
#: package then runs the same loops in Python, with the same results.
speedups: Optional[ModuleType] = _import_speedups()

_PROTOCOL = 5 if pickle.HIGHEST_PROTOCOL >= 5 else 4


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _date(seconds: float) -> datetime.datetime:
    """A UTC ``datetime`` ``seconds`` after 1970-01-01T00:00:00Z (microseconds rounded)."""
    return _EPOCH + datetime.timedelta(microseconds=round(seconds * 1_000_000))


def date_seconds(d: datetime.datetime) -> float:
    """Seconds since 1970 of ``d`` (naive: taken as UTC), to the microsecond."""
    if d.tzinfo is None or d.tzinfo.utcoffset(d) is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    delta = d - _EPOCH
    return (delta.days * 86400 + delta.seconds) + delta.microseconds / 1_000_000


def _reduce_date(d: datetime.datetime) -> Any:
    return (_date, (date_seconds(d),))


_DISPATCH = copyreg.dispatch_table.copy()
_DISPATCH[datetime.datetime] = _reduce_date


class SafeUnpickler(pickle.Unpickler):
    """The C unpickler, refusing every opcode that would name code (``GLOBAL``,
    ``STACK_GLOBAL``, ``INST``, ``OBJ`` and ``REDUCE``/``NEWOBJ`` on their results, the
    ``EXT`` codes) and every persistent id."""

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "_date":
            return _date
        raise pickle.UnpicklingError(
            f"afserialization: the library's output named {module}.{name}; only plain data "
            "is ever accepted (this is a bug in the library)")

    def persistent_load(self, pid: Any) -> NoReturn:
        raise pickle.UnpicklingError("afserialization: persistent ids are refused")


def loads(data: bytes) -> Any:
    """The objects in ``data`` (the library's output): the compiled loader, else
    :class:`SafeUnpickler`."""
    fast = speedups
    if fast is not None:
        return fast.load(data, len(data), _date)
    return SafeUnpickler(io.BytesIO(data)).load()


def load_at(address: int, length: int) -> Any:
    """The objects in the ``length`` bytes the library wrote at ``address``, read in place
    (the objects are copies: the memory may be freed once this returns)."""
    fast = speedups
    if fast is not None:
        return fast.load(address, length, _date)
    view = memoryview((c_char * length).from_address(address)).cast("B") if length else memoryview(b"")
    return SafeUnpickler(_BufferReader(view)).load()


def load_owned(address: int, length: int, free: Callable[[int], Any]) -> Any:
    """:func:`load_at`, then ``free(address)`` (``afs_free``) whatever happens."""
    try:
        return load_at(address, length)
    finally:
        free(address)


class _BufferReader:
    """The file :class:`SafeUnpickler` reads a pickle from: slices of a memoryview (no copy
    of the pickle into bytes, none of its frames by BytesIO)."""

    def __init__(self, view: memoryview) -> None:
        self.view, self.pos = view, 0

    def read(self, n: int = -1) -> memoryview:
        end = len(self.view) if n < 0 else min(len(self.view), self.pos + n)
        piece = self.view[self.pos:end]
        self.pos = end
        return piece

    def readline(self) -> bytes:  # only the text protocols read lines; the library writes protocol 4
        raise ValueError("afserialization: the library's pickle has no text lines")


def dumps(obj: Any) -> Optional[bytes]:
    """``obj`` as a pickle for the library, or ``None`` when :mod:`pickle` cannot write it
    (the caller then builds the tree node by node, which names what is wrong)."""
    try:
        f = io.BytesIO()
        p = pickle.Pickler(f, _PROTOCOL)
        p.dispatch_table = _DISPATCH
        p.dump(obj)
        return f.getvalue()
    except Exception:  # noqa: BLE001 - unpicklable objects: the node-by-node path explains
        return None


def address_of(pointer: Any) -> Optional[int]:
    """The address in a ``POINTER(c_uint8)`` out-parameter (``None`` for NULL)."""
    return cast(pointer, c_void_p).value


_local = threading.local()


def scratch() -> Tuple[Any, Any, Any, Any, Any, Any]:
    """This thread's out-parameters for one bulk call, made once per thread:
    ``(error, byref(error), address, byref(address), length, byref(length))``. A call
    reads them before it returns, so reusing them saves three ctypes objects per call."""
    try:
        return _local.scratch  # type: ignore[no-any-return]
    except AttributeError:
        from ._ffi import afs_error
        err, address, length = afs_error(), POINTER(c_uint8)(), c_size_t()
        _local.scratch = (err, byref(err), address, byref(address), length, byref(length))
        return _local.scratch  # type: ignore[no-any-return]
