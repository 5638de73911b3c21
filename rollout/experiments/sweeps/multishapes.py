# The three shapes of `rollout compare --multi-agent`, each one run of the multi-agent workload
# (rollout.experiments.workloads.multiagent) against a fresh in-process server over loopback,
# measured from the client (wall time, bytes each way, requests sent, events received) and from
# the server (its work counters, CPU, responses, sampling steps):
# - hosted: one WebSocket response with multi_agent enabled; the server runs the root and its
#   subagents, the client answers each subagent's function call by `response.inject`;
# - client-ws: the client orchestrates K + 1 chained conversations (`previous_response_id`) on
#   one WebSocket connection, a lane (`stream_id`) each, the subagents at once;
# - client-http: the same over HTTP+SSE, a keep-alive connection per conversation.
from __future__ import annotations

import functools
import importlib.util
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import attrs
import orjson
import trio

from protocol.agentitems import ROOT_AGENT
from protocol.events import TERMINAL_TYPES, Event, OutputItemEvent, ResponseEvent
from protocol.items import FunctionCall
from protocol.validate import MULTI_AGENT_BETA
from rollout.client import HttpClient, WsClient, collect, connect_ws
from rollout.client.agent import Turn
from rollout.conversation.work import CPU, DECLARED, Stats, Work
from rollout.engine.engine import Engine
from rollout.experiments.workloads.multiagent import MultiScenario
from rollout.model import script as scripts
from rollout.model.policy import Policy, ScriptedPolicy
from rollout.model.profiles import CostProfile, InferenceProfile
from rollout.server.listen import serve

SHAPES = ("hosted", "client-ws", "client-http")
CLIENT_SHAPES = ("client-ws", "client-http")


class Unavailable(Exception):
    """A shape this checkout cannot run (the reason is the message)."""


class RunFailed(Exception):
    """A run's response did not complete (the message says how it ended)."""


def hosted_policy(scenario: MultiScenario) -> Policy:
    """The model of the hosted shape: the scenario's per-agent script, as `rollout serve
    --script` loads it; Unavailable when this server has no team to run it (no subagents
    inside a response)."""
    if importlib.util.find_spec("rollout.engine.agents") is None:
        raise Unavailable(
            "the hosted shape needs a server that spawns subagents inside a response "
            "(rollout.engine.agents); this checkout has none"
        )
    data = scenario.hosted_script()
    return ScriptedPolicy(
        scripts.steps(data["steps"]), final=data["final"], agents=scripts.agents(data["agents"])
    )


def hosted_problem(scenario: MultiScenario) -> str | None:
    """Why the hosted shape cannot run here, or None."""
    try:
        hosted_policy(scenario)
    except Unavailable as exc:
        return str(exc)
    return None


@attrs.define
class MultiRun:
    """One run of one shape: client-side measures and the server's work."""

    shape: str
    agents: int
    calls: int  # client tool calls per subagent
    repeat: int
    seconds: float  # the client's wall time, first request to the root's answer
    bytes_sent: int  # by the client, every connection (HTTP: headers too; WS: frame payloads)
    bytes_received: int
    requests: int  # API requests the client sent: creates (and injects)
    events: int  # events the client received
    connections: int
    responses: int  # responses the server completed
    model_steps: int  # sampling steps the server ran
    events_sent: int  # events the server sent
    cpu_s: float  # server CPU stages
    declared_s: float  # declared service latencies
    inference_s: float  # the profile's ideal inference, summed over the steps
    counts: dict[str, dict[str, float]]
    text: str  # the root's answer
    tool_calls: int  # client tool calls the client ran

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class _Tally:
    """What the client sent and received, over every connection it opened."""

    requests: int = 0
    events: int = 0
    tool_calls: int = 0
    clients: list[WsClient | HttpClient] = attrs.field(factory=list)

    @property
    def bytes_sent(self) -> int:
        return sum(c.bytes_sent for c in self.clients)

    @property
    def bytes_received(self) -> int:
        return sum(c.bytes_received for c in self.clients)


Send = Callable[[Mapping[str, Any]], Awaitable[AsyncIterator[Event]]]


async def _turn(send: Send, body: Mapping[str, Any], tally: _Tally) -> Turn:
    tally.requests += 1
    turn = await collect(await send(body), time.perf_counter())
    tally.events += turn.events
    if turn.status not in ("completed", "paused"):
        raise RunFailed(f"a turn ended {turn.status} ({turn.reason})")
    return turn


def _output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


async def _run_tool(scenario: MultiScenario, call: FunctionCall, tally: _Tally) -> dict[str, Any]:
    tally.tool_calls += 1
    fn = scenario.tools.get(call.name)
    text = f"error: no tool named {call.name}"
    if fn is not None:
        text = await fn(orjson.loads(call.arguments or "{}"))
    return _output(call.call_id, text)


def _chained(body: Mapping[str, Any], turn: Turn, outputs: list[dict[str, Any]]) -> dict[str, Any]:
    return {**body, "input": outputs, "previous_response_id": turn.response_id}


async def _subagent(
    scenario: MultiScenario, name: str, send: Send, store: bool, tally: _Tally
) -> str:
    """One subagent's conversation: its calls answered by the client's tools, chained, to its
    answer."""
    agent = next(a for a in scenario.agents if a.name == name)
    body = {**scenario.agent_request(agent), "store": store}
    turn = await _turn(send, body, tally)
    while turn.calls:
        outputs = [await _run_tool(scenario, c, tally) for c in turn.calls]
        turn = await _turn(send, _chained(body, turn, outputs), tally)
    return turn.text


async def _orchestrate(
    scenario: MultiScenario, lane: Callable[[str], Awaitable[Send]], store: bool, tally: _Tally
) -> str:
    """The root's conversation, the client orchestrating: its spawn calls start the subagents
    (each on `lane(name)`, all at once), its wait call is answered when every one has answered,
    with their answers; then the root answers."""
    send = await lane("root")
    body = {**scenario.root_request(), "store": store}
    spawned = await _turn(send, body, tally)
    answers: dict[str, str] = {}

    async def subagent(name: str) -> None:
        answers[name] = await _subagent(scenario, name, await lane(name), store, tally)

    async with trio.open_nursery() as nursery:
        started = []
        for call in spawned.calls:
            name = orjson.loads(call.arguments)["agent"]
            nursery.start_soon(subagent, name)
            started.append(_output(call.call_id, f"{name} started"))
        waiting = await _turn(send, _chained(body, spawned, started), tally)
    (wait,) = waiting.calls
    results = [_output(wait.call_id, scenario.results_text(answers))]
    final = await _turn(send, _chained(body, waiting, results), tally)
    return final.text


async def client_ws(base_url: str, scenario: MultiScenario, tally: _Tally) -> str:
    """client-ws: every conversation on one WebSocket connection, a lane each."""
    url = base_url.replace("http", "ws", 1).rstrip("/") + "/responses"
    async with connect_ws(url) as ws:
        tally.clients.append(ws)

        async def lane(name: str) -> Send:
            return functools.partial(ws.create, lane=name)

        return await _orchestrate(scenario, lane, False, tally)


async def client_http(base_url: str, scenario: MultiScenario, tally: _Tally) -> str:
    """client-http: a keep-alive HTTP connection per conversation, chained through the store."""
    async with AsyncExitStack() as stack:

        async def lane(name: str) -> Send:
            client = await stack.enter_async_context(HttpClient(base_url))
            tally.clients.append(client)
            return client.create

        return await _orchestrate(scenario, lane, True, tally)


async def hosted(base_url: str, scenario: MultiScenario, tally: _Tally) -> str:
    """hosted: one multi-agent response; each function call (a subagent's) run by the client's
    tool and its output injected by call_id, until the response ends."""
    url = base_url.replace("http", "ws", 1).rstrip("/") + "/responses"
    async with connect_ws(url, betas=[MULTI_AGENT_BETA]) as ws:
        tally.clients.append(ws)
        lock = trio.Lock()  # one frame at a time on the connection
        text: list[str] = []

        async def answer(response_id: str, call: FunctionCall) -> None:
            output = await _run_tool(scenario, call, tally)
            async with lock:
                tally.requests += 1
                await ws.inject(response_id, [output])

        async with trio.open_nursery() as nursery:
            async with lock:
                tally.requests += 1
                events = await ws.create({**scenario.hosted_request(), "store": False})
            response_id = ""
            async for event in events:
                tally.events += 1
                if isinstance(event, ResponseEvent):
                    response_id = event.response.id
                    if event.type in TERMINAL_TYPES and event.response.status != "completed":
                        raise RunFailed(f"the response ended {event.response.status}")
                elif isinstance(event, OutputItemEvent) and event.type.endswith(".done"):
                    item = event.item
                    if isinstance(item, FunctionCall):
                        nursery.start_soon(answer, response_id, item)
                    elif getattr(item, "type", None) == "message" and _agent(item) in ROOT:
                        text.append(_message_text(item))
        return text[-1] if text else ""


#: The agent names of the root's own items (the root may be named, or carry no agent).
ROOT = (None, ROOT_AGENT)


def _agent(item: Any) -> str | None:
    agent = getattr(item, "agent", None)
    return getattr(agent, "agent_name", None) if agent is not None else None


def _message_text(item: Any) -> str:
    parts = getattr(item, "content", None) or ()
    return "".join(getattr(p, "text", "") or "" for p in parts)


RUNNERS = {"hosted": hosted, "client-ws": client_ws, "client-http": client_http}


async def run_shape(
    shape: str,
    scenario: MultiScenario,
    profile: InferenceProfile,
    costs: CostProfile,
    repeat: int = 0,
) -> MultiRun:
    """One run of `shape` against a fresh server (fresh caches and store)."""
    w = scenario.workload
    policy = hosted_policy(scenario) if shape == "hosted" else scenario.client_policy()
    stats = Stats(totals=Work(keep_spans=True))  # (the sampling steps are kept with spans)
    engine = Engine(policy=policy, inference=profile, costs=costs, stats=stats)
    tally = _Tally()
    expected = 1 if shape == "hosted" else 3 + w.agents * (w.calls + 1)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(serve, engine, port=0))
        start = time.perf_counter()
        text = await RUNNERS[shape](f"http://127.0.0.1:{port}/v1", scenario, tally)
        seconds = time.perf_counter() - start
        with trio.move_on_after(10):  # background billing completes (it is never lost)
            while stats.responses < expected:
                await trio.sleep(0.002)
        nursery.cancel_scope.cancel()
    totals = stats.totals
    return MultiRun(
        shape=shape,
        agents=w.agents,
        calls=w.calls,
        repeat=repeat,
        seconds=seconds,
        bytes_sent=tally.bytes_sent,
        bytes_received=tally.bytes_received,
        requests=tally.requests,
        events=tally.events,
        connections=len(tally.clients),
        responses=stats.responses,
        model_steps=len(totals.steps),
        events_sent=stats.events_sent,
        cpu_s=sum(totals.counts[s].seconds for s in CPU),
        declared_s=sum(totals.counts[s].seconds for s in DECLARED),
        inference_s=totals.ideal_inference_s,
        counts={k: attrs.asdict(v) for k, v in totals.counts.items()},
        text=text,
        tool_calls=tally.tool_calls,
    )
