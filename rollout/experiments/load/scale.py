# `rollout load --workers 1,2`: the same load against `rollout serve --workers N` for each N, one
# after the other in one run, over one Redis (a `redis-server` of its own on a free loopback port
# unless --redis names one), and a table of the figures side by side: rollouts and turns per
# second, events per second, per-turn overhead p50/p99 as the client measures it, errors.
from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence

import trio

from rollout.experiments.harness.procs import stop
from rollout.experiments.load.run import LoadError, LoadResult, _percentile, run_load
from rollout.experiments.load.run import main as load_main
from rollout.store import MissingExtra, require_redis
from rollout.store.redis_binary import HOW, redis_server_binary

STARTUP_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + STARTUP_S
    while True:
        if proc.poll() is not None:
            raise LoadError(f"{what} exited with code {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise LoadError(f"{what} did not start in {STARTUP_S:g} s") from None
            _exited(proc, 0.05)


def _exited(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """Wait up to `seconds` for `proc` to exit (a poll interval that ends early if it does)."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _wait_for_workers(port: int, n: int, proc: subprocess.Popen[bytes]) -> None:
    """Until `n` distinct workers have answered (new connection each time; bounded)."""
    seen: set[str] = set()
    deadline = time.monotonic() + STARTUP_S
    while len(seen) < n:
        if time.monotonic() > deadline:
            raise LoadError(f"only {len(seen)} of {n} workers answered in {STARTUP_S:g} s")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", "/v1/responses/resp_probe")
            seen.add(conn.getresponse().getheader("x-rollout-worker") or "")
        except OSError:
            if _exited(proc, 0.05):
                raise LoadError(f"the server exited with code {proc.returncode}") from None
        finally:
            conn.close()


@contextlib.contextmanager
def redis_server(url: str | None) -> Iterator[str]:
    """`url`, or a `redis-server` of our own (no persistence) for the run's duration."""
    if url is not None:
        yield url
        return
    binary = redis_server_binary()
    if binary is None:
        raise LoadError(f"no redis-server found: {HOW}, or pass --redis")
    port = _free_port()
    command = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, proc, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc)


@contextlib.contextmanager
def workers(n: int, store: str, calls: int) -> Iterator[int]:
    """`rollout serve --workers n` on a free port, in its own process tree; yields the port."""
    port = _free_port()
    command = [
        sys.executable, "-m", "rollout.cli", "serve", "--workers", str(n), "--port", str(port),
        "--store", store, "--tool-calls", str(calls), "--log-level", "WARNING",
    ]  # fmt: skip
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(command, stdout=log, stderr=log, env=env)
    try:
        _wait_for_port(port, proc, f"rollout serve --workers {n}")
        _wait_for_workers(port, n, proc)
        yield port
    finally:
        stop(proc)
        log.close()


def table(results: Sequence[tuple[int, LoadResult]]) -> list[str]:
    lines = [
        "workers  rollouts  turns/s  events/s  turn p50 ms  turn p99 ms  errors  seconds  "
        "client cpu",
    ]
    for n, r in results:
        samples = r.overheads_ms
        lines.append(
            f"{n:>7}  {r.completed:>8}  {len(samples) / r.seconds:>7.0f}  "
            f"{r.events / r.seconds:>8.0f}  {_percentile(samples, 50):>11.2f}  "
            f"{_percentile(samples, 99):>11.2f}  {r.errors:>6}  {r.seconds:>7.1f}  "
            f"{r.client_cpu_s / r.seconds:>9.0%}"
        )
    return lines


def main(
    counts: Sequence[int],
    connections: int,
    calls: int,
    timeout: float,
    redis: str | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """Run the load against each worker count; print each run's summary, then the table."""
    results: list[tuple[int, LoadResult]] = []
    try:
        with redis_server(redis) as url:
            for n in counts:
                store = f"{url}?prefix=scale{secrets.token_hex(3)}:"
                with workers(n, store, calls) as port:
                    ws = f"ws://127.0.0.1:{port}/v1/responses"
                    result = trio.run(run_load, connections, calls, timeout, ws)
                for line in result.summary():
                    out(f"[{n} workers] {line}")
                results.append((n, result))
    except LoadError as exc:
        print(f"rollout load: {exc}", file=sys.stderr)
        return 2
    for line in table(results):
        out(line)
    return 0 if all(r.ok for _, r in results) else 1


def command(args: argparse.Namespace) -> int:
    """`rollout load`: one load (against --url, or a server of its own), or a scaling run."""
    if args.workers is not None:
        try:
            require_redis()  # the workers' store
        except MissingExtra as exc:
            print(f"rollout load: --workers: {exc}", file=sys.stderr)
            return 2
        try:
            counts = [int(n) for n in args.workers.split(",") if n.strip()]
        except ValueError:
            counts = []
        if not counts or min(counts) < 1 or args.url is not None:
            print("rollout load: --workers takes counts like 1,2 (and no --url)", file=sys.stderr)
            return 2
        return main(counts, args.connections, args.calls, args.timeout, args.redis)
    url = args.url
    if url is not None and url.startswith(("http://", "https://")):  # the base URL of the API
        url = "ws" + url[4:].rstrip("/").removesuffix("/v1") + "/v1/responses"
    return load_main(args.connections, args.calls, args.timeout, url, api_key=args.api_key)


__all__ = ["command", "main", "table"]
