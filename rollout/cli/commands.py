# The `rollout` command line. `rollout serve` runs the server in the foreground (on one shared
# simulated accelerator with `--engine NAME`); `rollout models` and `rollout engines` print the
# profile tables.
from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import trio

from rollout.cli import engine_flags
from rollout.cli.parser import parser as _parser
from rollout.engine.engine import Engine
from rollout.engine.faults import Faults, parse_errors
from rollout.model.accel.profile import EngineProfileError
from rollout.model.policy import DefaultPolicy
from rollout.model.profiles import (
    ProfileError,
    cost_profile,
    inference_profile,
    model_table,
)
from rollout.model.recorded import RecordingError, is_recording, script_from_recording
from rollout.model.script import ScriptError
from rollout.model.script import load as load_script
from rollout.server.listen import serve, tune_gc
from rollout.server.workers import supervise, worker_listener, workers_problem
from rollout.service.cluster import clustered
from rollout.service.config import ServerConfig
from rollout.service.service import Service
from rollout.store import MissingExtra, Store, StoreUnreachable, open_store
from rollout.store.shared import shared_of
from rollout.upstream.model import UpstreamModel
from rollout.upstream.target import UpstreamConfig, UpstreamError, parse_models


def _models() -> int:
    print("\n".join(model_table()))
    return 0


def _engines() -> int:
    print("\n".join(engine_flags.engine_table()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(argv) if argv is not None else sys.argv[1:]
    args = _parser().parse_args(raw)
    if args.command == "serve":
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(message)s")
        if args.workers != 1 and args.worker_index is None:
            return _supervise(args, raw)
        return _serve(args)
    if args.command == "compare":
        return _compare(args)
    if args.command == "bench":
        return _bench(args)
    if args.command == "load":
        return _load(args)
    if args.command == "models":
        return _models()
    if args.command == "engines":
        return _engines()
    return 2


def _load(args: argparse.Namespace) -> int:
    from rollout.experiments.load.scale import command

    return command(args)


def _bench(args: argparse.Namespace) -> int:
    from rollout.experiments.bench.run import BENCHES, Figure, run
    from rollout.experiments.harness.procs import ChildError

    names = args.names or list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(
            f"rollout bench: unknown {unknown}; choose from {', '.join(BENCHES)}", file=sys.stderr
        )
        return 2
    failed = []

    def report(figure: Figure) -> None:
        print(figure.line(), flush=True)
        if figure.passed is False:
            failed.append(figure.name)

    try:
        trio.run(run, names, report)
    except ChildError as exc:
        print(f"rollout bench: {exc}", file=sys.stderr)
        return 2
    return 1 if failed else 0


def _compare(args: argparse.Namespace) -> int:
    from rollout.experiments.command import command

    return command(args, upstream_config)


@attrs.frozen
class _Setup:
    """What `rollout serve`'s flags make: the engine (its store opened) and the server's
    configuration (its worker id is the listener's, set when it listens)."""

    engine: Engine
    config: ServerConfig

    def close(self) -> None:
        """Close the store (outside trio: after the server's run, or before the workers')."""
        trio.run(self.engine.store.close)


class _Refused(Exception):
    """A flag of `rollout serve` that cannot work; `str()` is the line to print after
    `rollout: `."""


def _setup(args: argparse.Namespace) -> _Setup | int:
    """Check every flag of `rollout serve` and build what they ask for, a shared store checked
    to answer; or print one line saying what is wrong and return the exit status (2)."""
    try:
        _check_numbers(args)
        problem = engine_flags.engine_problem(args)
        if problem is not None:
            raise _Refused(problem)
        engine = _engine(args)
        try:
            engine.accelerator = engine_flags.accelerator(args)
        except EngineProfileError as exc:
            raise _Refused(f"--engine: {exc}") from None
        _set_model(engine, args)
        keys = _keys(args.api_keys)
        engine.store = _store(args.store)
    except _Refused as exc:
        print(f"rollout: {exc}", file=sys.stderr)
        return 2
    config = ServerConfig(
        shutdown_grace_s=args.shutdown_grace,
        api_keys=keys,
        max_open_connections=args.max_open_connections,
        max_body_bytes_in_flight=args.max_body_bytes_in_flight,
        ws_idle_timeout_s=args.ws_idle_timeout,
        lenient=args.lenient,
    )
    return _Setup(engine, config)


def _check_numbers(args: argparse.Namespace) -> None:
    if args.tool_calls < 0 or args.parallel < 1:
        raise _Refused("--tool-calls must be >= 0 and --parallel >= 1")
    if min(args.max_open_connections, args.max_body_bytes_in_flight, args.ws_idle_timeout) <= 0:
        raise _Refused(
            "--max-open-connections, --max-body-bytes-in-flight and --ws-idle-timeout "
            "must be positive"
        )


def _engine(args: argparse.Namespace) -> Engine:
    """The engine of the policy, profiles and faults the flags name (its model and store are
    set after)."""
    try:
        engine = Engine(
            policy=DefaultPolicy(
                tool_calls=args.tool_calls, parallel=args.parallel, seed=args.seed
            ),
            inference=inference_profile(args.profile),
            costs=cost_profile(args.costs),
        )
    except ProfileError as exc:
        raise _Refused(str(exc)) from None
    try:
        if args.fault_error or args.fault_disconnect_after is not None or args.fault_latency:
            engine.faults = Faults(
                errors=parse_errors(args.fault_error),
                disconnect_after=args.fault_disconnect_after,
                latency_s=args.fault_latency,
                seed=args.fault_seed,
            )
    except ValueError as exc:
        raise _Refused(str(exc)) from None
    return engine


def _set_model(engine: Engine, args: argparse.Namespace) -> None:
    """An upstream model (--upstream) or a script (--script) in place of the default policy."""
    if args.upstream is not None:
        if args.script is not None:
            raise _Refused("--script and --upstream are two models; choose one")
        try:
            engine.model = UpstreamModel(upstream_config(args, os.environ))
        except UpstreamError as exc:
            raise _Refused(f"--upstream: {exc}") from None
    if args.script is not None:
        try:
            if is_recording(args.script):
                engine.policy = script_from_recording(args.script)
            else:
                engine.policy = load_script(args.script)
        except (ScriptError, RecordingError) as exc:
            raise _Refused(f"--script: {exc}") from None


def _keys(path: str | None) -> frozenset[str]:
    """The API keys of `--api-keys PATH`, or else of $ROLLOUT_API_KEYS."""
    try:
        return api_keys(path, os.environ.get("ROLLOUT_API_KEYS"))
    except (OSError, ValueError) as exc:
        raise _Refused(f"--api-keys: {exc}") from None


def _store(spec: str) -> Store:
    """The store `--store` names, after its start-up check (a shared one is reached once)."""
    try:
        store = open_store(spec)
    except MissingExtra as exc:
        raise _Refused(f"--store {spec}: {exc}") from None
    except ValueError as exc:
        raise _Refused(f"--store: {exc}") from None
    try:
        trio.run(store.check)
    except StoreUnreachable as exc:
        raise _Refused(f"--store {spec}: {exc}") from None
    return store


def _supervise(args: argparse.Namespace, raw: list[str]) -> int:
    """`rollout serve --workers N`: every flag is checked and the store reached here, once,
    before any worker starts, so that a wrong setting is one line and exit status 2, not N
    workers failing at their start (workers.py does not restart a worker that fails so)."""
    problem = engine_flags.engine_problem(args) or workers_problem(args)
    if problem is not None:
        print(f"rollout: {problem}", file=sys.stderr)
        return 2
    setup = _setup(args)
    if isinstance(setup, int):
        return setup
    setup.close()
    return supervise(args, raw)


def _serve(args: argparse.Namespace) -> int:
    setup = _setup(args)
    if isinstance(setup, int):
        return setup
    try:
        return _run(args, setup)
    finally:
        setup.close()


def _run(args: argparse.Namespace, setup: _Setup) -> int:

    engine = setup.engine
    model = f"profile {engine.inference.name}"
    details: list[str] = []
    if args.upstream is not None:
        model = f"upstream {args.upstream_api} {args.upstream}"
    if engine.accelerator is not None:
        model, details = engine_flags.banner(engine.accelerator)
    banner = f"({model}, costs {engine.costs.name}, store {args.store})"
    try:
        sock, worker_id = worker_listener(args)
    except OSError as exc:
        print(f"rollout: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    if args.worker_index is not None:
        banner = ""  # the parent said where it serves
    config = attrs.evolve(setup.config, worker_id=worker_id)
    try:
        tune_gc()
        forced = trio.run(
            _serve_until_signalled,
            engine,
            args.host,
            args.port,
            config,
            args.record,
            banner,
            sock,
            details,
        )
    except (KeyboardInterrupt, BaseExceptionGroup) as exc:  # Ctrl-C before signals were set up
        if not _only_interrupts(exc):
            raise
        return 128 + signal.SIGINT
    except OSError as exc:
        print(f"rollout: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0 if forced is None else 128 + forced


def upstream_config(
    args: argparse.Namespace, env: Mapping[str, str], api: str | None = None
) -> UpstreamConfig:
    """The upstream settings of `rollout serve` (UpstreamError when they cannot work)."""
    key = None
    if args.upstream_key_env is not None:
        key = env.get(args.upstream_key_env)
        if not key:
            raise UpstreamError(f"--upstream-key-env: ${args.upstream_key_env} is not set")
    default, models = parse_models(args.upstream_model)
    return UpstreamConfig(
        url=args.upstream,
        api=api or args.upstream_api,
        api_key=key,
        model=default,
        models=models,
        first_byte_timeout_s=args.upstream_first_byte_timeout,
        read_timeout_s=args.upstream_timeout,
    )


def _only_interrupts(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_interrupts(e) for e in exc.exceptions)
    return isinstance(exc, KeyboardInterrupt)


def api_keys(path: str | None, env: str | None) -> frozenset[str]:
    """Keys from a file (one per line, `#` comments) or a comma-separated environment value."""
    if path is not None:
        lines = Path(path).read_text().splitlines()
        keys = [line.split("#", 1)[0].strip() for line in lines]
    elif env:
        keys = [k.strip() for k in env.split(",")]
    else:
        return frozenset()
    keys = [k for k in keys if k]
    if not keys:
        raise ValueError("no keys found")
    if any(any(c.isspace() for c in k) for k in keys):
        raise ValueError("a key contains white space")
    return frozenset(keys)


async def _serve_until_signalled(
    engine: Engine,
    host: str,
    port: int,
    config: ServerConfig,
    record: str | None = None,
    banner: str = "",
    sock: socket.socket | None = None,
    details: Sequence[str] = (),
) -> int | None:
    """Serve until SIGINT or SIGTERM, then shut down gracefully; a second signal stops at once
    (everything is cancelled; the number of that signal is returned, for the exit status).
    Prints where it serves once the port is bound (so `--port 0` prints the port it got), unless
    `banner` is empty (a worker of --workers N: its parent did), then the `details` lines (the
    shared engine's profile). `sock` is a worker's listener."""
    stop = trio.Event()
    forced: list[int] = []

    async def signals() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for signum in received:
                name = signal.Signals(signum).name
                if stop.is_set():
                    print(f"rollout: second {name}: stopping now", file=sys.stderr, flush=True)
                    forced.append(signum)
                    nursery.cancel_scope.cancel()
                    return
                print(f"rollout: {name}: shutting down", file=sys.stderr, flush=True)
                stop.set()

    async def server(task_status: trio.TaskStatus[int]) -> None:
        service = Service(engine, config)
        if config.worker_id is not None and shared_of(engine.store) is not None:  # many workers
            service = clustered(service, config.worker_id)
        await serve(
            host=host,
            port=port,
            stop=stop,
            record=record,
            sock=sock,
            service=service,
            task_status=task_status,
        )
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(signals)
        bound = await nursery.start(server)
        if banner:
            lines = [f"serving http://{host}:{bound}/v1 {banner}", *details]
            print("\n".join(f"rollout: {line}" for line in lines), file=sys.stderr, flush=True)
    return forced[0] if forced else None
