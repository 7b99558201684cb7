"""ImageResponseSerializer against Pillow (PyPI), on a corpus generated here at test time.

Every format the reader knows, in several modes and sizes, animated ones included (PNG
modes, APNG, JPEG baseline/progressive/optimized/CMYK, GIF static and animated, BMP of
every bit count Pillow writes, TIFF single and multi-page, raw/LZW/deflate/packbits,
little-endian from Pillow and big-endian written here, ICO with several sizes as PNG and
as BMP entries, WebP lossy/lossless/alpha/animated, XBM). For each file:

* the library's format, pixel size and frame count equal Pillow's (``Image.open``:
  ``format``, ``size``, ``n_frames``; for ICO the entry count ``len(im.ico.entry)``);
* every truncated copy is refused with ``InvalidImageError`` (all prefixes of small files,
  a spread of prefixes of larger ones). A prefix that only drops bytes no structure refers
  to is not a truncation: for TIFF the bytes after the last strip (Pillow pads), for XBM
  the newline after ``};``;
* the file under a content type of another format is refused;
* one corrupted byte in the header is refused (PNG CRC, JPEG SOF marker, GIF block
  introducer...).

The counts are printed (``-s`` or the test command's output).
"""
from __future__ import annotations

import io
import struct
from typing import Dict, List, Tuple

import pytest

import afserialization as afs

Image = pytest.importorskip("PIL.Image")
from PIL import features  # noqa: E402

CONTENT_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "BMP": "image/bmp",
                 "TIFF": "image/tiff", "ICO": "image/x-icon", "WEBP": "image/webp",
                 "XBM": "image/x-xbitmap"}
OTHER = {"PNG": "image/jpeg", "JPEG": "image/png", "GIF": "image/webp", "BMP": "image/gif",
         "TIFF": "image/bmp", "ICO": "image/tiff", "WEBP": "image/png", "XBM": "image/png"}


def _save(im, fmt: str, **kw) -> bytes:
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def _gradient(mode: str, size: Tuple[int, int], seed: int = 0):
    """A picture with content (so that codecs write real data), in ``mode``."""
    w, h = size
    im = Image.new("RGB", size)
    im.putdata([((x * 7 + seed * 40) % 256, (y * 5 + seed * 90) % 256, (x * y + seed) % 256)
                for y in range(h) for x in range(w)])
    if mode == "RGB":
        return im
    if mode == "P":
        return im.convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    return im.convert(mode)


def _frames(n: int, size: Tuple[int, int], mode: str = "RGB") -> List:
    return [_gradient(mode, size, seed=i + 1) for i in range(n)]


def _big_endian_tiff(w: int, h: int, pages: int) -> bytes:
    """A minimal big-endian (MM) grayscale TIFF with ``pages`` uncompressed pages, written
    here because Pillow writes little-endian files."""
    out = bytearray(b"MM\x00\x2a\x00\x00\x00\x08")
    entries = 8
    ifd_size = 2 + 12 * entries + 4
    pos = 8
    for p in range(pages):
        data_at = pos + ifd_size
        next_ifd = data_at + w * h if p + 1 < pages else 0
        ifd = bytearray(struct.pack(">H", entries))
        for tag, typ, value in ((256, 3, w), (257, 3, h), (258, 3, 8), (259, 3, 1), (262, 3, 1),
                                (273, 4, data_at), (278, 3, h), (279, 4, w * h)):
            if typ == 3:
                ifd += struct.pack(">HHIHH", tag, typ, 1, value, 0)
            else:
                ifd += struct.pack(">HHII", tag, typ, 1, value)
        ifd += struct.pack(">I", next_ifd)
        out += ifd
        out += bytes((x + p * 30) % 256 for x in range(w * h))
        pos = next_ifd
    return bytes(out)


def corpus() -> List[Tuple[str, bytes]]:
    """(name, bytes) for every case."""
    c: List[Tuple[str, bytes]] = []
    for mode in ("1", "L", "LA", "P", "RGB", "RGBA", "I;16"):
        for size in ((1, 1), (17, 5), (64, 33)):
            c.append((f"png {mode} {size}", _save(_gradient(mode, size), "PNG")))
    c.append(("png optimized", _save(_gradient("RGB", (40, 30)), "PNG", optimize=True)))
    for n in (2, 3, 5):
        fr = _frames(n, (23 + n, 11))
        c.append((f"apng {n} frames", _save(fr[0], "PNG", save_all=True, append_images=fr[1:])))
    for mode in ("L", "RGB", "CMYK"):
        for size in ((1, 1), (33, 17), (200, 120)):
            im = _gradient(mode, size)
            c.append((f"jpeg baseline {mode} {size}", _save(im, "JPEG", quality=80)))
            c.append((f"jpeg progressive {mode} {size}", _save(im, "JPEG", progressive=True)))
    c.append(("jpeg optimized", _save(_gradient("RGB", (64, 48)), "JPEG", optimize=True)))
    c.append(("jpeg restart markers", _save(_gradient("RGB", (64, 48)), "JPEG", restart_marker_blocks=1)
              if _has_restart_option() else _save(_gradient("RGB", (64, 48)), "JPEG")))
    exif = Image.Exif()
    exif[0x010F] = "AFSerialization"
    c.append(("jpeg with exif", _save(_gradient("RGB", (31, 19)), "JPEG", exif=exif)))
    for size in ((1, 1), (37, 21), (120, 90)):
        c.append((f"gif static {size}", _save(_gradient("P", size), "GIF")))
    for n in (2, 4):
        fr = _frames(n, (37, 21))
        c.append((f"gif {n} frames", _save(fr[0], "GIF", save_all=True, append_images=fr[1:], duration=50, loop=0)))
    for mode in ("1", "L", "P", "RGB", "RGBA"):
        for size in ((1, 1), (13, 7), (64, 3)):
            c.append((f"bmp {mode} {size}", _save(_gradient(mode, size), "BMP")))
    for compression in (None, "tiff_lzw", "tiff_adobe_deflate", "packbits"):
        kw = {"compression": compression} if compression else {}
        c.append((f"tiff {compression or 'raw'}", _save(_gradient("RGB", (37, 21)), "TIFF", **kw)))
    for mode in ("1", "L", "RGBA", "I;16"):
        c.append((f"tiff {mode}", _save(_gradient(mode, (19, 9)), "TIFF")))
    for n in (2, 3):
        fr = _frames(n, (21, 13))
        c.append((f"tiff {n} pages", _save(fr[0], "TIFF", save_all=True, append_images=fr[1:])))
    c.append(("tiff big-endian", _big_endian_tiff(9, 5, 1)))
    c.append(("tiff big-endian 3 pages", _big_endian_tiff(9, 5, 3)))
    base = _gradient("RGBA", (64, 64))
    c.append(("ico 16 32 64", _save(base, "ICO", sizes=[(16, 16), (32, 32), (64, 64)])))
    c.append(("ico 48", _save(base, "ICO", sizes=[(48, 48)])))
    c.append(("ico 256", _save(_gradient("RGBA", (256, 256)), "ICO", sizes=[(16, 16), (256, 256)])))
    c.append(("ico bmp entries", _save(base, "ICO", sizes=[(16, 16), (32, 32)], bitmap_format="bmp")))
    if features.check("webp"):
        for size in ((1, 1), (50, 30), (257, 129)):
            c.append((f"webp lossy {size}", _save(_gradient("RGB", size), "WEBP", quality=70)))
            c.append((f"webp lossless {size}", _save(_gradient("RGB", size), "WEBP", lossless=True)))
        c.append(("webp alpha", _save(_gradient("RGBA", (30, 20)), "WEBP")))
        for n in (2, 4):
            fr = _frames(n, (37, 21))
            c.append((f"webp {n} frames", _save(fr[0], "WEBP", save_all=True, append_images=fr[1:], duration=40)))
    for size in ((1, 1), (19, 5), (16, 16)):
        c.append((f"xbm {size}", _save(_gradient("1", size), "XBM")))
    return c


def _has_restart_option() -> bool:
    try:
        _save(Image.new("RGB", (8, 8)), "JPEG", restart_marker_blocks=1)
        return True
    except TypeError:
        return False


CORPUS = corpus()


def pillow_facts(data: bytes) -> Tuple[str, Tuple[int, int], int]:
    im = Image.open(io.BytesIO(data))
    frames = len(im.ico.entry) if im.format == "ICO" else getattr(im, "n_frames", 1)
    return im.format, im.size, frames


def structure_end(name: str, data: bytes) -> int:
    """Bytes a truncation must keep to leave every referenced structure whole."""
    if name.startswith("tiff"):
        im = Image.open(io.BytesIO(data))
        end = 0
        for i in range(getattr(im, "n_frames", 1)):
            im.seek(i)
            for o, n in zip(im.tag_v2.get(273, ()), im.tag_v2.get(279, ())):
                end = max(end, o + n)
        return end
    if name.startswith("xbm"):
        return data.rindex(b"};") + 2
    return len(data)


def prefixes(n: int) -> List[int]:
    if n <= 1500:
        return list(range(1, n))
    step = max(1, n // 300)
    return sorted(set(list(range(1, 64)) + list(range(64, n, step)) + list(range(n - 64, n))))


@pytest.fixture(scope="module")
def rs():
    with afs.ImageResponseSerializer() as s:
        yield s


@pytest.mark.parametrize("name,data", CORPUS, ids=[n for n, _ in CORPUS])
def test_same_format_size_and_frames_as_pillow(rs, name, data):
    fmt, size, frames = pillow_facts(data)
    got = rs.response_object(200, CONTENT_TYPES[fmt], data)
    assert (got["format"], (got["width"], got["height"]), got["frames"]) == (fmt.lower(), size, frames), name
    assert got["data"] == data
    assert got["scale"] == 1.0 and got["point_width"] == size[0] and got["point_height"] == size[1]


def test_truncated_copies_are_refused(rs, capsys):
    refused = tried = 0
    for name, data in CORPUS:
        fmt = pillow_facts(data)[0]
        end = structure_end(name, data)
        for n in prefixes(len(data)):
            if n >= end:
                continue
            tried += 1
            with pytest.raises(afs.InvalidImageError) as e:
                rs.response_object(200, CONTENT_TYPES[fmt], data[:n])
            assert "byte offset" in str(e.value) or "not a" in str(e.value), (name, n, str(e.value))
            refused += 1
    with capsys.disabled():
        print(f"\nimages vs Pillow: {len(CORPUS)} files agree on format, size and frames; "
              f"{refused} of {tried} truncated copies refused")
    assert refused == tried and tried > 5000


@pytest.mark.parametrize("name,data", CORPUS[::3], ids=[n for n, _ in CORPUS[::3]])
def test_a_content_type_of_another_format_is_refused(rs, name, data):
    fmt = pillow_facts(data)[0]
    with pytest.raises(afs.InvalidImageError, match="but the body is|the body is not a"):
        rs.response_object(200, OTHER[fmt], data)


def test_corrupt_headers_are_refused(rs):
    png = _save(_gradient("RGB", (9, 9)), "PNG")
    bad = bytearray(png)
    bad[29] ^= 1  # IHDR's CRC
    with pytest.raises(afs.InvalidImageError, match="wrong CRC"):
        rs.response_object(200, "image/png", bytes(bad))
    bad = bytearray(png)
    bad[16:20] = b"\0\0\0\0"  # width 0 (and so its CRC is wrong too: the CRC is checked first)
    with pytest.raises(afs.InvalidImageError):
        rs.response_object(200, "image/png", bytes(bad))
    gif = _save(_gradient("P", (5, 5)), "GIF")
    with pytest.raises(afs.InvalidImageError, match="block introducer"):
        rs.response_object(200, "image/gif", gif[:-1] + b"\x99")
    with pytest.raises(afs.InvalidImageError, match="not a GIF|no known signature"):
        rs.response_object(200, "image/gif", b"GIF88a" + gif[6:])
    jpeg = _save(_gradient("RGB", (9, 9)), "JPEG")
    with pytest.raises(afs.InvalidImageError):
        rs.response_object(200, "image/jpeg", jpeg[:2] + b"\x00" + jpeg[3:])


def test_scale_limits_and_errors(rs):
    data = _save(_gradient("RGB", (30, 20)), "PNG")
    with afs.ImageResponseSerializer(image_scale=3.0) as s3:
        got = s3.response_object(200, "image/png", data)
        assert (got["scale"], got["point_width"], got["point_height"]) == (3.0, 10.0, 20 / 3)
    with afs.ImageResponseSerializer(max_image_pixels=600) as s:
        assert s.response_object(200, "image/png", data)["width"] == 30
        s.max_image_pixels = 599
        with pytest.raises(afs.LimitError, match="30x20"):
            s.response_object(200, "image/png", data)
    with pytest.raises(afs.InvalidArgumentError):
        afs.ImageResponseSerializer(image_scale=0)
    with pytest.raises(afs.UnacceptableContentTypeError):
        rs.response_object(200, "text/html", data)
    assert rs.response_object(200, "image/png", b"") is None   # AFNetworking's empty rule
    with pytest.raises(afs.InvalidImageError, match="no known signature"):
        rs.response_object(200, "image/png", b"hello")
    # status errors carry the decoded image as their document, as for JSON
    with pytest.raises(afs.UnacceptableStatusError) as e:
        rs.response_object(404, "image/png", data)
    assert e.value.document["width"] == 30


def test_compound_with_an_image_member():
    data = _save(_gradient("RGB", (7, 3)), "GIF")
    with afs.CompoundResponseSerializer([afs.JSONResponseSerializer(), afs.ImageResponseSerializer()]) as c:
        assert c.response_object(200, "image/gif", data)["frames"] == 1
        assert c.response_object(200, "application/json", b"[1]") == [1]


def test_unknown_declared_type_lets_the_bytes_decide():
    data = _save(_gradient("RGB", (7, 3)), "BMP")
    with afs.ImageResponseSerializer() as s:
        s.acceptable_content_types = ["application/octet-stream"]
        assert s.response_object(200, "application/octet-stream", data)["format"] == "bmp"


def test_decoding_is_left_to_the_caller(rs):
    data = _save(_gradient("RGB", (12, 8)), "PNG")
    got = rs.response_object(200, "image/png", data)
    im = Image.open(io.BytesIO(got["data"]))   # the README's recipe
    assert im.size == (got["width"], got["height"])
