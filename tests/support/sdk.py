# The official `openai` SDK as the tests' client: its sync client made as users make it, a raw
# HTTP client of the same HTTP library, and checks that each event parsed into the SDK's own
# class for its type (the SSE stream union and the WebSocket server-event union).
from __future__ import annotations

import functools
import ssl
import typing
from typing import Any

import httpx2 as httpx
import openai
from openai import DefaultHttpxClient, OpenAI
from openai.types.responses import ResponseStreamEvent
from openai.types.responses.responses_server_event import ResponsesServerEvent

from protocol.events import TERMINAL_TYPES
from support.errors import assert_envelope
from support.tools import MODEL

TIMEOUT = 10.0


@functools.cache
def _tls() -> ssl.SSLContext:
    # Every HTTP client builds a TLS context (~70 ms) it never uses on http://; share one.
    return ssl.create_default_context()


def sdk_client(server: Any) -> OpenAI:
    """The SDK's sync client for a server (anything with `http_base_url`), no retries."""
    return OpenAI(
        api_key="test",
        base_url=server.http_base_url,
        max_retries=0,
        timeout=TIMEOUT,
        http_client=DefaultHttpxClient(verify=_tls()),
    )


def raw_client(base_url: str = "") -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=TIMEOUT, verify=_tls())


def _classes_by_type(union: Any) -> dict[str, type]:
    """The SDK class for each event `type` of a discriminated union (Annotated[Union[...]])."""
    out: dict[str, type] = {}
    for cls in typing.get_args(typing.get_args(union)[0]):
        for literal in typing.get_args(cls.model_fields["type"].annotation):
            assert literal not in out, f"two SDK classes for {literal}"
            out[literal] = cls
    return out


@functools.cache
def stream_event_classes() -> dict[str, type]:
    """The SDK's class for each streaming (SSE) event type: its ResponseStreamEvent union."""
    return _classes_by_type(ResponseStreamEvent)


@functools.cache
def server_event_classes() -> dict[str, type]:
    """The SDK's class for each WebSocket server event type: its ResponsesServerEvent union."""
    return _classes_by_type(ResponsesServerEvent)


def assert_event_class(event: Any, *, exact: bool = True) -> None:
    """The event parsed into the SDK's class for its type (a subclass if not `exact`: the
    `responses.stream` helper adds snapshots to some), never an unrelated fallback."""
    expected = stream_event_classes().get(event.type)
    assert expected is not None, f"the SDK has no class for event type {event.type!r}"
    ok = type(event) is expected if exact else isinstance(event, expected)
    assert ok, f"{event.type} parsed as {type(event).__name__}"


def assert_sdk_class(event: Any) -> None:
    """A WebSocket event parsed into the SDK's own class for its type, and validates strictly."""
    expected = server_event_classes().get(event.type)
    assert expected is not None, f"the SDK has no class for event type {event.type!r}"
    assert type(event) is expected, f"{event.type} parsed as {type(event).__name__}"
    expected.model_validate(event.model_dump(mode="json", exclude_unset=True))


def function_calls(resp: Any) -> list[Any]:
    return [item for item in resp.output if item.type == "function_call"]


def assert_healthy(client: OpenAI) -> None:
    """A normal create on the same client still works."""
    resp = client.responses.create(model=MODEL, input="are you still there?")
    assert resp.status == "completed"
    assert resp.output_text


def assert_api_error(
    exc: openai.APIStatusError, status: int, *, code: str | None, param: str | None = None
) -> dict[str, Any]:
    """The SDK's exception for an error response has the status, `code` and `param`, and the
    body behind it is the standard envelope with the same; returns the error object."""
    assert exc.status_code == status
    assert exc.code == code
    assert exc.param == param
    return assert_envelope(exc.response.json(), code=code, param=param)


def ended(event: Any) -> Any | None:
    """The final response when `event` is a terminal event (None for any other); an `error`
    event fails the test. For loops over a WebSocket connection's events."""
    if event.type == "error":
        raise AssertionError(event.model_dump())
    return event.response if event.type in TERMINAL_TYPES else None
