# The processes of `rollout bench gateway`: one aimock upstream (peer.aimock), and the two
# gateways in front of it, each in its own process on a free loopback port: `rollout serve
# --upstream` (this package, over chat completions, its default) and agentic-api's Rust
# `agentic-server` (PyPI `agentic-api`, the pinned PEER_VERSION, over the engine's
# /v1/responses), with its SQLite store in a temporary directory. Each process's CPU time is
# read from the kernel's per-process clock.
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rollout.experiments.harness.procs import child_command, stop

PEER_PACKAGE = "agentic-api"
PEER_VERSION = "0.9.0"
PEER_ENV = "ROLLOUT_AGENTIC_SERVER"  # the agentic-server binary, where it is not on PATH
INSTALL = f"pip install '{PEER_PACKAGE}=={PEER_VERSION}'"


def peer_binary() -> str | None:
    """The agentic-server to run: $ROLLOUT_AGENTIC_SERVER, else this Python's scripts directory,
    else PATH."""
    named = os.environ.get(PEER_ENV)
    if named:
        return named
    beside = Path(sys.executable).parent / "agentic-server"
    if beside.exists():
        return str(beside)
    return shutil.which("agentic-server")


def peer_missing() -> str | None:
    """Why agentic-server cannot be the peer here (absent, or not the pinned version), or None."""
    binary = peer_binary()
    if binary is None:
        return f"agentic-api is not installed: {INSTALL} (or set ${PEER_ENV})"
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{binary} does not run: {exc}"
    if out.split()[-1:] != [PEER_VERSION]:
        return f"{binary} is {out.strip()!r}, not agentic-server {PEER_VERSION}: {INSTALL}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Gateway:
    """A gateway process listening on `port`."""

    def __init__(self, name: str, proc: subprocess.Popen[bytes], port: int) -> None:
        self.name, self.proc, self.port = name, proc, port

    def cpu(self) -> float:
        """CPU seconds (user + system, every thread) the process has used so far."""
        return time.clock_gettime((~self.proc.pid << 3) | 2)

    def wait_listening(self, timeout: float = 60.0) -> None:
        """Until the process accepts a connection (run off the event loop: it blocks); between
        two tries it waits on the process itself, so an exit is seen at once."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                pass
            try:
                self.proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(f"{self.name} exited with {self.proc.returncode}")
        raise RuntimeError(f"{self.name} did not listen on {self.port} within {timeout:g} s")


@contextmanager
def _started(name: str, command: list[str], env: dict[str, str], port: int) -> Iterator[Gateway]:
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed at the block's end)
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    gateway = Gateway(name, proc, port)
    try:
        try:
            gateway.wait_listening()
        except RuntimeError as exc:
            log.seek(0)
            raise RuntimeError(f"{exc}: {log.read()[-2000:].decode(errors='replace')}") from None
        yield gateway
    finally:
        stop(proc)
        log.close()


_ROLLOUT = "import sys; from rollout.cli import main; sys.exit(main(sys.argv[1:]))"


@contextmanager
def rollout_gateway(upstream: str) -> Iterator[Gateway]:
    """`rollout serve --upstream URL` as a user runs it (its defaults), logging warnings only."""
    port = free_port()
    args = ["serve", "--upstream", upstream, "--port", str(port), "--log-level", "WARNING"]
    command, env = child_command(_ROLLOUT, args)
    with _started("rollout", command, env, port) as gateway:
        yield gateway


@contextmanager
def agentic_gateway(upstream: str) -> Iterator[Gateway]:
    """agentic-server in front of `upstream` (no readiness probe: aimock has no /health), its
    store a fresh SQLite file, logging warnings only."""
    binary = peer_binary()
    assert binary is not None
    port = free_port()
    with tempfile.TemporaryDirectory() as home:
        command = [
            binary,
            "--llm-api-base",
            upstream,
            "--skip-llm-ready-check",
            "--gateway-host",
            "127.0.0.1",
            "--gateway-port",
            str(port),
            "--db-url",
            f"sqlite://{home}/agentic.db",
        ]
        env = {**os.environ, "RUST_LOG": "warn", "NO_COLOR": "1", "HOME": home}
        with _started("agentic-api", command, env, port) as gateway:
            yield gateway
