"""Compiles ``afserialization/_speedups.c`` into ``_speedups.abi3.so`` (CPython's limited
API, 3.8 and later: one binary for every Python 3 version; no libpython linked).

    python bindings/python/build_speedups.py [OUT]

builds it beside the package's sources (the default OUT: a source checkout's tests,
benchmarks and demo import the package from ``bindings/python``); the wheel's build hook
(``hatch_build.py``) calls :func:`build` for the wheel. Needs a C compiler (``$CC`` or
``cc``) and the Python headers of the running interpreter (Debian: ``python3-dev``); the
package works without the module, slower (see ``afserialization/_speedups.c``).
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "afserialization", "_speedups.c")
#: The file name CPython imports as ``afserialization._speedups`` on every version.
MODULE_FILE = "_speedups.abi3.so"


def header_dir() -> str:
    """The folder of ``afserialization.h`` (a checkout's ``include/`` or the sdist's
    ``native/include``)."""
    for candidate in (os.path.join(HERE, "native", "include"), os.path.join(HERE, "..", "..", "include")):
        if os.path.isfile(os.path.join(candidate, "afserialization.h")):
            return os.path.normpath(candidate)
    raise FileNotFoundError("include/afserialization.h not found beside the bindings")


def why_not() -> Optional[str]:
    """Why the module cannot be built here, or ``None``."""
    include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(include, "Python.h")):
        return f"Python.h is missing from {include} (Debian: apt-get install python3-dev)"
    if not shutil.which(os.environ.get("CC", "cc").split()[0]):
        return "no C compiler (cc) on PATH"
    return None


def build(out: str) -> str:
    """Compiles the module to ``out`` (a file path); returns it. Raises RuntimeError with
    the compiler's output when compiling fails."""
    reason = why_not()
    if reason:
        raise RuntimeError(reason)
    cc = shlex.split(os.environ.get("CC", "cc"))
    tmp = out + ".tmp"
    command = cc + ["-std=c99", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
                    "-Wall", "-Wextra", "-Werror", "-Wno-missing-field-initializers",
                    "-Wno-cast-function-type",
                    "-I", sysconfig.get_paths()["include"], "-I", header_dir(),
                    SOURCE, "-o", tmp]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"compiling {SOURCE} failed:\n{done.stdout}{done.stderr}")
    os.replace(tmp, out)
    return out


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "afserialization", MODULE_FILE)
    try:
        print(build(target))
    except (RuntimeError, FileNotFoundError) as e:
        print(f"build_speedups.py: {e}", file=sys.stderr)
        sys.exit(1)
