"""A PEP 517 / PEP 660 build backend for the ``afserialization`` package, standard library only.

Why not setuptools: the wheel carries a prebuilt shared library (not a Python extension),
and the build must work offline with whatever Python is installed — setuptools without
the ``wheel`` package cannot build wheels, and build isolation would fetch both from an
index. A wheel is a zip file with a ``.dist-info`` folder; this module writes one.

The shared library packed into the wheel, first found of:

1. ``$AFSERIALIZATION_LIBRARY`` (a path to ``libafserialization.so``);
2. ``<repository>/build/lib/libafserialization.so``;
3. the path ``<repository>/scripts/build-library.sh`` prints after building it.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

NAME = "afserialization"
VERSION = "0.1.0"
SUMMARY = "AFNetworking's request serialization (query strings, form, JSON, plist and " \
          "streaming multipart bodies) for Python, over libafserialization"
REQUIRES_PYTHON = ">=3.8"
EXTRAS: Dict[str, List[str]] = {
    "demo": ["requests", "werkzeug"],
    "test": ["pytest", "requests", "urllib3", "werkzeug", "requests-toolbelt"],
}
CONSOLE_SCRIPTS = {"afserialization": "afserialization.__main__:main"}
LIBRARY_ENV = "AFSERIALIZATION_LIBRARY"
LIBRARY_NAME = "libafserialization.so"

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bindings/python
PACKAGE_DIR = os.path.join(HERE, NAME)
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


# --------------------------------------------------------------------------------------
# PEP 517 hooks


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    """The wheel: the package's Python files, ``py.typed`` and the shared library."""
    library = find_library()
    files: List[Tuple[str, bytes]] = []
    for name in sorted(os.listdir(PACKAGE_DIR)):
        path = os.path.join(PACKAGE_DIR, name)
        if name.endswith(".py") or name == "py.typed":
            with open(path, "rb") as f:
                files.append((f"{NAME}/{name}", f.read()))
    with open(library, "rb") as f:
        files.append((f"{NAME}/{LIBRARY_NAME}", f.read()))
    _log(f"packing {os.path.realpath(library)} as {NAME}/{LIBRARY_NAME}")
    return _write_wheel(wheel_directory, files, _platform_tag())


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """An editable wheel: a ``.pth`` file putting ``bindings/python`` on ``sys.path``; the
    package then loads ``$AFSERIALIZATION_LIBRARY`` or the repository's ``build/lib``."""
    return _write_wheel(wheel_directory, [(f"__editable__.{NAME}.pth",
                                           (HERE + "\n").encode())], "py3-none-any")


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    """A source archive of the Python side (the library is not in it: building a wheel from
    it needs ``$AFSERIALIZATION_LIBRARY``)."""
    base = f"{NAME}-{VERSION}"
    out = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in ["pyproject.toml", "build_backend/afs_build.py"] + [
                f"{NAME}/{n}" for n in sorted(os.listdir(PACKAGE_DIR))
                if n.endswith(".py") or n == "py.typed"]:
            tar.add(os.path.join(HERE, rel), arcname=f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size, info.mtime = len(data), int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return os.path.basename(out)


# --------------------------------------------------------------------------------------
# The library


def find_library() -> str:
    """The shared library to pack (see the module docstring)."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        if not os.path.isfile(env):
            raise FileNotFoundError(f"{LIBRARY_ENV}={env} is not a file")
        return env
    built = os.path.join(REPO, "build", "lib", LIBRARY_NAME)
    if os.path.isfile(built):
        return built
    script = os.path.join(REPO, "scripts", "build-library.sh")
    if os.path.isfile(script):
        _log(f"{built} not found: running {script}")
        out = subprocess.run([script], check=True, stdout=subprocess.PIPE, text=True).stdout
        path = out.strip().splitlines()[-1] if out.strip() else built
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"no {LIBRARY_NAME} to pack: set {LIBRARY_ENV} to a built library, or build one "
        f"with scripts/build-library.sh in the repository")


# --------------------------------------------------------------------------------------
# Wheel writing


def _platform_tag() -> str:
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{platform}"


def _metadata() -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {VERSION}",
        f"Summary: {SUMMARY}",
        f"Requires-Python: {REQUIRES_PYTHON}",
    ]
    for extra, requirements in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    return "\n".join(lines) + "\n"


def _write_wheel(directory: str, files: List[Tuple[str, bytes]], tag: str) -> str:
    dist_info = f"{NAME}-{VERSION}.dist-info"
    wheel_meta = ("Wheel-Version: 1.0\n"
                  "Generator: afs_build (afserialization)\n"
                  f"Root-Is-Purelib: {'true' if tag.endswith('-any') else 'false'}\n"
                  f"Tag: {tag}\n")
    entry_points = "[console_scripts]\n" + "".join(
        f"{k} = {v}\n" for k, v in CONSOLE_SCRIPTS.items())
    files = files + [(f"{dist_info}/METADATA", _metadata().encode()),
                     (f"{dist_info}/WHEEL", wheel_meta.encode()),
                     (f"{dist_info}/entry_points.txt", entry_points.encode())]
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([name, f"sha256={digest}", len(data)])
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    files.append((f"{dist_info}/RECORD", record.getvalue().encode()))

    filename = f"{NAME}-{VERSION}-{tag}.whl"
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, filename)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            is_library = name.endswith(".so")
            info.external_attr = (0o755 if is_library else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return filename


def _log(message: str) -> None:
    print(f"afs_build: {message}", file=sys.stderr)
