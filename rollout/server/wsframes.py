# WebSocket frames as bytes (RFC 6455 §5.2), for the connection's hot path: a server's text
# frame, and the bounds and text of a client's whole frame in a buffer; and the values the
# connection hands out (its close, a message over the limit). Sans-IO; every frame these do not
# handle (control frames, fragments, anything malformed) is wsproto's.
from __future__ import annotations

import attrs


class WsClosed(Exception):
    """The connection is closed (code 1006: dropped without a close frame)."""

    def __init__(self, code: int = 1006, reason: str = "") -> None:
        super().__init__(f"{code} {reason}".strip())
        self.code = code
        self.reason = reason


@attrs.frozen
class TooLarge:
    """A message over the size limit (its payload was dropped); the session answers it."""

    size: int


def text_frame(payload: bytes) -> bytes:
    """One unmasked, unfragmented text frame (a server's frames are not masked, and no
    extension was negotiated)."""
    n = len(payload)
    if n < 126:
        head = bytes((0x81, n))
    elif n < 1 << 16:
        head = bytes((0x81, 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((0x81, 127)) + n.to_bytes(8, "big")
    return head + payload


def text_frames(payloads: list[bytes]) -> bytes:
    """`text_frame` of each payload, joined (a run of delta events: most are short)."""
    if max(map(len, payloads)) < 126:
        return b"".join([b"\x81%c%b" % (len(payload), payload) for payload in payloads])
    return b"".join(map(text_frame, payloads))


def frame_at(buf: bytearray) -> tuple[int, int, int, bool] | None:
    """The frame at the start of `buf`: where its payload starts and the frame ends, its opcode
    and FIN bit; None while its header is incomplete."""
    if len(buf) < 2:
        return None
    n, at = buf[1] & 0x7F, 2
    if n == 126:
        if len(buf) < 4:
            return None
        n, at = int.from_bytes(buf[2:4], "big"), 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n, at = int.from_bytes(buf[2:10], "big"), 10
    if buf[1] & 0x80:
        at += 4
        if len(buf) < at:
            return None
    return at, at + n, buf[0] & 0x0F, bool(buf[0] & 0x80)


def text_of(buf: bytearray, start: int, end: int) -> str | None:
    """The text of a masked frame's payload `buf[start:end]`; None if it is not UTF-8 (wsproto
    then fails the connection with 1007, as for any other frame)."""
    n = end - start
    mask = bytes(buf[start - 4 : start]) * (n // 4 + 1)
    key = int.from_bytes(mask[:n], "big")
    payload = (int.from_bytes(buf[start:end], "big") ^ key).to_bytes(n, "big")
    try:
        return payload.decode()
    except UnicodeDecodeError:
        return None


def join(parts: list[str | bytes]) -> str | bytes:
    """A message from its fragments' data (all text or all bytes)."""
    if len(parts) == 1:
        return parts[0]
    if parts and isinstance(parts[0], bytes):
        return b"".join(p for p in parts if isinstance(p, bytes))
    return "".join(p for p in parts if isinstance(p, str))
