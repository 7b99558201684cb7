"""The README's commands work as written, where a test can run them:

* the quick start, verbatim, with HOME pointing at a temporary folder (so
  `~/.local/afs` is a fresh prefix): install-deps + env.sh + the CMake build and install
  from the checkout, then the pkg-config build of "A short example" (`app.c`), the program,
  and the valgrind line with the installed suppressions;
* the command-line examples of "The command line" (on a terminal-like stdin, as a user
  types them; `python3` is this interpreter);
* the benchmark lines name scripts that exist and set up what they need;
* the set-up paragraph's `--list` works and the .pc file's libdir is clean.

The quick start rebuilds nothing when build/ is current (the test command's cmake stage
made it); without a configured build/ it is skipped (it would take a whole Swift build).
"""
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def section(title):
    start = README.index(title)
    nxt = README.find("\n## ", start + len(title))
    return README[start:nxt if nxt != -1 else len(README)]


def blocks(text, lang="sh"):
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def bash(script, cwd, env, stdin=None, timeout=900):
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                          stdin=stdin, capture_output=True, text=True, errors="replace",
                          timeout=timeout)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


def environment(home):
    env = dict(os.environ)
    env["HOME"] = str(home)
    env.pop("PKG_CONFIG_PATH", None)
    return env


def test_quick_start_verbatim(home, tmp_path):
    if not (REPO / "build" / "CMakeCache.txt").exists():
        pytest.skip("no configured build/ (the test command's cmake stage makes it)")
    quick = section("## Using the library: quick start")
    sh = blocks(quick)
    install, program = sh[0], sh[1]
    valgrind = next(b for b in sh if b.startswith("valgrind "))
    assert "scripts/install-deps.sh" in install and ". scripts/env.sh" in install
    env = environment(home)
    out = bash(install, REPO, env)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    prefix = home / ".local" / "afs"
    assert (prefix / "lib" / "pkgconfig" / "afserialization.pc").exists()

    (app,) = blocks(section("## A short example"), "c")[:1]
    (tmp_path / "app.c").write_text(app)
    out = bash(program, tmp_path, env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "POST https://example.com/users" in out.stdout
    assert '{"name":"Zoë","admin":false}' in out.stdout

    libdir = subprocess.run(["pkg-config", "--variable=libdir", "afserialization"],
                            env=dict(env, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig")),
                            capture_output=True, text=True).stdout.strip()
    assert libdir == str(prefix / "lib"), libdir  # clean: no ../.. nor //

    if not shutil.which("valgrind"):
        pytest.skip("valgrind is not installed")
    out = bash(valgrind, tmp_path, env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ERROR SUMMARY: 0 errors" in out.stderr, out.stderr[-3000:]
    assert "definitely lost: 0" in out.stderr or "no leaks are possible" in out.stderr


def test_command_line_examples(tmp_path):
    text = section("## Python")
    start = text.index("**The command line.**")
    (examples,) = blocks(text[start:])[:1]
    (tmp_path / "cat.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (tmp_path / "doc.json").write_text('{"title": "doc"}')
    env = dict(os.environ)
    if os.environ.get("AFS_TEST_INSTALLED_PACKAGE") != "1":  # else the installed package
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO / "bindings" / "python"),
                                                         env.get("PYTHONPATH")] if p)
    lines = [line.split("#")[0].strip() for line in examples.splitlines() if line.strip()]
    assert len(lines) >= 3
    for line in lines:
        assert line.startswith("python3 -m afserialization "), line
        master, slave = pty.openpty()  # stdin a terminal, as typed
        try:
            out = bash(line.replace("python3", f"'{sys.executable}'", 1), tmp_path, env,
                       stdin=slave, timeout=60)
        finally:
            os.close(slave)
            os.close(master)
        assert out.returncode == 0, (line, out.stderr)
        assert re.match(r"^[A-Z]+ /\S* HTTP/1\.1\r?\n", out.stdout), (line, out.stdout[:200])
    assert "q=swift%20ctypes" in subprocess.run(
        [sys.executable, "-m", "afserialization", "-I", "example.com/search",
         "q==swift ctypes"], env=env, capture_output=True, text=True).stdout


def test_benchmark_lines_set_up_what_they_need():
    (bench,) = blocks(section("## Benchmarks"))[:1]
    for line in bench.splitlines():
        command = line.split("#")[0].strip()
        if not command:
            continue
        script = REPO / command.split()[0]
        assert script.is_file() and os.access(script, os.X_OK), command
        text = script.read_text()
        assert "scripts/install-deps.sh" in text and "scripts/env.sh" in text, command
        if len(command.split()) > 1 and command.split()[1].endswith(".py"):
            assert (script.parent / command.split()[1]).is_file(), command


def test_install_deps_lists_what_it_installs():
    out = subprocess.run([str(REPO / "scripts" / "install-deps.sh"), "--list"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    kinds = {line.split()[0] for line in out.stdout.splitlines()}
    assert kinds == {"debian", "pypi"}
    names = {line.split()[1] for line in out.stdout.splitlines()}
    assert {"valgrind", "libzstd-dev", "pytest", "httpie", "httpx", "aiohttp"} <= names


def test_code_blocks_are_closed_and_python_ones_compile():
    """Every Markdown file's fences pair up (an unclosed one swallows the rest of the page),
    and every ```python block of the README is valid Python (top-level await allowed)."""
    import ast
    docs = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
    for path in docs:
        fences = [i for i, line in enumerate(path.read_text().splitlines(), 1)
                  if line.lstrip().startswith("```")]
        assert len(fences) % 2 == 0, f"{path.name}: an unclosed code fence (fences at lines {fences})"
    for i, code in enumerate(blocks(README, "python")):
        try:
            compile(code, f"README python block {i + 1}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except SyntaxError as e:
            raise AssertionError(f"README python block {i + 1} ({code.splitlines()[0]!r}): {e}") from None
