#!/usr/bin/env python3
"""The main job: a local server, requests on the wire, and multipart uploads through
libafserialization from C (libcurl) and Python (requests). See
bindings/python/afserialization/demo.py; options: --size-mib N, --url BASE."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "bindings", "python"))  # this checkout's package

from afserialization.demo import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
