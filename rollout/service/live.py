# The append shape: one long-running response per rollout. Its loop is the same sampling loop,
# given AppendTools as the client-tool executor: after a step's calls are streamed it emits
# `response.done` and suspends until `response.append` has supplied every output. Live rollouts
# belong to the server (AppendHost), not to a connection, so a rollout suspended when its client
# disconnects is parked for a grace period and can be resumed from a new connection or an HTTP
# request. Events go to whichever sink is attached at the moment.
from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from protocol import errors
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.input import normalize_input
from protocol.items import FunctionCall, FunctionCallOutput, Item, Message
from rollout.engine.engine import Engine, Prepared
from rollout.engine.ids import new_id
from rollout.engine.loop import Cancel, Disconnected, Emit, EndRollout
from rollout.engine.work import Work
from rollout.service.capture import Captured
from rollout.service.config import ServerConfig

log = logging.getLogger("rollout.service.live")


def response_not_suspended(response_id: str, state: str) -> ProtocolError:
    return ProtocolError(
        message=f"Response '{response_id}' is {state}, not waiting for tool outputs.",
        code="response_not_suspended",
        param="response_id",
        status=409,
    )


def response_not_found(response_id: str) -> ProtocolError:
    exc = errors.response_not_found(response_id)
    exc.param = "response_id"
    return exc


@attrs.define(eq=False)
class Live:
    """One append rollout while its loop exists: state, pending calls, where events go."""

    prepared: Prepared
    owner: str | None
    lane: str | None
    cancel: Cancel = attrs.field(factory=Cancel)
    state: str = "running"  # running | suspended | finished
    pending: dict[str, FunctionCall] = attrs.field(factory=dict)
    outputs: list[Item] = attrs.field(factory=list)
    resumed: trio.Event = attrs.field(factory=trio.Event)
    boundary: trio.Event = attrs.field(factory=trio.Event)  # set at the next pause or the end
    done: trio.Event = attrs.field(factory=trio.Event)
    sink: Emit | None = None
    sink_owner: object | None = None
    wait_scope: trio.CancelScope | None = None
    append_deadline: float = float("inf")
    timeout_reason: str = "append_timeout"

    @property
    def id(self) -> str:
        return self.prepared.rollout.stream.response.id

    async def emit(self, event: Event) -> None:
        sink = self.sink
        if sink is None:
            return
        try:
            await sink(event)
        except Disconnected:
            self.sink = None
            self.sink_owner = None
            if self.state == "running":
                self.cancel.cancel("client_disconnected")

    def attach(self, sink: Emit, owner: object) -> None:
        """Send events to `sink` from now on; a parked rollout gets its append timeout back."""
        self.sink = sink
        self.sink_owner = owner
        if self.wait_scope is not None:
            self.wait_scope.deadline = self.append_deadline
            self.timeout_reason = "append_timeout"

    def attach_parked(self, sink: Emit, owner: object, response_id: str) -> None:
        """Take over a rollout whose client is gone; one attached elsewhere is not ours."""
        if self.sink_owner is owner:
            return
        if self.sink is not None:
            raise response_not_found(response_id)
        self.attach(sink, owner)


@attrs.define(eq=False)
class AppendTools:
    """The append shape's client-tool executor: pause, then wait for the outputs."""

    live: Live
    config: ServerConfig

    async def call(self, calls: Sequence[FunctionCall], work: Work) -> Sequence[Item]:
        live = self.live
        r = live.prepared.rollout
        live.pending = {c.call_id: c for c in calls}
        live.outputs = []
        await live.emit(r.stream.pause(calls, r.usage))
        work.mark("paused")
        live.state = "suspended"
        live.boundary.set()
        with work.stage("client_tool", items=len(calls)):
            live.append_deadline = trio.current_time() + self.config.append_timeout_s
            with trio.CancelScope(deadline=live.append_deadline) as scope:
                live.wait_scope = scope
                live.timeout_reason = "append_timeout"
                if live.sink is None:
                    park(live, self.config)
                await live.resumed.wait()
            live.wait_scope = None
        if scope.cancelled_caught:
            live.state = "running"
            raise EndRollout(live.timeout_reason)
        live.state = "running"
        live.resumed = trio.Event()
        return []  # the outputs joined the context as they arrived (AppendHost.apply)


def park(live: Live, config: ServerConfig) -> None:
    """No client attached while suspended: finish the rollout after the grace period."""
    scope = live.wait_scope
    if scope is None:
        return
    grace = trio.current_time() + config.append_grace_s
    if grace < scope.deadline:
        scope.deadline = grace
        live.timeout_reason = "client_disconnected"


@attrs.define(eq=False)
class AppendHost:
    """Every live append rollout of the server, and the nursery their loops run in."""

    engine: Engine
    config: ServerConfig
    nursery: trio.Nursery | None = None
    live: dict[str, Live] = attrs.field(factory=dict)
    sessions: set[Any] = attrs.field(factory=set)  # open WebSocket sessions (for shutdown)
    captured: list[Captured] | None = None  # every request and frame, when a rig asks for it
    record_dir: Path | None = None  # write each connection's traffic here (rollout.service.record)
    connections: int = 0  # connections accepted so far (numbers them for capture)
    # Recently finished rollouts (id -> owner), so a late append hears "not suspended".
    finished: dict[str, str | None] = attrs.field(factory=dict)
    finished_limit: int = 10_000

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def start(
        self,
        prepared: Prepared,
        *,
        sink: Emit,
        sink_owner: object,
        owner: str | None,
        lane: str | None,
        billing: trio.Nursery | None,
    ) -> Live:
        live = Live(prepared=prepared, owner=owner, lane=lane)
        live.attach(sink, sink_owner)
        prepared.rollout.emit = live.emit
        self.live[live.id] = live
        self.engine.stats.live_rollouts += 1
        assert self.nursery is not None, "AppendHost.run must be started first"
        self.nursery.start_soon(self._drive, live, billing)
        return live

    async def _drive(self, live: Live, billing: trio.Nursery | None) -> None:
        try:
            await self.engine.run(
                live.prepared, AppendTools(live, self.config), billing=billing, cancel=live.cancel
            )
        finally:
            live.state = "finished"
            live.pending = {}
            self.live.pop(live.id, None)
            self.engine.stats.live_rollouts -= 1
            self.finished[live.id] = live.owner
            if len(self.finished) > self.finished_limit:
                del self.finished[next(iter(self.finished))]
            live.boundary.set()
            live.done.set()

    def find(self, response_id: str, owner: str | None) -> Live:
        live = self.live.get(response_id)
        if live is not None and live.owner == owner:
            return live
        if response_id in self.finished and self.finished[response_id] == owner:
            raise response_not_suspended(response_id, "finished")
        raise response_not_found(response_id)

    async def append(self, live: Live, items: Sequence[Item], work: Work) -> trio.Event:
        """Validate the whole append, then apply it; see `check` and `apply`."""
        self.check(live, items)
        return await self.apply(live, items, work)

    def check(self, live: Live, items: Sequence[Item]) -> None:
        """Refuse the whole append unless every item is acceptable (nothing is applied)."""
        if live.state != "suspended":
            raise response_not_suspended(live.id, live.state)
        if not items:
            raise ProtocolError(
                message="'input' must not be empty.", code="empty_input", param="input"
            )
        seen: set[str] = set()
        answered = {o.call_id for o in live.outputs if isinstance(o, FunctionCallOutput)}
        for i, item in enumerate(items):
            if isinstance(item, FunctionCallOutput):
                if item.call_id in answered or item.call_id in seen:
                    raise ProtocolError(
                        message=f"An output for call_id '{item.call_id}' was already appended.",
                        code="duplicate_call_output",
                        param=f"input[{i}].call_id",
                    )
                if item.call_id not in live.pending:
                    raise ProtocolError(
                        message=f"No pending tool call with call_id '{item.call_id}'.",
                        code="unknown_call_id",
                        param=f"input[{i}].call_id",
                    )
                seen.add(item.call_id)
            elif not isinstance(item, Message):
                raise ProtocolError(
                    message="Only function_call_output items and messages can be appended.",
                    code="invalid_value",
                    param=f"input[{i}].type",
                )

    async def apply(self, live: Live, items: Sequence[Item], work: Work) -> trio.Event:
        """Scan and tokenize each item into the context as it arrives; resume when every pending
        call has its output. Returns the event that is set at the next pause or the end."""
        stored = normalize_input(items, new_id)
        r = live.prepared.rollout
        r.work.mark("received", work.created)
        before = r.ctx.scan.tokens_scanned
        for item in stored:  # each item is processed as it arrives
            r.ctx.extend([item], work)
            live.outputs.append(item)
        live.prepared.input_items.extend(stored)
        await self.engine.scan_latency(r.ctx.scan.tokens_scanned - before, work)
        r.work.merge(work)
        answered = {o.call_id for o in live.outputs if isinstance(o, FunctionCallOutput)}
        if live.state == "suspended" and all(cid in answered for cid in live.pending):
            live.boundary = trio.Event()
            live.resumed.set()
        return live.boundary

    def detach(self, sink_owner: object) -> None:
        """A connection closed: park its suspended rollouts, stop its running ones."""
        for live in list(self.live.values()):
            if live.sink_owner is not sink_owner:
                continue
            live.sink = None
            live.sink_owner = None
            if live.state == "suspended":
                park(live, self.config)
            else:
                live.cancel.cancel("client_disconnected")
