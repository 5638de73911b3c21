# The request-knob tests' session (tests/e2e/knobs): one create over either transport with the
# official SDK (HTTP streaming, or `client.responses.connect()`), every event checked against the
# SDK's own pydantic class for its type (`model_validate`, not the SDK's lenient construct), and
# the request error either transport reports (an HTTP error body, or a WebSocket `error` event).
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import openai
from openai import OpenAI

from rollout.testing.thread import ServerThread
from support.events import TERMINAL
from support.sdk import function_calls as calls
from support.sdk import stream_event_classes
from support.tools import MODEL, function_tool

__all__ = ["MODEL", "Failure", "Serve", "Session", "calls", "kinds", "tool", "validate"]


def tool(name: str, **properties: Any) -> dict[str, Any]:
    """A function tool `name` whose arguments are `properties` (default: a string `q`), all
    required, nothing else allowed."""
    props = properties or {"q": {"type": "string"}}
    schema = {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }
    return function_tool(name, schema, description=f"The {name} tool.")


def validate(event: Any) -> None:
    """The event as sent validates against the SDK's class for its type.

    One exception: an in-progress `web_search_call` has no `action` yet (as the real API sends
    it, spec §2.5), which the SDK's type marks required."""
    cls = stream_event_classes().get(event.type)
    assert cls is not None, f"the SDK has no class for {event.type}"
    data = event.to_dict()
    item = data.get("item", {})
    if item.get("type") == "web_search_call" and "action" not in item:
        return
    cls.model_validate(data)


@attrs.define
class Failure:
    code: str | None
    param: str | None
    message: str


@attrs.define
class Session:
    server: ServerThread
    client: OpenAI
    transport: str

    def events(self, **fields: Any) -> list[Any]:
        """The events of one response (validated); the last one is terminal."""
        fields.setdefault("model", MODEL)
        if self.transport == "http":
            events = list(self.client.responses.create(stream=True, **fields))
        else:
            events = []
            with self.client.responses.connect() as conn:
                _ws_create(conn, fields)
                for event in conn:
                    assert event.type != "error", event
                    events.append(event)
                    if event.type in TERMINAL:
                        break
        for event in events:
            validate(event)
        assert events[-1].type in TERMINAL
        return events

    def create(self, **fields: Any) -> Any:
        """The final Response of one create."""
        return self.events(**fields)[-1].response

    def error(self, **fields: Any) -> Failure:
        """The request error of a create the server refuses."""
        fields.setdefault("model", MODEL)
        if self.transport == "http":
            try:
                self.client.responses.create(**fields)
            except openai.BadRequestError as exc:
                body = exc.body if isinstance(exc.body, dict) else {}
                return Failure(body.get("code"), body.get("param"), body.get("message", ""))
            raise AssertionError("the create was not refused")
        with self.client.responses.connect() as conn:
            _ws_create(conn, fields)
            for event in conn:
                if event.type == "error":
                    e = event.error
                    return Failure(e.code, e.param, e.message)
                assert event.type not in TERMINAL, "the create was not refused"
        raise AssertionError("the connection closed without an error")


def _ws_create(conn: Any, fields: dict[str, Any]) -> None:
    """`response.create` on the connection; fields the SDK has no parameter for (`extra_body`,
    as over HTTP) go in a raw frame."""
    extra = fields.pop("extra_body", None)
    if extra:
        conn.send({"type": "response.create", **fields, **extra})
    else:
        conn.response.create(**fields)


def kinds(response: Any) -> list[str]:
    return [o.type for o in response.output]


#: The knobs tests' `serve` fixture: `session = serve(policy=..., models=...)`.
Serve = Callable[..., Session]
