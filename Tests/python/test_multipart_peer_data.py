"""The multipart push parser against python-multipart's own test data.

The ``*.http`` bodies and the ``*.yaml`` expectations beside them are python-multipart's
``tests/test_data/http`` (vendored unchanged under Tests/data/multipart/python-multipart,
see its README.md for the repository, commit and license). Every case goes through
``afserialization.MultipartParser`` fed whole, one byte at a time and in random pieces;
every feeding must give the same outcome, and that outcome is compared with the yaml's:
the parts (name, file or field, filename, Content-Type, data) in order, or an error.

An error agrees when we raise InvalidMultipartError at the offending byte python-multipart
names (theirs is that byte or the one after it). Where our outcome differs, the case is in
``DIFFERENCES`` with the reason and OUR outcome, which the test then asserts (and it also
asserts that the outcome still differs, so a stale entry fails). The counts are printed
by the last test.
"""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import yaml

import afserialization as afs
from afserialization.errors import InvalidMultipartError

DATA = Path(__file__).resolve().parents[1] / "data" / "multipart" / "python-multipart"
CASES = sorted(p.stem for p in DATA.glob("*.http"))

# python-multipart's test_multipart.py does not read single_field_blocks.yaml's boundary
# (`--boundary`, which the body does not use): it parses that body with boundary `boundary`.
BOUNDARY = {"single_field_blocks": "boundary"}

# Cases where our outcome differs from python-multipart's: the reason, and ours.
# Ours is ("error", message fragment, byte offset) or a list of (name, filename, data).
DIFFERENCES = {
    "almost_match_boundary_without_LF": {
        "reason": "CRLF `--boundary` inside a part is a delimiter (RFC 2046 5.1.1: the "
                  "delimiter must not occur in the data); what follows it may be `--`, "
                  "spaces/tabs and a line end, or anything but those (then it is data, as "
                  "Go reads it). A CR there starts the line end, so CR without LF is a "
                  "framing error (Go's mime/multipart refuses it too: 'expecting a new "
                  "Part'); python-multipart keeps it as data.",
        "ours": ("error", "a boundary line has a CR without LF", 97),
    },
    "bad_initial_boundary": {
        "reason": "Header section 16 / RFC 2046 5.1.1: text before the first boundary is "
                  "preamble and ignored (Go skips it the same way). The misspelt first "
                  "line and the 'part' after it are preamble; the body then ends with its "
                  "close delimiter, so it has no parts, as empty_message (which "
                  "python-multipart accepts) and as Go's mime/multipart reads it. python-multipart requires the body to start "
                  "with the boundary.",
        "ours": [],
    },
    "CRLF_in_header": {
        "reason": "Both refuse it. The CRLF after `Content-` ends that header line, so "
                  "the error is the line `Content-` without a colon, reported at the "
                  "line's start (42), as Go's mime/multipart ('missing colon'); "
                  "python-multipart refuses the CR inside the header name (50).",
        "ours": ("error", "has no name and colon", 42),
    },
}

_OFFSET = re.compile(r"byte offset (\d+)")


def _boundary(case: str, spec: dict) -> str:
    return BOUNDARY.get(case, spec["boundary"])


def _run(body: bytes, boundary: str, sizes):
    """Our outcome: a list of (name, filename, content type, data), or ("error", message)."""
    parser = afs.MultipartParser(f'multipart/form-data; boundary="{boundary}"')
    parts = []
    try:
        i = 0
        k = 0
        while i < len(body):
            n = sizes[k % len(sizes)] if sizes else len(body)
            k += 1
            parts += parser.feed(body[i:i + n])
            i += n
        parts += parser.close()
    except InvalidMultipartError as e:
        return ("error", str(e))
    return [(p.name, p.filename, p.content_type, p.read()) for p in parts]


def _feedings(case: str, n: int):
    rng = random.Random(case)
    yield "whole", None
    yield "1-byte", [1]
    for _ in range(20):
        yield "random", [rng.randint(1, max(1, n // 3)) for _ in range(8)]


def _outcome(case: str):
    body = (DATA / f"{case}.http").read_bytes()
    spec = yaml.safe_load((DATA / f"{case}.yaml").read_bytes())
    boundary = _boundary(case, spec)
    first = None
    for label, sizes in _feedings(case, len(body)):
        got = _run(body, boundary, sizes)
        if first is None:
            first = got
        # Any split of the input gives what one feed gives (parts, or the same error).
        assert got == first, f"{case}: feeding {label} {sizes} differs from one feed"
    return spec["expected"], first


def _matches(expected, ours):
    """Whether our outcome is python-multipart's, and why not."""
    if isinstance(expected, dict):
        if not isinstance(ours, tuple):
            return False, f"expected error at {expected['error']}, got {len(ours)} part(s)"
        m = _OFFSET.search(ours[1])
        assert m, f"the error names no byte offset: {ours[1]}"
        at = int(m.group(1))
        if expected["error"] - 1 <= at <= expected["error"]:
            return True, ""
        return False, f"error at {at}, python-multipart at {expected['error']}"
    if isinstance(ours, tuple):
        return False, f"expected {len(expected)} part(s), got {ours[1]}"
    if len(ours) != len(expected):
        return False, f"expected {len(expected)} part(s), got {len(ours)}"
    # As python-multipart's test_http: a file's Content-Type is compared, a field's is not
    # (single_field_single_file.yaml gives the field one its body does not have).
    for e, (name, filename, ctype, data) in zip(expected, ours):
        is_file = filename is not None
        if (name != e["name"] or is_file != (e["type"] == "file") or data != e["data"]
                or (is_file and filename != e["file_name"])
                or (is_file and ctype != e["content_type"])):
            return False, f"part {name!r} {filename!r} {ctype!r} {data!r} is not {e!r}"
    return True, ""


_counts = {"agree": [], "differ": []}


def test_that_the_vendored_data_is_complete():
    assert len(CASES) == 30
    for case in CASES:
        assert (DATA / f"{case}.yaml").is_file(), case
    assert (DATA / "LICENSE.txt").is_file() and (DATA / "README.md").is_file()
    assert set(DIFFERENCES) <= set(CASES) and set(BOUNDARY) <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_python_multipart_case(case):
    expected, ours = _outcome(case)
    same, why = _matches(expected, ours)
    if case not in DIFFERENCES:
        assert same, f"{case}: {why}"
        _counts["agree"].append(case)
        return
    # A listed difference: ours is asserted, and it must still differ from theirs.
    assert not same, f"{case} now agrees with python-multipart: remove it from DIFFERENCES"
    want = DIFFERENCES[case]["ours"]
    if isinstance(want, tuple):
        assert isinstance(ours, tuple), f"{case}: {ours!r}"
        assert want[1] in ours[1], ours[1]
        assert f"byte offset {want[2]})" in ours[1], ours[1]
    else:
        assert [(n, f, d) for n, f, _, d in ours] == want
    _counts["differ"].append(case)


def test_the_counts(capsys):
    """Runs after the cases (file order): prints the tally (past pytest's capture) and
    checks it."""
    done = len(_counts["agree"]) + len(_counts["differ"])
    if done != len(CASES):
        pytest.skip("run with the case tests to count them")
    with capsys.disabled():
        print(f"\npython-multipart test data: {len(CASES)} cases, {len(_counts['agree'])} agree, "
              f"{len(_counts['differ'])} differ ({', '.join(sorted(_counts['differ']))})")
    assert sorted(_counts["differ"]) == sorted(DIFFERENCES)
