"""The owner of one C pointer, shared by the public classes that use it, and the thread
rule every such class follows.

Thread rule: each C object is used by one thread at a time, so every public method and
property of a class holding a :class:`CHandle` runs under that handle's lock
(:func:`serialized`). Objects that borrow a handle (a request's ``body_stream`` and
``headers``) take the owner's lock. So several threads may share an object: their calls
run one after the other and each sees a consistent object. ``close()`` waits for a call
running on another thread to finish and then frees; called from inside one of the
object's own callbacks (a stream source, a progress callback, on the calling thread) it
raises :class:`~afserialization.StateError` instead of freeing the object under the call.
"""
from __future__ import annotations

import functools
import os
import threading
import weakref
from typing import Any, Callable, Dict, Optional, TypeVar

from .errors import HandleClosedError, StateError, Status

__all__ = ["CHandle", "HandleOwner", "serialized"]


class CHandle:
    """Owns one C handle and frees it exactly once.

    The public classes (:class:`~afserialization.Request`,
    :class:`~afserialization.BodyStream`, …) hold a ``CHandle`` rather than the raw pointer,
    so that an object borrowing the C handle (a body stream borrows its request) keeps the
    owner alive without reference cycles. ``free`` is the plain ctypes function (no Python
    wrapper), so freeing from ``__del__`` works at interpreter shutdown. ``keepalive`` holds
    Python objects C may call back into for as long as the C object exists.

    ``lock`` (re-entrant) serialises the calls of every object using this handle;
    ``depth`` counts the calls running under it on the thread that holds it.
    """

    __slots__ = ("_ptr", "_free", "what", "keepalive", "lock", "depth", "__weakref__")

    def __init__(self, ptr: Any, free: Optional[Callable[[Any], None]], what: str) -> None:
        if not ptr:
            raise ValueError(f"NULL {what}")
        self._ptr = ptr
        self._free = free
        self.what = what
        self.keepalive: Dict[str, Any] = {}
        self.lock = threading.RLock()
        self.depth = 0
        _LIVE.add(self)

    @property
    def closed(self) -> bool:
        """True once the handle was freed, consumed, or (borrowed) invalidated."""
        return self._ptr is None

    def get(self) -> Any:
        """The pointer; raises :class:`HandleClosedError` after close."""
        ptr = self._ptr
        if ptr is None:
            raise HandleClosedError(self.what)
        return ptr

    def detach(self) -> Any:
        """Gives the pointer away (C consumed it): this handle no longer frees it."""
        with self.lock:
            ptr = self.get()
            self._ptr = None
            return ptr

    def check_not_busy(self, what: str) -> None:
        """Raises :class:`StateError` when a call on this handle is running on this thread
        (the caller is one of its callbacks). Call with ``lock`` held."""
        if self.depth > 0:
            raise StateError(Status.STATE, f"cannot close {what} from inside one of its own "
                                           f"callbacks (a call on it is still running)")

    def close(self) -> None:
        """Frees the C object (idempotent). Waits for a call running on another thread;
        raises :class:`StateError` from inside one of the object's callbacks."""
        with self.lock:
            ptr = self._ptr
            if ptr is not None:
                self.check_not_busy(self.what)
                self._ptr = None
                if self._free is not None:
                    self._free(ptr)
            self.keepalive = {}

    def __del__(self) -> None:
        try:
            # no lock: nothing else can be using an unreachable handle
            ptr = self._ptr
            if ptr is not None:
                self._ptr = None
                if self._free is not None:
                    self._free(ptr)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else "open"
        return f"<CHandle {self.what} {state}>"


_F = TypeVar("_F", bound=Callable[..., Any])

#: Dunder methods that use the C object (the rest, such as __init__, do not need the lock).
_LOCKED_DUNDERS = frozenset((
    "__len__", "__iter__", "__getitem__", "__setitem__", "__delitem__", "__contains__",
    "__eq__", "__repr__", "__copy__", "__deepcopy__", "__reduce__", "__next__",
))
#: Methods that free: they wait for other threads' calls and refuse from a callback.
_CLOSING = frozenset(("close",))


def _handle_of(obj: Any, attr: str) -> Optional[CHandle]:
    """``obj.<attr>`` when it is a CHandle, else that object's own ``_h`` (a view such as
    the request's headers holds its request)."""
    h = getattr(obj, attr, None)
    if h is not None and not isinstance(h, CHandle):
        h = getattr(h, "_h", None)
    return h if isinstance(h, CHandle) else None


def _locked(fn: _F, attr: str) -> _F:
    @functools.wraps(fn)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        h = _handle_of(self, attr)
        if h is None:  # not set up yet (inside __init__) or no handle
            return fn(self, *args, **kwargs)
        with h.lock:
            h.depth += 1
            try:
                return fn(self, *args, **kwargs)
            finally:
                h.depth -= 1
    call.__afs_locked__ = True  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def _closing(fn: _F, attr: str) -> _F:
    @functools.wraps(fn)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        h = _handle_of(self, attr)
        if h is None:
            return fn(self, *args, **kwargs)
        with h.lock:
            if not h.closed:
                h.check_not_busy(f"the {type(self).__name__}")
            return fn(self, *args, **kwargs)
    call.__afs_locked__ = True  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def serialized(cls: Any, attr: str = "_h") -> Any:
    """Wraps the public methods and properties defined in ``cls`` (and the dunders in
    ``_LOCKED_DUNDERS``) so that each runs under ``getattr(self, attr).lock`` (see the
    module's thread rule); ``close`` also refuses to run from inside a callback."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") and name not in _LOCKED_DUNDERS:
            continue
        if getattr(member, "__afs_locked__", False):
            continue
        wrap = _closing if name in _CLOSING else _locked
        if isinstance(member, property):
            setattr(cls, name, property(
                wrap(member.fget, attr) if member.fget else None,
                wrap(member.fset, attr) if member.fset else None,
                wrap(member.fdel, attr) if member.fdel else None,
                member.__doc__))
        elif isinstance(member, (staticmethod, classmethod)):
            continue
        elif callable(member):
            setattr(cls, name, wrap(member, attr))
    return cls


_O = TypeVar("_O", bound="HandleOwner")


class HandleOwner:
    """The lifecycle of a public class that owns its C object through ``self._h`` (a
    :class:`CHandle`): ``closed``, an idempotent ``close`` and use as a context manager.
    Subclasses follow the module's thread rule: their public methods and properties are
    wrapped by :func:`serialized` when the class is defined."""

    __slots__ = ()
    _h: CHandle

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        serialized(cls)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._h.closed

    def close(self) -> None:
        """Frees the C object (idempotent). From another thread it waits for a running
        call; from inside one of the object's callbacks it raises
        :class:`~afserialization.StateError`."""
        self._h.close()

    def __enter__(self: _O) -> _O:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


#: Every live handle, so that a forked child can give each a fresh lock.
_LIVE: "weakref.WeakSet[CHandle]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A thread of the parent may have held a handle's lock at fork(); it does not exist in
    # the child, so the lock would never be released. The C library's own locks are handled
    # by its pthread_atfork handler; these are the Python side's.
    for h in list(_LIVE):
        h.lock = threading.RLock()
        h.depth = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
