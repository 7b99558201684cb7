"""Internal: metaclasses whose ``help()`` shows the package's own API, not ``int``'s or
``Exception``'s.

``help(IntEnum subclass)`` lists every method the class inherits from ``int`` (about 70),
and ``help()`` of an exception class everything ``BaseException`` has. The metaclasses
here leave names that only built-in classes define out of ``dir()``, which is what
:mod:`pydoc` and :mod:`inspect` read. The classes are unchanged otherwise: enums stay
``int`` subclasses (arithmetic, comparisons, ``int()``), exceptions stay exceptions.
"""
from __future__ import annotations

import enum
from typing import Any, List

__all__ = ["QuietEnumMeta", "QuietType"]

_INT_NAMES = frozenset(dir(int))


class QuietEnumMeta(enum.EnumMeta):
    """``EnumMeta`` whose ``dir()`` of an int-based enum omits the names of ``int``."""

    def __dir__(cls) -> List[str]:
        names: Any = super().__dir__()
        keep = {"__class__", "__doc__", "__members__", "__module__", "__name__",
                "__qualname__", "__contains__", "__getitem__", "__iter__", "__len__"}
        return sorted(n for n in names if n not in _INT_NAMES or n in keep)


def _own_names(cls: type, names: Any) -> List[str]:
    """``names`` without those whose first definition along the MRO is a built-in class's
    (``__doc__``, ``__module__`` and ``__init__`` kept)."""
    keep = []
    for n in names:
        owner = next((c for c in cls.__mro__ if n in c.__dict__), None)
        if owner is None or owner.__module__ != "builtins" or n in ("__doc__", "__init__"):
            keep.append(n)
    return sorted(keep)


class QuietType(type):
    """``type`` whose ``dir()`` of a class omits what built-in bases define (for the
    exception classes: ``args``, ``with_traceback``, ``add_note`` …)."""

    def __dir__(cls) -> List[str]:
        return _own_names(cls, super().__dir__())
