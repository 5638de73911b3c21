# A hypothesis state machine over one live server and a synchronous WebSocket client: random
# sequences of multi-agent creates (each with its own plan: how many subagents the root spawns,
# one step at a time, how many client calls each makes, messages the root sends them), injects
# of open calls in any order across agents, injects of outputs already given or for no call,
# and cancels. A model of each response checks: sequence numbers contiguous from 0 over what
# was received (acknowledgements included), output indexes unique, each function call made once
# and answered at most once, every inject answered once (created or failed), exactly one
# terminal event; after teardown no live rollout is left in the server.
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import attrs
import orjson
import pytest
from _pause_helpers import BETA
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from websockets.sync.client import ClientConnection, connect

from protocol.items import Message, text_of
from rollout.conversation.calls import AgentCallSpec, FunctionCallSpec
from rollout.conversation.context import Context
from rollout.model.steps import CallStep, Step, TextStep
from rollout.testing.thread import ServerThread
from support.servers import threaded
from support.waits import TIMEOUT, holds_within

TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
TEAM = st.lists(st.integers(0, 2), min_size=1, max_size=3)  # client calls per subagent
MESSAGES = st.lists(st.integers(0, 2), max_size=2)  # the root messages agent k


def _action(action: str, **arguments: Any) -> AgentCallSpec:
    return AgentCallSpec(action=action, arguments=orjson.dumps(arguments).decode())


class TeamPlan:
    """The plan is in the prompt: "team 2 0 1 / 1" spawns three agents (one step each) that
    make 2, 0 and 1 client calls, then messages agent 1, waits for all and answers."""

    def next_step(self, ctx: Context) -> Step:
        first = next(i for i in ctx.items if isinstance(i, Message) and i.role == "user")
        words = text_of(first.content).split()
        if ctx.agent is not None:  # a subagent: "task N"
            calls = int(words[1])
            if ctx.model_turns < calls:
                spec = FunctionCallSpec(name="read_file", arguments=f'{{"n":{ctx.model_turns}}}')
                return CallStep(calls=(spec,))
            return TextStep(text=f"{ctx.agent} did {calls}")
        team, _, notes = " ".join(words[1:]).partition("/")
        counts = [int(n) for n in team.split()]
        names = [f"a{k}" for k in range(len(counts))]
        plan: list[Step] = [
            CallStep(calls=(_action("spawn_agent", agent_name=n, message=f"task {c}"),))
            for n, c in zip(names, counts, strict=True)
        ]
        plan += [
            CallStep(
                calls=(_action("send_message", target=names[int(k) % len(names)], message="hi"),)
            )
            for k in notes.split()
        ]
        plan += [CallStep(calls=(_action("wait_agent", targets=names),))]
        k = ctx.model_turns
        return plan[k] if k < len(plan) else TextStep(text="all done")


_server: ServerThread | None = None
_servers = contextlib.ExitStack()


def shared_server() -> ServerThread:
    global _server
    if _server is None:
        _server = _servers.enter_context(threaded(TeamPlan(), append_timeout_s=60))  # type: ignore[arg-type]
    return _server


@pytest.fixture(scope="module", autouse=True)
def _stop_shared_server() -> Iterator[None]:
    yield
    global _server
    _servers.close()
    _server = None


@attrs.define
class Response:
    expected_calls: int
    id: str = ""
    seqs: list[int] = attrs.field(factory=list)
    added: list[int] = attrs.field(factory=list)
    calls: dict[str, str] = attrs.field(factory=dict)  # call_id -> agent
    answered: list[str] = attrs.field(factory=list)
    injects: int = 0  # sent (valid and not)
    acks: list[dict[str, Any]] = attrs.field(factory=list)  # created or failed
    terminal: dict[str, Any] | None = None
    cancels: int = 0
    kinds: list[str] = attrs.field(factory=list)
    late_cancels: int = 0

    @property
    def open(self) -> list[str]:
        return [c for c in self.calls if c not in self.answered]


class MultiAgentMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.server = shared_server()
        self.ws: ClientConnection = connect(
            self.server.ws_url, additional_headers=BETA, max_size=None, open_timeout=TIMEOUT
        )
        self.responses: list[Response] = []
        self.late_cancels = 0  # cancels answered "finished": sent as the response ended

    @property
    def active(self) -> Response | None:
        r = self.responses[-1] if self.responses else None
        return r if r is not None and r.terminal is None else None

    def _send(self, frame: dict[str, Any]) -> None:
        self.ws.send(orjson.dumps(frame).decode())

    def _dispatch(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        r = self.responses[-1]
        if kind == "error":  # only a cancel that crossed its response's end (maybe not r's)
            assert frame["error"]["code"] == "response_not_suspended", frame
            self.late_cancels += 1
            assert self.late_cancels <= sum(x.cancels for x in self.responses), frame
            return
        if kind.startswith("response.inject."):
            r = next(x for x in self.responses if x.id == frame["response_id"])
            if frame.get("error", {}).get("code") != "response_already_completed":
                r.seqs.append(frame["sequence_number"])  # (in the response's own sequence)
                r.kinds.append(kind)
            r.acks.append(frame)
            return
        assert r.terminal is None, f"{kind} after the terminal event"
        r.seqs.append(frame["sequence_number"])
        r.kinds.append(kind)
        if kind == "response.created":
            r.id = frame["response"]["id"]
        elif kind == "response.output_item.added":
            r.added.append(frame["output_index"])
        elif kind == "response.output_item.done" and frame["item"]["type"] == "function_call":
            item = frame["item"]
            assert item["call_id"] not in r.calls, "a call made twice"
            r.calls[item["call_id"]] = item["agent"]["agent_name"]
        elif kind in TERMINAL:
            r.terminal = frame

    def _read_until(self, done: Any) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not done():
            left = deadline - time.monotonic()
            assert left > 0, "timed out waiting for the server"
            self._dispatch(orjson.loads(self.ws.recv(timeout=left)))

    def _inject(self, r: Response, call_id: str) -> None:
        item = {"type": "function_call_output", "call_id": call_id, "output": "ok"}
        self._send({"type": "response.inject", "response_id": r.id, "input": [item]})
        r.injects += 1

    # -- rules ----------------------------------------------------------------------------------

    @precondition(lambda self: self.active is None)
    @rule(team=TEAM, messages=MESSAGES)
    def create(self, team: list[int], messages: list[int]) -> None:
        r = Response(expected_calls=sum(team))
        self.responses.append(r)
        words = " ".join(map(str, team)) + " / " + " ".join(map(str, messages))
        self._send(
            {
                "type": "response.create",
                "model": "sim",
                "store": False,
                "input": f"team {words}",
                "tools": [{"type": "function", "name": "read_file"}],
                "multi_agent": {"enabled": True},
            }
        )
        self._read_until(lambda: bool(r.id))

    @precondition(lambda self: self.active is not None)
    @rule(data=st.data())
    def inject(self, data: st.DataObject) -> None:
        """An output for one open call, of whichever agent (the server's order or not)."""
        r = self.active
        assert r is not None
        self._read_until(lambda: r.open or r.terminal is not None)
        if r.terminal is not None:
            return
        call_id = data.draw(st.sampled_from(r.open), label="call")
        self._inject(r, call_id)
        r.answered.append(call_id)

    @precondition(lambda self: self.active is not None)
    @rule(again=st.booleans())
    def inject_bad(self, again: bool) -> None:
        """An output already given (when there is one), or for no call: refused."""
        r = self.active
        assert r is not None
        self._inject(r, r.answered[-1] if again and r.answered else "call_nope")

    @precondition(lambda self: self.active is not None)
    @rule()
    def cancel(self) -> None:
        r = self.active
        assert r is not None
        self._send({"type": "response.cancel", "response_id": r.id})
        r.cancels += 1
        self._read_until(lambda: r.terminal is not None)

    @precondition(lambda self: self.active is not None)
    @rule()
    def finish(self) -> None:
        r = self.active
        assert r is not None
        while r.terminal is None:
            self._read_until(lambda: r.open or r.terminal is not None)
            for call_id in r.open:
                self._inject(r, call_id)
                r.answered.append(call_id)
        status = r.terminal["response"]["status"]  # type: ignore[index]
        assert status == "completed"
        assert len(r.calls) == r.expected_calls

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def one_sequence(self) -> None:
        for r in self.responses:
            assert r.seqs == list(range(len(r.seqs))), (r.seqs, r.kinds)
            assert len(set(r.added)) == len(r.added)
            assert len(set(r.answered)) == len(r.answered) and set(r.answered) <= set(r.calls)

    def teardown(self) -> None:
        for r in self.responses:
            if r.terminal is None and r.id:
                self._send({"type": "response.cancel", "response_id": r.id})
                r.cancels += 1
                self._read_until(lambda r=r: r.terminal is not None)
        for r in self.responses:  # every inject is answered once
            self._read_until(lambda r=r: len(r.acks) >= r.injects)
            assert len(r.acks) == r.injects
            for ack in r.acks:
                if ack["type"] == "response.inject.failed":
                    assert ack["error"]["code"] in ("invalid_input", "response_already_completed")
        self.ws.close()
        live = self.server.service.live
        holds_within(lambda: not live.rollouts, TIMEOUT)
        left = {
            rid: (
                x.lifetime,
                x.prepared.rollout.stream.terminal is not None,
                [(a.name, a.status) for a in (x.prepared.rollout.team or [])],
            )
            for rid, x in live.rollouts.items()
        }
        assert left == {}, [(r.id, r.terminal is not None, r.seqs[-3:]) for r in self.responses]


TestMultiAgentMachine = MultiAgentMachine.TestCase
TestMultiAgentMachine.settings = settings(
    max_examples=15, stateful_step_count=10, deadline=None, database=None
)
