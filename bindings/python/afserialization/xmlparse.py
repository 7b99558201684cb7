"""XML through the library's reader (header section 11): events, an incremental parser with
ElementTree's target interface, and the XML response serializer.

Named ``xmlparse`` so that it never shadows the standard library's ``xml`` package.

* :func:`xml_events` -- the events of a whole document as tuples:
  ``("start", qname, ns_uri, local_name, {qname: value})`` (namespace declarations are not
  attributes here), ``("end", qname, ns_uri, local_name)``, ``("text", str)`` (adjacent runs
  joined), ``("comment", str)``, ``("pi", target, data)``.
* :class:`XMLParser` -- ``feed(data)`` / ``close()`` calling a target's ``start(tag, attrib)``,
  ``end(tag)``, ``data(text)``, ``comment(text)``, ``pi(target, data)`` and ``close()``, with
  tags and attribute names as ``{uri}local``; the default target is a
  :class:`xml.etree.ElementTree.TreeBuilder`, so ``close()`` returns the root ``Element``.
* :class:`XMLResponseSerializer` -- AFXMLParserResponseSerializer: accepts
  ``application/xml`` and ``text/xml``; ``response_object`` returns an ``Element``.

Errors: :class:`~afserialization.errors.InvalidXMLError` (not well-formed, unsupported
encoding; the message names line, column and byte offset), ``LimitError`` (entity expansion,
nesting beyond 512), ``StateError`` (a target method raised: that exception is chained).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from ctypes import POINTER, byref, c_void_p, string_at
from typing import Any, Dict, List, Optional, Tuple

from . import _ffi
from ._ffi import lib
from ._handle import CHandle
from .errors import UnacceptableStatusError
from .response import HTTPResponseSerializer

__all__ = ["xml_events", "XMLParser", "XMLResponseSerializer"]

_XMLNS = "http://www.w3.org/2000/xmlns/"
_XML = "http://www.w3.org/XML/1998/namespace"


def _s(b: Optional[bytes]) -> str:
    return b.decode("utf-8") if b else ""


def _clark(uri: str, local: str) -> str:
    return "{%s}%s" % (uri, local) if uri else local


class _Callbacks:
    """Builds an ``afs_xml_handler`` whose callbacks call ``sink``'s methods; an exception
    in a method is stored and stops the parse (re-raised by the library wrapper)."""

    def __init__(self, sink: Any) -> None:
        def guard(fn: Any) -> Any:
            def call(*args: Any) -> int:
                try:
                    fn(*args)
                    return 0
                except BaseException as exc:  # noqa: B902 - re-raised after the C call
                    _ffi.store_exception(exc)
                    return 1
            return call

        def start(_ctx: Any, q: bytes, u: bytes, l: bytes, attrs: Any, n: int) -> None:
            sink.start(_s(q), _s(u), _s(l), [(_s(a.qname), _s(a.ns_uri), _s(a.local_name), _s(a.value))
                                             for a in (attrs[i] for i in range(n))])

        def end(_ctx: Any, q: bytes, u: bytes, l: bytes) -> None:
            sink.end(_s(q), _s(u), _s(l))

        def text(_ctx: Any, p: int, n: int) -> None:
            sink.text(string_at(p, n).decode("utf-8"))

        def comment(_ctx: Any, p: int, n: int) -> None:
            sink.comment(string_at(p, n).decode("utf-8"))

        def pi(_ctx: Any, t: bytes, d: bytes) -> None:
            sink.pi(_s(t), _s(d))

        self.fns = (_ffi.XML_START_FN(guard(start)), _ffi.XML_END_FN(guard(end)), _ffi.XML_TEXT_FN(guard(text)),
                    _ffi.XML_TEXT_FN(guard(comment)), _ffi.XML_PI_FN(guard(pi)))
        self.handler = _ffi.afs_xml_handler(*self.fns)


class _EventList:
    def __init__(self) -> None:
        self._events: List[Tuple[Any, ...]] = []
        self._text: List[str] = []

    @property
    def events(self) -> List[Tuple[Any, ...]]:
        self._flush()
        return self._events

    def _flush(self) -> None:
        if self._text:
            self._events.append(("text", "".join(self._text)))
            self._text = []

    def start(self, q: str, u: str, l: str, attrs: List[Tuple[str, str, str, str]]) -> None:
        self._flush()
        self._events.append(("start", q, u, l, {a[0]: a[3] for a in attrs}))

    def end(self, q: str, u: str, l: str) -> None:
        self._flush()
        self._events.append(("end", q, u, l))

    def text(self, t: str) -> None:
        self._text.append(t)

    def comment(self, t: str) -> None:
        self._flush()
        self._events.append(("comment", t))

    def pi(self, t: str, d: str) -> None:
        self._flush()
        self._events.append(("pi", t, d))


def _bytes(data: Any) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"XML input must be bytes or str, not {type(data).__name__}")


def xml_events(data: Any) -> List[Tuple[Any, ...]]:
    """The events of the whole document ``data`` (bytes; a ``str`` is encoded as UTF-8, so it
    must not declare another encoding)."""
    b = _bytes(data)
    sink = _EventList()
    cb = _Callbacks(sink)
    lib.afs_xml_parse(b, len(b), byref(cb.handler), None)
    return sink.events


class _TargetSink:
    def __init__(self, target: Any) -> None:
        self.target = target
        self._start = getattr(target, "start", None)
        self._end = getattr(target, "end", None)
        self._data = getattr(target, "data", None)
        self._comment = getattr(target, "comment", None)
        self._pi = getattr(target, "pi", None)

    def start(self, q: str, u: str, l: str, attrs: List[Tuple[str, str, str, str]]) -> None:
        if self._start is not None:
            self._start(_clark(u, l), {_clark(a[1], a[2]): a[3] for a in attrs})

    def end(self, q: str, u: str, l: str) -> None:
        if self._end is not None:
            self._end(_clark(u, l))

    def text(self, t: str) -> None:
        if self._data is not None:
            self._data(t)

    def comment(self, t: str) -> None:
        if self._comment is not None:
            self._comment(t)

    def pi(self, t: str, d: str) -> None:
        if self._pi is not None:
            self._pi(t, d)


class XMLParser:
    """An incremental parser in the manner of ``xml.etree.ElementTree.XMLParser``:
    ``feed(data)`` any number of times (bytes in any split), then ``close()``, which returns
    the target's ``close()`` result (the root ``Element`` for the default ``TreeBuilder``)."""

    def __init__(self, target: Any = None) -> None:
        self.target = target if target is not None else ET.TreeBuilder()
        self._cb = _Callbacks(_TargetSink(self.target))
        self._h = CHandle(lib.afs_xml_parser_new(byref(self._cb.handler), None), lib.raw.afs_xml_parser_free,
                          "afs_xml_parser")

    def feed(self, data: Any) -> None:
        b = _bytes(data)
        lib.afs_xml_parser_feed(self._h.get(), b, len(b))

    def close(self) -> Any:
        lib.afs_xml_parser_finish(self._h.get())
        self._h.close()
        c = getattr(self.target, "close", None)
        return c() if c is not None else None


def jsonml_to_element(node: List[Any]) -> ET.Element:
    """The ElementTree form of a JsonML tree from the library (namespaces resolved from the
    xmlns attributes it keeps)."""
    builder = ET.TreeBuilder()
    # iterative walk: (node, scope, child index)
    def resolve(q: str, scope: Dict[str, str], attr: bool) -> str:
        if ":" in q:
            p, l = q.split(":", 1)
            return _clark(_XML if p == "xml" else scope.get(p, ""), l)
        return q if attr else _clark(scope.get("", ""), q)

    stack: List[Tuple[List[Any], Dict[str, str], int, str]] = []

    def open_(n: List[Any], parent: Dict[str, str]) -> None:
        attrs = n[1]
        scope = parent
        if any(k == "xmlns" or k.startswith("xmlns:") for k in attrs):
            scope = dict(parent)
            for k, v in attrs.items():
                if k == "xmlns":
                    scope[""] = v
                elif k.startswith("xmlns:"):
                    scope[k[6:]] = v
        tag = resolve(n[0], scope, False)
        builder.start(tag, {resolve(k, scope, True): v for k, v in attrs.items()
                            if k != "xmlns" and not k.startswith("xmlns:")})
        stack.append((n, scope, 2, tag))

    open_(node, {})
    while stack:
        n, scope, i, tag = stack.pop()
        if i < len(n):
            stack.append((n, scope, i + 1, tag))
            child = n[i]
            if isinstance(child, str):
                builder.data(child)
            else:
                open_(child, scope)
        else:
            builder.end(tag)
    return builder.close()


class XMLResponseSerializer(HTTPResponseSerializer):
    """AFXMLParserResponseSerializer: accepts ``application/xml`` and ``text/xml`` by default;
    ``response_object`` returns an :class:`xml.etree.ElementTree.Element` (``None`` for an
    empty body). The library builds the JsonML tree (see the header); namespaces come out as
    ``{uri}local`` and ``text``/``tail`` as ElementTree defines them."""

    _KIND = 3
    _DEFAULT_TYPES = frozenset(("application/xml", "text/xml"))

    def response_object(self, status_code: int, content_type: Optional[str], data: Any) -> Any:
        try:
            doc = super().response_object(status_code, content_type, data)
        except UnacceptableStatusError as e:
            if isinstance(e.document, list):
                e.document = jsonml_to_element(e.document)
            raise
        return jsonml_to_element(doc) if isinstance(doc, list) else doc


def _member_accepts_type(m: HTTPResponseSerializer, content_type: Optional[str]) -> bool:
    types = m.acceptable_content_types
    if types is None:
        return True
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    return mime in types


def compound_response_object(compound: Any, decode: Any, status_code: int, content_type: Optional[str],
                             data: Any) -> Any:
    """A compound serializer's result with an XML member's JsonML turned into an Element: the
    member that decodes is the library's choice (the first whose validation passes, else the
    first accepting the MIME type, else the first)."""
    members = compound._members
    chosen = None
    for m in members:
        try:
            m.validate(status_code, content_type, data)
            chosen = m
            break
        except Exception:
            continue
    if chosen is None:
        chosen = next((m for m in members if _member_accepts_type(m, content_type)), members[0])
    if not isinstance(chosen, XMLResponseSerializer):
        return decode(status_code, content_type, data)
    try:
        doc = decode(status_code, content_type, data)
    except UnacceptableStatusError as e:
        if isinstance(e.document, list):
            e.document = jsonml_to_element(e.document)
        raise
    return jsonml_to_element(doc) if isinstance(doc, list) else doc
