# A create that can start at once is handed the reading task (Session.receive returns its lane's
# run) only when the transport can hand its reader over, its lane has nothing running and an
# in-flight slot is free; otherwise it goes to a lane task as before. Either way its response
# runs to the end, and a second create on a busy lane waits its turn.
from __future__ import annotations

from typing import Any

import orjson
import trio
import trio.testing

import rollout
from protocol.events import Event
from protocol.lanes import Lane
from rollout.conversation.work import Stats
from rollout.engine.loop import CallbackSink
from rollout.service.config import ServerConfig
from rollout.service.service import Service
from rollout.service.session import Session
from rollout.service.taps import TapConfig


def sink(into: list[str]) -> CallbackSink:
    """A sink that keeps each event's type."""

    async def keep(event: Event) -> None:
        into.append(event.type)

    return CallbackSink(keep)


def create(stream_id: str | None = None) -> str:
    body: dict[str, Any] = {"type": "response.create", "model": "m", "input": "hi"}
    if stream_id is not None:
        body["stream_id"] = stream_id
    return orjson.dumps({**body, "store": False}).decode()


async def run_session(handing: bool, frames: list[str]) -> tuple[list[object], list[str]]:
    engine = rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text("ok")]))
    service = Service(engine, ServerConfig())
    events: list[str] = []
    returned: list[object] = []

    class Transport:
        def sink_for(self, lane: Lane) -> Any:
            return sink(events)

        async def refuse(self, exc: Exception, lane: Lane) -> None:
            raise AssertionError(exc)

        async def hangup(self) -> None:
            pass

        async def shutdown(self) -> None:
            pass

        def queued(self) -> int:
            return 0

        def handing_over(self) -> bool:
            return handing

        def active(self, count: int) -> None:
            pass

    session = Session(service, None, TapConfig().open("ws", 1, Stats()), Transport())

    async def read(receive: Any, spawn: Any, ended: Any) -> None:
        """The transport's part: each frame to the session; a run it returns goes on in a
        task of its own here (the real reader reads on in a successor instead)."""
        for frame in frames:
            after = await receive(frame)
            returned.append(after)
            if after is not None:
                spawn(after)
        await trio.testing.wait_all_tasks_blocked()  # every response ran to its end
        ended()

    with trio.fail_after(10):
        await session.serve(read)
    return returned, events


async def test_a_create_takes_the_reading_task_only_when_it_is_handed_over() -> None:
    returned, events = await run_session(True, [create()])
    assert callable(returned[0])
    assert events[-1] == "response.completed"
    returned, events = await run_session(False, [create()])
    assert returned == [None]  # a lane task runs it
    assert events[-1] == "response.completed"


async def test_a_create_on_a_lane_that_runs_waits_its_turn() -> None:
    returned, events = await run_session(True, [create("a"), create("a")])
    assert callable(returned[0]) and returned[1] is None  # (queued while the first ran)
    assert events.count("response.completed") == 2
