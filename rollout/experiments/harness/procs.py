# Servers in child processes, for the experiments that must not share the client's CPU (bench,
# load): `ChildServer` starts `python -c CODE ARGS...`, reads the port the child prints on its
# first stdout line, keeps its stderr in a file, and reads its CPU time (the kernel's process
# CPU clock, nanosecond resolution, where it can be read) and memory. A child
# imports the same `rollout` as its parent, never a `rollout/` folder in the working directory
# (see `child_command`); `stop` ends a child gently; `serve_engine` is a child server's main, and
# `SERVE_HANDLE` the end of a raw child server program.
# Nothing here knows what the child serves.
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import trio

import rollout
from rollout.server.listen import tune_gc
from rollout.service.config import ServerConfig

#: The end of a child server program that defines `async def handle(stream)`: listen on a free
#: port of 127.0.0.1, print it (the first line of stdout, which ChildServer reads), serve.
SERVE_HANDLE = """async def main():
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    print(listeners[0].socket.getsockname()[1], flush=True)
    await trio.serve_listeners(handle, listeners)
trio.run(main)
"""


def serve_engine(engine: rollout.Engine, config: ServerConfig | None = None) -> None:
    """A child server's main: serve `engine` on a free port and print the port (the first line
    of stdout, which ChildServer reads), with a server process's collector settings."""
    tune_gc()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: rollout.serve(
                    engine, port=0, config=config, task_status=task_status
                )
            )
            print(port, flush=True)

    trio.run(main)


def cpu_clock(pid: int) -> int | None:
    """The id of the CPU-time clock of process `pid` (all its threads, living and exited), for
    `time.clock_gettime`; None where there is none (off Linux, or the call failed)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        clock = ctypes.c_int()
        if libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return clock.value


class ChildError(Exception):
    """The child process did not start (its stderr, or the end of it, is in the message)."""


def child_path() -> list[str]:
    """The child's import path: the directory the parent's `rollout` (and `protocol`) came from
    first, then the parent's own path, without the entry that means "the working directory"."""
    root = str(Path(rollout.__file__).resolve().parent.parent)
    entries = [root, *(p for p in sys.path if p)]
    return list(dict.fromkeys(entries))


def child_command(code: str, args: Sequence[str] = ()) -> tuple[list[str], dict[str, str]]:
    """The command and environment to run `code` in a child Python. `-P` keeps the working
    directory off the front of `sys.path` (for `-c` it is put there by default, so a `rollout/`
    folder in the directory a benchmark runs from would be imported instead of the package);
    PYTHONPATH carries the parent's path, with the parent's package first."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(child_path())}
    return [sys.executable, "-P", "-c", code, *args], env


def stop(proc: subprocess.Popen[Any]) -> None:
    """End a child process tree's parent gently (SIGTERM: it shuts down), killed when it takes
    longer than 30 s, and reaped either way."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


class ChildServer:
    """A server in its own process: started by `start`, killed by `stop` (or use `running`)."""

    def __init__(self, code: str, args: Sequence[str] = ()) -> None:
        command, env = child_command(code, args)
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop)
        self.output = ""  # the child's stderr, read by stop()
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, env=env)
        self.port = 0
        self._clock = cpu_clock(self.proc.pid)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def start(self, timeout: float = 60.0) -> int:
        """Wait for the port the child prints; ChildError (and the child stopped) if it does
        not print one within `timeout` seconds."""
        stdout = self.proc.stdout
        assert stdout is not None
        line = b""
        with trio.move_on_after(timeout):
            line = await trio.to_thread.run_sync(stdout.readline, abandon_on_cancel=True)
        if not line.strip().isdigit():
            self.stop()
            raise ChildError("the server process did not start: " + self.output[-2000:].strip())
        self.port = int(line)
        return self.port

    def log_errors(self) -> list[str]:
        """The ERROR/CRITICAL lines the child logged (each may be followed by a traceback);
        read after `stop`."""
        return [
            line
            for line in self.output.splitlines()
            if line.startswith(("ERROR ", "CRITICAL ")) or line.startswith("Traceback")
        ]

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the child has used so far: from its process CPU clock
        (nanoseconds), else from /proc/PID/stat (in clock ticks, 10 ms); nan off Linux."""
        if self._clock is not None:
            try:
                return time.clock_gettime(self._clock)
            except OSError:
                pass
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return float("nan")

    def cpu_clock(self) -> float:
        """CPU time (user + system, every thread) the child has used so far, in nanosecond
        steps: the kernel's per-process CPU clock (Linux); `cpu_seconds` elsewhere."""
        try:
            return time.clock_gettime((~self.proc.pid << 3) | 2)  # CPUCLOCK_SCHED of the pid
        except (OSError, OverflowError, AttributeError):
            return self.cpu_seconds()

    def rss_mb(self) -> float:
        """The child's resident memory in MB; nan off Linux."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            pass
        return float("nan")

    def stop(self) -> int | None:
        """Kill the child and keep its stderr (`output`); returns its exit code if it had
        exited by itself (a crash)."""
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


@asynccontextmanager
async def running(
    code: str, args: Sequence[str] = (), timeout: float = 60.0
) -> AsyncIterator[ChildServer]:
    """A started ChildServer for the block, stopped at its end."""
    server = ChildServer(code, args)
    try:
        await server.start(timeout)
        yield server
    finally:
        server.stop()
