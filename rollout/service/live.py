# Live rollouts of the append and multi-agent shapes: one long-running response per rollout, whose
# loop is the one sampling loop given `AppendTools` as its client-tool executor (announce the
# pause with `response.done` in the append shape, not at all in a multi-agent response; wait for
# the outputs, from `response.append` or `response.inject`; return them to the loop). Live
# rollouts belong to the service, not to a connection: a rollout whose client disconnects while
# it waits is parked for a grace period and can be resumed from a new connection or an HTTP
# request. Its state moves only through the table in protocol.lifetime; its events go to
# whichever client holds it (a Relay).
from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import trio

from protocol import errors
from protocol.deltas import DeltaRun
from protocol.errors import ProtocolError
from protocol.events import Event
from protocol.input import normalize_input
from protocol.items import PAUSING_ITEMS, Item, pending_id, pending_name
from protocol.lifetime import WAITING, Lifetime, Move, State, response_not_suspended
from rollout.conversation.ids import new_id
from rollout.conversation.work import Work
from rollout.engine.engine import Engine, Prepared
from rollout.engine.loop import Call, Cancel, Disconnected, EndRollout, Rollout, Sink
from rollout.engine.mailbox import Note
from rollout.service.config import ServerConfig
from rollout.service.waits import Timers

log = logging.getLogger("rollout.service.live")


class Hold(enum.Enum):
    """How long a transport's request holds an append rollout's events."""

    UNTIL_PAUSE = "until_pause"  # HTTP: one response body per stretch between pauses
    UNTIL_END = "until_end"  # WebSocket: the lane is busy for the rollout's whole life


def response_not_found(response_id: str) -> ProtocolError:
    exc = errors.response_not_found(response_id)
    exc.param = "response_id"
    return exc


def too_many_suspended(limit: int) -> ProtocolError:
    message = f"The server holds its limit of {limit} live append rollouts; retry shortly."
    return errors.overloaded(message, "too_many_live_rollouts")


@attrs.define(eq=False)
class Relay:
    """The sink a live rollout's loop sees: it forwards to the client holding the rollout now
    (nobody, between an HTTP pause and the next append, or after a disconnect)."""

    live: Live
    target: Sink | None = None
    holder: object | None = None  # who attached `target` (a connection or a request)

    # (each event goes to the client holding the rollout, if any; a client gone detaches it)

    async def emit(self, event: Event) -> None:
        target = self.target
        if target is not None:
            try:
                await target.emit(event)
            except Disconnected:
                self.live.detach()

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        target = self.target
        if target is not None:
            try:
                await target.emit_run(run)
            except Disconnected:
                self.live.detach()

    async def flush(self) -> None:
        if self.target is not None:
            await self.target.flush()

    def push(self) -> None:
        if self.target is not None:
            self.target.push()

    async def close(self) -> None:
        if self.target is not None:
            await self.target.close()


@attrs.define(eq=False)
class Live:
    """One append rollout while its loop exists."""

    prepared: Prepared
    owner: str | None
    lane: str | None
    config: ServerConfig
    announces: bool = True  # the append shape announces each pause (`response.done`)
    lifetime: Lifetime = attrs.field(init=False)
    relay: Relay = attrs.field(init=False)
    cancel: Cancel = attrs.field(factory=Cancel)
    resumed: bool = False  # the outputs the wait is for are all in (the mailbox wakes it)
    answered: trio.Event = attrs.field(factory=trio.Event)  # set (and made anew) at each accept
    #: A multi-agent response's agents waiting for client calls: each wait's scope, and the
    #: append timeout it had before a disconnect shortened it to the grace period.
    agent_waits: dict[trio.CancelScope, float] = attrs.field(factory=dict)
    boundary: trio.Event = attrs.field(factory=trio.Event)  # set at the next pause or the end
    done: trio.Event = attrs.field(factory=trio.Event)
    timers: Timers | None = None  # the deadlines of its waits for outputs (the append shape's)
    timeout_reason: str = "append_timeout"  # (a multi-agent response's waits')

    def __attrs_post_init__(self) -> None:
        self.lifetime = Lifetime(self.id)
        self.relay = Relay(self)

    @property
    def id(self) -> str:
        return self.prepared.rollout.stream.response.id

    @property
    def state(self) -> State:
        return self.lifetime.state

    @property
    def pending(self) -> dict[str, str]:
        return self.lifetime.pending

    @property
    def sink(self) -> Sink | None:
        return self.relay.target

    def attach(self, sink: Sink, holder: object) -> None:
        """Send events to `sink` from now on; a parked rollout gets its append timeout back."""
        self.lifetime.handle(Move.ATTACH)
        self.relay.target, self.relay.holder = sink, holder
        if self.timers is not None:
            self.timers.attached(self)
        for scope, deadline in self.agent_waits.items():
            scope.deadline = deadline
            self.timeout_reason = "append_timeout"

    def check_free(self, holder: object) -> None:
        """Another client holds the rollout: it is not found from here (nothing about another
        live connection's rollout leaks)."""
        if self.relay.holder is not holder and self.relay.target is not None:
            raise response_not_found(self.id)

    def take_over(self, sink: Sink, holder: object) -> None:
        """Attach unless `holder` has it already (or another client does: not found)."""
        if self.relay.holder is holder:
            return
        self.check_free(holder)
        self.attach(sink, holder)

    def release(self, holder: object) -> None:
        """`holder` lets go at a boundary (an HTTP stream ends); the rollout keeps waiting."""
        if self.relay.holder is holder and self.state is not State.FINISHED:
            self.lifetime.handle(Move.RELEASE)
            self.relay.target = self.relay.holder = None

    def detach(self) -> None:
        """The holder's connection is gone: park a waiting rollout, stop a running one."""
        if self.state is State.FINISHED:
            return
        self.relay.target = self.relay.holder = None
        self.lifetime.handle(Move.DETACH)
        if self.state is State.PARKED:
            self.park()
        else:
            self.cancel.cancel("client_disconnected")

    def park(self) -> None:
        """No client while waiting: finish the rollout after the grace period (in a
        multi-agent response, every agent's wait)."""
        grace = trio.current_time() + self.config.append_grace_s
        if self.timers is not None:
            self.timers.parked(self, grace)
        for scope in self.agent_waits:
            if grace < scope.deadline:
                scope.deadline = grace
                self.timeout_reason = "client_disconnected"


@attrs.define(eq=False)
class AppendTools:
    """The append shape's client-tool executor: pause, wait for the outputs, return them."""

    live: Live
    scans = True

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item]:
        live = self.live
        items = [c.item for c in calls if isinstance(c.item, PAUSING_ITEMS)]
        live.lifetime.pause({pending_id(c): pending_name(c) for c in items})
        if live.announces:
            await r.send(r.stream.pause(items, r.usage))
            r.sink.push()  # it leaves now: the client's next turn waits for it
        r.work.mark("paused")
        live.boundary.set()
        with r.work.stage("client_tool", items=len(items)):
            # The wait's deadline is kept by the live rollouts' timers (no cancel scope at each
            # pause): when it passes, they stop the rollout, with the reason.
            timers = live.timers
            assert timers is not None
            timers.waiting(live)
            try:
                if live.relay.target is None and live.state is State.PARKED:
                    live.park()
                # Acknowledgements are sent from here, in order with the response's events.
                while not live.resumed:
                    await r.mailbox.wait()
                    await r.send_notes()
            finally:
                timers.stopped(live)
        await r.send_notes()
        live.resumed = False
        return live.lifetime.take_outputs()


@attrs.define(eq=False)
class AgentTools:
    """A multi-agent response's client-tool executor: the calling agent (the root or a
    subagent, `r`) waits for the outputs of its own calls, without a pause event, while the
    other agents run on; an inject resumes exactly the agent whose calls it completes."""

    live: Live
    scans = True

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item]:
        live = self.live
        items = [c.item for c in calls if isinstance(c.item, PAUSING_ITEMS)]
        mine = {pending_id(c): pending_name(c) for c in items}
        live.lifetime.wait_also(mine)
        r.work.mark("paused")
        live.boundary.set()
        outputs: list[Item] | None = None
        deadline = trio.current_time() + live.config.append_timeout_s
        scope = trio.CancelScope(deadline=deadline)
        try:
            with r.work.stage("client_tool", items=len(items)), scope:
                live.agent_waits[scope] = deadline
                if live.relay.target is None and live.state is State.PARKED:
                    live.park()
                while (outputs := live.lifetime.take_answers(mine.keys())) is None:
                    await live.answered.wait()
        finally:
            live.agent_waits.pop(scope, None)
            if outputs is None and live.state is not State.FINISHED:
                live.lifetime.take_answers(mine.keys(), drop=True)  # it stopped waiting
        if outputs is None:
            raise EndRollout(live.timeout_reason)
        return outputs


@attrs.define(eq=False)
class LiveRollouts:
    """Every live append rollout of the server, and the nursery their loops run in."""

    engine: Engine
    config: ServerConfig
    nursery: trio.Nursery | None = None
    rollouts: dict[str, Live] = attrs.field(factory=dict)
    # Recently finished rollouts (id -> owner), so a late append hears "not suspended".
    finished: dict[str, str | None] = attrs.field(factory=dict)
    finished_limit: int = 10_000
    changed: trio.Event = attrs.field(factory=trio.Event)  # set whenever one finishes
    finish_hooks: list[Callable[[Live], None]] = attrs.field(factory=list)  # called at each end
    timers: Timers = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.timers = Timers(self.config.append_timeout_s)

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            nursery.start_soon(self.timers.run)
            task_status.started()
            await trio.sleep_forever()

    def start(
        self,
        prepared: Prepared,
        *,
        sink: Sink,
        holder: object,
        owner: str | None,
        lane: str | None,
        billing: trio.Nursery | None,
    ) -> Live:
        """Start the rollout's loop in the live rollouts' nursery (as its plan says: whether
        its pauses are announced)."""
        if len(self.rollouts) >= self.config.max_live_rollouts:
            raise too_many_suspended(self.config.max_live_rollouts)
        live = Live(
            prepared=prepared,
            owner=owner,
            lane=lane,
            config=self.config,
            announces=self.engine.plan_of(prepared).announces,
            timers=self.timers,
        )
        live.attach(sink, holder)
        prepared.rollout.sink = live.relay
        self.rollouts[live.id] = live
        self.engine.stats.live_rollouts += 1
        assert self.nursery is not None, "LiveRollouts.run must be started first"
        self.nursery.start_soon(self._drive, live, billing)
        return live

    async def _drive(self, live: Live, billing: trio.Nursery | None) -> None:
        tools = AppendTools(live) if live.announces else AgentTools(live)
        try:
            await self.engine.run(live.prepared, tools, billing=billing, cancel=live.cancel)
        finally:
            live.lifetime.handle(Move.FINISH)
            self.rollouts.pop(live.id, None)
            self.engine.stats.live_rollouts -= 1
            self.finished[live.id] = live.owner
            if len(self.finished) > self.finished_limit:
                del self.finished[next(iter(self.finished))]
            for hook in self.finish_hooks:
                hook(live)
            live.boundary.set()
            live.done.set()
            self.changed.set()
            self.changed = trio.Event()

    def find(self, response_id: str, owner: str | None) -> Live:
        live = self.rollouts.get(response_id)
        if live is not None and live.owner == owner:
            return live
        if response_id in self.finished and self.finished[response_id] == owner:
            raise response_not_suspended(response_id, State.FINISHED)
        raise response_not_found(response_id)

    def accept(
        self,
        live: Live,
        items: Sequence[Item],
        work: Work,
        *,
        note: Note | None = None,
        messages: bool = True,
    ) -> trio.Event:
        """Check and record an append (or inject) in one step (no await: of two racing appends
        exactly one wins); resume the loop when it completes the pending set. Outputs of open
        async calls go to the loop's mailbox (they join the context at its next boundary), and
        so does `note` (an acknowledgement, sent in order with the response's events). Returns
        the event set at the next pause or the end (already set when the rollout keeps
        waiting)."""
        stored = normalize_input(items, new_id)
        r = live.prepared.rollout
        resumed = live.lifetime.accept(stored, r.ctx.async_calls, messages=messages)
        late = live.lifetime.take_late()
        r.work.mark("received", work.created)
        r.work.merge(work)
        live.prepared.input_items.extend(stored)
        r.mailbox.post(note, late)
        if live.agent_waits:  # (each agent waiting in a multi-agent response looks for its own)
            live.answered.set()
            live.answered = trio.Event()
        if resumed:
            live.boundary = trio.Event()
            live.resumed = True
        return live.boundary

    def check_waiting(self, live: Live) -> None:
        if live.state not in WAITING:
            raise response_not_suspended(live.id, live.state)

    def detach(self, holder: object) -> None:
        """A connection closed: park its waiting rollouts, stop its running ones."""
        for live in list(self.rollouts.values()):
            if live.relay.holder is holder:
                live.detach()

    @property
    def waiting(self) -> int:
        return sum(1 for x in self.rollouts.values() if x.state in WAITING)
