"""Internal: the enum base of the package, whose ``help()`` shows members, not ``int``.

``help(IntEnum subclass)`` lists every method the class inherits from ``int`` (about 70);
the metaclass here leaves ``int``'s names out of ``dir()``, which is what :mod:`pydoc` and
:mod:`inspect` read, so the help of each enum is its docstring and its members. The
classes stay ``int`` subclasses: arithmetic, comparisons and ``int()`` are unchanged.
"""
from __future__ import annotations

import enum
from typing import Any, List

__all__ = ["QuietEnumMeta"]

_INT_NAMES = frozenset(dir(int))


class QuietEnumMeta(enum.EnumMeta):
    """``EnumMeta`` whose ``dir()`` of an int-based enum omits the names of ``int``."""

    def __dir__(cls) -> List[str]:
        names: Any = super().__dir__()
        keep = {"__class__", "__doc__", "__members__", "__module__", "__name__",
                "__qualname__", "__contains__", "__getitem__", "__iter__", "__len__"}
        return sorted(n for n in names if n not in _INT_NAMES or n in keep)
