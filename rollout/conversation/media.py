# What images and files cost in prompt tokens, as OpenAI's documentation counts them ("Images and
# vision: calculating costs"; "File inputs": a PDF is its extracted text plus an image of each
# page). The rule of each model family is a row of IMAGE_RULES; an image's size is read from the
# header of a base64 data URL (PNG, JPEG, GIF, WebP: stdlib only), and an image nothing here may
# fetch (a URL, a file id) has DEFAULT_SIZE. Nothing here touches the network.
from __future__ import annotations

import base64
import binascii
import contextlib
import math
import re
import struct
import zlib

import attrs

#: An image whose size cannot be read (a URL or file id: nothing is downloaded): the 1024 x 1024
#: of the documentation's first example (765 tokens at high detail for gpt-4o).
DEFAULT_SIZE = (1024, 1024)
#: A PDF page rendered as an image: US Letter at 72 dpi.
PAGE_SIZE = (612, 792)
#: Text of unknown kind, by bytes: "1 token is approximately 4 characters" (OpenAI's guide).
BYTES_PER_TOKEN = 4
HEADER_BYTES = 256 * 1024  # of a data URL's image, decoded to find its size (JPEG: its SOF)
STREAM_BYTES = 16 * 1024 * 1024  # of one PDF content stream, inflated to read its text


@attrs.frozen
class Tiles:
    """`low`: `base`; `high` and `auto`: scaled to fit 2048 x 2048, then its shortest side down
    to 768, then `base` plus `tile` per 512px square that covers it."""

    base: int
    tile: int

    def tokens(self, detail: str, width: int, height: int) -> int:
        if detail == "low":
            return self.base
        w, h = float(width), float(height)
        if max(w, h) > 2048:
            scale = 2048 / max(w, h)
            w, h = w * scale, h * scale
        if min(w, h) > 768:
            scale = 768 / min(w, h)
            w, h = w * scale, h * scale
        return self.base + self.tile * math.ceil(w / 512) * math.ceil(h / 512)


@attrs.frozen
class Patches:
    """32px patches covering the image, at most 1536 (the image scaled down to fit), times the
    family's `multiplier`; the same at every detail."""

    multiplier: float
    size: int = 32
    cap: int = 1536

    def tokens(self, detail: str, width: int, height: int) -> int:
        del detail
        p = self.size
        w, h = float(width), float(height)
        if math.ceil(w / p) * math.ceil(h / p) > self.cap:
            shrink = math.sqrt(p * p * self.cap / (w * h))
            w, h = w * shrink, h * shrink
            shrink = min(math.floor(w / p) / (w / p), math.floor(h / p) / (h / p))
            w, h = w * shrink, h * shrink
        return math.ceil(math.ceil(w / p) * math.ceil(h / p) * self.multiplier)


Rule = Tiles | Patches
#: The documented image rule per model family, matched by the model name's prefix (longest
#: first); any other model counts as gpt-4o (GPT-4o, GPT-4.1, GPT-4.5 share its constants).
IMAGE_RULES: dict[str, Rule] = {
    "gpt-4o-mini": Tiles(base=2833, tile=5667),
    "gpt-4.1-mini": Patches(multiplier=1.62),
    "gpt-4.1-nano": Patches(multiplier=2.46),
    "o4-mini": Patches(multiplier=1.72),
    "o1": Tiles(base=75, tile=150),
    "o3": Tiles(base=75, tile=150),
    "computer-use-preview": Tiles(base=65, tile=129),
}
DEFAULT_RULE: Rule = Tiles(base=85, tile=170)
_BY_LENGTH = sorted(IMAGE_RULES, key=len, reverse=True)


def rule_for(model: str) -> Rule:
    for prefix in _BY_LENGTH:
        if model.startswith(prefix):
            return IMAGE_RULES[prefix]
    return DEFAULT_RULE


def image_tokens(model: str, detail: str, size: tuple[int, int] | None) -> int:
    width, height = size or DEFAULT_SIZE
    return rule_for(model).tokens(detail, max(width, 1), max(height, 1))


# -- data URLs and image headers --------------------------------------------------------------

_DATA_URL = re.compile(r"data:([^;,]*)(?:;[^,]*)?;base64,", re.IGNORECASE)


def data_of(url: str | None, limit: int | None = None) -> tuple[str, bytes] | None:
    """The media type and bytes of a base64 data URL (the first `limit` bytes, or about), or
    None for anything else (a URL, or a data URL that is not valid base64)."""
    if not url:
        return None
    match = _DATA_URL.match(url)
    if match is None:
        return None
    body = url[match.end() :]
    if limit is not None:
        body = body[: (limit // 3 + 1) * 4]
    try:
        return match.group(1).lower(), base64.b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, WebP or JPEG header (None for anything else)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_size(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    kind = data[12:16]
    if kind == b"VP8 " and len(data) >= 30:
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if kind == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # start-of-frame markers


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in _SOF:
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return w, h
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            i += 2
            continue
        i += 2 + int.from_bytes(data[i + 2 : i + 4], "big")
    return None


def url_image_size(url: str | None) -> tuple[int, int] | None:
    """The size of a data URL's image, read from its header (None: unknown)."""
    found = data_of(url, HEADER_BYTES)
    return image_size(found[1]) if found is not None else None


# -- files --------------------------------------------------------------------------------------

_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.DOTALL)
_SHOWN = re.compile(rb"\(((?:[^()\\]|\\.)*)\)\s*(?:Tj|'|\")|\[((?:[^\]\\]|\\.)*)\]\s*TJ", re.DOTALL)
_LITERAL = re.compile(rb"\(((?:[^()\\]|\\.)*)\)", re.DOTALL)
_ESCAPE = re.compile(rb"\\(.)", re.DOTALL)


@attrs.frozen
class FileContent:
    """What a file puts in the prompt: its text, how many page images, and an estimate in
    tokens of content that is neither."""

    text: str
    pages: int
    estimated: int = 0


def file_content(file_data: str | None, filename: str | None) -> FileContent:
    """A file's text and page images. A PDF given inline: the text its pages show (plain or
    Flate-compressed content streams) and one image per page; text given inline: its text;
    other inline bytes: an estimate of 1 token per 4 bytes; a file not given inline
    (a file id or URL: nothing is fetched): one page."""
    found = data_of(file_data)
    if found is None and file_data:
        try:
            found = ("", base64.b64decode(file_data, validate=True))
        except (binascii.Error, ValueError):
            found = None
    if found is None:
        return FileContent("", 1)
    media, data = found
    if data.startswith(b"%PDF") or media == "application/pdf":
        return FileContent(_pdf_text(data), max(1, len(_PAGE.findall(data))))
    if media.startswith("text/") or media in ("application/json", "application/xml"):
        return FileContent(data.decode("utf-8", "replace"), 0)
    try:
        return FileContent(data.decode("utf-8"), 0)
    except UnicodeDecodeError:
        return FileContent("", 0, math.ceil(len(data) / BYTES_PER_TOKEN))


def _pdf_text(data: bytes) -> str:
    shown: list[bytes] = []
    for match in _STREAM.finditer(data):
        body = match.group(1)
        with contextlib.suppress(zlib.error):  # a Flate stream, or a plain one
            body = zlib.decompressobj().decompress(body, STREAM_BYTES)  # never a bomb's all
        for tj in _SHOWN.finditer(body):
            if tj.group(1) is not None:
                shown.append(tj.group(1))
            else:
                shown.extend(lit.group(1) for lit in _LITERAL.finditer(tj.group(2)))
    return " ".join(_ESCAPE.sub(rb"\1", s).decode("latin-1") for s in shown)


def file_tokens_of_pages(model: str, pages: int) -> int:
    """The page images of a file, each a page-sized image at high detail."""
    return pages * image_tokens(model, "high", PAGE_SIZE)
