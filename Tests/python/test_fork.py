"""fork() while other threads use a serializer (multiprocessing's fork start method): the
child can use the serializers it inherited. The library's locks are taken before fork() and
released after it in parent and child (pthread_atfork); Swift's Mutex used to abort the
child ("Unknown error occurred while attempting to acquire a Mutex", 172 of 200 children).

1,000 children in CI (CI=true; 200 in the everyday test command, where the four threads'
contention for the GIL makes each fork slow on 2 cores; AFS_FORK_REPETITIONS sets it), each
checked by its exit code, while four threads hammer the same serializers in the parent."""
import multiprocessing
import os
import sys
import threading
import time
import warnings

import pytest

import afserialization as afs

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork start method"),
              pytest.mark.slow]

REPETITIONS = int(os.environ.get("AFS_FORK_REPETITIONS") or (1000 if os.environ.get("CI") == "true" else 200))


def _child(serializer, response_serializer, queue_ok):
    try:
        serializer.headers["X-Child"] = "yes"
        r = serializer.request("GET", "https://example.com/", {"a": {"b": 7}})
        assert r.url == "https://example.com/?a%5Bb%5D=7", r.url
        assert r.headers["X-Child"] == "yes"
        doc = response_serializer.response_object(200, "application/json", b'{"k": [1, 2]}')
        assert doc == {"k": [1, 2]}, doc
        copy = serializer.copy()
        assert copy.headers["X-Child"] == "yes"
    except BaseException as e:  # noqa: BLE001 - reported through the exit code
        print(f"child failed: {e!r}", file=sys.stderr)
        sys.exit(3)
    sys.exit(0)


def test_children_forked_while_threads_use_the_serializer_work():
    serializer = afs.HTTPRequestSerializer()
    response_serializer = afs.JSONResponseSerializer()
    stop = threading.Event()

    def hammer(n):
        i = 0
        while not stop.is_set():
            serializer.headers["X-Thread"] = f"t{n}-{i}"
            serializer.request("GET", "https://example.com/", {"i": i, "nested": {"n": [n, i]}})
            response_serializer.acceptable_status_codes = [range(200, 300 + i % 2)]
            response_serializer.response_object(200, "application/json", b'{"k": [1, 2]}')
            i += 1

    threads = [threading.Thread(target=hammer, args=(n,), daemon=True) for n in range(4)]
    for t in threads:
        t.start()
    # Let every thread get past its first calls: the Swift runtime's own locks (taken while it
    # fills its type caches) are outside the library's atfork handler (the header says so).
    time.sleep(1)
    ctx = multiprocessing.get_context("fork")
    failures = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, fork()" (3.12+)
            for i in range(REPETITIONS):
                p = ctx.Process(target=_child, args=(serializer, response_serializer, None))
                p.start()
                p.join(60)
                if p.exitcode != 0:
                    failures.append((i, p.exitcode))
                    if p.exitcode is None:
                        p.kill()
                        p.join()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == [], f"{len(failures)} of {REPETITIONS} children failed: {failures[:5]}"
