# The `rollout` command line. `rollout serve` runs the server in the foreground.
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio

from rollout.client import MODES
from rollout.engine.engine import Engine
from rollout.engine.faults import Faults, parse_errors
from rollout.experiments.compare import RunResult
from rollout.experiments.workloads import WORKLOADS, workload
from rollout.model.policy import DefaultPolicy
from rollout.model.profiles import (
    COST_PROFILES,
    INFERENCE_PROFILES,
    ProfileError,
    cost_profile,
    inference_profile,
    model_table,
)
from rollout.model.recorded import RecordingError, is_recording, script_from_recording
from rollout.model.script import ScriptError
from rollout.model.script import load as load_script
from rollout.server.listen import serve
from rollout.service.config import ServerConfig
from rollout.store.sqlite import SqliteStore, open_store

#: Printed (through rich markup, hence the escaped bracket) when matplotlib is missing.
NO_PLOTS = "(no plots: install the plot extra, pip install 'rollout\\[plot]')"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rollout",
        description="A Responses API server with a simulated model, for measuring agent-rollout "
        "protocol shapes.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser(
        "serve",
        help="serve the Responses API (HTTP + SSE) with a simulated model",
        description="Serve /v1/responses on one port. Point any Responses client at "
        "http://HOST:PORT/v1.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    s.add_argument("--host", default="127.0.0.1", help="address to listen on")
    s.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free port)")
    s.add_argument(
        "--profile",
        default="instant",
        help=f"inference speed profile: {', '.join(INFERENCE_PROFILES)}",
    )
    s.add_argument(
        "--costs",
        default="cpu-only",
        help=f"declared service latencies: {', '.join(COST_PROFILES)}, or a .toml file",
    )
    s.add_argument(
        "--tool-calls",
        type=int,
        default=3,
        metavar="N",
        help="function-tool calls the default model makes before answering",
    )
    s.add_argument("--parallel", type=int, default=1, help="function calls per model step")
    s.add_argument("--seed", type=int, default=0, help="seed of the simulated model")
    s.add_argument(
        "--store",
        default="memory",
        metavar="SPEC",
        help="where store: true responses live: memory, or sqlite:PATH (a file that survives "
        "restarts)",
    )
    s.add_argument(
        "--script",
        metavar="FILE",
        help="play these model steps (JSON or TOML; see rollout/script.py) instead of the "
        "default tool-using model; a recording (a --record directory or one of its .jsonl "
        "files) replays the recorded model: each conversation turn gets its recorded step",
    )
    s.add_argument(
        "--record",
        metavar="DIR",
        help="record every connection's frames in and out to DIR/conn-<N>-<http|ws>.jsonl "
        "(see docs/test-rigs.md); replay with --script DIR",
    )
    s.add_argument(
        "--api-keys",
        metavar="FILE",
        help="require one of these API keys (one per line; '#' starts a comment); without it, "
        "keys are read from $ROLLOUT_API_KEYS (comma-separated) if set, else none are required",
    )
    s.add_argument(
        "--fault-error",
        action="append",
        default=[],
        metavar="CODE=RATE",
        help="inject an error into this share of responses (repeatable), e.g. server_error=0.05",
    )
    s.add_argument(
        "--fault-disconnect-after",
        type=int,
        metavar="N",
        help="drop the connection after N events of each response",
    )
    s.add_argument(
        "--fault-latency", type=float, default=0.0, metavar="SECONDS", help="added latency"
    )
    s.add_argument("--fault-seed", type=int, default=0, help="seed of the fault draws")
    s.add_argument(
        "--shutdown-grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGINT/SIGTERM, how long running responses may take to finish (a second "
        "signal stops at once, exit status 128 + the signal's number)",
    )
    s.add_argument(
        "--max-open-connections",
        type=int,
        default=ServerConfig().max_open_connections,
        metavar="N",
        help="TCP connections at once (HTTP and WebSocket); more are refused with 503",
    )
    s.add_argument(
        "--max-body-bytes-in-flight",
        type=int,
        default=ServerConfig().max_body_bytes_in_flight,
        metavar="BYTES",
        help="bytes of request bodies held at once, server-wide; a request past it gets 503",
    )
    s.add_argument(
        "--ws-idle-timeout",
        type=float,
        default=ServerConfig().ws_idle_timeout_s,
        metavar="SECONDS",
        help="close a WebSocket that sent no frame for this long while nothing ran on it",
    )
    s.add_argument("--log-level", default="INFO", help="logging level")

    c = sub.add_parser(
        "compare",
        help="run the same agent rollout in every protocol mode and compare (the main job)",
        description="Run one workload's rollout in each mode (http-full, http-chain, ws-full, "
        "ws-chain, ws-append, http-append) against an in-process server over loopback, for "
        "each inference profile and repeat, and report end-to-end time, time to first token, "
        "the phase breakdown and the server's work counters. The default is a quick run "
        "(about a minute); --full runs the whole sweep.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    c.add_argument("--workload", default="coding-agent", help=f"one of {', '.join(WORKLOADS)}")
    c.add_argument(
        "--profiles",
        default=None,
        help="comma-separated inference profiles (quick: 1000tps,4000tps; --full: "
        "65tps,1000tps,4000tps)",
    )
    c.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    c.add_argument("--repeats", type=int, default=3, help="rollouts per mode and profile")
    c.add_argument("--seed", type=int, default=0, help="workload seed")
    c.add_argument(
        "--calls",
        type=int,
        default=None,
        help="tool calls per rollout (quick default: 6; otherwise the workload's range)",
    )
    c.add_argument(
        "--costs",
        default="cpu-only",
        help=f"declared service latencies: {', '.join(COST_PROFILES)}, or a .toml file",
    )
    c.add_argument("--full", action="store_true", help="the full sweep (slow: ~30 minutes)")
    c.add_argument("--out", default="results", help="directory for results, plots, traces")

    b = sub.add_parser(
        "bench",
        help="measure the engine's limits against their targets",
        description="Measure each engine limit in one run, against a baseline measured side by "
        "side where there is one. Prints one line per figure: name value unit target verdict.",
    )
    b.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="benches to run (default: all): overhead, events, memory, first-token, ideal",
    )

    ld = sub.add_parser(
        "load",
        help="many concurrent WebSocket append rollouts against one server process",
        description="Open --connections concurrent WebSocket connections (in batches of 50) "
        "against one server process, each running one append-shape rollout of --calls client "
        "tool calls, all bounded by --timeout. Checks every event stream (sequence numbers "
        "contiguous from 0, one terminal event, response.completed, one pause per call) and "
        "prints a summary, then one line per figure: name value unit target verdict (errors, "
        "lost and duplicated events, p50/p99 per-turn overhead measured by the client). Exit "
        "code 0 only with no errors and no lost or duplicated events. By default the server is "
        "started in its own process (instant profile, max connections raised to fit).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ld.add_argument(
        "--connections", type=int, default=1000, metavar="N", help="concurrent connections"
    )
    ld.add_argument(
        "--calls", type=int, default=10, metavar="N", help="client tool calls per rollout"
    )
    ld.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="bound on the whole run; unfinished rollouts count as errors",
    )
    ld.add_argument(
        "--url",
        default=None,
        help="target a running server instead, e.g. ws://127.0.0.1:8000/v1/responses (start it "
        "with `rollout serve --tool-calls N` matching --calls; its max connections is 1000)",
    )
    sub.add_parser(
        "models",
        help="print the model profiles (context window, reasoning, default effort)",
        description="Print the simulated model's profile table: each model name (or prefix), "
        "its context window, whether it reasons and its default reasoning effort, then the "
        "reasoning tokens per effort.",
    )
    return parser


def _models() -> int:
    print("\n".join(model_table()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "compare":
        return _compare(args)
    if args.command == "bench":
        return _bench(args)
    if args.command == "load":
        return _load(args)
    if args.command == "models":
        return _models()
    return 2


def _load(args: argparse.Namespace) -> int:
    from rollout.experiments.load import main as load_main

    return load_main(args.connections, args.calls, args.timeout, args.url)


def _bench(args: argparse.Namespace) -> int:
    from rollout.experiments.bench import BENCHES, Figure, run
    from rollout.experiments.procs import ChildError

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
    from rich.console import Console

    from rollout.experiments.compare import Experiment, summarize, write_results
    from rollout.experiments.report import print_header, print_tables, progress_bar

    err = Console(stderr=True)
    try:
        w = workload(args.workload)
        calls = args.calls if args.calls is not None else (None if args.full else 6)
        if calls is not None:
            if calls < 0:
                raise ValueError("--calls must be >= 0")
            w = attrs.evolve(w, tool_calls=(calls, calls))
        names = args.profiles or ("65tps,1000tps,4000tps" if args.full else "1000tps,4000tps")
        profiles = [inference_profile(n.strip()) for n in names.split(",") if n.strip()]
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        unknown = [m for m in modes if m not in MODES]
        if unknown or not modes:
            raise ValueError(f"unknown modes {unknown}; choose from {', '.join(MODES)}")
        if args.repeats < 1:
            raise ValueError("--repeats must be >= 1")
        costs = cost_profile(args.costs)
    except (ValueError, ProfileError) as exc:
        err.print(f"rollout compare: {exc}")
        return 2
    experiment = Experiment(
        scenario=w.build(args.seed),
        profiles=profiles,
        costs=costs,
        modes=modes,
        repeats=args.repeats,
    )
    console = Console()
    if not console.is_terminal:
        console = Console(width=120)
    print_header(console, experiment)
    with progress_bar(console) as bar:
        task = bar.add_task("", total=experiment.total)

        def advance(result: RunResult) -> None:
            bar.update(
                task, advance=1, description=f"{result.profile} {result.mode} {result.seconds:.2f}s"
            )

        results = trio.run(experiment.run, advance)
    summaries = summarize(results)
    print_tables(console, summaries)
    written = write_results(Path(args.out), experiment, results, summaries)
    console.print("wrote " + ", ".join(str(p) for p in written))
    if not any(p.suffix == ".png" for p in written):
        console.print(NO_PLOTS)
    return 0


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    if args.tool_calls < 0 or args.parallel < 1:
        print("rollout: --tool-calls must be >= 0 and --parallel >= 1", file=sys.stderr)
        return 2
    if min(args.max_open_connections, args.max_body_bytes_in_flight, args.ws_idle_timeout) <= 0:
        print(
            "rollout: --max-open-connections, --max-body-bytes-in-flight and --ws-idle-timeout "
            "must be positive",
            file=sys.stderr,
        )
        return 2
    try:
        engine = Engine(
            policy=DefaultPolicy(
                tool_calls=args.tool_calls, parallel=args.parallel, seed=args.seed
            ),
            inference=inference_profile(args.profile),
            costs=cost_profile(args.costs),
        )
    except ProfileError as exc:
        print(f"rollout: {exc}", file=sys.stderr)
        return 2
    try:
        if args.fault_error or args.fault_disconnect_after is not None or args.fault_latency:
            engine.faults = Faults(
                errors=parse_errors(args.fault_error),
                disconnect_after=args.fault_disconnect_after,
                latency_s=args.fault_latency,
                seed=args.fault_seed,
            )
    except ValueError as exc:
        print(f"rollout: {exc}", file=sys.stderr)
        return 2
    if args.script is not None:
        try:
            if is_recording(args.script):
                engine.policy = script_from_recording(args.script)
            else:
                engine.policy = load_script(args.script)
        except (ScriptError, RecordingError) as exc:
            print(f"rollout: --script: {exc}", file=sys.stderr)
            return 2
    try:
        keys = api_keys(args.api_keys, os.environ.get("ROLLOUT_API_KEYS"))
    except (OSError, ValueError) as exc:
        print(f"rollout: --api-keys: {exc}", file=sys.stderr)
        return 2
    try:
        engine.store = open_store(args.store)
    except ValueError as exc:
        print(f"rollout: --store: {exc}", file=sys.stderr)
        return 2
    banner = f"(profile {engine.inference.name}, costs {engine.costs.name}, store {args.store})"
    try:
        config = ServerConfig(
            shutdown_grace_s=args.shutdown_grace,
            api_keys=keys,
            max_open_connections=args.max_open_connections,
            max_body_bytes_in_flight=args.max_body_bytes_in_flight,
            ws_idle_timeout_s=args.ws_idle_timeout,
        )
        forced = trio.run(
            _serve_until_signalled, engine, args.host, args.port, config, args.record, banner
        )
    except (KeyboardInterrupt, BaseExceptionGroup) as exc:  # Ctrl-C before signals were set up
        if not _only_interrupts(exc):
            raise
        return 128 + signal.SIGINT
    except OSError as exc:
        print(f"rollout: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    finally:
        if isinstance(engine.store, SqliteStore):
            engine.store.close()
    return 0 if forced is None else 128 + forced


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
) -> int | None:
    """Serve until SIGINT or SIGTERM, then shut down gracefully; a second signal stops at once
    (everything is cancelled; the number of that signal is returned, for the exit status).
    Prints where it serves once the port is bound (so `--port 0` prints the port it got)."""
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
        await serve(
            engine,
            host=host,
            port=port,
            config=config,
            stop=stop,
            record=record,
            task_status=task_status,
        )
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(signals)
        bound = await nursery.start(server)
        print(f"rollout: serving http://{host}:{bound}/v1 {banner}", file=sys.stderr, flush=True)
    return forced[0] if forced else None


if __name__ == "__main__":
    sys.exit(main())
