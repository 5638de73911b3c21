# `rollout serve` as a process of its own, the way users run it: the project on the child's
# import path, a free port, start-up awaited by connecting (a liveness bound, failing only if
# the server never listens or exits), and a stop that ends it whatever state it is in.
from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 60.0


def project_env(**extra: str) -> dict[str, str]:
    """This interpreter's environment, with the project and its imports on the path."""
    path = os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])
    return {**os.environ, "PYTHONPATH": path, **extra}


def cli(*args: str) -> list[str]:
    """The command line of `rollout ARGS` with this interpreter."""
    return [sys.executable, "-m", "rollout.cli", *args]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(proc: subprocess.Popen[Any], port: int, log: Path | None = None) -> None:
    """Return once `port` accepts connections; fail if the process exits first or never
    listens within STARTUP_S."""
    deadline = time.monotonic() + STARTUP_S
    while True:
        if proc.poll() is not None:
            err = proc.communicate()[1] if proc.stderr else None
            pytest.fail(f"rollout serve exited with {proc.returncode}: {err or _read(log)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"rollout serve did not listen within {STARTUP_S} s: {_read(log)}")
            time.sleep(0.05)


def _read(log: Path | None) -> str:
    return log.read_text() if log is not None and log.exists() else ""


def finish(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> str:
    """Send `sig`, wait for the exit (killing it if it hangs); returns its stderr."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or ""


@attrs.frozen
class ServeProcess:
    proc: subprocess.Popen[str]
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@contextlib.contextmanager
def serve_process(
    *args: str, output: IO[Any] | int | None = subprocess.DEVNULL, log: Path | None = None
) -> Iterator[ServeProcess]:
    """`rollout serve --port P ARGS` for the block, listening. Its stderr is a pipe (read it
    with `finish`) unless `log` is given: then stdout and stderr go to that file."""
    port = free_port()
    command = cli("serve", "--port", str(port), *args)
    with contextlib.ExitStack() as files:
        out = files.enter_context(log.open("a")) if log is not None else output
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=project_env(),
            stdout=out,
            stderr=subprocess.STDOUT if log is not None else subprocess.PIPE,
            text=True,
        )
    try:
        wait_listening(proc, port, log)
        yield ServeProcess(proc, port)
    finally:
        if proc.poll() is None:
            finish(proc, signal.SIGKILL)
        proc.wait()


def served_port(proc: subprocess.Popen[str], most: int = 50) -> int:
    """The port of `rollout serve --port 0` (a process whose stderr is a text pipe): the one
    its line "serving http://127.0.0.1:PORT/v1" names, read past the log lines before it (at
    most `most` lines; AssertionError with them if it exits or says nothing of the kind)."""
    assert proc.stderr is not None
    lines: list[str] = []
    while len(lines) < most:
        lines.append(proc.stderr.readline())
        assert lines[-1], lines  # it exited
        match = re.search(r"serving http://127\.0\.0\.1:(\d+)/v1", lines[-1])
        if match:
            return int(match.group(1))
    raise AssertionError(lines)


@contextlib.contextmanager
def serve_on_any_port(*args: str) -> Iterator[ServeProcess]:
    """`rollout serve --port 0 ARGS` for the block: the port is the one its log line names
    ("serving http://127.0.0.1:PORT/v1"); stderr stays a pipe; killed on exit."""
    proc = subprocess.Popen(
        cli("serve", "--port", "0", *args),
        cwd=ROOT,
        env=project_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield ServeProcess(proc, served_port(proc))
    finally:
        if proc.poll() is None:
            finish(proc, signal.SIGKILL)
        proc.wait()
