"""pip install ./bindings/python (hatchling + bindings/python/hatch_build.py): the wheel carries
the library under a manylinux tag that auditwheel agrees with, the version comes from the
header, the sdist carries the library's sources, and AFSERIALIZATION_LIBRARY overrides the
packaged library at import time.

scripts/test.sh runs this whole directory against the wheel installed into a fresh virtual
environment (AFS_TEST_INSTALLED_PACKAGE=1); run alone, it tests the checkout's package."""
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import afserialization as afs

REPO = Path(__file__).resolve().parents[2]
BINDINGS = REPO / "bindings" / "python"


def header_version():
    text = (REPO / "include" / "afserialization.h").read_text()
    return ".".join(re.search(rf"^#define AFS_VERSION_{p} (\d+)$", text, re.M).group(1)
                    for p in ("MAJOR", "MINOR", "PATCH"))


def pip(*args, library=None, cwd=None, timeout=600):
    """pip offline, without build isolation (the build tools are installed), packing
    `library` (AFSERIALIZATION_LIBRARY) when given."""
    env = {k: v for k, v in os.environ.items() if k != afs.LIBRARY_ENV}
    env["PIP_NO_INDEX"] = "1"
    if library:
        env[afs.LIBRARY_ENV] = str(library)
    return subprocess.run([sys.executable, "-m", "pip", *args, "--no-build-isolation",
                           "--disable-pip-version-check"],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def library():
    return Path(os.path.realpath(afs.library_path))


@pytest.fixture(scope="module")
def installed(tmp_path_factory, library):
    """The package installed with pip into a target dir, packing the tested library."""
    target = tmp_path_factory.mktemp("site")
    out = pip("install", "-q", "--no-deps", "--target", str(target), str(BINDINGS), library=library)
    assert out.returncode == 0, out.stdout + out.stderr
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory, library):
    out_dir = tmp_path_factory.mktemp("wheel")
    out = pip("wheel", "-q", "--no-deps", "-w", str(out_dir), str(BINDINGS), library=library)
    assert out.returncode == 0, out.stdout + out.stderr
    (path,) = out_dir.glob("*.whl")
    return path


def run_in(target, code, **env_overrides):
    env = {k: v for k, v in os.environ.items() if k != afs.LIBRARY_ENV}
    env.update(env_overrides)
    env["PYTHONPATH"] = str(target)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=str(target), timeout=60)


def test_the_tested_package_is_the_intended_one():
    here = Path(afs.__file__).resolve()
    if os.environ.get("AFS_TEST_INSTALLED_PACKAGE") == "1":
        assert BINDINGS not in here.parents, f"{here}: the checkout, not the installed wheel"
        assert not (here.parent / "demo.py").exists()
    else:
        assert here.parent == BINDINGS / "afserialization"


def test_the_installed_package_carries_the_library(installed, library):
    packaged = installed / "afserialization" / "libafserialization.so.0"
    assert packaged.read_bytes() == library.read_bytes()
    assert (installed / "afserialization" / "py.typed").exists()
    out = run_in(installed, "import afserialization as a; print(a.library_path); "
                            "print(a.percent_escape('a b'))")
    assert out.returncode == 0, out.stderr
    path, escaped = out.stdout.split()
    assert Path(path) == packaged and escaped == "a%20b"


def test_help_lists_modules_only(installed):
    # The library inside the package is no submodule: pkgutil (and so help()) must not list
    # it, and help(afserialization) stays readable.
    out = run_in(installed, "import pkgutil, pydoc, afserialization as a; "
                            "print(sorted(m.name for m in pkgutil.iter_modules(a.__path__))); "
                            "print(len(pydoc.render_doc(a, renderer=pydoc.plaintext).splitlines()))")
    assert out.returncode == 0, out.stderr
    names, lines = out.stdout.splitlines()
    assert "libafserialization" not in names and "values" in names
    assert int(lines) < 6000  # 4000 before the third round's statuses, readers, decoders and serializers


def test_environment_variable_overrides_the_packaged_library(installed, library, tmp_path):
    copy = tmp_path / "libcopy.so"
    shutil.copy(library, copy)
    out = run_in(installed, "import afserialization as a; print(a.library_path)",
                 AFSERIALIZATION_LIBRARY=str(copy))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(copy)
    bad = run_in(installed, "import afserialization", AFSERIALIZATION_LIBRARY="/no/such.so")
    assert bad.returncode != 0 and "/no/such.so" in bad.stderr


def test_wheel_is_manylinux_with_the_header_version(wheel, library):
    name, version, py, abi, platform = wheel.stem.split("-")
    # cp38-abi3: the compiled module (CPython's limited API) is in it
    assert (name, version, py, abi) == ("afserialization", header_version(), "cp38", "abi3")
    assert re.fullmatch(r"manylinux_\d+_\d+_(x86_64|aarch64|i686|ppc64le|s390x|armv7l)", platform), platform
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert {"afserialization/__init__.py", "afserialization/_ffi.py",
                "afserialization/libafserialization.so.0", "afserialization/py.typed",
                "afserialization/_speedups.abi3.so"} <= names
        assert "afserialization/_speedups.c" not in names
        assert "afserialization/demo.py" not in names  # it drives a checkout: scripts/demo.sh
        assert z.read("afserialization/libafserialization.so.0") == library.read_bytes()
        dist_info = f"afserialization-{version}.dist-info"
        wheel_meta = z.read(f"{dist_info}/WHEEL").decode()
        assert "Root-Is-Purelib: false" in wheel_meta and f"Tag: cp38-abi3-{platform}" in wheel_meta
        metadata = z.read(f"{dist_info}/METADATA").decode()
        assert f"Version: {version}" in metadata and "Requires-Python: >=3.8" in metadata
        assert any(n.startswith(dist_info) and n.endswith("LICENSE") for n in names)
        assert "afserialization/libafserialization.so.0,sha256=" in z.read(f"{dist_info}/RECORD").decode()


def test_auditwheel_agrees_with_the_tag(wheel):
    auditwheel = shutil.which("auditwheel") or str(Path(sys.executable).parent / "auditwheel")
    assert Path(auditwheel).exists(), "auditwheel is not installed (scripts/install-deps.sh)"
    out = subprocess.run([auditwheel, "show", str(wheel)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    platform = wheel.stem.split("-")[-1]
    text = " ".join(out.stdout.split())
    assert f'consistent with the following platform tag: "{platform}"' in text, out.stdout


def test_sdist_carries_the_sources_and_builds(tmp_path, library):
    """The sdist holds the library's sources under native/; a wheel builds from it (packing
    the tested library; with AFS_TEST_SDIST_FULL_BUILD=1 it builds the library itself from
    the sdist's sources, which takes a whole Swift build)."""
    out = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation",
                          "--outdir", str(tmp_path), str(BINDINGS)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    (sdist,) = tmp_path.glob("*.tar.gz")
    base = f"afserialization-{header_version()}"
    assert sdist.name == base + ".tar.gz"
    with tarfile.open(sdist) as tar:
        names = set(tar.getnames())
        tar.extractall(tmp_path / "x")
    for rel in ["pyproject.toml", "hatch_build.py", "build_speedups.py", "afserialization/_speedups.c",
                "LICENSE", "afserialization/_ffi.py",
                "native/CMakeLists.txt", "native/Package.swift", "native/include/afserialization.h",
                "native/scripts/build-library.sh", "native/scripts/afserialization.map"]:
        assert f"{base}/{rel}" in names, rel
    assert any(n.startswith(f"{base}/native/Sources/AFSerialization/") for n in names)
    assert not any(n.endswith(".so") for n in names)
    full = os.environ.get("AFS_TEST_SDIST_FULL_BUILD") == "1"
    out = pip("wheel", "-q", "--no-deps", "-w", str(tmp_path / "w"), str(tmp_path / "x" / base),
              library=None if full else library, timeout=1800)
    assert out.returncode == 0, out.stdout + out.stderr
    (built,) = (tmp_path / "w").glob("*.whl")
    assert "-cp38-abi3-manylinux_" in built.name


def test_wheel_fits_manylinux_2_28(wheel, tmp_path):
    """The wheel installs on glibc 2.28 and later (RHEL 8, Debian 10, Ubuntu 18.10 …): its
    tag is manylinux_2_28 or older, and every ELF file in it needs at most the symbol
    versions of that policy (Tests/c/check_glibc.sh: GLIBC_2.28, GLIBCXX_3.4.24,
    CXXABI_1.3.11, and no library outside the policy)."""
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", wheel.stem.split("-")[-1])
    assert m and (int(m.group(1)), int(m.group(2))) <= (2, 28), wheel.name
    with zipfile.ZipFile(wheel) as z:
        elves = [n for n in z.namelist() if z.read(n)[:4] == b"\x7fELF"]
        assert "afserialization/libafserialization.so.0" in elves
        z.extractall(tmp_path, elves)
    out = subprocess.run([str(REPO / "Tests" / "c" / "check_glibc.sh"),
                          *(str(tmp_path / n) for n in elves)],
                         capture_output=True, text=True, timeout=60)
    print(out.stdout)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "all within manylinux_2_28" in out.stdout


def test_building_without_swift_stops_in_one_line(tmp_path):
    """No swift on PATH and no AFSERIALIZATION_LIBRARY: the build backend stops before
    building, with one line saying what to install or to set (no traceback)."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("cmake", "cc", "objcopy", "strip"):
        found = shutil.which(tool)
        if found:
            (bare / tool).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if k != afs.LIBRARY_ENV}
    env.update(PATH=f"{bare}:{Path(sys.executable).parent}", PIP_NO_INDEX="1")
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                          "--disable-pip-version-check", "-w", str(tmp_path / "w"), str(BINDINGS)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode != 0
    ours = [line.strip() for line in (out.stdout + out.stderr).splitlines()
            if "afserialization build:" in line]
    assert len(ours) == 1, out.stdout + out.stderr
    assert "Swift 6" in ours[0] and afs.LIBRARY_ENV in ours[0]
    assert "Traceback" not in out.stdout + out.stderr


def test_outside_libraries_are_bundled_as_auditwheel_does(tmp_path):
    """A library that needs a shared library outside the manylinux policies (the shipped
    one does not: AFS_STATIC_CODECS=0 or a system without libzstd.a makes one) gets it
    bundled under afserialization.libs/ with a hashed name, DT_NEEDED and RUNPATH patched."""
    gcc, patchelf = shutil.which("gcc"), shutil.which("patchelf")
    if not gcc or not patchelf or not Path("/usr/include/zstd.h").exists():
        pytest.skip("needs gcc, patchelf and libzstd-dev")
    (tmp_path / "x.c").write_text("#include <zstd.h>\nunsigned x(void) { return ZSTD_versionNumber(); }\n")
    lib = tmp_path / "libx.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "x.c"), "-lzstd"],
                   check=True)
    sys.path.insert(0, str(BINDINGS))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(BINDINGS))
    staging = tmp_path / "staging"
    packed, copies = hatch_build.bundle_libraries(str(lib), str(staging))
    (target,) = copies.values()
    assert re.fullmatch(r"afserialization\.libs/libzstd-[0-9a-f]{8}\.so\.1", target), target
    needed = subprocess.run(["readelf", "-d", packed], capture_output=True, text=True).stdout
    assert f"[{target.split('/')[1]}]" in needed and "[libzstd.so.1]" not in needed
    assert "$ORIGIN/../afserialization.libs" in needed
    assert hatch_build.platform_tag([packed, *copies]).startswith("manylinux_")
    assert hatch_build.platform_tag([str(lib)]).startswith("linux_")  # unbundled: plain
