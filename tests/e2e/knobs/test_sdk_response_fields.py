# The Response object is complete in every snapshot (JSON body, SSE and WebSocket events): every
# key the SDK's Response and the OpenResponses ResponseResource require, with the request's value
# or the documented default, including the knobs that used to be dropped on input
# (presence_penalty, frequency_penalty) and the caching ones.
from __future__ import annotations

from typing import Any

import httpx2 as httpx

from rollout.model.policy import ScriptedPolicy, text
from support.knobs import MODEL, Serve

# Required by the OpenResponses ResponseResource schema (a superset of the SDK's required keys).
REQUIRED = {
    "id", "object", "created_at", "completed_at", "status", "incomplete_details", "model",
    "previous_response_id", "instructions", "output", "error", "tools", "tool_choice",
    "truncation", "parallel_tool_calls", "text", "top_p", "presence_penalty",
    "frequency_penalty", "top_logprobs", "temperature", "reasoning", "usage",
    "max_output_tokens", "max_tool_calls", "store", "background", "service_tier", "metadata",
    "safety_identifier", "prompt_cache_key",
}  # fmt: skip

KNOBS: dict[str, Any] = {
    "presence_penalty": 0.5,
    "frequency_penalty": -0.25,
    "top_logprobs": 3,
    "temperature": 0.2,
    "top_p": 0.9,
    "max_tool_calls": 4,
    "truncation": "auto",
    "prompt_cache_key": "conv-7",
    "prompt_cache_retention": "in_memory",
    "safety_identifier": "user-9",
    "text": {"format": {"type": "text"}, "verbosity": "low"},
}

DEFAULTS: dict[str, Any] = {
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
    "temperature": 1.0,
    "top_p": 1.0,
    "truncation": "disabled",
    "text": {"format": {"type": "text"}, "verbosity": "medium"},
    "reasoning": {"effort": None, "summary": None},
    "background": False,
    "service_tier": "default",
}


def check(snapshot: dict[str, Any], expected: dict[str, Any]) -> None:
    missing = REQUIRED - set(snapshot)
    assert not missing, missing
    for key, value in expected.items():
        assert snapshot[key] == value, (key, snapshot[key])


def test_every_snapshot_has_every_key_with_the_requests_values(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([text("ok")]))
    sdk = {k: v for k, v in KNOBS.items() if not k.endswith("_penalty")}
    penalties = {k: v for k, v in KNOBS.items() if k.endswith("_penalty")}  # not SDK parameters
    events = s.events(input="x", **sdk, extra_body=penalties)
    snapshots = [e.response.to_dict() for e in events if hasattr(e, "response")]
    assert len(snapshots) == 3
    for snapshot in snapshots:
        check(snapshot, KNOBS)


def test_every_snapshot_has_the_documented_defaults(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([text("ok")]))
    for event in s.events(input="x"):
        if hasattr(event, "response"):
            check(event.response.to_dict(), DEFAULTS)


def test_the_json_body_is_complete(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([text("ok")]))
    with httpx.Client(base_url=s.server.http_base_url, timeout=10) as http:
        body = http.post("/responses", json={"model": MODEL, "input": "x", **KNOBS}).json()
    check(body, KNOBS)
    stored = s.client.responses.retrieve(body["id"]).to_dict()
    check(stored, KNOBS)


def test_penalties_are_range_checked(serve: Serve) -> None:
    failure = serve().error(input="x", extra_body={"presence_penalty": 3})
    assert (failure.code, failure.param) == ("decimal_above_max_value", "presence_penalty")
    assert failure.message == (
        "Invalid 'presence_penalty': decimal above maximum value. Expected a value <= 2, but "
        "got 3 instead."
    )
