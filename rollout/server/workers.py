# `rollout serve --workers N`: N worker processes behind one port. Each worker listens on the
# port with SO_REUSEPORT, so the kernel spreads new connections over them (a hash of each
# connection's addresses: an even spread, where one shared accept queue lets the busiest worker
# win most); the parent holds the port bound (not listening) so that port 0 resolves once, and
# serves nothing itself. It supervises: a worker that exits while the server runs is started
# again (with a growing pause if it keeps dying at once); SIGINT/SIGTERM is passed on to every
# worker, which shut down gracefully. The parent checks every flag and reaches the store once
# before it starts any worker (rollout.cli); a worker checks again at its start and exits with
# CONFIG_ERROR when a check fails. Such a worker is not started again forever: at its first
# start (the setting is wrong, or the store went away a moment ago) it is not restarted at all;
# at a restart (the store went away while it served) it is, for up to CONFIG_RETRY_S, so that a
# restart of Redis does not take the workers down for good. When none is left, the parent exits
# with CONFIG_ERROR.
from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence

import attrs
import trio

from rollout.store.base import is_shared_url, shared_usages

log = logging.getLogger("rollout.workers")
BACKLOG = 4096
RESTART_PAUSE_S = (0.2, 5.0)  # the first pause before a restart, and the most it grows to
QUICK_EXIT_S = 5.0  # a worker that dies sooner than this after its start doubles the pause
CONFIG_ERROR = 2  # the exit status of `rollout serve` for a wrong setting or unreachable store
CONFIG_RETRY_S = 60.0  # how long a restarted worker may go on failing its checks at its start


def reuseport_socket(host: str, port: int, *, listen: bool) -> socket.socket:
    """A TCP socket bound with SO_REUSEPORT (OSError if it cannot be bound): the parent's
    reservation of the port (`listen=False`: it takes no connections) or a worker's listener."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        if listen:
            sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


@attrs.define(eq=False)
class Supervisor:
    """Runs `command + [--port PORT --worker-index I]` for each of `workers` indexes."""

    command: Sequence[str]
    sock: socket.socket
    workers: int
    stop_grace_s: float = 15.0
    pauses: tuple[float, float] = RESTART_PAUSE_S
    config_retry_s: float = CONFIG_RETRY_S
    stopping: bool = False
    procs: dict[int, trio.Process] = attrs.field(factory=dict)
    starts: int = 0  # worker processes started, restarts included
    given_up: set[int] = attrs.field(factory=set)  # indexes not started again (CONFIG_ERROR)
    emptied: trio.Event = attrs.field(factory=trio.Event)  # every worker exited, when stopping

    def worker_command(self, index: int) -> list[str]:
        port = str(self.sock.getsockname()[1])
        return [*self.command, "--port", port, "--worker-index", str(index)]

    async def run(self) -> int:
        """Until SIGINT/SIGTERM (then 0), or until every worker was given up (CONFIG_ERROR)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._signals, nursery.cancel_scope)
            async with trio.open_nursery() as workers:
                for index in range(self.workers):
                    workers.start_soon(self._keep, index)
            nursery.cancel_scope.cancel()
        return 0 if self.stopping else CONFIG_ERROR

    async def _keep(self, index: int) -> None:
        pause = self.pauses[0]
        ran = False  # a process of this index got past its start-up checks
        failing_since: float | None = None  # since when its restarts fail those checks
        while not self.stopping:
            started = trio.current_time()
            proc = await trio.lowlevel.open_process(self.worker_command(index))
            self.procs[index] = proc
            self.starts += 1
            code = await proc.wait()
            self.procs.pop(index, None)
            if self.stopping:
                if not self.procs:
                    self.emptied.set()
                return
            if code != CONFIG_ERROR:
                ran, failing_since = True, None
                log.warning(
                    "worker %d (pid %d) exited with code %s; restarting", index, proc.pid, code
                )
            else:  # it said why on our stderr
                failing_since = started if failing_since is None else failing_since
                if not ran or trio.current_time() - failing_since >= self.config_retry_s:
                    self.given_up.add(index)
                    left = self.workers - len(self.given_up)
                    log.error(
                        "worker %d (pid %d) failed its start-up checks (exit code %d); not "
                        "restarting it (%d of %d workers left)",
                        index,
                        proc.pid,
                        code,
                        left,
                        self.workers,
                    )
                    return
                log.warning(
                    "worker %d (pid %d) failed its start-up checks (exit code %d); restarting "
                    "(for up to %g s of such failures)",
                    index,
                    proc.pid,
                    code,
                    self.config_retry_s,
                )
            quick = trio.current_time() - started < QUICK_EXIT_S
            pause = min(pause * 2, self.pauses[1]) if quick else self.pauses[0]
            await trio.sleep(pause)

    async def _signals(self, scope: trio.CancelScope) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for signum in received:
                if self.stopping:  # a second signal: stop at once
                    for proc in list(self.procs.values()):
                        proc.kill()
                    return
                print(
                    f"rollout: {signal.Signals(signum).name}: stopping {len(self.procs)} workers",
                    file=sys.stderr,
                )
                self.stopping = True
                for proc in list(self.procs.values()):
                    proc.send_signal(signal.SIGTERM)
                if not self.procs:
                    self.emptied.set()
                with trio.move_on_after(self.stop_grace_s):
                    await self.emptied.wait()
                for proc in list(self.procs.values()):
                    proc.kill()


def workers_problem(args: argparse.Namespace) -> str | None:
    """Why `--workers N` cannot run with these flags (for the user), or None."""
    if args.workers < 1:
        return f"--workers must be >= 1, not {args.workers}"
    if not is_shared_url(args.store):
        usages = " or ".join(f"--store {usage}" for usage in shared_usages())
        return f"--workers N needs a shared store: {usages} (not --store {args.store})"
    return None


def supervise(args: argparse.Namespace, raw: list[str]) -> int:
    """`--workers N`: bind once, then run and supervise N worker processes. The caller has
    checked `args` (workers_problem, then every flag and the store: rollout.cli)."""
    try:
        sock = reuseport_socket(args.host, args.port, listen=False)
    except OSError as exc:
        print(f"rollout: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    print(
        f"rollout: serving http://{args.host}:{port}/v1 with {args.workers} workers "
        f"(store {args.store})",
        file=sys.stderr,
        flush=True,
    )
    command = [sys.executable, "-m", "rollout.cli", *raw]
    return run_workers(command, sock, args.workers, args.shutdown_grace)


def worker_listener(args: argparse.Namespace) -> tuple[socket.socket | None, str | None]:
    """`rollout serve`'s listening socket and worker id: a worker of `--workers N` listens on
    its own SO_REUSEPORT socket; one process over a shared store (Redis) is a cluster of one
    worker (binding as usual); otherwise neither."""
    host = socket.gethostname()
    if args.worker_index is not None:
        sock = reuseport_socket(args.host, args.port, listen=True)
        return sock, f"w{args.worker_index}.{os.getpid()}@{host}"
    if is_shared_url(args.store):
        return None, f"w0.{os.getpid()}@{host}"
    return None, None


def run_workers(command: Sequence[str], sock: socket.socket, workers: int, grace: float) -> int:
    """Supervise `workers` processes until SIGINT/SIGTERM (0), or until every one of them
    exited with CONFIG_ERROR (that status)."""
    supervisor = Supervisor(command, sock, workers, stop_grace_s=grace + 5)
    try:
        code = trio.run(supervisor.run)
    finally:
        sock.close()
    if code == CONFIG_ERROR:
        print(
            f"rollout: no worker could start (each failed its start-up checks, as said above); "
            f"exiting with code {CONFIG_ERROR}",
            file=sys.stderr,
        )
    return code


__all__ = [
    "CONFIG_ERROR",
    "Supervisor",
    "reuseport_socket",
    "run_workers",
    "supervise",
    "worker_listener",
    "workers_problem",
]
