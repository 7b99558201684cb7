"""The multipart body as a binary file: ``afs_body_stream`` behind ``io.RawIOBase``."""
from __future__ import annotations

import asyncio
import errno
import io
import os
import socket
from ctypes import addressof, byref, c_char, c_uint64
from typing import Any, Callable, Iterator, Optional, Tuple, TypeVar

from . import _ffi
from ._ffi import PROGRESS_CANCEL_FN, afs_error, lib
from ._handle import CHandle, serialized
from .errors import HandleClosedError, SerializationError

_LENGTH_UNKNOWN = (1 << 64) - 1  # AFS_LENGTH_UNKNOWN

__all__ = ["BodyStream", "AsyncBodyIterator", "ProgressCallback", "DEFAULT_CHUNK_SIZE"]

T = TypeVar("T")

#: Read size that crosses the FFI boundary rarely enough (64 KiB); larger buffers
#: (256 KiB and up) make the per-call cost vanish entirely.
DEFAULT_CHUNK_SIZE = 64 * 1024

_char_from_buffer = c_char.from_buffer

#: ``fn(sent, total)``: called after every successful read with the bytes delivered so far.
ProgressCallback = Callable[[int, int], None]


class BodyStream(io.RawIOBase):
    """A multipart body, pulled through ``afs_body_stream_read`` straight into the caller's
    buffer. It is what ``requests``, ``http.client``, ``urllib3`` and ``shutil`` expect of a
    binary file:

    * :meth:`readinto` / :meth:`read` (read 64 KiB or more at a time:
      :data:`DEFAULT_CHUNK_SIZE`);
    * ``seekable()`` is True; :meth:`seek` / :meth:`tell` over ``afs_body_stream_seek`` /
      ``afs_body_stream_position``, so clients rewind it on a retry or a 307/308 redirect;
    * ``len(stream)`` is the exact Content-Length;
    * :meth:`write_to` sends the rest to a file or socket with kernel copies for file parts;
    * :meth:`set_progress` reports ``(sent, total)``;
    * asyncio: ``async for chunk in stream``, :meth:`aclose`, and :meth:`aiter` (an
      async-only iterable for ``httpx.AsyncClient(content=...)``), reading in a worker
      thread so that file parts and throttled parts never block the event loop.

    The stream belongs to its :class:`~afserialization.Request` (``request.body_stream``);
    it keeps the C request alive while referenced, and closing the request closes it.
    A failing read raises the typed error (``StreamIOError``, ``LengthMismatchError``, …),
    chained from the exception a Python stream source raised, if any; errors are sticky
    until :meth:`rewind` or :meth:`seek`.

    Threads: the stream follows its request's lock (see the thread rule of the package):
    two threads reading one stream get consecutive chunks, one call at a time, never a
    crash; ``request.close()`` from another thread waits for a running read, and from
    inside a stream source or progress callback raises :class:`StateError`.
    """

    def __init__(self, ptr: Any, owner: CHandle) -> None:
        """Internal: use :attr:`Request.body_stream`."""
        super().__init__()
        self._ptr = ptr
        self._live: Any = ptr  # None once closed: the one check on the hot path
        self._owner = owner
        self._read = lib.raw.afs_body_stream_read
        self._close = lib.raw.afs_body_stream_close
        self._progress: Optional[ProgressCallback] = None
        self._writing = False

    @classmethod
    def _borrow(cls, ptr: Any, owner: CHandle) -> "BodyStream":
        return cls(ptr, owner)

    def _get(self) -> Any:
        ptr = self._live
        if ptr is None or self._owner.closed:
            raise HandleClosedError("the body stream")
        return ptr

    # -- io.RawIOBase ---------------------------------------------------------------------

    def readable(self) -> bool:
        """True (raises once closed, like a closed file)."""
        self._get()
        return True

    def seekable(self) -> bool:
        """True: :meth:`seek` works (a stream part without rewind support limits seeking
        backwards over it, see :meth:`seek`)."""
        self._get()
        return True

    def writable(self) -> bool:
        """False."""
        self._get()
        return False

    def readinto(self, buffer: Any) -> int:
        """Reads up to ``len(buffer)`` bytes into ``buffer`` (any writable, C-contiguous
        buffer); returns the count, 0 at the end. The library writes straight into it."""
        ptr = self._live
        if ptr is None:
            raise HandleClosedError("the body stream")
        if type(buffer) is bytearray:
            n = len(buffer)
        else:
            with memoryview(buffer) as view:
                n = view.nbytes
        if not n:
            return 0
        # A one-byte ctypes view of the buffer gives its address (the cheapest way); it
        # holds the buffer export during the call (so no other thread can resize the buffer
        # under the library) and is dropped right after, so the caller may resize it then.
        try:
            anchor = _char_from_buffer(buffer)
        except (TypeError, BufferError) as e:
            raise TypeError(f"readinto() needs a writable, contiguous buffer: {e}") from None
        got = self._read(ptr, addressof(anchor), n)
        del anchor
        if got < 0:
            self._raise_error(ptr)
        if self._progress is not None and getattr(_ffi._pending, "exc", None) is not None:
            _ffi.raise_pending()  # the progress callback raised
        return got

    def readall(self) -> bytes:
        """The rest of the body in one allocation (when its length is known)."""
        if self.content_length is None:
            return b"".join(self.iter_chunks())
        remaining = len(self) - self.tell()
        if remaining <= 0:
            return b""
        buffer = bytearray(remaining)
        view = memoryview(buffer)
        filled = 0
        try:
            while filled < remaining:
                got = self.readinto(view[filled:])
                if not got:
                    break
                filled += got
        finally:
            view.release()
        del buffer[filled:]
        return bytes(buffer)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Moves to a byte offset of the body (``SEEK_SET``, ``SEEK_CUR`` or ``SEEK_END``);
        rewinds sources as needed. Seeking past the end is ``InvalidArgumentError``; back
        over a stream part without rewind support, ``UnsupportedError``."""
        ptr = self._get()
        if whence == io.SEEK_SET:
            target = offset
        elif whence == io.SEEK_CUR:
            target = lib.afs_body_stream_position(ptr) + offset
        elif whence == io.SEEK_END:
            target = lib.afs_body_stream_content_length(ptr) + offset
        else:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        lib.afs_body_stream_seek(ptr, target)
        return target

    def tell(self) -> int:
        """The position: bytes of the body before the next read."""
        return lib.afs_body_stream_position(self._get())

    def close(self) -> None:
        """Closes the stream (``afs_body_stream_close``); reads then raise. Idempotent."""
        if not self.closed:
            self._live = None
            try:
                if not self._owner.closed:
                    self._close(self._ptr)
            finally:
                super().close()

    def __len__(self) -> int:
        """The Content-Length: the exact size of the whole body; 0 when it is unknown
        (chunked, see :attr:`content_length`), so that clients that ask ``len()`` send it
        chunked."""
        n = lib.afs_body_stream_content_length(self._get())
        return 0 if n == _LENGTH_UNKNOWN else n

    def __bool__(self) -> bool:
        return True  # a file object is true, whatever its length

    def __repr__(self) -> str:
        if self.closed or self._owner.closed:
            return "<afserialization.BodyStream closed>"
        return f"<afserialization.BodyStream {self.tell()}/{len(self)}>"

    # -- beyond io ------------------------------------------------------------------------

    @property
    def content_length(self) -> Optional[int]:
        """The exact size of the whole body, or None when it is unknown (a source of
        unknown length, compression while streaming)."""
        n = lib.afs_body_stream_content_length(self._get())
        return None if n == _LENGTH_UNKNOWN else n

    def iter_chunks(self, chunk_size: int = DEFAULT_CHUNK_SIZE) -> Iterator[bytes]:
        """The rest of the body as ``bytes`` chunks of at most ``chunk_size`` (for clients
        that send an iterator chunked, such as ``requests``)."""
        if chunk_size <= 0:
            raise ValueError("chunk_size must be > 0")
        while True:
            chunk = self.read(chunk_size)
            if not chunk:
                return
            yield chunk

    @property
    def has_bytes_available(self) -> bool:
        """True from open until the end has been read."""
        return lib.afs_body_stream_has_bytes_available(self._get())

    def open(self) -> None:
        """Opens the stream explicitly (reading opens it implicitly)."""
        lib.afs_body_stream_open(self._get())

    def rewind(self) -> None:
        """Back to offset 0, clearing a sticky error."""
        lib.afs_body_stream_rewind(self._get())

    def set_progress(self, callback: Optional[ProgressCallback]) -> None:
        """Calls ``callback(sent, total)`` after every successful read or write
        (``None`` removes it). An exception it raises is re-raised by the read that called
        it (the bytes of that read are consumed); in :meth:`write_to` it stops the write at
        once (``afs_body_stream_set_progress_cancel``): :meth:`write_to` raises
        :class:`StreamIOError` (errno ``ECANCELED``, "cancelled by the progress callback")
        from the callback's exception, and the stream keeps that error until
        :meth:`rewind` or :meth:`seek`. During :meth:`write_to` progress comes at least
        every 1 MiB."""
        ptr = self._get()
        keep = self._owner.keepalive
        if callback is None:
            lib.afs_body_stream_set_progress_cancel(ptr, PROGRESS_CANCEL_FN(), None)
            keep.pop("progress", None)
        else:
            if not callable(callback):
                raise TypeError("the progress callback must be callable or None")
            stream = self

            def trampoline(ctx: Any, sent: int, total: int) -> int:
                try:
                    callback(sent, total)
                except BaseException as exc:  # noqa: B902 - must not unwind through C
                    try:
                        _ffi.store_exception(exc)
                    except BaseException:
                        pass
                    return 1 if stream._writing else 0  # cancel a write_to, not a read
                return 0

            fn = PROGRESS_CANCEL_FN(trampoline)
            lib.afs_body_stream_set_progress_cancel(ptr, fn, None)
            keep["progress"] = fn
        self._progress = callback

    @property
    def progress(self) -> Optional[ProgressCallback]:
        """The progress callback (settable; see :meth:`set_progress`)."""
        return self._progress

    @progress.setter
    def progress(self, callback: Optional[ProgressCallback]) -> None:
        self.set_progress(callback)

    def write_to(self, target: Any) -> int:
        """Writes the rest of the body to ``target`` through ``afs_body_stream_write_to_fd``
        (``copy_file_range``/``sendfile`` for file parts) and returns the bytes written.

        ``target`` is a file object with ``fileno()`` (flushed first; its position is
        updated afterwards), a socket, or a raw file descriptor. A socket with a timeout is
        switched to blocking mode for the call (the library needs a blocking descriptor) and
        restored afterwards. On failure the stream's position reflects exactly what was
        written (the exception's ``bytes_written``), so the call can be repeated. A signal
        (Ctrl-C) interrupts the write: its handler runs at once (``KeyboardInterrupt``
        propagates) and the stream stays resumable at what was written
        (``afs_body_stream_set_interruptible``).
        """
        ptr = self._get()
        fd, restore = _descriptor(target)
        lib.afs_body_stream_set_interruptible(ptr, True)
        total = 0
        self._writing = True
        try:
            while True:
                written = c_uint64(0)
                try:
                    lib.afs_body_stream_write_to_fd(ptr, fd, byref(written))
                    return total + written.value
                except SerializationError as e:
                    total += written.value
                    if e.os_errno == errno.EINTR:  # a signal: run its handler, then go on
                        _ffi.check_signals()
                        continue
                    e.bytes_written = total  # type: ignore[attr-defined]
                    raise
        finally:
            self._writing = False
            restore()

    # -- asyncio --------------------------------------------------------------------------
    # Reads run in the event loop's default executor (a thread): a file part's disk reads
    # and a throttled part's sleeps never block the loop. The read itself releases the GIL
    # (ctypes), so the loop keeps running while a chunk is produced.

    def __aiter__(self) -> "BodyStream":
        """``async for chunk in stream``: chunks of :data:`DEFAULT_CHUNK_SIZE` bytes from
        the current position, each read in a worker thread (see :meth:`aiter`)."""
        return self

    async def __anext__(self) -> bytes:
        chunk = await _in_thread(self.read, DEFAULT_CHUNK_SIZE)
        if not chunk:
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        """Closes the stream from a coroutine: :meth:`close` in a worker thread (it waits
        for a read running in another thread, so the loop does not)."""
        await _in_thread(self.close)

    def aiter(self, chunk_size: int = DEFAULT_CHUNK_SIZE) -> "AsyncBodyIterator":
        """An async-only iterable of the body's chunks (``chunk_size`` bytes, the last one
        shorter), each read in a worker thread. Hand it to clients that take an async
        iterable of bytes and would take the stream itself for a sync file:
        ``httpx.AsyncClient().post(url, content=stream.aiter(), headers=request.headers)``,
        aiohttp's ``data=stream.aiter()``. With the request's ``Content-Length`` among the
        headers, neither client switches to chunked transfer encoding."""
        self._get()
        if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive int, not {chunk_size!r}")
        return AsyncBodyIterator(self, chunk_size)

    def _raise_error(self, ptr: Any) -> None:
        err = afs_error()
        status = lib.raw.afs_body_stream_error(ptr, byref(err))  # raw: chain the pending
        _ffi.raise_pending(err.to_exception(status))


# aclose is a coroutine function (its close() in a thread takes the lock itself)
BodyStream.aclose.__afs_locked__ = True  # type: ignore[attr-defined]
serialized(BodyStream, "_owner")  # the request's lock: see the thread rule in _handle


class AsyncBodyIterator:
    """``BodyStream.aiter(chunk_size)``: the body's chunks for ``async for``, read in a
    worker thread from the stream's current position. It has no ``__iter__`` (httpx takes
    an object that is both sync and async iterable for a sync one). :meth:`aclose` ends the
    iteration; the stream stays open (it belongs to its request)."""

    __slots__ = ("_stream", "_chunk_size", "_done")

    def __init__(self, stream: BodyStream, chunk_size: int) -> None:
        self._stream = stream
        self._chunk_size = chunk_size
        self._done = False

    def __aiter__(self) -> "AsyncBodyIterator":
        return self

    async def __anext__(self) -> bytes:
        if self._done:
            raise StopAsyncIteration
        chunk = await _in_thread(self._stream.read, self._chunk_size)
        if not chunk:
            self._done = True
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        """Ends the iteration (later ``__anext__`` calls stop at once)."""
        self._done = True

    def __repr__(self) -> str:
        return f"<afserialization.AsyncBodyIterator chunk_size={self._chunk_size}>"


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the running loop's default executor."""
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _descriptor(target: Any) -> Tuple[int, Callable[[], None]]:
    """A blocking file descriptor for ``target`` and a function restoring its state."""
    if isinstance(target, int):
        return target, _nothing
    if isinstance(target, socket.socket):
        timeout = target.gettimeout()
        if timeout is None:
            return target.fileno(), _nothing
        target.setblocking(True)
        return target.fileno(), lambda: target.settimeout(timeout)
    fileno = getattr(target, "fileno", None)
    if fileno is None:
        raise TypeError(f"write_to() needs a file object with fileno(), a socket or a file "
                        f"descriptor, not {type(target).__name__}")
    flush = getattr(target, "flush", None)
    if flush is not None:
        flush()
    fd = fileno()

    def resync() -> None:
        seekable = getattr(target, "seekable", None)
        if seekable is not None and seekable():
            try:
                target.seek(os.lseek(fd, 0, os.SEEK_CUR))
            except (OSError, ValueError):
                pass
    return fd, resync


def _nothing() -> None:
    pass
