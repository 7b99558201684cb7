"""Ctrl-C stops a stalled write (issue 19).

A write to a socketpair whose peer does not read blocks in the library; SIGINT sent by a
timer (os.kill, as a terminal's Ctrl-C reaches the process) must raise KeyboardInterrupt
within 100 ms, and after the peer drains, calling write_to again must complete the write
byte-exact (the stream was left resumable). A watchdog drains the peer after 10 s so a
regression fails instead of hanging.
"""
import io
import os
import signal
import socket
import threading
import time
from typing import Callable, List, Tuple

import pytest

import afserialization as afs

BODY = os.urandom(6 << 20)  # far more than a socket buffer


def plain_request() -> Tuple[afs.Request, Callable[[afs.Request, socket.socket], int], bytes]:
    req = afs.HTTPRequestSerializer().request("POST", "http://example.com/upload", {"blob": BODY.hex()[:8_000_000]})
    return req, lambda r, s: r.write_to(s), req.head + req.body


def multipart_request(tmp_path) -> Tuple[afs.Request, Callable[[afs.Request, socket.socket], int], bytes]:
    f = tmp_path / "part.bin"
    f.write_bytes(BODY[:3 << 20])
    form = afs.HTTPRequestSerializer().multipart_form("POST", "http://example.com/up", {"k": "v"})
    form.append_data(BODY, "data", "d.bin", "application/octet-stream")
    form.append_file(str(f), "file")
    req = form.finish()
    req.body_stream.rewind()
    body = req.body_stream.read()
    req.body_stream.rewind()
    return req, lambda r, s: r.write_to(s), req.head + body


def body_stream_only(tmp_path) -> Tuple[afs.Request, Callable[[afs.Request, socket.socket], int], bytes]:
    req, _, wire = multipart_request(tmp_path)
    return req, lambda r, s: r.body_stream.write_to(s), wire[len(req.head):]


def chunked_request(tmp_path, coding: "str | None") -> Tuple[afs.Request, Callable[[afs.Request, socket.socket], int], bytes]:
    """A chunked request (a part of unknown length; optionally compressed while it streams):
    what an uninterrupted write puts in a file is what the socket must receive."""
    f = tmp_path / "part.bin"
    f.write_bytes(BODY[:3 << 20])
    form = afs.HTTPRequestSerializer().multipart_form("POST", "http://example.com/up", {"k": "v"})
    form.append_data(BODY, "data", "d.bin", "application/octet-stream")
    form.append_file(str(f), "file")
    form.append_stream(io.BytesIO(BODY[:300_000]), None, "s", "s.bin", "application/octet-stream")
    req = form.finish()
    if coding:
        req.set_content_encoding(coding, 1)
    assert req.is_chunked
    whole = tmp_path / "whole.out"
    with open(whole, "wb") as out:
        req.write_to(out)  # a regular file: never interrupted; the next write starts over
    return req, lambda r, s: r.write_to(s), whole.read_bytes()


@pytest.mark.parametrize("make", ["plain", "multipart", "body_stream", "chunked", "chunked_gzip"])
def test_sigint_stops_a_stalled_write_and_it_resumes(make: str, tmp_path) -> None:
    if make == "plain":
        req, write, expected = plain_request()
    elif make == "multipart":
        req, write, expected = multipart_request(tmp_path)
    elif make == "chunked":
        req, write, expected = chunked_request(tmp_path, None)
    elif make == "chunked_gzip":
        req, write, expected = chunked_request(tmp_path, "gzip")
    else:
        req, write, expected = body_stream_only(tmp_path)
    ours, peer = socket.socketpair()
    received: List[bytes] = []
    draining = threading.Event()

    def drain() -> None:
        draining.wait()
        while True:
            block = peer.recv(1 << 16)
            if not block:
                return
            received.append(block)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    watchdog = threading.Timer(10.0, draining.set)  # a regression fails, never hangs
    watchdog.start()
    sent_at: List[float] = []

    def interrupt() -> None:
        sent_at.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, interrupt)
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            write(req, ours)
        raised_at = time.monotonic()
        assert not draining.is_set(), "the write only ended because the watchdog drained the peer"
        assert sent_at and raised_at - sent_at[0] < 0.1, f"KeyboardInterrupt {raised_at - sent_at[0]:.3f} s after SIGINT"
        draining.set()
        write(req, ours)  # resumes where the interrupted call stopped
        ours.shutdown(socket.SHUT_WR)
        reader.join(30)
    finally:
        signal.signal(signal.SIGINT, previous)
        timer.cancel()
        watchdog.cancel()
        draining.set()
        ours.close()
        peer.close()
    got = b"".join(received)
    assert len(got) == len(expected) and got == expected


def test_signals_whose_handlers_return_leave_the_write_exact() -> None:
    """A thousand SIGALRMs a second during a write: each interrupted attempt runs the
    handler, which returns, and the write goes on where it stopped: every byte once."""
    req, _, expected = plain_request()
    ours, peer = socket.socketpair()
    got: List[bytes] = []

    def drain() -> None:
        while True:
            block = peer.recv(1 << 16)
            if not block:
                return
            got.append(block)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    hits: List[int] = []
    previous = signal.signal(signal.SIGALRM, lambda *a: hits.append(1))
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    try:
        written = req.write_to(ours)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous)
    ours.shutdown(socket.SHUT_WR)
    reader.join(30)
    ours.close()
    peer.close()
    assert written == len(expected) and b"".join(got) == expected
