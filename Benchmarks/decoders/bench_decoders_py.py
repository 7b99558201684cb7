"""One Python measurement per process (so that its peak RSS is its own):
    bench_decoders_py.py PEER BODY CONTENT_TYPE   (PEER: read-only, read-write, afs,
                                                   afs-spooled, python-multipart,
                                                   streaming-form-data)
    bench_decoders_py.py query-afs|query-parse_qs|query-floor QUERY_FILE
                                                  (query-floor: the module query_floor.c,
                                                   from $BENCH_FLOOR_DIR)
Prints "<seconds> <peak RSS KiB>". The body is read from the file in 1 MiB pieces (what a
server gets from its socket). What each row does with them:
- read-only: nothing (the chunk loop alone: the floor of every row below);
- read-write: each chunk written to one temporary file (the floor of afs-spooled on a body
  that is one large file part: what spooling costs without any parser);
- afs: MultipartParser.feed; each finished part comes back as a Part (index, size; name,
  filename and headers decoded on demand); the data goes to the parser's private `_sink`
  hook, which drops it (one Python call per piece of data);
- afs-spooled: MultipartParser.feed as iter_multipart uses it: small fields kept in memory,
  the file part written to its spooled temporary file;
- python-multipart: MultipartParser with an on_part_end callback counting parts; data and
  headers dropped (no callbacks for them);
- streaming-form-data: the Cython parser with a NullTarget (drops data) for every field."""
import resource
import sys
import time

peer, path = sys.argv[1], sys.argv[2]
CHUNK = 1 << 20


def chunks():
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                return
            yield b


# Imports before the clock starts (loading the library is not parsing).
if peer == "query-afs" or peer.startswith("afs"):
    import afserialization as afs  # noqa: F401
elif peer == "python-multipart":
    import python_multipart  # noqa: F401
elif peer == "streaming-form-data":
    import streaming_form_data  # noqa: F401
elif peer == "query-floor":
    import os
    sys.path.insert(0, os.environ["BENCH_FLOOR_DIR"])
    import query_floor
import urllib.parse  # noqa: E402


def run():
    if peer.startswith("query"):
        text = open(path).read()
        t = time.perf_counter()
        if peer == "query-afs":
            import afserialization as afs
            afs.parse_query(text, max_params=1 << 30)
        elif peer == "query-floor":
            query_floor.floor(text.encode("utf-8", "surrogatepass"))  # as parse_query
        else:
            import urllib.parse
            urllib.parse.parse_qs(text)
        return time.perf_counter() - t
    ct = sys.argv[3]
    boundary = ct.split("boundary=")[1]
    t = time.perf_counter()
    if peer == "read-only":
        for b in chunks():
            pass
    elif peer == "read-write":
        import tempfile
        with tempfile.TemporaryFile() as out:
            for b in chunks():
                out.write(b)
    elif peer in ("afs", "afs-spooled"):
        import afserialization as afs

        p = afs.MultipartParser(ct, max_parts=1 << 20, max_field_bytes=1 << 62)
        if peer == "afs":
            def drop(part, data):
                pass
            p._sink = drop
        n = 0
        for b in chunks():
            n += len(p.feed(b))
        n += len(p.close())
    elif peer == "python-multipart":
        import python_multipart
        count = [0]

        def on_part_end():
            count[0] += 1
        p = python_multipart.MultipartParser(boundary.encode(), {"on_part_end": on_part_end})
        for b in chunks():
            p.write(b)
        p.finalize()
    elif peer == "streaming-form-data":
        from streaming_form_data import StreamingFormDataParser
        from streaming_form_data.targets import NullTarget
        p = StreamingFormDataParser(headers={"Content-Type": ct})
        p.register("file", NullTarget())
        for i in range(10000):
            p.register(f"field{i}", NullTarget())
        for b in chunks():
            p.data_received(b)
    return time.perf_counter() - t


seconds = run()
print(f"{seconds:.6f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
