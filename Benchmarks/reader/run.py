"""Response reader benchmark: makes the inputs, runs the C side (bench_reader.c), the
command-line decoders and the Python peers, and prints ONE table (same run).

    python3 run.py WORKDIR BENCH_BINARY [--chunked-mib N] [--py-chunked-mib N]

Rows:
  heads      100,000 small keep-alive responses (one buffer, fed in 64 KiB reads): the
             reader from C; in Python the reader (ctypes), llhttp through httptools and h11.
  de-chunk   one chunked response of --chunked-mib MiB (default 1024) in 64 KiB chunks: the
             reader from C (body callback copying to a 64 KiB sink) against memcpy of the same
             bytes; Python peers on --py-chunked-mib MiB (default 128; h11 on a quarter of it).
  gzip/zstd  64 MiB of text, compressed by gzip -6 and zstd -3: the reader decoding from C
             against `gzip -dc` and `zstd -dc` on the same file (output to /dev/null).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Callable, List, Tuple

Row = Tuple[str, str, int, float, int]   # case, implementation, bytes, seconds, responses


def make_responses(path: str, n: int = 100_000) -> bytes:
    parts = []
    for i in range(n):
        body = b'{"id": %d, "ok": true}' % i
        parts.append(b"HTTP/1.1 200 OK\r\nServer: bench\r\nDate: Fri, 27 Nov 2026 12:00:00 GMT\r\n"
                     b"Content-Type: application/json\r\nCache-Control: no-cache\r\nConnection: keep-alive\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    data = b"".join(parts)
    with open(path, "wb") as f:
        f.write(data)
    return data


def make_text(path: str, mib: int = 64) -> None:
    line = 0
    with open(path, "wb") as f:
        written = 0
        while written < mib << 20:
            chunk = b"".join(b'{"line": %d, "user": "user%d", "tags": ["a", "b%d"], "score": %d.%d}\n'
                             % (line + k, (line + k) % 977, (line + k) % 13, (line + k) * 7 % 1000, k % 10)
                             for k in range(10000))
            line += 10000
            f.write(chunk)
            written += len(chunk)


def best_of(n: int, fn: Callable[[], None]) -> float:
    best = 1e9
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def cli_decode(cmd: List[str], path: str) -> float:
    def run() -> None:
        with open(os.devnull, "wb") as out:
            subprocess.run(cmd + [path], stdout=out, check=True)
    return best_of(3, run)


def chunked_block(mib: int) -> Tuple[bytes, bytes, int]:
    chunk = 65536
    piece = bytes((97 + i % 26) for i in range(chunk))
    block = (b"%x\r\n" % chunk + piece + b"\r\n") * 256
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", block, max(1, mib // 16)


def py_rows(responses: bytes, chunked_mib: int) -> List[Row]:
    rows: List[Row] = []
    reads = [responses[i:i + 65536] for i in range(0, len(responses), 65536)]
    head, block, blocks = chunked_block(chunked_mib)
    block_reads = [block[i:i + 65536] for i in range(0, len(block), 65536)]
    data_bytes = blocks * 256 * 65536

    # The reader through ctypes.
    import afserialization as afs
    from afserialization import ReaderState

    def ours_heads() -> None:
        rd = afs.ResponseReader("GET")
        count = 0
        done = ReaderState.DONE
        for buf in reads:
            pos, n = 0, len(buf)
            while pos < n:
                pos += rd.feed(buf, pos)      # no slice copies
                if rd.state == done:
                    count += 1
                    rd.reset("GET")
        assert count == 100_000, count
        rd.close()
    rows.append(("heads", "afs ResponseReader (Python, ctypes)", len(responses), best_of(3, ours_heads), 100_000))

    try:
        import httptools
    except ImportError:
        httptools = None
    if httptools is not None:
        class Proto:
            def __init__(self) -> None:
                self.count = 0
                self.size = 0

            def on_body(self, b: bytes) -> None:
                self.size += len(b)

            def on_message_complete(self) -> None:
                self.count += 1

        def llhttp_heads() -> None:
            p = Proto()
            parser = httptools.HttpResponseParser(p)
            for buf in reads:
                parser.feed_data(buf)
            assert p.count == 100_000, p.count
        rows.append(("heads", "llhttp via httptools (Python)", len(responses), best_of(3, llhttp_heads), 100_000))

        def llhttp_chunked() -> None:
            p = Proto()
            parser = httptools.HttpResponseParser(p)
            parser.feed_data(head)
            for _ in range(blocks):
                for buf in block_reads:
                    parser.feed_data(buf)
            parser.feed_data(b"0\r\n\r\n")
            assert p.count == 1 and p.size == data_bytes
        rows.append(("de-chunk", "llhttp via httptools (Python)", data_bytes, best_of(2, llhttp_chunked), 1))

    def ours_chunked() -> None:
        rd = afs.ResponseReader("GET")
        rd.feed(head)
        for _ in range(blocks):
            for buf in block_reads:
                rd.feed(buf)
        rd.feed(b"0\r\n\r\n")
        assert rd.state == ReaderState.DONE and len(rd.body) == data_bytes
        rd.close()
    rows.append(("de-chunk", "afs ResponseReader (Python, body accumulated)", data_bytes, best_of(2, ours_chunked), 1))

    import h11

    def h11_heads() -> None:
        conn = h11.Connection(h11.CLIENT)
        count = 0
        conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
        conn.send(h11.EndOfMessage())
        for buf in reads:
            conn.receive_data(buf)
            while True:
                ev = conn.next_event()
                if ev is h11.NEED_DATA:
                    break
                if isinstance(ev, h11.EndOfMessage):
                    count += 1
                    conn.start_next_cycle()
                    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
                    conn.send(h11.EndOfMessage())
        assert count == 100_000, count
    rows.append(("heads", "h11 (Python)", len(responses), best_of(1, h11_heads), 100_000))

    h11_blocks = max(1, blocks // 4)

    def h11_chunked() -> None:
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
        conn.send(h11.EndOfMessage())
        size = 0
        conn.receive_data(head)
        feeds = [buf for _ in range(h11_blocks) for buf in block_reads] + [b"0\r\n\r\n"]
        for buf in feeds:
            conn.receive_data(buf)
            while True:
                ev = conn.next_event()
                if ev is h11.NEED_DATA or isinstance(ev, h11.EndOfMessage):
                    break
                if isinstance(ev, h11.Data):
                    size += len(ev.data)
        assert size == h11_blocks * 256 * 65536
    rows.append(("de-chunk", "h11 (Python)", h11_blocks * 256 * 65536, best_of(1, h11_chunked), 1))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("bench")
    ap.add_argument("--chunked-mib", type=int, default=1024)
    ap.add_argument("--py-chunked-mib", type=int, default=128)
    a = ap.parse_args()
    responses = make_responses(os.path.join(a.work, "responses.bin"))
    text = os.path.join(a.work, "text")
    make_text(text)
    text_size = os.path.getsize(text)
    subprocess.run(f"gzip -6 -c '{text}' > '{text}.gz' && zstd -q -3 -c '{text}' > '{text}.zst'", shell=True, check=True)

    rows: List[Row] = []
    out = subprocess.run([a.bench, a.work, str(a.chunked_mib)], capture_output=True, text=True, check=True).stdout
    for line in out.strip().split("\n"):
        case, impl, n, secs, count = line.split("\t")
        rows.append((case, impl, int(n), float(secs), int(count)))
    rows.append(("gzip decode", "gzip -dc (the gzip tool)", text_size, cli_decode(["gzip", "-dc"], text + ".gz"), 1))
    rows.append(("zstd decode", "zstd -dc (the zstd tool)", text_size, cli_decode(["zstd", "-q", "-dc"], text + ".zst"), 1))
    rows += py_rows(responses, a.py_chunked_mib)

    order = ["heads", "de-chunk", "gzip decode", "zstd decode"]
    rows.sort(key=lambda r: order.index(r[0]))
    print(f"{'case':<12} {'implementation':<58} {'MiB':>8} {'seconds':>9} {'MiB/s':>9} {'responses/s':>12}")
    print("-" * 113)
    for case, impl, n, secs, count in rows:
        rate = f"{count / secs:,.0f}" if count > 1 else "-"
        print(f"{case:<12} {impl:<58} {n / 2**20:>8.1f} {secs:>9.3f} {n / 2**20 / secs:>9.1f} {rate:>12}")
    # The targets, as this run measured them.
    def get(case: str, prefix: str) -> float:
        for r in rows:
            if r[0] == case and r[1].startswith(prefix):
                return r[2] / r[3]
        return float("nan")
    print()
    print(f"de-chunking vs memcpy: {get('de-chunk', 'afs_response_reader') / get('de-chunk', 'memcpy'):.2f}x (target >= 0.8x)")
    print(f"gzip decoding vs gzip -dc: {get('gzip decode', 'afs_response_reader') / get('gzip decode', 'gzip -dc'):.2f}x "
          f"(target within 10%: >= 0.9x)")
    print(f"zstd decoding vs zstd -dc: {get('zstd decode', 'afs_response_reader') / get('zstd decode', 'zstd -dc'):.2f}x "
          f"(target >= 0.9x)")
    print(f"heads, Python rows: afs {get('heads', 'afs ResponseReader') / get('heads', 'llhttp'):.2f}x llhttp/httptools, "
          f"{get('heads', 'afs ResponseReader') / get('heads', 'h11'):.2f}x h11; "
          f"C reader vs llhttp/httptools: {get('heads', 'afs_response_reader') / get('heads', 'llhttp'):.2f}x (target >= 1.0x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
