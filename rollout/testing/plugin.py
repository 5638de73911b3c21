# The pytest plugin (registered through the `pytest11` entry point): a fresh Responses server per
# test as the `rollout_server` fixture. In a pytest-trio test it runs in the test's own trio loop
# (so trio's mock clocks drive it); anywhere else (sync or asyncio tests) it runs in a background
# thread with its own trio loop. Tests script the model, inspect what was sent, inject faults.
from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import pytest
import trio

from rollout.conversation.context import Context
from rollout.engine.engine import Engine
from rollout.engine.faults import MESSAGES, FaultPlan, Faults
from rollout.model.policy import ScriptedPolicy, Step
from rollout.model.profiles import INFERENCE_PROFILES, InferenceProfile
from rollout.model.script import agents as parse_agents
from rollout.model.script import steps as parse_steps
from rollout.server.listen import serve
from rollout.service.capture import Captured
from rollout.service.config import ServerConfig
from rollout.service.service import Service
from rollout.testing.thread import Endpoints, ServerThread


class RolloutServer(Endpoints):
    """A running server for one test: where it is, its model, what it received, its faults."""

    def __init__(self, service: Service, host: str, port: int) -> None:
        self.service = service
        self.engine = service.engine
        self.host = host
        self.port = port

    @property
    def requests(self) -> list[Captured]:
        """Every HTTP request and WebSocket frame received, parsed, in order."""
        assert self.service.captured is not None
        return self.service.captured

    def script(
        self,
        steps: Sequence[Step | Mapping[str, Any]],
        final: str = "Done.",
        agents: Mapping[str, Sequence[Step | Mapping[str, Any]]] | None = None,
    ) -> None:
        """The model's steps from now on: Step objects (`rollout.call`, `rollout.text`, ...) or
        their data form (`{"call": "exec", "arguments": {...}}`, `{"text": "..."}`); `agents`,
        each subagent's steps in a multi-agent response (`{"reader_1": [...]}`)."""
        own = parse_agents(dict(agents)) if agents else {}
        self.engine.policy = ScriptedPolicy(parse_steps(steps), final=final, agents=own)

    def policy(self, fn: Callable[[Context], Step]) -> None:
        """A model that decides each step from the context (`ctx.items`, `ctx.last_user_text`)."""
        self.engine.policy = ScriptedPolicy(fn)

    def profile(self, profile: str | InferenceProfile) -> None:
        """How fast the model is (`instant` by default; e.g. "1000tps")."""
        self.engine.inference = INFERENCE_PROFILES[profile] if isinstance(profile, str) else profile

    def lenient(self, lenient: bool = True) -> None:
        """Accept what the real API refuses from now on (`rollout serve --lenient`): unknown
        parameters and tool types, and the strict-only checks skipped."""
        self.service.config = attrs.evolve(self.service.config, lenient=lenient)

    def fault(
        self,
        *,
        error: str | None = None,
        disconnect_after: int | None = None,
        latency_s: float = 0.0,
        next_only: bool = True,
    ) -> None:
        """Inject a fault into the next response (`next_only`), or into every response from now
        on: an error code (see `rollout.engine.faults.MESSAGES`), a disconnect after N events, added
        latency."""
        if error is not None and error not in MESSAGES:
            raise ValueError(f"unknown fault code {error!r} (known: {', '.join(MESSAGES)})")
        plan = FaultPlan(error=error, disconnect_after=disconnect_after, latency_s=latency_s)
        if next_only:
            if self.engine.faults is None:
                self.engine.faults = Faults()
            self.engine.faults.queued.append(plan)
        else:
            self.engine.faults = Faults(
                errors={error: 1.0} if error else {},
                disconnect_after=disconnect_after,
                latency_s=latency_s,
            )


def _service() -> Service:
    service = Service(Engine(policy=ScriptedPolicy([])), ServerConfig())
    service.taps.captured = []
    return service


@pytest.fixture
def rollout_server(request: pytest.FixtureRequest) -> Iterator[RolloutServer]:
    """A fresh Responses server for this test; see RolloutServer."""
    if request.node.get_closest_marker("trio") is not None:
        # pytest-trio resolves this in the test's trio loop.
        yield request.getfixturevalue("_rollout_server_in_trio")
        return
    service = _service()
    with ServerThread(service=service) as thread:
        yield RolloutServer(service, thread.host, thread.port)


@pytest.fixture
async def _rollout_server_in_trio(nursery: trio.Nursery) -> AsyncIterator[RolloutServer]:
    service = _service()
    port = await nursery.start(functools.partial(serve, service=service))
    yield RolloutServer(service, "127.0.0.1", port)
