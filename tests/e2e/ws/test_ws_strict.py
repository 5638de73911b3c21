# Strict by default in WebSocket mode, with the official SDK (`client.responses.connect()`): an
# unknown key of a `response.create` frame (sent raw, as `conn.send` passes it through) or a
# value the real API refuses is an `error` event on the frame's lane with the real API's param,
# code and message, and the connection goes on; the frame's own keys (`type`, `stream_id`,
# `generate`, `stream`) are not parameters. A lenient server accepts what it did before.
from __future__ import annotations

from typing import Any

import pytest
from openai import OpenAI

from support.events import TERMINAL_OR_ERROR
from support.servers import Serve
from support.tools import MODEL

USER = {"role": "user", "content": "hi"}


def events(conn: Any) -> list[Any]:
    out = []
    for event in conn:
        out.append(event)
        if event.type in TERMINAL_OR_ERROR:
            return out
    raise AssertionError("the connection closed")


def send(conn: Any, **fields: Any) -> list[Any]:
    conn.send({"type": "response.create", "model": MODEL, "input": [USER], **fields})
    return events(conn)


def test_unknown_parameter_is_an_error_event(serve: Serve) -> None:
    _, client = serve()
    with client.responses.connect() as conn:
        [error] = send(conn, stream_id="a", bogus={"nested": 1})
        assert error.type == "error" and error.status == 400
        assert error.error.type == "invalid_request_error"
        assert (error.error.param, error.error.code) == ("bogus", "unknown_parameter")
        assert error.error.message == "Unknown parameter: 'bogus'."
        assert error.stream_id == "a"
        # The connection and the lane go on; the frame's own keys are not parameters.
        done = send(conn, stream_id="a", stream=True, store=False)
        assert done[-1].type == "response.completed"


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"reasoning": {"effort": "low", "bogus": 1}}, "reasoning.bogus", "unknown_parameter"),
        ({"tools": [{"type": "teleport"}]}, "tools[0].type", "invalid_value"),
        ({"max_output_tokens": 8}, "max_output_tokens", "integer_below_min_value"),
        ({"top_logprobs": 21}, "top_logprobs", "integer_above_max_value"),
    ],
    ids=["nested-key", "tool-type", "max-output-tokens", "top-logprobs"],
)
def test_typed_create_is_held_to_the_real_rules(
    serve: Serve, fields: dict[str, Any], param: str, code: str
) -> None:
    """Through the SDK's typed `conn.response.create` where it can say it, raw otherwise."""
    _, client = serve()
    with client.responses.connect() as conn:
        if "reasoning" in fields:
            [error] = send(conn, **fields)
        else:
            conn.response.create(model=MODEL, input=[USER], **fields)
            [error] = events(conn)
        assert error.type == "error"
        assert (error.error.param, error.error.code) == (param, code)


def test_lenient_accepts_as_before(serve: Serve) -> None:
    _, client = serve(lenient=True)
    with client.responses.connect() as conn:
        done = send(
            conn,
            bogus=1,
            reasoning={"effort": "low", "bogus": 1},
            tools=[{"type": "teleport"}],
            max_output_tokens=8,
        )
        assert done[-1].type in ("response.completed", "response.incomplete")
        assert [t.type for t in done[-1].response.tools] == ["teleport"]


def test_codex_create_passes(client: OpenAI) -> None:
    """What Codex sends on every turn (spec/real-clients.md) is within the real API's rules."""
    tools = [
        {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
        {"type": "namespace", "name": "goals", "description": "goal tools", "tools": []},
        {"type": "web_search"},
    ]
    with client.responses.connect() as conn:
        warm = send(
            conn,
            tools=tools,
            store=False,
            stream=True,
            generate=False,
            include=["reasoning.encrypted_content"],
            prompt_cache_key="thread-1",
            client_metadata={"x-codex-turn": "1"},
            reasoning={"effort": "medium", "summary": "auto"},
        )
        assert warm[-1].type == "response.completed"
