# The append shape over HTTP as the tests drive it with the trio client: a POST read to the end
# of its HTTP response (the SSE events, or an error body), an append-shape create that streams
# to its first pause, and an append that streams to the next pause or the end.
from __future__ import annotations

from typing import Any

import orjson

from rollout.client import HttpClient
from support.frames import append_body
from support.sse import sse_events

Frames = list[dict[str, Any]]


async def sse(http: HttpClient, path: str, payload: Any) -> tuple[int, dict[str, str], Any]:
    """POST; (status, headers, the SSE events as JSON, or the JSON body of an error)."""
    status, head, chunks = await http.request("POST", path, payload)
    data = b"".join([c async for c in chunks])  # returns at the end of the HTTP response
    if not head.get("content-type", "").startswith("text/event-stream"):
        return status, head, orjson.loads(data) if data else None
    return status, head, sse_events(data) if data else []


async def stream(http: HttpClient, path: str, payload: Any) -> Frames:
    """POST that must answer 200 with an event stream; its events."""
    status, head, frames = await sse(http, path, payload)
    assert status == 200, frames
    assert head["content-type"].startswith("text/event-stream")
    return frames


async def create(http: HttpClient, **extra: Any) -> tuple[str, Frames]:
    """An append-shape create (`append_body`), streamed to its first pause or its end."""
    frames = await stream(http, "/responses", append_body(stream=True, **extra))
    last = frames[-1]
    rid = last["response_id"] if last["type"] == "response.done" else last["response"]["id"]
    return rid, frames


async def append(http: HttpClient, rid: str, items: list[dict[str, Any]]) -> Frames:
    return await stream(http, f"/responses/{rid}/append", {"input": items})
