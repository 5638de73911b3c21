# Images and files built here, for the tests of what they cost: valid PNG, GIF, JPEG and WebP
# headers of a given size, a PDF of given pages and text, and base64 data URLs of them.
from __future__ import annotations

import base64
import struct
import zlib


def png(width: int, height: int) -> bytes:
    """A valid grey PNG of the size (all zero rows, so it compresses to almost nothing)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"\x00" * ((width + 1) * height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def webp(width: int, height: int) -> bytes:
    vp8x = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    vp8x += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(vp8x)) + b"WEBP" + vp8x


def data_url(kind: str, data: bytes) -> str:
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


def pdf(pages: int, text: str) -> bytes:
    content = zlib.compress(f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode())
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Count %d >>" % pages]
    objects += [b"<< /Type /Page /Parent 2 0 R /Contents 9 0 R >>"] * pages
    body = b"".join(b"%d 0 obj\n%s\nendobj\n" % (i + 1, o) for i, o in enumerate(objects))
    stream = b"9 0 obj\n<< /Filter /FlateDecode >>\nstream\n%s\nendstream\nendobj\n" % content
    return b"%PDF-1.4\n" + body + stream + b"%%EOF\n"
