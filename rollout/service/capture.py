# Capture of what clients sent, for test rigs' assertions: every HTTP request (method, path,
# parsed JSON body) and every WebSocket frame (parsed), in arrival order. Off unless a list is
# installed on the server (`AppendHost.captured`); the fixture turns it on.
from __future__ import annotations

from typing import Any

import attrs
import orjson


@attrs.frozen
class Captured:
    transport: str  # "http" or "ws"
    kind: str  # "POST /v1/responses", or a frame's "type" ("binary" for binary frames)
    body: Any  # the parsed JSON (None when empty; the raw text when it is not JSON)
    connection: int  # which connection it came on (an id per connection, from 1)

    @property
    def type(self) -> str | None:
        """The `type` field of the body, if it has one."""
        return self.body.get("type") if isinstance(self.body, dict) else None


def parse(data: bytes | str) -> Any:
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else data
