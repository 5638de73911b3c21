# What a multi-agent response's team (rollout.engine.agents) shares besides its agents: the one
# sink all of them send to, numbering the response's events in the order they leave; the slots
# of its `max_concurrent_subagents`, first come first served; and, over HTTP, the teams parked
# when their response stopped at client calls, until the continuation takes its own; and what
# a spawn's `model` and `reasoning_effort` make of a subagent's request.
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import trio

from protocol.deltas import DeltaRun
from protocol.events import Event
from protocol.request import CreateRequest
from rollout.conversation.context import Context, Route
from rollout.engine.loop import Rollout, Sink
from rollout.model import reasoning
from rollout.model.profiles import REASONING_TOKENS, ModelProfile

TEAMS_KEPT = 64  # parked teams the process keeps (over HTTP), the oldest dropped first
FLUSH_S = 5.0  # how long a flush may hold off a cancel (a client that reads nothing)


@attrs.define(eq=False)
class Numbered:
    """The sink every agent of a team sends to: each event is numbered as it leaves, under one
    lock (the order numbered is the order sent), then goes to the response's own sink."""

    inner: Sink
    seq: int = 0
    lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def emit(self, event: Event) -> None:
        await self._take()
        try:
            numbered = attrs.evolve(event, sequence_number=self.seq)
            self.seq += 1
            await self.inner.emit(numbered)
        finally:
            self.lock.release()

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        await self._take()
        try:
            numbered = attrs.evolve(run, sequence_number=self.seq)
            self.seq += len(run)
            await self.inner.emit_run(numbered)
        finally:
            self.lock.release()

    async def _take(self) -> None:
        """The lock, without a checkpoint when it is free (as a sink's emit has none when its
        client keeps up), and shielded when it is not: an event whose item is in the output
        is never dropped by a cancel on its way to the wire (the holder's own emit can be)."""
        try:
            self.lock.acquire_nowait()
        except trio.WouldBlock:
            with trio.CancelScope(shield=True):
                await self.lock.acquire()

    async def flush(self) -> None:
        """Let what is queued leave now, shielded (for at most FLUSH_S): a flush writes what
        every agent queued, and a cancel in the middle of the write (one agent's task ends
        when the root answers) must not lose the others' events."""
        with trio.CancelScope(shield=True, deadline=trio.current_time() + FLUSH_S):
            await self.inner.flush()

    def push(self) -> None:
        self.inner.push()

    async def close(self) -> None:
        await self.inner.close()


@attrs.define(eq=False)
class Slots:
    """At most `limit` agents running at once; the others wait, first come first served."""

    limit: int
    holders: set[str] = attrs.field(factory=set)
    queue: dict[str, trio.Event] = attrs.field(factory=dict)  # waiting agents, in order

    def take_now(self, name: str) -> bool:
        if name in self.holders:
            return True
        if len(self.holders) < self.limit and not self.queue:
            self.holders.add(name)
            return True
        return False

    async def take(self, name: str) -> None:
        if self.take_now(name):
            return
        granted = self.queue.setdefault(name, trio.Event())
        try:
            await granted.wait()
        finally:
            if name not in self.holders:
                self.queue.pop(name, None)

    def give_back(self, name: str) -> None:
        self.queue.pop(name, None)
        if name not in self.holders:
            return
        self.holders.discard(name)
        if self.queue:  # the slot goes to the agent waiting longest
            name, granted = next(iter(self.queue.items()))
            del self.queue[name]
            self.holders.add(name)
            granted.set()


@attrs.frozen(eq=False)
class Kept:
    """A parked team's subagent: what its continuation needs (no stream, sink or connection)."""

    name: str
    status: str
    answer: str
    ctx: Context
    route: Route
    request: CreateRequest | None
    reasoning: reasoning.ReasoningPlan | None
    window: int | None

    @classmethod
    def of(cls, name: str, status: str, answer: str, r: Rollout) -> Kept:
        return cls(name, status, answer, r.ctx, r.route, r.request, r.reasoning, r.window)


@attrs.define(eq=False)
class Parked:
    """Teams whose response completed with subagents stopped at client calls (over HTTP), by
    response id, until a continuation (`previous_response_id`) takes its own; at most
    TEAMS_KEPT, the oldest dropped first. Only this process's: a team is not in the store."""

    teams: dict[str, list[Kept]] = attrs.field(factory=dict)

    def keep(self, response_id: str, team: list[Kept]) -> None:
        self.teams[response_id] = team
        while len(self.teams) > TEAMS_KEPT:
            del self.teams[next(iter(self.teams))]

    def take(self, response_id: str | None) -> list[Kept] | None:
        return self.teams.pop(response_id, None) if response_id else None


def spawn_model_args(args: dict[str, Any]) -> tuple[str | None, str | None]:
    """spawn_agent's `model` and `reasoning_effort` (ValueError: not a model name, or not an
    effort a request may name)."""
    model, effort = args.get("model"), args.get("reasoning_effort")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ValueError("'model' must be a model name (a non-empty string).")
    if effort is not None and (not isinstance(effort, str) or effort not in REASONING_TOKENS):
        allowed = ", ".join(f"'{e}'" for e in REASONING_TOKENS)
        raise ValueError(f"'reasoning_effort' must be one of {allowed}.")
    return model, effort


def spawn_settings(
    req: CreateRequest,
    model: str | None,
    effort: str | None,
    window: int | None,
    models: Callable[[str], ModelProfile] | None,
    cap: int | None,
) -> tuple[CreateRequest, reasoning.ReasoningPlan | None, int | None]:
    """A subagent's request (the root's, `req`, with its own model and effort), how its steps
    reason, and its window: as a create naming that model and effort would have them (`models`
    the engine's profiles, `cap` a shared engine's cap on the window)."""
    given = dict(req.reasoning or {})
    if effort is not None:
        given["effort"] = effort
    own = attrs.evolve(req, model=model or req.model, reasoning=given or None)
    if models is None:
        return own, None, window
    profile = models(own.model)
    window = profile.context_window
    if cap is not None:
        window = min(window, cap)
    return own, reasoning.plan(profile, own.reasoning, own.include), window


__all__ = [
    "FLUSH_S",
    "TEAMS_KEPT",
    "Kept",
    "Numbered",
    "Parked",
    "Slots",
    "spawn_model_args",
    "spawn_settings",
]
