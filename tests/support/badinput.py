# What the two bad-input tables (tests/e2e/badinput) share: their server (playing one model, run
# in the test so that all it logs is checked), the valid requests sent before and after each row
# (the server must still serve them), deep JSON.
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from rollout.model.policy import ScriptedPolicy, Step, call, text
from support.events import BOUNDARY
from support.logs import assert_no_tracebacks, watch_logs
from support.rawhttp import HttpResponse, RawHttp, post
from support.servers import Served, serving
from support.tools import MODEL

ANSWER = "Still here."


def policy() -> ScriptedPolicy:
    """A request that offers `exec` gets one `exec` call first (an append rollout suspends on
    it), then a text answer; any other request gets the text answer at once."""

    def step(ctx: Any) -> Step:
        if "exec" in ctx.function_tools and ctx.model_turns == 0:
            return call("exec", {"cmd": "ls"})
        return text(ANSWER)

    return ScriptedPolicy(step)


@asynccontextmanager
async def watched_server(caplog: pytest.LogCaptureFixture, **limits: Any) -> AsyncIterator[Served]:
    """A server playing `policy()` with `limits`, inside the test: on exit every task of it has
    ended, and nothing it logged meanwhile has a traceback or is at ERROR level."""
    watch_logs(caplog)
    async with serving(policy(), **limits) as server:
        yield server
    assert_no_tracebacks(caplog)


def deep(levels: int) -> bytes:
    """`levels` nested JSON arrays."""
    return b"[" * levels + b"]" * levels


def create_body(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": "Are you still there?", **extra}


async def http_create(conn: RawHttp) -> HttpResponse:
    """A valid create on `conn`: 200 with a completed response."""
    await conn.send(post(create_body()))
    r = await conn.read_response()
    assert r.status == 200, r
    assert r.json()["status"] == "completed", r.body[:300]
    assert ANSWER in r.body.decode(), r.body[:300]
    return r


def ends(event: dict[str, Any]) -> bool:
    """The event ends a read: terminal, a pause, or an error."""
    return event["type"] in BOUNDARY


def check_response_events(
    events: list[dict[str, Any]], *, lane: str | None, last: str = "response.completed"
) -> dict[str, Any]:
    """One response's events, all on `lane`, ending with `last`; returns the last event."""
    for e in events:
        assert e.get("stream_id") == lane, (lane, e)
        assert e["type"] != "error", e
    assert events[-1]["type"] == last, events[-1]
    return events[-1]
