"""Writes the benchmark inputs into DIR: big.body (one file part of SIZE bytes of random
data, each 64 KiB block repeated), fields.body (10,000 small fields), query.txt (100,000
parameters `k<i>=value<i>`), query_nested.txt (100,002 parameters `users[][name]=...`).
Prints the boundary."""
import os
import sys

work, size = sys.argv[1], int(sys.argv[2])
B = "afsBenchBoundary7MA4YWxkTrZu0gW"
block = os.urandom(1 << 16)
with open(os.path.join(work, "big.body"), "wb") as f:
    f.write(f"--{B}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n".encode())
    left = size
    while left > 0:
        n = min(left, len(block))
        f.write(block[:n])
        left -= n
    f.write(f"\r\n--{B}--\r\n".encode())
with open(os.path.join(work, "fields.body"), "wb") as f:
    for i in range(10000):
        f.write(f"--{B}\r\nContent-Disposition: form-data; name=\"field{i}\"\r\n\r\nvalue number {i}\r\n".encode())
    f.write(f"--{B}--\r\n".encode())
with open(os.path.join(work, "query.txt"), "w") as f:
    f.write("&".join(f"k{i}=value{i}" for i in range(100000)))
# What the library writes (brackets style, keys sorted) for {"users": [user, ...]}: 16,667
# users of 6 parameters, 100,002 in all, nested 2 to 3 levels.
with open(os.path.join(work, "query_nested.txt"), "w") as f:
    f.write("&".join(f"users[][address][city]=Paris&users[][address][zip]=750{i % 100:02d}"
                     f"&users[][email]=u{i}%40example.com&users[][name]=Name%20{i}"
                     f"&users[][tags][]=a&users[][tags][]=b" for i in range(16667)))
print(B)
