"""URL intake keeps the meaning of a URL: a WHATWG parser (ada, the parser Node.js uses; PyPI
``ada-url``) gives the same scheme, host and port, and the same percent-decoded userinfo,
path, query and fragment for what the caller passed and for what the library sends.

The inputs are the absolute http/https inputs of the web-platform-tests'
``url/resources/urltestdata.json`` (vendored under Tests/data/wpt-url with its license)
without backslashes or control characters (WHATWG reads ``\\`` as ``/`` in http URLs and
drops tabs and newlines, where RFC 3986 and this library do not).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote_to_bytes

import ada_url
import pytest

import afserialization as afs

DATA = Path(__file__).resolve().parents[1] / "data" / "wpt-url" / "urltestdata.json"


def selected_inputs() -> List[str]:
    entries = json.loads(DATA.read_text(encoding="utf-8"))
    out: List[str] = []
    for e in entries:
        if not isinstance(e, dict):
            continue  # comments
        s = e["input"]
        if "\\" in s or any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
            continue
        if re.match(r"(?i)https?:", s.lstrip(" ")) and s not in out:
            out.append(s)
    return out


def components(url: str) -> Optional[Tuple[Any, ...]]:
    """What a WHATWG parser makes of url (no base), or None when it refuses it."""
    try:
        u = ada_url.URL(url)
    except ValueError:
        return None

    def dec(s: str) -> bytes:
        return unquote_to_bytes(s)

    return (u.protocol, dec(u.username), dec(u.password), u.hostname, u.port,
            dec(u.pathname), dec(u.search), dec(u.hash))


def intake(url: str) -> Tuple[Optional[str], Optional[str]]:
    """(the URL the library keeps, None) or (None, its error message)."""
    try:
        with afs.Request("GET", url) as r:
            return r.url, None
    except (afs.BadURLError, afs.InvalidUTF8Error) as e:  # lone surrogates: not UTF-8
        return None, str(e)


def test_that_intake_keeps_what_whatwg_parsers_read(record_property: Any) -> None:
    inputs = selected_inputs()
    assert len(inputs) > 150, "the selection lost the data"
    counts: Dict[str, int] = {"same components": 0, "both refuse": 0, "refused, WHATWG refuses too": 0}
    refused_but_whatwg_accepts: List[Tuple[str, str]] = []
    changed: List[str] = []
    for s in inputs:
        want = components(s)
        out, err = intake(s)
        if out is None:
            if want is None:
                counts["refused, WHATWG refuses too"] += 1
            else:
                refused_but_whatwg_accepts.append((s, err or ""))
            continue
        got = components(out)
        if got == want:
            counts["same components" if want is not None else "both refuse"] += 1
        else:
            changed.append(f"{s!r} -> {out!r}: WHATWG reads {want} then {got}")
    summary = (f"{len(inputs)} inputs selected: " + ", ".join(f"{v} {k}" for k, v in counts.items())
               + f", {len(refused_but_whatwg_accepts)} refused though WHATWG accepts them, {len(changed)} changed")
    print(summary)
    for s, err in refused_but_whatwg_accepts:
        print(f"  refused: {s!r}: {err}")
    record_property("wpt_summary", summary)
    assert not changed, "\n".join(changed)
    # What the library refuses and WHATWG accepts is only what RFC 3986 has no place for:
    # a host WHATWG repairs (empty, with a port that is not digits, ...), named by the error.
    for s, err in refused_but_whatwg_accepts:
        assert "offset" in err or "IDNA" in err or "empty" in err, (s, err)
    assert counts["same components"] >= 100


@pytest.mark.parametrize("url,want", [
    ("https://api.example.com/articles?filter[title]=x", "https://api.example.com/articles?filter%5Btitle%5D=x"),
    ("https://example.com/movies?hd=[1]", "https://example.com/movies?hd=%5B1%5D"),
    ("https://de.wikipedia.org/wiki/Köln", "https://de.wikipedia.org/wiki/K%C3%B6ln"),
    ("https://example.com/a b", "https://example.com/a%20b"),
    ("https://example.com/?q=a|b", "https://example.com/?q=a%7Cb"),
    ("https://example.com/?q={x}", "https://example.com/?q=%7Bx%7D"),
    ("https://bücher.example/", "https://xn--bcher-kva.example/"),
])
def test_that_the_urls_of_issue_14_are_accepted(url: str, want: str) -> None:
    out, err = intake(url)
    assert out == want, err
    assert components(out) == components(url)
