# HTTP/1.1 request heads, sans-IO (no trio, sockets or clocks): the request line and fields of a
# head checked and read as h11 did when the server ran on it (the same heads accepted, the same
# refusals with the same status), and what they decide (the body's framing, keep-alive, Expect:
# 100-continue, a protocol switch). A head in the common shape is checked by one regular
# expression over the whole of it; anything else (folded lines, repeated fields, every refusal)
# takes the line-by-line path, which is the one that decides: every line's syntax first, then
# what the fields say, in order.
from __future__ import annotations

import re

_WS = " \t\n\r\x0b\x0c"  # the ASCII whitespace `bytes.strip()` strips
_TOKEN = r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_VCHAR = r"[\x21-\x7e]"
_FIELD_CHAR = r"[^\x00\t\n\x0b\x0c\r ]"
_REQUEST_LINE = re.compile(rf"({_TOKEN}) ({_VCHAR}+) HTTP/([0-9]\.[0-9])")
_FIELD = re.compile(rf"({_TOKEN}):[ \t]*((?:{_FIELD_CHAR}+(?:[ \t]+{_FIELD_CHAR}+)*)?)[ \t]*")
_FOLD = re.compile(r"[ \t]+")
_DIGITS = re.compile(r"[0-9]+")
BLANK_LINE = re.compile(rb"\n\r?\n")
# A whole head of the common shape (no folded lines) in one match, and its fields in one pass.
_QUICK = re.compile(
    rf"({_TOKEN}) ({_VCHAR}+) HTTP/([0-9]\.[0-9])\r?\n"
    rf"((?:{_TOKEN}:[^\x00\n\r\x0b\x0c]*\r?\n)*)\r?\n"
)
_QUICK_FIELD = re.compile(rf"({_TOKEN}):[ \t]*(.*?)[ \t]*\r?\n")
MAX_CONTENT_LENGTH_DIGITS = 20


class BadRequest(Exception):
    """The bytes received are not an acceptable HTTP/1.1 request: answer `status`, then close."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Head:
    """A request head: its method, target and version as sent; its fields with lowercase names
    (the last value of each in `headers`); and what they decide."""

    __slots__ = (
        "chunked",
        "expect_continue",
        "headers",
        "keep_alive",
        "length",
        "method",
        "switch",
        "target",
        "text",
        "version",
    )

    def __init__(
        self, method: str, target: str, version: str, headers: dict[str, str], text: str
    ) -> None:
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.text = text  # the head as received (latin-1), for `fields`
        self.chunked = "transfer-encoding" in headers
        length = headers.get("content-length")
        self.length = int(length) if length is not None and not self.chunked else 0
        self.keep_alive = version >= "1.1"
        self.expect_continue = False
        # The client proposes to switch protocols (h11's name for an Upgrade header, or
        # CONNECT): until a response is sent, the request is not over.
        self.switch = method == "CONNECT"

    def fields(self) -> list[tuple[str, str]]:
        """Every field in order, names in lowercase, Content-Length and Transfer-Encoding as
        normalized (a repeated equal Content-Length once)."""
        return parse_fields(split_lines(self.text)[1:])[0]


def tokens(values: list[str]) -> list[str]:
    """The comma-separated elements of a field's values, in lowercase, empty ones left out."""
    out = []
    for value in values:
        for item in value.lower().split(","):
            item = item.strip(_WS)
            if item:
                out.append(item)
    return out


def _decide(head: Head, values: dict[str, list[str]]) -> Head:
    """Keep-alive, Expect: 100-continue and a protocol switch, from the fields that say so."""
    if "close" in tokens(values.get("connection", [])):
        head.keep_alive = False
    if head.version >= "1.1" and "100-continue" in tokens(values.get("expect", [])):
        head.expect_continue = True
    if tokens(values.get("upgrade", [])):
        head.switch = True
    return head


def parse_head(text: str) -> Head:
    """The request head `text` (latin-1, up to and with the blank line that ends it)."""
    quick = _QUICK.fullmatch(text)
    if quick is not None:
        method, target, version, block = quick.groups()
        pairs = _QUICK_FIELD.findall(block)
        headers = {name.lower(): value for name, value in pairs}
        length = headers.get("content-length")
        te = headers.get("transfer-encoding")
        if (
            len(headers) == len(pairs)
            and (length is None or (_plain_length(length)))
            and (te is None or te.lower() == "chunked")
            and ("host" in headers or version != "1.1")
        ):
            if te is not None:
                headers["transfer-encoding"] = "chunked"
            head = Head(method, target, version, headers, text)
            if "connection" in headers or "expect" in headers or "upgrade" in headers:
                return _decide(head, {name: [value] for name, value in headers.items()})
            return head
    return parse_lines(split_lines(text), text)


def _plain_length(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= MAX_CONTENT_LENGTH_DIGITS


def split_lines(text: str) -> list[str]:
    """A head's lines without their ends (a line ends at LF, with or without CR before it)."""
    lines = text.split("\n")[:-2]
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_lines(lines: list[str], text: str) -> Head:
    if not lines:
        raise BadRequest("no request line received")
    request = _REQUEST_LINE.fullmatch(lines[0])
    if request is None:
        raise BadRequest(f"illegal request line: {lines[0]!r}")
    method, target, version = request.groups()
    fields, values = parse_fields(lines[1:])
    hosts = len(values.get("host", []))
    if version == "1.1" and hosts == 0:
        raise BadRequest("Missing mandatory Host: header")
    if hosts > 1:
        raise BadRequest("Found multiple Host: headers")
    return _decide(Head(method, target, version, dict(fields), text), values)


def parse_fields(lines: list[str]) -> tuple[list[tuple[str, str]], dict[str, list[str]]]:
    """The field lines (after the request line) unfolded, checked and normalized, in order,
    and the values of each name."""
    fields: list[tuple[str, str]] = []
    values: dict[str, list[str]] = {}
    length: str | None = None
    chunked = False
    parsed = []
    for line in _unfold(lines):  # every line's syntax first, then what the fields say
        field = _FIELD.fullmatch(line)
        if field is None:
            raise BadRequest(f"illegal header line: {line!r}")
        parsed.append((field[1].lower(), field[2]))
    for name, value in parsed:
        if name == "content-length":
            lengths = {item.strip(_WS) for item in value.split(",")}
            if len(lengths) != 1:
                raise BadRequest("conflicting Content-Length headers")
            value = lengths.pop()
            if _DIGITS.fullmatch(value) is None or len(value) > MAX_CONTENT_LENGTH_DIGITS:
                raise BadRequest("bad Content-Length")
            if length is not None:
                if value != length:
                    raise BadRequest("conflicting Content-Length headers")
                continue
            length = value
        elif name == "transfer-encoding":
            if chunked:
                raise BadRequest("multiple Transfer-Encoding headers", 501)
            value = value.lower()
            if value != "chunked":
                raise BadRequest("Only Transfer-Encoding: chunked is supported", 501)
            chunked = True
        fields.append((name, value))
        values.setdefault(name, []).append(value)
    return fields, values


def _unfold(lines: list[str]) -> list[str]:
    """Lines with obsolete line folding undone: a line starting with spaces or tabs continues
    the one before it, joined by one space."""
    out: list[str] = []
    for line in lines:
        fold = _FOLD.match(line)
        if fold is None:
            out.append(line)
        elif not out:
            raise BadRequest("continuation line at start of headers")
        else:
            out[-1] += " " + line[fold.end() :]
    return out


def take_lines(buf: bytearray) -> list[str] | None:
    """The lines up to the first blank one, taken out of `buf` (None: not all in yet)."""
    if buf[:1] == b"\n":
        del buf[:1]
        return []
    if buf[:2] == b"\r\n":
        del buf[:2]
        return []
    blank = BLANK_LINE.search(buf)
    if blank is None:
        return None
    text = buf[: blank.end()].decode("latin-1")
    del buf[: blank.end()]
    return split_lines(text)
