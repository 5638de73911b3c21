# `rollout load`: many concurrent WebSocket connections against one server process, each running
# one append-shape rollout of N client tool calls (`instant` profile), bounded in time. Checks
# every event stream (sequence numbers contiguous from 0, no duplicates, one terminal event and it
# is `response.completed`, N pauses, no event of another response) and reports errors, lost and
# duplicated events and the per-turn overhead (append sent -> first event of the next step,
# measured by the client) in the bench format: `name value unit target pass|fail|info`.
from __future__ import annotations

import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import IO, Any

import attrs
import orjson
import trio
from trio_websocket import ConnectionClosed as WsConnectionClosed
from trio_websocket import (
    ConnectionRejected,
    HandshakeError,
    WebSocketConnection,
    open_websocket_url,
)

from rollout.experiments.bench import Figure

TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
BATCH = 50  # connections opened at once; the next batch waits for their handshakes
FD_MARGIN = 64  # descriptors beyond one per connection (listener, pipes, logs, imports)
FENCE_ID = "resp_load_fence"  # an id no server knows: its error reply ends a connection's stream
EXEC_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "exec",
    "description": "Run a shell command and return its output.",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
}


class LoadError(Exception):
    """The load run could not be set up (file-descriptor limit, server start)."""


# -- file descriptors ----------------------------------------------------------------------------


def raise_nofile(needed: int) -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; LoadError if even that is below `needed`.
    Returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = max(soft, needed) if hard == resource.RLIM_INFINITY else hard
    if target < needed:
        raise LoadError(
            f"this run needs about {needed} open files per process but the hard limit "
            f"(RLIMIT_NOFILE) is {hard}; raise it (e.g. `ulimit -Hn {needed}` as root, or "
            "LimitNOFILE= in a service unit) or use fewer --connections"
        )
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            raise LoadError(f"cannot raise the open-files limit to {target}: {exc}") from None
    return max(soft, target)


# -- the server, in its own process --------------------------------------------------------------


def serve_main(argv: Sequence[str]) -> None:
    """The server process: `calls` exec calls then "done", every rollout; prints the port."""
    import rollout
    from rollout.service.config import ServerConfig

    calls, max_connections = int(argv[0]), int(argv[1])
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        raise_nofile(max_connections + FD_MARGIN)
    except LoadError as exc:
        print(f"rollout load server: {exc}", file=sys.stderr, flush=True)
        sys.exit(3)
    steps = [rollout.call("exec", {"cmd": f"step {i}"}) for i in range(calls)]
    engine = rollout.Engine(policy=rollout.ScriptedPolicy([*steps, rollout.text("done")]))
    config = ServerConfig(
        max_connections=max_connections,
        max_open_connections=max(max_connections + FD_MARGIN, ServerConfig().max_open_connections),
    )

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: rollout.serve(
                    engine, port=0, config=config, task_status=task_status
                )
            )
            print(port, flush=True)

    trio.run(main)


_SERVER = "import sys; from rollout.experiments.load import serve_main; serve_main(sys.argv[1:])"


class ServerProcess:
    """`rollout.serve` in a child process (the client does not share its CPU); stderr is kept in
    a file so that its ERROR lines can be counted afterwards."""

    def __init__(self, calls: int, max_connections: int) -> None:
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop)
        self.output = ""  # the server's stderr, read by stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(calls), str(max_connections)],
            stdout=subprocess.PIPE,
            stderr=self.log,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        self.port = 0

    async def start(self, timeout: float = 60.0) -> int:
        stdout = self.proc.stdout
        assert stdout is not None
        line = b""
        with trio.move_on_after(timeout):
            line = await trio.to_thread.run_sync(stdout.readline, abandon_on_cancel=True)
        if not line.strip().isdigit():
            self.stop()
            raise LoadError("the server process did not start: " + self.output[-2000:].strip())
        self.port = int(line)
        return self.port

    def log_errors(self) -> list[str]:
        """The ERROR/CRITICAL lines the server logged (each may be followed by a traceback)."""
        return [
            line
            for line in self.output.splitlines()
            if line.startswith(("ERROR ", "CRITICAL ")) or line.startswith("Traceback")
        ]

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server process has used so far; nan off Linux."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return float("nan")

    def stop(self) -> int | None:
        """Kill the server and keep its stderr (`output`); returns its exit code if it had exited
        by itself (a crash)."""
        code = self.proc.poll()
        if code is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if not self.log.closed:
            self.log.seek(0)
            self.output = self.log.read().decode(errors="replace")
            self.log.close()
        return code


# -- one connection ------------------------------------------------------------------------------


@attrs.define
class Conn:
    """What one connection saw."""

    index: int
    response_id: str | None = None
    frames: int = 0
    seqs: list[int] = attrs.field(factory=list)
    terminals: list[str] = attrs.field(factory=list)
    pauses: int = 0
    overheads: list[float] = attrs.field(factory=list)  # seconds, one per append
    errors: list[str] = attrs.field(factory=list)
    finished: bool = False  # the stream was read to its end (terminal event and fence reply)

    @property
    def lost(self) -> int:
        return max(self.seqs) + 1 - len(set(self.seqs)) if self.seqs else 0

    @property
    def duplicated(self) -> int:
        return len(self.seqs) - len(set(self.seqs))

    @property
    def completed(self) -> bool:
        return self.finished and self.terminals == ["response.completed"] and not self.errors


def _create_frame() -> str:
    return orjson.dumps(
        {
            "type": "response.create",
            "shape": "append",
            "model": "load-test",
            "input": "Run the steps, one exec call each.",
            "tools": [EXEC_TOOL],
            "store": False,
        }
    ).decode()


def _append_frame(response_id: str, call_ids: list[str]) -> str:
    outputs = [
        {"type": "function_call_output", "call_id": cid, "output": "exit 0"} for cid in call_ids
    ]
    return orjson.dumps(
        {"type": "response.append", "response_id": response_id, "input": outputs}
    ).decode()


def _fence_frame() -> str:
    return orjson.dumps({"type": "response.append", "response_id": FENCE_ID, "input": []}).decode()


def _is_fence_reply(frame: dict[str, Any]) -> bool:
    error = frame.get("error")
    return isinstance(error, dict) and error.get("code") == "response_not_found"


async def _rollout(ws: WebSocketConnection, conn: Conn, calls: int) -> None:
    """One append rollout on an open connection, checked event by event; then a fence (an
    append to an unknown id) whose error reply shows that nothing followed the terminal event."""
    await ws.send_message(_create_frame())
    sent: float | None = None
    fenced = False
    while True:
        message = await ws.get_message()
        now = time.perf_counter()
        if sent is not None:
            conn.overheads.append(now - sent)
            sent = None
        conn.frames += 1
        try:
            frame = orjson.loads(message)
        except orjson.JSONDecodeError:
            conn.errors.append("invalid JSON from the server")
            return
        if not isinstance(frame, dict):
            conn.errors.append("a frame that is not a JSON object")
            return
        kind = frame.get("type")
        if kind == "error":
            if fenced and _is_fence_reply(frame):
                conn.finished = True
                return
            error = frame.get("error") or {}
            conn.errors.append(f"error event: {error.get('code')}: {error.get('message')}")
            return
        seq = frame.get("sequence_number")
        if not isinstance(seq, int):
            conn.errors.append(f"{kind} without a sequence_number")
        else:
            if conn.seqs and seq < conn.seqs[-1] and seq not in conn.seqs:
                conn.errors.append(f"sequence_number {seq} after {conn.seqs[-1]} (out of order)")
            conn.seqs.append(seq)
        snapshot = frame.get("response")
        rid = frame.get("response_id") or (
            snapshot.get("id") if isinstance(snapshot, dict) else None
        )
        if rid is not None:
            if conn.response_id is None:
                conn.response_id = rid
            elif rid != conn.response_id:
                conn.errors.append(f"{kind} of another response {rid!r}")
        if kind in TERMINAL:
            conn.terminals.append(kind)
            if fenced:
                conn.errors.append(f"a second terminal event ({kind})")
                continue  # keep reading to the fence
            if kind != "response.completed":
                conn.errors.append(f"ended with {kind}: {_reason(snapshot)}")
            if conn.pauses != calls:
                conn.errors.append(f"{conn.pauses} pauses, expected {calls}")
            fenced = True
            await ws.send_message(_fence_frame())
        elif kind == "response.done":
            conn.pauses += 1
            if fenced:
                conn.errors.append("a pause after the terminal event")
                continue
            if conn.response_id is None:
                conn.errors.append("a pause before any event naming the response")
                return
            pending = frame.get("pending_calls") or []
            call_ids = [c["call_id"] for c in pending if isinstance(c, dict) and "call_id" in c]
            if not call_ids:
                conn.errors.append("a pause without pending calls")
                return
            sent = time.perf_counter()
            await ws.send_message(_append_frame(conn.response_id, call_ids))


def _reason(snapshot: Any) -> str:
    if not isinstance(snapshot, dict):
        return "?"
    details = snapshot.get("incomplete_details") or snapshot.get("error")
    if isinstance(details, dict):
        return str(details.get("reason") or details.get("code") or details)
    return str(details) if details else "?"


@attrs.define(eq=False)
class Phase:
    """Shared by the connections of a run: the start signal (every connection is open, or has
    failed to open), the time bound, and how many connections are open (now and at most)."""

    deadline: trio.CancelScope
    go: trio.Event = attrs.field(factory=trio.Event)
    now: int = 0
    peak: int = 0


async def _connection(url: str, conn: Conn, calls: int, opened: trio.Event, phase: Phase) -> None:
    """Open, report it (`opened`), wait for every other connection to be open, then run the
    rollout: all of them run concurrently."""
    try:
        async with open_websocket_url(
            url, connect_timeout=30, disconnect_timeout=5, max_message_size=1 << 24
        ) as ws:
            phase.now += 1
            phase.peak = max(phase.peak, phase.now)
            opened.set()
            try:
                await phase.go.wait()
                await _rollout(ws, conn, calls)
            finally:
                phase.now -= 1
    except HandshakeError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, OSError):  # trio-websocket wraps a failed connect
            conn.errors.append(f"connection failed: {type(cause).__name__}: {cause}")
        elif isinstance(exc, ConnectionRejected):
            body = (exc.body or b"").decode(errors="replace")[:200]
            conn.errors.append(f"handshake refused: HTTP {exc.status_code} {body}".rstrip())
        else:
            conn.errors.append(f"handshake failed: {type(exc).__name__} {exc}".rstrip())
    except WsConnectionClosed as exc:
        conn.errors.append(f"connection closed by the server: {exc.reason}")
    except OSError as exc:
        conn.errors.append(f"connection failed: {type(exc).__name__}: {exc}")
    except Exception as exc:  # anything else is still one connection's error, not the run's
        conn.errors.append(f"client error: {type(exc).__name__}: {exc}")
    finally:
        opened.set()
        if phase.deadline.cancel_called and not conn.finished and not conn.errors:
            conn.errors.append("timed out")


# -- the run -------------------------------------------------------------------------------------


@attrs.define
class LoadResult:
    url: str
    connections: int
    calls: int
    timeout: float
    seconds: float
    conns: list[Conn]
    server_errors: list[str] = attrs.field(factory=list)  # logged by the server, or its crash
    client_cpu_s: float = float("nan")
    peak_open: int = 0  # connections open at the same moment, at most
    open_seconds: float = float("nan")  # opening every connection, before the rollouts start
    server_cpu_s: float = float("nan")  # nan when the server is not ours (--url)

    @property
    def completed(self) -> int:
        return sum(c.completed for c in self.conns)

    @property
    def errors(self) -> int:
        return sum(len(c.errors) for c in self.conns) + len(self.server_errors)

    @property
    def lost(self) -> int:
        return sum(c.lost for c in self.conns)

    @property
    def duplicated(self) -> int:
        return sum(c.duplicated for c in self.conns)

    @property
    def events(self) -> int:
        return sum(c.frames for c in self.conns)

    @property
    def overheads_ms(self) -> list[float]:
        return sorted(s * 1000 for c in self.conns for s in c.overheads)

    @property
    def ok(self) -> bool:
        clean = self.errors == 0 and self.lost == 0 and self.duplicated == 0
        return clean and self.completed == self.connections

    def error_kinds(self) -> Counter[str]:
        kinds: Counter[str] = Counter()
        for c in self.conns:
            kinds.update(c.errors)
        kinds.update(self.server_errors)
        return kinds

    def figures(self) -> list[Figure]:
        n = self.connections
        samples = self.overheads_ms
        p50 = _percentile(samples, 50)
        p99 = _percentile(samples, 99)
        return [
            Figure("load.connections", n, "connections"),
            Figure("load.peak_open", self.peak_open, "connections", f"={n}", self.peak_open == n),
            Figure("load.open_seconds", self.open_seconds, "s"),
            Figure("load.completed", self.completed, "rollouts", f"={n}", self.completed == n),
            Figure("load.errors", self.errors, "errors", "=0", self.errors == 0),
            Figure("load.events_lost", self.lost, "events", "=0", self.lost == 0),
            Figure("load.events_duplicated", self.duplicated, "events", "=0", self.duplicated == 0),
            Figure("load.events_received", self.events, "events"),
            Figure("load.turns", len(samples), "turns"),
            Figure("load.turn_overhead.p50", p50, "ms"),
            Figure("load.turn_overhead.p99", p99, "ms"),
            Figure("load.seconds", self.seconds, "s", f"<={self.timeout:g}"),
            Figure("load.client_cpu", self.client_cpu_s, "s"),
            Figure("load.server_cpu", self.server_cpu_s, "s"),
        ]

    def summary(self) -> list[str]:
        lines = [
            f"rollout load: {self.connections} connections x {self.calls} calls (append shape) "
            f"against {self.url} in {self.seconds:.1f} s (timeout {self.timeout:g} s)",
            f"  {self.peak_open} open at once (opened in {self.open_seconds:.1f} s), "
            f"completed {self.completed}/{self.connections}, errors {self.errors}, "
            f"lost events {self.lost}, duplicated events {self.duplicated}",
        ]
        for kind, count in self.error_kinds().most_common(10):
            lines.append(f"  {count} x {kind[:300]}")
        return lines


def _percentile(sorted_values: list[float], p: float) -> float:
    """The p-th percentile (linear interpolation) of sorted values; nan if there are none."""
    if not sorted_values:
        return float("nan")
    if len(sorted_values) == 1:
        return sorted_values[0]
    return statistics.quantiles(sorted_values, n=100, method="inclusive")[int(p) - 1]


async def run_load(
    connections: int = 1000,
    calls: int = 10,
    timeout: float = 120.0,
    url: str | None = None,
    batch: int = BATCH,
) -> LoadResult:
    """Run the load: against `url` (ws://host:port/v1/responses) if given, otherwise against a
    server started in its own process (stopped at the end). Raises LoadError on setup failure."""
    if connections < 1 or calls < 0 or timeout <= 0 or batch < 1:
        raise LoadError("--connections must be >= 1, --calls >= 0 and --timeout > 0")
    raise_nofile(connections + FD_MARGIN)
    server: ServerProcess | None = None
    if url is None:
        server = ServerProcess(calls, connections + 100)
        try:
            port = await server.start()
        except BaseException:
            server.stop()
            raise
        url = f"ws://127.0.0.1:{port}/v1/responses"
    conns = [Conn(index=i) for i in range(connections)]
    server_errors: list[str] = []
    server_cpu = float("nan")
    open_seconds = float("nan")
    cpu_before = server.cpu_seconds() if server is not None else float("nan")
    client_cpu = time.process_time()
    start = time.perf_counter()
    try:
        with trio.move_on_after(timeout) as deadline:
            phase = Phase(deadline=deadline)
            async with trio.open_nursery() as nursery:
                for first in range(0, connections, batch):
                    opened = []
                    for conn in conns[first : first + batch]:
                        event = trio.Event()
                        opened.append(event)
                        nursery.start_soon(_connection, url, conn, calls, event, phase)
                    for event in opened:
                        await event.wait()
                open_seconds = time.perf_counter() - start
                phase.go.set()
        if deadline.cancelled_caught:
            for conn in conns:
                if not conn.finished and not conn.errors:
                    conn.errors.append("timed out")
        seconds = time.perf_counter() - start
        client_cpu = time.process_time() - client_cpu
    finally:
        if server is not None:
            server_cpu = server.cpu_seconds() - cpu_before
            code = server.stop()
            server_errors = [f"server log: {line}" for line in server.log_errors()]
            if code is not None:
                server_errors.append(f"the server process exited with code {code}")
    return LoadResult(
        url=url,
        connections=connections,
        calls=calls,
        timeout=timeout,
        seconds=seconds,
        conns=conns,
        server_errors=server_errors,
        client_cpu_s=client_cpu,
        peak_open=phase.peak,
        open_seconds=open_seconds,
        server_cpu_s=server_cpu,
    )


def main(
    connections: int,
    calls: int,
    timeout: float,
    url: str | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """`rollout load`: run, print the summary and one line per figure; 0 only if clean."""
    try:
        result = trio.run(run_load, connections, calls, timeout, url)
    except LoadError as exc:
        print(f"rollout load: {exc}", file=sys.stderr)
        return 2
    for line in result.summary():
        out(line)
    for figure in result.figures():
        out(figure.line())
    return 0 if result.ok else 1
