# `rollout load`: many concurrent WebSocket connections against one server process, each running
# one append-shape rollout of N client tool calls (`instant` profile), bounded in time. Checks
# every event stream (sequence numbers contiguous from 0, no duplicates, one terminal event and it
# is `response.completed`, N pauses, no event of another response) and reports errors, lost and
# duplicated events and the per-turn overhead (append sent -> first event of the next step,
# measured by the client) in the bench format: `name value unit target pass|fail|info`. The
# connections are rollout.experiments.load.client; the server runs in a child process (procs).
from __future__ import annotations

import logging
import math
import resource
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence

import attrs
import trio

import rollout
from rollout.experiments.bench.run import Figure
from rollout.experiments.harness.procs import ChildError, ChildServer, serve_engine
from rollout.experiments.load.client import Conn, Phase, run_connection
from rollout.service.config import ServerConfig

BATCH = 50  # connections opened at once; the next batch waits for their handshakes
CPU_PER_TURN_MS = 0.3  # the target of the server's CPU per append turn
FD_MARGIN = 64  # descriptors beyond one per connection (listener, pipes, logs, imports)


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
    serve_engine(engine, config)


_SERVER = (
    "import sys; from rollout.experiments.load.run import serve_main; serve_main(sys.argv[1:])"
)


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
    rollouts_cpu_s: float = float("nan")  # the server's, once every connection was open

    @property
    def cpu_per_turn_ms(self) -> float:
        """The server's CPU per append turn: its CPU while the rollouts ran (every connection
        open: creates, appends and the events of every step) over the append turns."""
        turns = len(self.overheads_ms)
        return self.rollouts_cpu_s * 1000 / turns if turns else float("nan")

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
        per_turn = self.cpu_per_turn_ms
        cpu_ok = None if math.isnan(per_turn) else per_turn <= CPU_PER_TURN_MS
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
            Figure("load.server_cpu_rollouts", self.rollouts_cpu_s, "s"),
            Figure("load.server_cpu_per_turn", per_turn, "ms", f"<={CPU_PER_TURN_MS:g}", cpu_ok),
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
    api_key: str | None = None,
) -> LoadResult:
    """Run the load: against `url` (ws://host:port/v1/responses) if given, otherwise against a
    server started in its own process (stopped at the end); `api_key` goes in every handshake.
    Raises LoadError on setup failure."""
    if connections < 1 or calls < 0 or timeout <= 0 or batch < 1:
        raise LoadError("--connections must be >= 1, --calls >= 0 and --timeout > 0")
    raise_nofile(connections + FD_MARGIN)
    server: ChildServer | None = None
    if url is None:
        server, url = await _start_server(calls, connections)
    conns = [Conn(index=i) for i in range(connections)]
    server_errors: list[str] = []
    server_cpu = rollouts_cpu = float("nan")
    cpu_before = server.cpu_seconds() if server is not None else float("nan")
    cpu_at_go = float("nan")

    def opened() -> None:
        nonlocal cpu_at_go
        if server is not None:
            cpu_at_go = server.cpu_seconds()

    client_cpu = time.process_time()
    start = time.perf_counter()
    try:
        phase, open_seconds = await _run_all(
            url, conns, calls, timeout, batch, api_key, start, opened
        )
        seconds = time.perf_counter() - start
        client_cpu = time.process_time() - client_cpu
    finally:
        if server is not None:
            cpu_after = server.cpu_seconds()
            server_cpu = cpu_after - cpu_before
            rollouts_cpu = cpu_after - cpu_at_go
            server_errors = _stop_server(server)
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
        rollouts_cpu_s=rollouts_cpu,
    )


async def _start_server(calls: int, connections: int) -> tuple[ChildServer, str]:
    """The load's own server, in its own process, and its WebSocket URL."""
    server = ChildServer(_SERVER, [str(calls), str(connections + 100)])
    try:
        port = await server.start()
    except ChildError as exc:
        raise LoadError(str(exc)) from None
    except BaseException:
        server.stop()
        raise
    return server, f"ws://127.0.0.1:{port}/v1/responses"


def _stop_server(server: ChildServer) -> list[str]:
    """Stop the load's own server; the errors it logged, and its exit code if it crashed."""
    code = server.stop()
    errors = [f"server log: {line}" for line in server.log_errors()]
    if code is not None:
        errors.append(f"the server process exited with code {code}")
    return errors


async def _run_all(
    url: str,
    conns: list[Conn],
    calls: int,
    timeout: float,
    batch: int,
    api_key: str | None,
    start: float,
    on_open: Callable[[], None] = lambda: None,
) -> tuple[Phase, float]:
    """Every connection opened, `batch` at a time, then all their rollouts at once, within
    `timeout`; `on_open` is called once every connection is open, just before they start.
    Returns the shared phase and the seconds from `start` until every connection was open (nan
    if the time ran out first)."""
    open_seconds = float("nan")
    with trio.move_on_after(timeout) as deadline:
        phase = Phase(deadline=deadline)
        if api_key is not None:
            phase.headers.append((b"authorization", f"Bearer {api_key}".encode()))
        async with trio.open_nursery() as nursery:
            for first in range(0, len(conns), batch):
                opened = []
                for conn in conns[first : first + batch]:
                    event = trio.Event()
                    opened.append(event)
                    nursery.start_soon(run_connection, url, conn, calls, event, phase)
                for event in opened:
                    await event.wait()
            open_seconds = time.perf_counter() - start
            on_open()
            phase.go.set()
    if deadline.cancelled_caught:
        for conn in conns:
            if not conn.finished and not conn.errors:
                conn.errors.append("timed out")
    return phase, open_seconds


def main(
    connections: int,
    calls: int,
    timeout: float,
    url: str | None = None,
    out: Callable[[str], None] = print,
    api_key: str | None = None,
) -> int:
    """`rollout load`: run, print the summary and one line per figure; 0 only if clean."""
    try:
        result = trio.run(run_load, connections, calls, timeout, url, BATCH, api_key)
    except LoadError as exc:
        print(f"rollout load: {exc}", file=sys.stderr)
        return 2
    for line in result.summary():
        out(line)
    for figure in result.figures():
        out(figure.line())
    return 0 if result.ok else 1
