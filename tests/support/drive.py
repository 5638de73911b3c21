# The engine driven without sockets: `Engine.prepare` then `Engine.run` with the events
# collected in order, for tests of the sampling loop, the engine's work and the store.
from __future__ import annotations

from typing import Any

import attrs

from protocol import codec
from protocol.events import Event
from protocol.response import Response
from rollout.conversation.context import Context
from rollout.conversation.work import Work
from rollout.engine.engine import Engine, Prepared
from rollout.engine.executors import EndResponse
from rollout.engine.loop import Executor
from rollout.model.policy import ScriptedPolicy, Step


@attrs.define
class Ran:
    """A prepared (and maybe run) response: its events, response, work and context."""

    prepared: Prepared
    events: list[Event]

    @property
    def response(self) -> Response:
        return self.prepared.rollout.stream.response

    @property
    def work(self) -> Work:
        return self.prepared.rollout.work

    @property
    def ctx(self) -> Context:
        return self.prepared.rollout.ctx

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, type_: str) -> list[Any]:
        return [e for e in self.events if e.type == type_]


async def prepare(engine: Engine, body: dict[str, Any], **kw: Any) -> Ran:
    """`Engine.prepare` of a create body; the events it emits are collected in `events`."""
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    prepared = await engine.prepare(codec.decode_create(body), Work(), emit, **kw)
    return Ran(prepared, events)


async def drive(
    engine: Engine, body: dict[str, Any], client: Executor | None = None, **kw: Any
) -> Ran:
    """Prepare and run one response to its end (client tools end it unless `client`)."""
    ran = await prepare(engine, body, **kw)
    await engine.run(ran.prepared, client or EndResponse())
    return ran


def scripted(*steps: Step, **engine: Any) -> Engine:
    """An engine whose model plays `steps`."""
    return Engine(policy=ScriptedPolicy(list(steps)), **engine)
