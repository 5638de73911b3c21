# Server-sent events as the tests read them, strictly: every frame is exactly
# `event: TYPE\ndata: {json}` and a blank line, and the data's `type` is the frame's name.
from __future__ import annotations

from typing import Any

import orjson


def parse_sse(body: str | bytes) -> list[tuple[str, dict[str, Any]]]:
    """(name, data) of every frame of a complete event stream."""
    text = body.decode() if isinstance(body, bytes) else body
    assert text.endswith("\n\n"), text[-200:]
    out = []
    for frame in text[:-2].split("\n\n"):
        lines = frame.split("\n")
        assert len(lines) == 2, frame
        assert lines[0].startswith("event: "), frame
        assert lines[1].startswith("data: "), frame
        name = lines[0].removeprefix("event: ")
        data = orjson.loads(lines[1].removeprefix("data: "))
        assert isinstance(data, dict) and data["type"] == name, frame
        out.append((name, data))
    return out


def sse_events(body: str | bytes) -> list[dict[str, Any]]:
    """The `data:` objects of a complete event stream."""
    return [data for _, data in parse_sse(body)]


def data_events(body: bytes) -> list[dict[str, Any]]:
    """The `data:` objects of a stream as far as it came, leniently (a stream that may have
    been cut: no check of its frames)."""
    return [
        orjson.loads(line[6:])
        for block in body.split(b"\n\n")
        for line in block.split(b"\n")
        if line.startswith(b"data: ")
    ]
