"""The XML reader (header section 11) through the Python package.

* The project's own corpus (Tests/data/xml/{wf,nwf}, written by make_corpus.py) against
  expat (Python's xml.parsers.expat with namespace processing): every well-formed document
  gives expat's event stream (normalized to the same tuples), every not-well-formed one is
  refused by both (the few documents where expat is lax, or differs by the spec edition it
  implements, are listed with the rule); the counts are printed.
* Any split of a document gives the one-shot events (and the one-shot error).
* The tree (XMLParser's default TreeBuilder, and XMLResponseSerializer) equals
  ElementTree's own for every corpus document expat agrees on.
* defusedxml's attack classes: entity expansion (billion laughs, quadratic blowup),
  external entities (general and parameter), DTD retrieval: refused or never fetched (a
  local HTTP server on 127.0.0.1 records any request).
"""
from __future__ import annotations

import http.server
import threading
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat
from pathlib import Path
from typing import Any, List, Tuple

import pytest

import afserialization as afs
from afserialization import xmlparse
from afserialization.errors import InvalidXMLError, LimitError, StateError, UnacceptableStatusError

CORPUS = Path(__file__).resolve().parents[1] / "data" / "xml"
WF = sorted((CORPUS / "wf").glob("*.xml"))
NWF = sorted((CORPUS / "nwf").glob("*.xml"))

# Well-formed documents on which expat (the copy Python links) differs, and why.
EXPAT_DIFFERS = {
    "name-chars": "expat uses the name characters of XML 1.0 before the fifth edition",
    "name-supplementary": "expat uses the name characters of XML 1.0 before the fifth edition",
}
# Not-well-formed documents that expat accepts, and the rule it does not check.
EXPAT_ACCEPTS = {
    "bom-utf8-declares-latin1": "4.3.3: an entity in an encoding other than the one declared is a fatal error",
    "decl-bad-version": "2.8: VersionNum is '1.' [0-9]+",
    "dtd-standalone-undeclared-pe": "WFC Entity Declared applies with standalone='yes'",
    "utf16-nobom-nodecl": "4.3.3: UTF-16 entities begin with a byte order mark or declare their encoding",
}
# Documents ElementTree's own parser refuses: it treats every skipped entity as an error,
# and its expat does not expand internal parameter entities.
ET_REFUSES = {"dtd-after-external-pe-not-processed", "dtd-internal-pe-declares"}
SEP = "\x01"  # expat's namespace separator (no corpus document uses it)


def clark(uri: str, local: str) -> str:
    return "{%s}%s" % (uri, local) if uri else local


def expat_events(data: bytes) -> List[Tuple[Any, ...]]:
    p = expat.ParserCreate(namespace_separator=SEP)
    # internal parameter entities expanded (XML 1.0 section 5.1); without an external-entity
    # handler expat reads no external one
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_UNLESS_STANDALONE)
    ev: List[Tuple[Any, ...]] = []
    in_dtd = [False]

    def cl(n: str) -> str:
        return clark(*n.split(SEP, 1)) if SEP in n else n

    def text(t: str) -> None:
        if ev and ev[-1][0] == "text":
            ev[-1] = ("text", ev[-1][1] + t)
        else:
            ev.append(("text", t))

    p.StartElementHandler = lambda n, at: ev.append(("start", cl(n), {cl(k): v for k, v in at.items()}))
    p.EndElementHandler = lambda n: ev.append(("end", cl(n)))
    p.CharacterDataHandler = text
    p.CommentHandler = lambda d: None if in_dtd[0] else ev.append(("comment", d))
    p.ProcessingInstructionHandler = lambda t, d: None if in_dtd[0] else ev.append(("pi", t, d))
    p.StartDoctypeDeclHandler = lambda *a: in_dtd.__setitem__(0, True)
    p.EndDoctypeDeclHandler = lambda *a: in_dtd.__setitem__(0, False)
    p.Parse(data, True)
    return ev


class Recorder:
    """An ElementTree target recording the same tuples (text runs joined)."""

    def __init__(self) -> None:
        self.ev: List[Tuple[Any, ...]] = []

    def start(self, tag: str, attrib: dict) -> None:
        self.ev.append(("start", tag, dict(attrib)))

    def end(self, tag: str) -> None:
        self.ev.append(("end", tag))

    def data(self, t: str) -> None:
        if self.ev and self.ev[-1][0] == "text":
            self.ev[-1] = ("text", self.ev[-1][1] + t)
        else:
            self.ev.append(("text", t))

    def comment(self, t: str) -> None:
        self.ev.append(("comment", t))

    def pi(self, t: str, d: str) -> None:
        self.ev.append(("pi", t, d))

    def close(self) -> List[Tuple[Any, ...]]:
        return self.ev


def ours(data: bytes, sizes: Tuple[int, ...] = ()) -> Any:
    """Our events (via XMLParser and a recording target), or (events so far, error text)."""
    r = Recorder()
    p = afs.XMLParser(target=r)
    try:
        if not sizes:
            p.feed(data)
        else:
            i = k = 0
            while i < len(data):
                n = sizes[k % len(sizes)]
                p.feed(data[i:i + n])
                i += n
                k += 1
        return p.close()
    except (InvalidXMLError, LimitError) as e:
        return (r.ev, str(e))


def test_corpus_against_expat() -> None:
    assert len(WF) >= 100 and len(NWF) >= 140
    same = differ = 0
    for f in WF:
        d = f.read_bytes()
        mine = ours(d)
        assert isinstance(mine, list), f"{f.name}: {mine}"
        if f.stem in EXPAT_DIFFERS:
            differ += 1
            with pytest.raises(expat.ExpatError):
                expat_events(d)
            continue
        assert mine == expat_events(d), f.name
        same += 1
    refused = lax = 0
    for f in NWF:
        d = f.read_bytes()
        mine = ours(d)
        assert isinstance(mine, tuple), f"{f.name} was accepted"
        assert "at line " in mine[1] and "byte offset" in mine[1], mine[1]
        try:
            expat_events(d)
            assert f.stem in EXPAT_ACCEPTS, f"expat accepts {f.name}"
            lax += 1
        except (expat.ExpatError, LookupError):  # LookupError: an encoding Python lacks
            assert f.stem not in EXPAT_ACCEPTS, f"expat now refuses {f.name}"
            refused += 1
    print(f"\nXML corpus vs expat: {same} well-formed documents with expat's events, "
          f"{differ} where expat's older name rules refuse them; {refused + lax} not-well-formed "
          f"documents refused ({refused} by expat too, {lax} that expat accepts)")


@pytest.mark.parametrize("sizes", [(1,), (2,), (3,), (7, 1), (5, 2, 1), (64,)])
def test_every_split_gives_the_one_shot_result(sizes: Tuple[int, ...]) -> None:
    for f in WF + NWF:
        d = f.read_bytes()
        assert ours(d, sizes) == ours(d), (f.name, sizes)


def test_tree_equals_elementtree() -> None:
    n = 0
    for f in WF:
        if f.stem in EXPAT_DIFFERS:
            continue
        d = f.read_bytes()
        mine = afs.XMLParser()
        mine.feed(d)
        root = mine.close()
        try:
            theirs = ET.fromstring(d)
        except ET.ParseError:
            # ElementTree refuses a reference it cannot resolve even where XML 1.0 lets a
            # non-validating processor skip it (after an unread external parameter entity)
            assert f.stem in ET_REFUSES, f.name
            continue
        assert ET.tostring(root) == ET.tostring(theirs), f.name
        via_serializer = afs.XMLResponseSerializer().response_object(200, "application/xml", d)
        assert ET.tostring(via_serializer) == ET.tostring(root), f.name
        n += 1
    assert n > 80


def test_xml_events_tuples() -> None:
    ev = afs.xml_events(b"<?xml version='1.0'?><!DOCTYPE r [<!-- in dtd --><?in dtd?>]>"
                        b"<p:r xmlns:p='urn:p' xmlns='urn:d' p:a='1' b='2'>x<![CDATA[y]]>z<!--c--><?t d?><e/></p:r>")
    assert ev == [
        ("start", "p:r", "urn:p", "r", {"p:a": "1", "b": "2"}),
        ("text", "xyz"),
        ("comment", "c"),
        ("pi", "t", "d"),
        ("start", "e", "urn:d", "e", {}),
        ("end", "e", "urn:d", "e"),
        ("end", "p:r", "urn:p", "r"),
    ]


def test_jsonml_tree() -> None:
    rs = afs.XMLResponseSerializer()
    doc = afs.HTTPResponseSerializer.response_object(
        rs, 200, "text/xml; charset=utf-8",
        b"<r xmlns:p='urn:p' a='1'>t<!--x-->u<p:c/><d>e</d>tail</r>")
    assert doc == ["r", {"xmlns:p": "urn:p", "a": "1"}, "tu", ["p:c", {}], ["d", {}, "e"], "tail"]


def test_response_serializer_rules() -> None:
    rs = afs.XMLResponseSerializer()
    assert rs.acceptable_content_types == frozenset({"application/xml", "text/xml"})
    e = rs.response_object(200, "application/xml", b"<r a='1'>t<c/>tail</r>")
    assert e.tag == "r" and e.attrib == {"a": "1"} and e.text == "t" and e[0].tail == "tail"
    assert rs.response_object(200, "application/xml", b"") is None
    with pytest.raises(afs.UnacceptableContentTypeError):
        rs.response_object(200, "application/json", b"<r/>")
    with pytest.raises(UnacceptableStatusError) as ei:
        rs.response_object(500, "application/xml", b"<error>boom</error>")
    assert ei.value.document.tag == "error" and ei.value.document.text == "boom"
    with pytest.raises(InvalidXMLError, match=r"</a> does not match .* at line 2, column 3 \(byte offset 6\)"):
        rs.response_object(200, "text/xml", b"<r>\n  </a></r>")


def test_compound_with_an_xml_member() -> None:
    c = afs.CompoundResponseSerializer([afs.JSONResponseSerializer(), afs.XMLResponseSerializer()])
    assert c.response_object(200, "application/json", b"[1]") == [1]
    e = c.response_object(200, "text/xml", b"<r>1</r>")
    assert e.tag == "r" and e.text == "1"


def test_target_interface_and_errors() -> None:
    class Stop(Exception):
        pass

    class T:
        def start(self, tag: str, attrib: dict) -> None:
            if tag == "stop":
                raise Stop()

    p = afs.XMLParser(target=T())
    with pytest.raises(StateError) as ei:
        p.feed(b"<r><stop/></r>")
    assert isinstance(ei.value.__cause__, Stop) or isinstance(ei.value.__context__, Stop)
    p = afs.XMLParser()
    p.feed(b"<r>")
    with pytest.raises(InvalidXMLError, match="ends before the end tag of <r>"):
        p.close()


def test_encodings_as_utf8() -> None:
    text = "<r a='\u00e9'>\u4e2d\U0001F600</r>"
    want = [("start", "r", "", "r", {"a": "\u00e9"}), ("text", "\u4e2d\U0001F600"), ("end", "r", "", "r")]
    for data in (text.encode(), b"\xef\xbb\xbf" + text.encode(), ("\ufeff" + text).encode("utf-16-le"),
                 ("\ufeff" + text).encode("utf-16-be")):
        assert afs.xml_events(data) == want
    assert afs.xml_events(b"<?xml version='1.0' encoding='latin1'?><r>\xe9</r>")[1] == ("text", "\u00e9")
    with pytest.raises(InvalidXMLError, match="unsupported encoding 'Shift_JIS'"):
        afs.xml_events(b"<?xml version='1.0' encoding='Shift_JIS'?><r/>")


# --- defusedxml's attack classes -------------------------------------------------------


def test_billion_laughs_is_refused() -> None:
    dtd = "<!ENTITY l0 'lol'>" + "".join(f"<!ENTITY l{i} '{('&l%d;' % (i - 1)) * 10}'>" for i in range(1, 10))
    doc = f"<!DOCTYPE r [{dtd}]><r>&l9;</r>".encode()
    with pytest.raises(LimitError, match="entity expansion exceeds the limit"):
        afs.xml_events(doc)
    with pytest.raises(LimitError):
        afs.XMLResponseSerializer().response_object(200, "application/xml", doc)


def test_quadratic_blowup_is_refused() -> None:
    big = "x" * 100_000
    doc = (f"<!DOCTYPE r [<!ENTITY a '{big}'>]><r>" + "&a;" * 2000 + "</r>").encode()
    with pytest.raises(LimitError):
        afs.xml_events(doc)
    doc = (f"<!DOCTYPE r [<!ENTITY a '{big}'>]><r b='" + "&a;" * 2000 + "'/>").encode()
    with pytest.raises(LimitError):
        afs.xml_events(doc)
    # a few references stay within the bound
    ok = (f"<!DOCTYPE r [<!ENTITY a '{big}'>]><r>&a;&a;</r>").encode()
    assert afs.xml_events(ok)[1] == ("text", big * 2)


def test_nesting_limit() -> None:
    assert len(afs.xml_events(b"<a>" * 512 + b"</a>" * 512)) == 1024
    with pytest.raises(LimitError, match="nested more than 512"):
        afs.xml_events(b"<a>" * 513 + b"</a>" * 513)
    with pytest.raises(LimitError):
        afs.xml_events(b"<!DOCTYPE a [<!ENTITY e '<b><b><b/></b></b>'>]>" + b"<a>" * 510 + b"&e;" + b"</a>" * 510)


@pytest.fixture()
def recording_server() -> Any:
    hits: List[str] = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            body = b"<!ENTITY leak 'LEAKED'>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: Any) -> None:
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", hits
    srv.shutdown()
    srv.server_close()


def test_external_entities_and_dtds_are_never_read(recording_server: Any, tmp_path: Path) -> None:
    url, hits = recording_server
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET")
    docs = [
        # external general entity (file and network): skipped in content
        f"<!DOCTYPE r [<!ENTITY e SYSTEM '{secret.as_uri()}'>]><r>&e;</r>",
        f"<!DOCTYPE r [<!ENTITY e SYSTEM '{url}/e'>]><r>&e;</r>",
        # external parameter entity, DTD retrieval
        f"<!DOCTYPE r [<!ENTITY % p SYSTEM '{url}/p'> %p;]><r>&leak;</r>",
        f"<!DOCTYPE r SYSTEM '{url}/dtd'><r>&leak;</r>",
        f"<!DOCTYPE r PUBLIC '-//X//Y' '{url}/public'><r/>",
    ]
    for d in docs:
        ev = afs.xml_events(d.encode())
        assert ev[0][0] == "start" and all(e[0] != "text" for e in ev), (d, ev)
    # in an attribute value, an external entity is an error (WFC: No External Entity References)
    with pytest.raises(InvalidXMLError, match="external entity 'e' in an attribute value"):
        afs.xml_events(f"<!DOCTYPE r [<!ENTITY e SYSTEM '{url}/a'>]><r a='&e;'/>".encode())
    # standalone='yes': an entity declared only in the unread external subset is an error
    with pytest.raises(InvalidXMLError, match="undeclared entity 'leak'"):
        afs.xml_events(f"<?xml version='1.0' standalone='yes'?><!DOCTYPE r SYSTEM '{url}/dtd'><r>&leak;</r>".encode())
    assert hits == []
