# Helpers for the multi-worker tests: `rollout serve --workers N --store redis://...` as a real
# process tree on a free loopback port, clients that open a new connection per request (so the
# kernel may hand each to another worker), and the worker that answered (x-rollout-worker).
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import httpx2 as httpx
import pytest
from openai import OpenAI

from rollout.experiments.harness.procs import stop

ROOT = Path(__file__).resolve().parents[3]
STARTUP_S = 60.0
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Workers:
    """A running `rollout serve --workers N`; `url` is its /v1 base."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def http(self) -> httpx.Client:
        """Plain HTTP, a new connection for every request."""
        return httpx.Client(base_url=self.url, headers={"connection": "close"}, timeout=30)

    def sdk(self) -> OpenAI:
        """The official SDK, a new connection for every request."""
        return OpenAI(
            api_key="t",
            base_url=self.url,
            max_retries=0,
            timeout=30.0,
            default_headers={"connection": "close"},
        )

    def client_on(self, other_than: str) -> httpx.Client:
        """A keep-alive client whose connection a worker other than `other_than` serves (new
        connections until one lands there; bounded)."""
        for _ in range(200):
            http = httpx.Client(base_url=self.url, timeout=30)
            if http.get("/responses/resp_probe").headers["x-rollout-worker"] != other_than:
                return http
            http.close()
        pytest.fail(f"no connection landed on a worker other than {other_than}")

    def until_workers(
        self, call: Callable[[], T], worker: Callable[[T], str], n: int = 2, resets: bool = False
    ) -> dict[str, T]:
        """Repeat `call` (each on a new connection) until `n` distinct workers answered; a
        loop bounded by STARTUP_S (the kernel picks a worker per connection; a restarted worker
        needs its start-up). With `resets`, a connection reset is retried (one that was queued
        at a worker just killed)."""
        seen: dict[str, T] = {}
        deadline = time.monotonic() + STARTUP_S
        for attempt in range(100_000):
            if time.monotonic() > deadline:
                break
            if attempt >= 50:
                time.sleep(0.02)
            try:
                result = call()
            except httpx.TransportError:
                if not resets:
                    raise
                time.sleep(0.05)
                continue
            seen.setdefault(worker(result), result)
            if len(seen) >= n:
                return seen
        pytest.fail(f"only workers {sorted(seen)} answered in {STARTUP_S} s")


def worker_pid(worker_id: str) -> int:
    """The pid in a worker id `w<index>.<pid>@<host>`."""
    return int(worker_id.split("@")[0].split(".")[1])


@contextlib.contextmanager
def workers(redis_url: str, tmp_path: Path, *extra: str, n: int = 2) -> Iterator[Workers]:
    port = free_port()
    log = tmp_path / "workers.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    command = [
        sys.executable,
        "-m",
        "rollout.cli",
        "serve",
        "--workers",
        str(n),
        "--port",
        str(port),
        "--store",
        redis_url,
        "--log-level",
        "WARNING",
        *extra,
    ]
    with log.open("ab") as out:
        proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_S
        with httpx.Client(headers={"connection": "close"}) as probe:
            seen: set[str] = set()
            while len(seen) < n:  # every worker answers
                if proc.poll() is not None:
                    pytest.fail(f"the server exited with {proc.returncode}:\n{log.read_text()}")
                try:
                    r = probe.get(f"http://127.0.0.1:{port}/v1/responses/resp_probe")
                    seen.add(r.headers["x-rollout-worker"])
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"the server did not start in {STARTUP_S}s:\n{log.read_text()}")
                    time.sleep(0.05)
        yield Workers(proc, port, log)
    finally:
        stop(proc)
