"""requests-toolbelt's MultipartEncoder on the same form as bench_multipart (a field and
FILE as a file part), drained with .read(65536); prints the same key=value line."""
import sys
import time

from requests_toolbelt import MultipartEncoder


def status_kib(field):
    """VmRSS (now) or VmHWM (peak of this process image) in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


def main(path):
    with open(path, "rb") as fh:
        enc = MultipartEncoder(fields={"field": "value", "file": ("big.bin", fh, "application/octet-stream")})
        before = status_kib("VmRSS:")
        total = 0
        checksum = 0
        t0 = time.perf_counter()
        while True:
            chunk = enc.read(65536)
            if not chunk:
                break
            total += len(chunk)
            checksum += chunk[0]
        t = time.perf_counter() - t0
    peak = status_kib("VmHWM:")
    print("mode=toolbelt bytes=%d seconds=%.6f rss_before_kib=%d peak_rss_kib=%d checksum=%d"
          % (total, t, before, peak, checksum))


if __name__ == "__main__":
    main(sys.argv[1])
