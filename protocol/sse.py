# Server-sent events framing (text/event-stream), sans-IO in the h11 way: `encode_event` turns
# one event into bytes for the wire; `SSEDecoder` takes bytes in any chunking and gives back
# complete messages, following the WHATWG HTML "event stream interpretation" rules. Nothing here
# knows about sockets, HTTP or the Responses API (the data is opaque bytes, JSON by convention).
#
# Decoding, in brief: lines end with CRLF, LF or CR (a CRLF split across two chunks is one line
# end); a leading UTF-8 BOM is dropped; a line starting with ":" is a comment; `field: value`
# loses one space after the colon; `data` lines accumulate joined by LF; `event` sets the type;
# `id` and `retry` update the decoder's `last_event_id` and `retry`; other fields are ignored; a
# blank line dispatches the message if it has data. An unterminated message at the end of the
# stream is discarded (`pending` says whether there is one). The decoder keeps at most
# `max_message_size` bytes of one message (its data plus its incomplete line): more is SSEError.
from __future__ import annotations

import re
from typing import NamedTuple

MAX_MESSAGE_SIZE = 64 * 1024 * 1024  # the default bound on one decoded message, in bytes
_BOM = b"\xef\xbb\xbf"
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_BREAKS = (0x0A, 0x0D)


class SSEError(ValueError):
    """An event stream the decoder will not accept (a message over its size bound)."""


class SSEMessage(NamedTuple):
    """One dispatched message: its type ("message" unless an `event` field set one) and its data
    (the `data` lines joined by LF, as bytes: UTF-8 by the standard, left undecoded)."""

    event: str
    data: bytes


def encode_event(event_type: str | bytes, data: bytes) -> bytes:
    """`event: <type>\\ndata: <data>\\n\\n`. Data holding line breaks becomes one `data:` line
    per line (a decoder joins them with LF, so a CR or CRLF in data comes back as LF). A type
    cannot hold a line break (ValueError)."""
    kind = event_type.encode() if isinstance(event_type, str) else event_type
    if b"\n" in kind or b"\r" in kind:
        raise ValueError(f"an SSE event type cannot contain a line break: {kind!r}")
    if b"\n" in data or b"\r" in data:
        data = b"\ndata: ".join(_LINE_BREAK.split(data))
    return b"event: %s\ndata: %s\n\n" % (kind, data)


class SSEDecoder:
    """Bytes in (`feed`), complete messages out. One decoder per stream."""

    def __init__(self, max_message_size: int = MAX_MESSAGE_SIZE) -> None:
        self.max_message_size = max_message_size
        self.last_event_id = ""  # the last `id` field (WHATWG: it persists across messages)
        self.retry: int | None = None  # the last valid `retry` field, in milliseconds
        self._line = bytearray()  # the incomplete line at the end of what was fed
        self._data: list[bytes] = []  # the `data` values of the message being read
        self._size = 0  # bytes in _data
        self._event = b""
        self._skip_lf = False  # the last chunk ended with CR: a LF starting the next is its pair
        self._started = False  # past the (optional) BOM
        self._failed = False

    @property
    def pending(self) -> bool:
        """Whether part of a message has been read but not dispatched (at the end of a stream,
        that part is discarded: the stream was cut)."""
        return bool(self._line or self._data or self._event)

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        """The messages completed by `chunk` (a chunk may complete none or several)."""
        if self._failed:
            raise SSEError("the event stream was already refused")
        if not self._started:
            head = bytes(self._line) + chunk
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._line = bytearray(head)  # maybe a BOM: wait for the rest of it
                return []
            self._line.clear()
            chunk = head.removeprefix(_BOM)
            self._started = True
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\n" not in chunk and b"\r" not in chunk:
            self._line += chunk
            self._check()
            return []
        lines = chunk.splitlines()  # bytes split at CRLF, LF and CR only
        if chunk[-1] in _BREAKS:
            self._skip_lf = chunk[-1] == 0x0D  # a CR at the end: maybe the first half of CRLF
            tail = b""
        else:
            tail = lines.pop()
        if self._line:
            self._line += lines[0]
            lines[0] = bytes(self._line)
            self._line.clear()
        messages: list[SSEMessage] = []
        for line in lines:
            if not line:
                if self._data:
                    self._check()
                    messages.append(self._dispatch())
                else:
                    self._event = b""
            elif line.startswith(b"data: "):  # the common case first, as the server writes it
                self._data.append(line[6:])
                self._size += len(line) - 5
            elif line[0] != 0x3A:  # ":" starts a comment
                self._field(line)
        self._line += tail
        self._check()
        return messages

    def _check(self) -> None:
        if len(self._line) + self._size + len(self._event) > self.max_message_size:
            self._failed = True
            raise SSEError(
                f"an SSE message is larger than the limit of {self.max_message_size} bytes"
            )

    def _field(self, line: bytes) -> None:
        field, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            self._data.append(value)
            self._size += len(value) + 1
        elif field == b"event":
            self._event = value
        elif field == b"id":
            if b"\0" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif field == b"retry":
            if value.isdigit():
                self.retry = int(value)

    def _dispatch(self) -> SSEMessage:
        data, event = self._data, self._event
        self._data, self._size, self._event = [], 0, b""
        name = event.decode("utf-8", "replace") if event else "message"
        return SSEMessage(name, data[0] if len(data) == 1 else b"\n".join(data))
