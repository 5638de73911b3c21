# A hypothesis state machine over ONE live server (a ServerThread started once for the machine)
# and synchronous WebSocket clients (`websockets.sync.client`): random sequences of append-shape
# creates (each with its own plan of 0-3 parallel calls per model step), valid appends (whole or
# partial, sometimes with a user message), invalid appends (unknown call id, duplicate output,
# unknown response id), injects (`response.inject`, the official name: acknowledged in the
# response's own sequence, failures returned as `response.inject.failed`), steers (an append
# rollout does not steer: `response.steer.failed`), cancels, disconnects and reconnects. A model
# of every rollout checks: exactly one terminal event per response; sequence numbers contiguous
# from 0 over what was received (acknowledgements included; disconnects happen only while a
# rollout is suspended, when no event is sent); no event while outputs are missing (but
# acknowledgements); no pending call after the end; after teardown (everything
# closed, the grace period waited out) no live rollout in the server and every rollout recorded.
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from websockets.sync.client import ClientConnection, connect

from protocol.items import Message, text_of
from rollout.conversation.context import Context
from rollout.model.policy import ScriptedPolicy, Step, text
from rollout.testing.thread import ServerThread
from support.events import PAUSE_OR_END, TERMINAL
from support.frames import append_frame, cancel_frame, create_frame
from support.servers import threaded
from support.tools import output, parallel
from support.waits import TIMEOUT, holds_within, wait_until

GRACE = 0.3
MAX_CONNECTIONS = 3
PLAN = st.lists(st.integers(0, 3), max_size=4)  # calls per model step; 0 is the answer
APPEND_KINDS = st.sampled_from(
    ["valid", "valid", "valid", "unknown_call_id", "duplicate_call_output", "response_not_found"]
)
PAUSING = st.lists(st.integers(1, 3), min_size=1, max_size=3)  # at least one pause
ANSWERS = frozenset({"response.inject.created", "response.inject.failed", "response.steer.failed"})


def inject_frame(response_id: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "response.inject", "response_id": response_id, "input": items}


def steer_frame(response_id: str) -> dict[str, Any]:
    return {"type": "response.steer", "previous_response_id": response_id, "input": "carry on"}


def plan_policy(ctx: Context) -> Step:
    """The rollout's plan is in its first user message: "plan 2 0 3" means a step with two
    parallel calls, then the answer (a step of 0 calls is the answer)."""
    first = next(i for i in ctx.items if isinstance(i, Message) and i.role == "user")
    plan = [int(n) for n in text_of(first.content).split()[1:]]
    k = ctx.model_turns
    if k < len(plan) and plan[k] > 0:
        return parallel(*[f"step {k} call {j}" for j in range(plan[k])])
    return text("done")


_servers = contextlib.ExitStack()
_server: ServerThread | None = None


def shared_server() -> ServerThread:
    """The machine's one server, started on first use and stopped after the module."""
    global _server
    if _server is None:
        policy = ScriptedPolicy(plan_policy)
        limits = {"append_grace_s": GRACE, "append_timeout_s": 60}
        _server = _servers.enter_context(threaded(policy, **limits))
    return _server


@pytest.fixture(scope="module", autouse=True)
def _stop_shared_server() -> Iterator[None]:
    yield
    global _server
    _servers.close()
    _server = None


@attrs.define(eq=False)
class Conn:
    ws: ClientConnection
    open: bool = True
    errors: list[dict[str, Any]] = attrs.field(factory=list)  # errors with no stream_id
    failures: list[dict[str, Any]] = attrs.field(factory=list)  # inject/steer failed, no lane


@attrs.define(eq=False)
class Model:
    """What the client knows about one rollout."""

    lane: str
    expected_pauses: int
    conn: Conn
    origin: Conn  # the connection that created it (where its id is known for steering)
    id: str | None = None
    state: str = "running"  # running | suspended | finished
    parked: bool = False  # suspended while its connection is closed
    parked_at: float = 0.0
    pending: list[str] = attrs.field(factory=list)
    answered: list[str] = attrs.field(factory=list)  # outputs sent during the current pause
    outputs: list[str] = attrs.field(factory=list)  # every call id answered, in order
    seqs: list[int] = attrs.field(factory=list)
    terminals: list[dict[str, Any]] = attrs.field(factory=list)
    pauses: int = 0
    errors: list[dict[str, Any]] = attrs.field(factory=list)
    unobserved_end: bool = False  # finished while nobody was connected (grace expiry)
    acks: list[dict[str, Any]] = attrs.field(factory=list)  # inject and steer answers

    @property
    def missing(self) -> list[str]:
        return [c for c in self.pending if c not in self.answered]


class AppendMachine(RuleBasedStateMachine):
    created_total = 0  # over every example: the shared server's stats are cumulative

    def __init__(self) -> None:
        super().__init__()
        self.server = shared_server()
        self.host = self.server.service.live
        self.conns: list[Conn] = []
        self.rollouts: list[Model] = []
        self.by_lane: dict[str, Model] = {}
        self.lanes = 0
        self._open()

    # -- plumbing -------------------------------------------------------------------------------

    def _open(self) -> Conn:
        ws = connect(self.server.ws_url, max_size=None, open_timeout=TIMEOUT, close_timeout=2)
        conn = Conn(ws)
        self.conns.append(conn)
        return conn

    def _send(self, conn: Conn, frame: dict[str, Any]) -> None:
        conn.ws.send(orjson.dumps(frame).decode())

    def _dispatch(self, conn: Conn, frame: dict[str, Any]) -> None:
        lane = frame.get("stream_id")
        if lane is None:
            if frame["type"] in ANSWERS:
                conn.failures.append(frame)
                return
            assert frame["type"] == "error", frame
            conn.errors.append(frame)
            return
        r = self.by_lane[lane]
        if frame["type"] in ANSWERS:  # in the response's sequence, whatever its state
            r.seqs.append(frame["sequence_number"])
            r.acks.append(frame)
            return
        assert r.conn is conn, "an event arrived on a connection its rollout is not attached to"
        if frame["type"] == "error":
            r.errors.append(frame)
            return
        assert r.state == "running", f"{frame['type']} while {r.state} (missing {r.missing})"
        assert not r.terminals, f"an event after the terminal event: {frame['type']}"
        r.seqs.append(frame["sequence_number"])
        if frame["type"] == "response.created":
            r.id = frame["response"]["id"]
        elif frame["type"] == "response.done":
            assert frame["response_id"] == r.id
            r.state = "suspended"
            r.pending = [p["call_id"] for p in frame["pending_calls"]]
            r.answered = []
            r.pauses += 1
        elif frame["type"] in TERMINAL:
            assert frame["response"]["id"] == r.id
            r.terminals.append(frame)
            r.state = "finished"
            r.pending = []
            r.answered = []

    def _read(self, conn: Conn, done: Any) -> dict[str, Any]:
        """Dispatch frames from `conn` until `done(frame)`; returns that frame."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "timed out waiting for the server"
            frame = orjson.loads(conn.ws.recv(timeout=left))
            self._dispatch(conn, frame)
            if done(frame):
                return frame

    def _read_to_boundary(self, r: Model) -> None:
        self._read(
            r.conn,
            lambda f: f.get("stream_id") == r.lane and f["type"] in PAUSE_OR_END,
        )

    def _open_conns(self) -> list[Conn]:
        return [c for c in self.conns if c.open]

    def _attached(self, state: str) -> list[Model]:
        return [r for r in self.rollouts if r.state == state and not r.parked]

    # -- rules (always enabled: each falls back to something meaningful) --------------------

    def _any_conn(self, data: st.DataObject) -> Conn:
        conns = self._open_conns() or [self._open()]
        return data.draw(st.sampled_from(conns), label="connection")

    def _create(self, conn: Conn, plan: list[int]) -> Model:
        self.lanes += 1
        lane = f"r{self.lanes}"  # one lane per rollout: a live rollout holds its lane
        pauses = 0
        for n in plan:
            if n == 0:
                break
            pauses += 1
        r = Model(lane=lane, expected_pauses=pauses, conn=conn, origin=conn)
        self.rollouts.append(r)
        self.by_lane[lane] = r
        AppendMachine.created_total += 1
        words = " ".join(str(n) for n in plan)
        self._send(conn, create_frame(input=f"plan {words}", stream_id=lane))
        self._read_to_boundary(r)
        return r

    @initialize(plans=st.lists(PAUSING, min_size=1, max_size=2))
    def start(self, plans: list[list[int]]) -> None:
        for plan in plans:
            self._create(self.conns[0], plan)

    @rule(data=st.data(), plan=PLAN)
    def create(self, data: st.DataObject, plan: list[int]) -> None:
        self._create(self._any_conn(data), plan)

    @rule(data=st.data(), kind=APPEND_KINDS, steer=st.booleans())
    def append(self, data: st.DataObject, kind: str, steer: bool) -> None:
        """A valid append (all or part of the missing outputs, maybe with a user message), or
        an invalid one; an unknown response id when no attached rollout is suspended."""
        if not self._attached("suspended") and kind != "response_not_found":
            self._create(self._any_conn(data), data.draw(PAUSING, label="plan"))
        suspended = self._attached("suspended")
        if not suspended or kind == "response_not_found":
            conn = self._any_conn(data)
            self._send(conn, append_frame("resp_unknown", [output("call_x")]))
            frame = self._read(conn, lambda f: f["type"] == "error" and "stream_id" not in f)
            assert frame["error"]["code"] == "response_not_found"
            assert frame["error"]["param"] == "response_id"
            conn.errors.remove(frame)
            return
        r = data.draw(st.sampled_from(suspended), label="rollout")
        assert r.id is not None
        if kind == "valid":
            chosen = data.draw(
                st.lists(st.sampled_from(r.missing), min_size=1, unique=True), label="outputs"
            )
            items = [output(c, f"out {c}") for c in chosen]
            if steer:
                items.append({"role": "user", "content": "carry on"})
            self._send(r.conn, append_frame(r.id, items))
            r.answered += chosen
            r.outputs += chosen
            if not r.missing:
                r.state = "running"
                self._read_to_boundary(r)
            return
        if kind == "unknown_call_id":
            items = [output("call_not_pending")]
            param = "input[0].call_id"
        elif r.answered:
            items = [output(r.answered[0])]
            param = "input[0].call_id"
        else:
            items = [output(r.missing[0]), output(r.missing[0])]
            param = "input[1].call_id"
        before = len(r.errors)
        self._send(r.conn, append_frame(r.id, items))
        self._read(r.conn, lambda f: f["type"] == "error")
        assert len(r.errors) == before + 1
        error = r.errors[-1]["error"]
        assert (error["code"], error["param"]) == (kind, param)
        assert r.state == "suspended"

    @rule(data=st.data(), kind=st.sampled_from(["valid", "valid", "invalid_input", "unknown"]))
    def inject(self, data: st.DataObject, kind: str) -> None:
        """`response.inject` (the append shape's official name): a valid one is acknowledged
        with `response.inject.created` in the response's sequence before it resumes; an output
        for no pending call fails (`invalid_input`, on the lane); an unknown id fails with no
        lane (`response_not_found`). Nothing is committed by a failure."""
        suspended = self._attached("suspended")
        if kind == "unknown" or not suspended:
            conn = self._any_conn(data)
            self._send(conn, inject_frame("resp_unknown", [output("call_x")]))
            frame = self._read(
                conn, lambda f: f["type"] == "response.inject.failed" and "stream_id" not in f
            )
            assert frame["error"]["code"] == "response_not_found"
            assert frame["input"] == [output("call_x")]
            conn.failures.remove(frame)
            return
        r = data.draw(st.sampled_from(suspended), label="rollout")
        assert r.id is not None
        acks = len(r.acks)
        if kind == "invalid_input":
            self._send(r.conn, inject_frame(r.id, [output("call_not_pending")]))
            self._read(r.conn, lambda f: f.get("stream_id") == r.lane and f["type"] in ANSWERS)
            assert r.acks[-1]["type"] == "response.inject.failed"
            assert r.acks[-1]["error"]["code"] == "invalid_input"
            assert r.state == "suspended"
            return
        chosen = data.draw(
            st.lists(st.sampled_from(r.missing), min_size=1, unique=True), label="outputs"
        )
        self._send(r.conn, inject_frame(r.id, [output(c, f"out {c}") for c in chosen]))
        r.answered += chosen
        r.outputs += chosen
        if not r.missing:
            r.state = "running"
            self._read_to_boundary(r)
        else:
            self._read(r.conn, lambda f: f.get("stream_id") == r.lane and f["type"] in ANSWERS)
        assert [a["type"] for a in r.acks[acks:]] == ["response.inject.created"]

    @rule(data=st.data())
    def steer(self, data: st.DataObject) -> None:
        """`response.steer` to an append rollout on the connection that created it fails with
        `steering_not_supported` on its lane; to an unknown id, `response_not_found`."""
        known = [r for r in self.rollouts if r.origin is r.conn and r.conn.open and r.id]
        if not known:
            conn = self._any_conn(data)
            self._send(conn, steer_frame("resp_unknown"))
            frame = self._read(
                conn, lambda f: f["type"] == "response.steer.failed" and "stream_id" not in f
            )
            assert frame["error"]["code"] == "response_not_found"
            conn.failures.remove(frame)
            return
        r = data.draw(st.sampled_from(known), label="rollout")
        assert r.id is not None
        acks = len(r.acks)
        self._send(r.conn, steer_frame(r.id))
        self._read(r.conn, lambda f: f.get("stream_id") == r.lane and f["type"] in ANSWERS)
        assert [a["error"]["code"] for a in r.acks[acks:]] == ["steering_not_supported"]
        assert r.acks[-1]["steer"] == {"input": "carry on", "previous_response_id": r.id}

    # Appends and resumes are what the machine is about: give them more weight than cancels.
    @rule(data=st.data(), kind=APPEND_KINDS, steer=st.booleans())
    def append_more(self, data: st.DataObject, kind: str, steer: bool) -> None:
        self.append(data, kind, steer)

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        """Cancel a suspended rollout on its connection; with none, cancelling a finished one
        is refused as not suspended (or an unknown one as not found)."""
        suspended = self._attached("suspended")
        if suspended:
            r = data.draw(st.sampled_from(suspended), label="rollout")
            assert r.id is not None
            self._send(r.conn, cancel_frame(r.id))
            r.state = "running"  # its terminal event comes next
            self._read_to_boundary(r)
            terminal = r.terminals[-1]
            assert terminal["type"] == "response.incomplete"
            assert terminal["response"]["status"] == "cancelled"
            return
        finished = [r for r in self.rollouts if r.state == "finished" and r.id is not None]
        conn = self._any_conn(data)
        target = data.draw(st.sampled_from(finished), label="rollout").id if finished else None
        self._send(conn, cancel_frame(target or "resp_unknown"))
        frame = self._read(conn, lambda f: f["type"] == "error" and "stream_id" not in f)
        expected = "response_not_suspended" if target else "response_not_found"
        assert frame["error"]["code"] == expected
        conn.errors.remove(frame)

    @rule(data=st.data())
    def disconnect(self, data: st.DataObject) -> None:
        """Close a connection, preferably one with suspended rollouts (they are parked)."""
        conns = self._open_conns()
        if not conns:
            self._open()
            return
        busy = [c for c in conns if any(r.conn is c for r in self._attached("suspended"))]
        conn = data.draw(st.sampled_from(busy or conns), label="connection")
        conn.ws.close()
        conn.open = False
        for r in self.rollouts:
            if r.conn is conn and r.state == "suspended":
                r.parked = True
                r.parked_at = time.monotonic()

    @rule(data=st.data(), fresh=st.booleans())
    def reconnect(self, data: st.DataObject, fresh: bool) -> None:
        """Continue a parked rollout from a (maybe new) connection with every missing output (a
        partial append would run into the grace deadline left by park(); see test_append_ws).
        Without a parked rollout, just open a connection."""
        if fresh or not self._open_conns():
            if len(self._open_conns()) < MAX_CONNECTIONS:
                self._open()
        parked = [r for r in self.rollouts if r.parked]
        if not parked:
            return
        r = data.draw(st.sampled_from(parked), label="rollout")
        conn = self._any_conn(data)
        assert r.id is not None
        missing = r.missing
        self._send(conn, append_frame(r.id, [output(c) for c in missing]))
        r.parked = False
        r.conn = conn
        r.state = "running"
        frame = self._read(
            conn,
            lambda f: (
                (f.get("stream_id") == r.lane and f["type"] in PAUSE_OR_END)
                or (f["type"] == "error" and "stream_id" not in f)
            ),
        )
        if frame["type"] == "error":
            # The grace period ran out before the append: finished, unobserved.
            assert frame["error"]["code"] == "response_not_suspended", frame
            assert time.monotonic() - r.parked_at >= GRACE * 0.9
            conn.errors.remove(frame)
            r.state = "finished"
            r.unobserved_end = True
            r.pending = []
        else:
            r.outputs += missing

    @rule(data=st.data(), fresh=st.booleans())
    def reconnect_more(self, data: st.DataObject, fresh: bool) -> None:
        self.reconnect(data, fresh)

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def numbering_and_terminals(self) -> None:
        for r in self.rollouts:
            assert r.seqs == list(range(len(r.seqs))), (r.lane, r.seqs)
            assert len(r.terminals) <= 1
            if r.state == "finished":
                assert len(r.terminals) == 1 or r.unobserved_end
                assert r.pending == []
            if r.terminals and r.terminals[0]["type"] == "response.completed":
                # The plan was played out, and every call it made got its output.
                assert r.pauses == r.expected_pauses
                out = r.terminals[0]["response"]["output"]
                assert out[-1]["type"] == "message"
                calls = [i["call_id"] for i in out if i["type"] == "function_call"]
                assert sorted(calls) == sorted(r.outputs)
            if r.state == "suspended":
                assert r.pending and not r.terminals

    @invariant()
    def server_agrees_on_suspended_rollouts(self) -> None:
        """Each suspended rollout the client holds is suspended in the server on the same calls
        (parked ones too, until the grace period may have ended them)."""
        host = self.host
        for r in self.rollouts:
            if r.state != "suspended" or r.id is None:
                continue
            rid = r.id
            expected = "parked" if r.parked else "suspended"

            def settled(r: Model = r, rid: str = rid, expected: str = expected) -> bool:
                live = host.rollouts.get(rid)
                return (live is not None and live.state == expected) or (
                    r.parked and rid in host.finished
                )

            holds_within(settled)
            if r.parked and rid in host.finished:
                continue
            live = host.rollouts.get(rid)
            assert live is not None and live.state == expected, r.lane
            assert set(live.pending) == set(r.pending)

    @invariant()
    def no_unexpected_errors(self) -> None:
        for c in self.conns:
            assert c.errors == [] and c.failures == []

    # -- teardown -------------------------------------------------------------------------------

    def teardown(self) -> None:
        for conn in self._open_conns():
            conn.ws.close()
            conn.open = False
        host = self.host
        stats = self.server.engine.stats
        holds_within(lambda: not host.rollouts, GRACE + TIMEOUT)
        assert host.rollouts == {}, list(host.rollouts)
        # Every rollout ended and was recorded (billing runs in the background).
        wait_until(lambda: stats.responses >= AppendMachine.created_total)
        assert stats.responses == AppendMachine.created_total
        assert stats.billed == AppendMachine.created_total
        assert stats.live_rollouts == 0
        for r in self.rollouts:
            if r.id is not None:
                assert r.id in host.finished


TestAppendMachine = AppendMachine.TestCase
TestAppendMachine.settings = settings(
    max_examples=15, stateful_step_count=12, deadline=None, database=None
)
