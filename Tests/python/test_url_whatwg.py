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


def random_hosts(count: int, seed: int) -> List[str]:
    """Hosts of 1-6 code points drawn from scripts IDNA treats differently (Latin with
    diacritics, combining marks, Greek, Cyrillic, Hebrew, Arabic, Devanagari, Thai, Hangul
    jamo and syllables, CJK, fullwidth forms, joiners, variation selectors, soft hyphen,
    emoji, mathematical letters), with an ASCII, xn-- or Hebrew last label."""
    import random
    rng = random.Random(seed)
    ranges = [(0x61, 0x7A), (0xC0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
              (0x591, 0x5F4), (0x600, 0x61C), (0x61E, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F),
              (0x1100, 0x11FF), (0x200B, 0x200D), (0x2160, 0x2188), (0x3000, 0x30FF),
              (0x4E00, 0x4E50), (0xAC00, 0xAC50), (0xFF01, 0xFF5E), (0x30, 0x39), (0x2D, 0x2E),
              (0x1F600, 0x1F64F), (0xFE00, 0xFE0F), (0xAD, 0xAD), (0x1D400, 0x1D4FF)]
    out: List[str] = []
    while len(out) < count:
        label = "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(1, 6)))
        host = label + rng.choice([".com", ".xn--p1ai", "", "." + chr(rng.randint(0x5D0, 0x5EA))])
        if any(ord(c) >= 0x80 for c in host):
            out.append(host)
    return out


REG_NAME = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=")


def test_that_idna_hosts_match_whatwg(record_property: Any) -> None:
    """Non-ASCII hosts: the library's A-label is what ada makes of the host, and what ada
    refuses is refused. Where they may differ, by design: a host that IDNA maps to an ASCII
    character RFC 3986 does not allow in a host (fullwidth ``{`` becomes ``{``) is refused
    here. U+061D is left out of the draw: ada's Bidi table predates its class (AL)."""
    agree = by_design = 0
    wrong: List[str] = []
    for host in random_hosts(6000, seed=14):
        url = f"http://{host}/"
        try:
            want: Optional[str] = ada_url.URL(url).hostname
        except ValueError:
            want = None
        out, err = intake(url)
        got = out[len("http://"):-1] if out else None
        if want is not None and got is not None:
            same = components("http://" + got + "/")
            if same is not None and same[3] == want:
                agree += 1
                continue
        elif want is None and (got is None or components("http://" + got + "/") is None):
            agree += 1  # both refuse (e.g. a last label that is a number: not IPv4 to WHATWG)
            continue
        elif want is not None and got is None and not set(want.encode()) <= REG_NAME:
            by_design += 1
            continue
        wrong.append(f"{host!r} {[hex(ord(c)) for c in host]}: ada {want!r}, library {got!r} {err or ''}")
    summary = (f"6000 random IDNA hosts: {agree} as ada, {by_design} refused by design "
               f"(ASCII RFC 3986 does not allow in a host), {len(wrong)} different")
    print(summary)
    record_property("idna_summary", summary)
    assert not wrong, "\n".join(wrong[:30])
    assert agree > 5000
