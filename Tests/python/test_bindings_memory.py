"""Memory: uploading a 1 GiB file through requests keeps the client's peak RSS growth under
32 MiB (measured in a child process with resource.getrusage)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest


GIB = 1 << 30
LIMIT_KIB = 32 * 1024

CHILD = textwrap.dedent("""
    import json, resource, sys
    import requests
    import afserialization as afs

    path, small, url = sys.argv[1:4]

    def upload(p):
        serializer = afs.HTTPRequestSerializer()
        with serializer.multipart_form("POST", url, {"kind": "big"}) as form:
            form.append_file(p, "file", "big.bin", "application/octet-stream")
            with form.finish() as request:
                response = requests.post(request.url, data=request.body_stream,
                                         headers=request.headers, timeout=120)
                response.raise_for_status()
                return response.json(), int(request.headers["Content-Length"])

    upload(small)  # warm-up: imports, connection pool, first allocations
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    info, length = upload(path)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"before_kib": before, "after_kib": after, "info": info,
                      "content_length": length}))
""")


@pytest.mark.slow
def test_one_gib_upload_through_requests_keeps_rss_flat(server, tmp_path):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:  # sparse: instant, and no page cache to fill
        f.write(b"first bytes")
        f.seek(GIB - 10)
        f.write(b"last bytes")
    small = tmp_path / "small.bin"
    small.write_bytes(b"x" * 100_000)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", CHILD, str(big), str(small),
                          server.url("/drain")], env=env, capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    info = result["info"]
    assert info["body_length"] == result["content_length"] > GIB
    assert info["content_length"] == str(result["content_length"])
    tail = bytes.fromhex(info["tail"])
    assert tail.endswith(b"--\r\n") and b"last bytes\r\n--" in tail
    growth = result["after_kib"] - result["before_kib"]
    print(f"peak RSS {result['before_kib']} KiB before, {result['after_kib']} KiB after "
          f"uploading 1 GiB: growth {growth} KiB")
    assert growth < LIMIT_KIB, f"peak RSS grew by {growth} KiB (limit {LIMIT_KIB} KiB)"
