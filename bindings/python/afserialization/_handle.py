"""The owner of one C pointer, shared by the public classes that use it."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, TypeVar

from .errors import HandleClosedError

__all__ = ["CHandle", "HandleOwner"]


class CHandle:
    """Owns one C handle and frees it exactly once.

    The public classes (:class:`~afserialization.Request`,
    :class:`~afserialization.BodyStream`, …) hold a ``CHandle`` rather than the raw pointer,
    so that an object borrowing the C handle (a body stream borrows its request) keeps the
    owner alive without reference cycles. ``free`` is the plain ctypes function (no Python
    wrapper), so freeing from ``__del__`` works at interpreter shutdown. ``keepalive`` holds
    Python objects C may call back into for as long as the C object exists.
    """

    __slots__ = ("_ptr", "_free", "what", "keepalive", "__weakref__")

    def __init__(self, ptr: Any, free: Optional[Callable[[Any], None]], what: str) -> None:
        if not ptr:
            raise ValueError(f"NULL {what}")
        self._ptr = ptr
        self._free = free
        self.what = what
        self.keepalive: Dict[str, Any] = {}

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
        ptr = self.get()
        self._ptr = None
        return ptr

    def close(self) -> None:
        """Frees the C object (idempotent)."""
        ptr = self._ptr
        if ptr is not None:
            self._ptr = None
            if self._free is not None:
                self._free(ptr)
        self.keepalive = {}

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else "open"
        return f"<CHandle {self.what} {state}>"


_O = TypeVar("_O", bound="HandleOwner")


class HandleOwner:
    """The lifecycle of a public class that owns its C object through ``self._h`` (a
    :class:`CHandle`): ``closed``, an idempotent ``close`` and use as a context manager."""

    __slots__ = ()
    _h: CHandle

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._h.closed

    def close(self) -> None:
        """Frees the C object (idempotent)."""
        self._h.close()

    def __enter__(self: _O) -> _O:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
