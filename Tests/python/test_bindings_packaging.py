"""pip install ./bindings/python: the wheel carries the library, and
AFSERIALIZATION_LIBRARY overrides it at import time."""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import afserialization as afs

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package installed with pip (offline, no build isolation) into a target dir."""
    target = tmp_path_factory.mktemp("site")
    env = dict(os.environ, AFSERIALIZATION_LIBRARY=os.path.realpath(afs.library_path),
               PIP_NO_INDEX="1")
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--no-build-isolation", "--disable-pip-version-check",
                          "--target", str(target), str(REPO / "bindings" / "python")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return target


def run_in(target, code, **env_overrides):
    env = {k: v for k, v in os.environ.items() if k != "AFSERIALIZATION_LIBRARY"}
    env.update(env_overrides)
    env["PYTHONPATH"] = str(target)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=str(target), timeout=60)


def test_the_installed_package_carries_the_library(installed):
    packaged = installed / "afserialization" / "libafserialization.so"
    assert packaged.read_bytes() == Path(os.path.realpath(afs.library_path)).read_bytes()
    assert (installed / "afserialization" / "py.typed").exists()
    out = run_in(installed, "import afserialization as a; print(a.library_path); "
                            "print(a.percent_escape('a b'))")
    assert out.returncode == 0, out.stderr
    path, escaped = out.stdout.split()
    assert Path(path) == packaged and escaped == "a%20b"


def test_environment_variable_overrides_the_packaged_library(installed, tmp_path):
    copy = tmp_path / "libcopy.so"
    shutil.copy(os.path.realpath(afs.library_path), copy)
    out = run_in(installed, "import afserialization as a; print(a.library_path)",
                 AFSERIALIZATION_LIBRARY=str(copy))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(copy)
    bad = run_in(installed, "import afserialization", AFSERIALIZATION_LIBRARY="/no/such.so")
    assert bad.returncode != 0 and "/no/such.so" in bad.stderr


def test_wheel_and_sdist_contents(tmp_path):
    sys.path.insert(0, str(REPO / "bindings" / "python" / "build_backend"))
    try:
        import afs_build
    finally:
        sys.path.pop(0)
    saved = os.environ.get(afs.LIBRARY_ENV)
    os.environ[afs.LIBRARY_ENV] = os.path.realpath(afs.library_path)
    try:
        wheel = afs_build.build_wheel(str(tmp_path))
    finally:
        if saved is None:
            del os.environ[afs.LIBRARY_ENV]
        else:
            os.environ[afs.LIBRARY_ENV] = saved
    assert wheel.startswith("afserialization-") and "-py3-none-linux" in wheel
    with zipfile.ZipFile(tmp_path / wheel) as z:
        names = set(z.namelist())
        assert {"afserialization/__init__.py", "afserialization/_ffi.py",
                "afserialization/libafserialization.so", "afserialization/py.typed"} <= names
        record = z.read(next(n for n in names if n.endswith("RECORD"))).decode()
        assert "afserialization/libafserialization.so,sha256=" in record
        assert "Root-Is-Purelib: false" in z.read(next(n for n in names if n.endswith("WHEEL"))).decode()
    sdist = afs_build.build_sdist(str(tmp_path))
    assert sdist.endswith(".tar.gz")
    editable = afs_build.build_editable(str(tmp_path))
    with zipfile.ZipFile(tmp_path / editable) as z:
        assert any(n.endswith(".pth") for n in z.namelist())
